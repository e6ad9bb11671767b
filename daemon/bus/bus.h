/* SPDX-License-Identifier: GPL-2.0-only */
/* bus.h -- pdimond on the system bus: org.pdimon.Monitor1 at /org/pdimon/Monitor1. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-bus.h>

#include "bus_names.h"

struct pdi_daemon;
struct pdi_step;

/* Connect (DBUS_SYSTEM_BUS_ADDRESS or the system bus), export the object, take the name. */
int pdi_bus_open(struct pdi_daemon *d);
void pdi_bus_close(struct pdi_daemon *d);
/* Handle whatever the bus has for us; keep the epoll registration up to date. */
void pdi_bus_process(struct pdi_daemon *d);
/* How long epoll may sleep before the bus needs us again: ms, or -1. */
int pdi_bus_timeout_ms(struct pdi_daemon *d);

/* ---- step signals (subscribe.c): unicast to the subscribers who may read the step ---- */
#define PDI_BUS_MAX_SUBSCRIBERS 256
#define PDI_BUS_MAX_SUBSCRIBERS_PER_UID 8

/* The Subscribe method of M's sender, made by UID: reply, or an error in ERROR. */
int pdi_bus_subscribe(struct pdi_daemon *d, sd_bus_message *m, uid_t uid, sd_bus_error *error);
void pdi_bus_subscribers_free(struct pdi_daemon *d);
/* StepEnded(step, state), to each subscriber who may read S, and to nobody else. */
void pdi_bus_emit_step_ended(struct pdi_daemon *d, const struct pdi_step *s, const char *state);
/* StepHealthChanged(step, health, verdict), likewise: S was judged HEALTH (ok, slow, hung),
 * VERDICT_JSON says why (hang/step_health.c). */
void pdi_bus_emit_step_health_changed(struct pdi_daemon *d, const struct pdi_step *s, const char *health,
				      const char *verdict_json);

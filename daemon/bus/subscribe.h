/* SPDX-License-Identifier: GPL-2.0-only */
/* subscribe.h -- the step signals (subscribe.c): unicast to the subscribers who may read the
 * step. */
#pragma once

#include <sys/types.h>

#include <systemd/sd-bus.h>

struct pdi_daemon;
struct pdi_step;

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

/* SPDX-License-Identifier: GPL-2.0-only */
/* bus.h -- pdimond on the system bus: org.pdimon.Monitor1 at /org/pdimon/Monitor1. */
#pragma once

#include <stdint.h>

struct pdi_daemon;
struct pdi_step;

#define PDI_BUS_NAME "org.pdimon.Monitor1"
#define PDI_BUS_PATH "/org/pdimon/Monitor1"
#define PDI_BUS_IFACE "org.pdimon.Monitor1"

/* Connect (DBUS_SYSTEM_BUS_ADDRESS or the system bus), export the object, take the name. */
int pdi_bus_open(struct pdi_daemon *d);
void pdi_bus_close(struct pdi_daemon *d);
/* Handle whatever the bus has for us; keep the epoll registration up to date. */
void pdi_bus_process(struct pdi_daemon *d);
/* How long epoll may sleep before the bus needs us again: ms, or -1. */
int pdi_bus_timeout_ms(struct pdi_daemon *d);
void pdi_bus_emit_step_ended(struct pdi_daemon *d, const struct pdi_step *s, const char *state);

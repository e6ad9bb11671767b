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

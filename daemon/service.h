/* SPDX-License-Identifier: GPL-2.0-only */
/* service.h -- pdimond as a system service: going to the background as a classic daemon does
 * (the command returns once the daemon serves, or fails with the daemon's own words), and
 * telling the service manager how it is (sd_notify(3): ready, reloading, stopping, status,
 * watchdog). */
#pragma once

#include <stdint.h>

struct pdi_service {
	int ready_fd;           /* to the waiting parent until ready; -1 in the foreground */
	uint64_t watchdog_usec; /* the service manager's watchdog interval; 0: none */
	uint64_t pinged_usec;   /* when it was last told we are alive */
};

#define PDI_SERVICE_INIT {.ready_fd = -1}

/* Go to the background: fork, and the parent waits until the child calls
 * pdi_service_ready() (it exits 0) or exits first (it exits with the child's status; the
 * child's error lines went to the same stderr). Returns in the child, in a session of its
 * own, with stdio still the caller's. Call it before anything that must belong to the
 * daemon's own process: the bus connection (sd-bus refuses a forked child) and threads.
 * 0, or a negative errno (in the caller's process: nothing forked). */
int pdi_service_background(struct pdi_service *s);

/* The daemon serves: tell the service manager (READY=1 and STATUS), release the waiting
 * parent and, in the background, leave the terminal for the log (syslog). */
void pdi_service_ready(struct pdi_service *s, const char *status);
/* Rereading the configuration (RELOADING=1), then ready again. */
void pdi_service_reloading(struct pdi_service *s);
void pdi_service_stopping(struct pdi_service *s);
/* STATUS= for systemctl status. */
void pdi_service_status(struct pdi_service *s, const char *status);
/* The loop turned: tell the watchdog, at most every half of its interval. NOW_USEC:
 * CLOCK_MONOTONIC. A loop that stops turning is restarted by the service manager. */
void pdi_service_alive(struct pdi_service *s, uint64_t now_usec);

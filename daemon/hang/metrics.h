/* SPDX-License-Identifier: GPL-2.0-only */
/* metrics.h -- the hang detection's numbers: `pdimon status` and the site's metrics file
 * (metrics.c). */
#pragma once

#include <stdint.h>

#include "hang.h"

struct pdi_daemon;
struct pdi_json;

/* An episode of HEALTH was announced LATENCY_S after it began (0 for a resumption). */
void pdi_hang_metrics_alarm(struct pdi_daemon *d, enum pdi_health health, double latency_s);
/* The numbers now. */
void pdi_hang_numbers(struct pdi_daemon *d, struct pdi_hang_numbers *ret);
/* Them as members of `pdimon status --json` into J (an object open). */
void pdi_hang_status_json(struct pdi_daemon *d, struct pdi_json *j);
/* Them in Prometheus's text format, malloc'd; NULL when out of memory. */
char *pdi_hang_metrics_text(const struct pdi_hang_numbers *n);
/* Once a tick: the metrics file written off the loop when it is due. */
void pdi_hang_metrics_tick(struct pdi_daemon *d, uint64_t now_ns);

/* SPDX-License-Identifier: GPL-2.0-only */
/* hang.h -- what the hang detection keeps for the whole daemon (daemon/hang/): its numbers
 * for `pdimon status` and the site's metrics, the programs' history of quiet episodes in the
 * store, and the announcements' ways out (notify.h, actions.h). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "health.h"

struct pdi_daemon;
struct pdi_step;
struct pdi_json;

/* The numbers `pdimon status --json` and the metrics file carry (one definition). */
struct pdi_hang_numbers {
	unsigned steps, tasks;           /* running here */
	unsigned by_health[3];           /* running steps by announced health */
	uint64_t events, events_lost;
	double events_per_s;
	unsigned probes_degraded;        /* functions of running tasks the overhead budget degraded */
	uint64_t alarms[3];              /* episodes announced: [ok] = resumed, [slow], [hung] */
	uint64_t latency_count;          /* announced slow and hung episodes */
	double latency_sum_s, latency_max_s; /* from the episode's start to its announcement */
};

/* The daemon-wide state, in struct pdi_daemon. */
struct pdi_hang {
	double clock_s;                  /* the judge's clock: CLOCK_MONOTONIC at the last tick */
	uint64_t last_ns;                /* the last tick */
	uint64_t history_seq;            /* history writes, in order */
	uint64_t alarms[3];
	uint64_t latency_count;
	double latency_sum_s, latency_max_s;
	uint64_t metrics_due_ns;         /* the next write of the metrics file */
	bool metrics_busy;               /* a write is in flight */
	bool metrics_failed;             /* its last failure was said */
};

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

/* The program's quiet episodes of its earlier runs, and this step's own health if a pdimond
 * before this one judged it, loaded off the loop into S's judge. */
void pdi_hang_history_load(struct pdi_daemon *d, struct pdi_step *s);
/* S's record and health written off the loop (at each announcement and when S ended). */
void pdi_hang_history_save(struct pdi_daemon *d, struct pdi_step *s);

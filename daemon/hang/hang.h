/* SPDX-License-Identifier: GPL-2.0-only */
/* hang.h -- what the hang detection keeps for the whole daemon (daemon/hang/): its numbers
 * for `pdimon status` and the site's metrics (metrics.h), and what a site or a step chooses to do
 * about a hung step (hang.c). The rest of daemon/hang/ stands above the registry; this stands
 * beside it (doc/design/layout.md). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "health.h"

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

/* What a site or a step chooses to do about a hung step (the io-watchdog precedent). */
enum pdi_on_hang {
	PDI_ON_HANG_DEFAULT = 0, /* a step's: the site's choice */
	PDI_ON_HANG_REPORT,      /* say it, nothing more */
	PDI_ON_HANG_COMMAND,     /* and run the site's on_hang_command */
	PDI_ON_HANG_CANCEL,      /* and cancel the step after on_hang_grace_s */
};
extern const char *const pdi_on_hang_names[]; /* "", "report", "command", "cancel" */
/* NAME as an action: 0 and *RET, or -EINVAL. */
int pdi_on_hang_parse(const char *name, enum pdi_on_hang *ret);

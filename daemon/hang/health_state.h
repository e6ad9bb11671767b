/* SPDX-License-Identifier: GPL-2.0-only */
/* health_state.h -- what pdimond keeps of a live step's health (health_state.c): the hang
 * judge's state and what was announced, the log of what was done about it, and the answers
 * read from them. It stands below the judge (step_health.c) and its ways out (actions.c,
 * notify.c, history.c, metrics.c), which report back here, so that none of them calls the
 * judge (doc/design/layout.md). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "hang.h"
#include "health.h"
#include "progress.h"

struct pdi_daemon;
struct pdi_step;
struct pdi_json;

#define PDI_HEALTH_MAX_ACTIONS 16

/* One thing pdimond did about a step's health, for its log and its report. */
struct pdi_health_action {
	time_t at;
	char what[16];     /* "announced", "resumed", "notified", "command", "cancel", "unjudged" */
	char detail[240];
};

/* What the store keeps of a step's health (history.c). */
struct pdi_health_saved {
	struct pdi_health_record run;  /* its own healthy episodes */
	enum pdi_health health;        /* as announced */
	time_t since, first_hung, cancelled;
};

/* A step's health, in s->health: the judge (step_health.c) keeps it. */
struct pdi_step_health {
	struct pdi_health_judge judge;
	struct pdi_health_verdict last;
	struct pdi_task_progress *progress; /* by the step's task index */
	unsigned nprogress;
	struct pdi_health_task *in;          /* this tick's input, reused */
	uint64_t *keys;
	const struct pdi_model **models;     /* this tick's running tasks' models */
	unsigned *index;                     /* this tick's running tasks' index in the step */
	unsigned cap;
	uint64_t calls;                      /* completed calls that were progress */
	time_t since;                        /* the announced episode's start, wall clock; 0 ok */
	time_t first_hung, cancelled;
	uint64_t cancel_at_ns;               /* on-hang=cancel: when the grace is over; 0 none */
	char line[600];                      /* the last line announced */
	bool ready;                          /* the store answered: judged from now on */
	bool saved_end;                      /* its record was saved once it ended */
	bool rerun;                          /* the step ran again under its name: nothing to take over */
	bool confirming;                     /* a suspected hang is being judged on the step's view */
	double recheck_quiet_s;              /* a hang the view did not confirm is suspected again
						once this node's quiet reaches this */
	char suspected[500];                 /* this node's own diagnosis of the suspected hang */
	struct pdi_health_action actions[PDI_HEALTH_MAX_ACTIONS];
	unsigned nactions, dropped_actions;
};

/* WHAT was done about H's step, in words (FMT), into its log of actions. */
void pdi_step_health_log_action(struct pdi_step_health *h, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* An action on S's health took place (actions.c, notify.c): WHAT, OK, and in words. True when
 * it was logged (S is judged); a failed cancel leaves S not cancelled. */
bool pdi_step_health_acted(struct pdi_step *s, const char *what, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The health of S as the world was told: ok, slow or hung, and since when (wall clock; 0
 * when ok). */
enum pdi_health pdi_step_health_of(const struct pdi_step *s, time_t *ret_since);
/* When task I of S (its index in S's tasks) last made progress (CLOCK_MONOTONIC) when it has
 * polled since (MPI_Test*, MPI_Iprobe at the sites of one loop, progress.h); 0 when it is not
 * polling or was not looked at. A polling task is never long in one call: the view calls it
 * blocked by this (report/view_local.c). */
uint64_t pdi_hang_polling_since(const struct pdi_step *s, unsigned i);
/* S's health for its report and `pdimon show`: a "health" member into J (an object open). */
void pdi_step_health_json(const struct pdi_step *s, struct pdi_json *j);
/* The report JSON *JSON of S (an object) with S's "health" member added, when S was judged:
 * 0 (*JSON replaced), or -ENOMEM (*JSON as it was). */
int pdi_step_health_amend_report(const struct pdi_step *s, char **json);
/* Steps by announced health, for status and metrics. */
void pdi_hang_counts(const struct pdi_daemon *d, unsigned ret_by_health[3]);

/* What the store is to keep of S's health. */
void pdi_step_health_get_saved(const struct pdi_step *s, struct pdi_health_saved *ret);

/* What the judge keeps of each task of S (progress.h), by S's task index: *RET_N of them (NULL
 * and 0 when S was never judged). For the answers of its looks at stacks (stack_look.h). */
struct pdi_task_progress *pdi_step_health_progress(struct pdi_step *s, unsigned *ret_n);

/* Does S's health need S in memory no longer? True when S was never judged, or once its run's
 * record was saved after it ended: only then may an ended step leave the cache (registry.c). */
bool pdi_step_health_settled(const struct pdi_step *s);

void pdi_step_health_free(struct pdi_step_health *h);

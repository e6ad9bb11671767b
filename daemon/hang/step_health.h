/* SPDX-License-Identifier: GPL-2.0-only */
/* step_health.h -- pdimond's judgement of its live steps, once a second from the drain timer:
 * each step's tasks fed to the hang judge (lib/health/health.h), and when the verdict changes, the
 * step's episode acted on once: a diagnosis, one log line, a D-Bus signal, one line on the
 * user's output while the job runs, and the site's action (a command, or cancelling the step
 * after a grace period). A step of several nodes is judged on its first node, and a hang it
 * suspects is confirmed across all of them by the gather before anything is said.
 * doc/design/hang-detection.md argues all of it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "hang.h"
#include "health.h"

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

struct pdi_step_health;

/* What the store keeps of a step's health (history.c). */
struct pdi_health_saved {
	struct pdi_health_record run;  /* its own healthy episodes */
	enum pdi_health health;        /* as announced */
	time_t since, first_hung, cancelled;
};

/* Once a second, from the drain timer: judge every live step of this node that it roots. */
void pdi_hang_tick(struct pdi_daemon *d);

/* The health of S as the world was told: ok, slow or hung, and since when (wall clock; 0
 * when ok). */
enum pdi_health pdi_step_health_of(const struct pdi_step *s, time_t *ret_since);
/* How long a task of S may sit in one MPI call before a view calls it blocked: the site's
 * hang_timeout_ms when it set one, none once S is judged hung, else the quiet S is judged hung
 * after now (what its own history makes plausible). */
uint64_t pdi_hang_blocked_after_ns(const struct pdi_daemon *d, const struct pdi_step *s);
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

/* An action on S's health took place (actions.c, notify.c): WHAT, OK, and in words. */
void pdi_step_health_acted(struct pdi_daemon *d, struct pdi_step *s, const char *what, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* What the store is to keep of S's health. */
void pdi_step_health_get_saved(const struct pdi_step *s, struct pdi_health_saved *ret);
/* The store's answer (history.c): the program's HISTORY over RUNS earlier runs, and OWN, S's
 * own health as a pdimond before this one left it (NULL: none). S is judged from then on. */
void pdi_step_health_loaded(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_health_record *history,
			    const struct pdi_health_saved *own, unsigned runs);

struct pdi_task_progress;
/* What the judge keeps of each task of S (progress.h), by S's task index: *RET_N of them (NULL
 * and 0 when S was never judged). For the answers of its looks at stacks (stack_look.h). */
struct pdi_task_progress *pdi_step_health_progress(struct pdi_step *s, unsigned *ret_n);

/* Does S's health need S in memory no longer? True when S was never judged, or once its run's
 * record was saved after it ended: only then may an ended step leave the cache (registry.c). */
bool pdi_step_health_settled(const struct pdi_step *s);

void pdi_step_health_free(struct pdi_step_health *h);

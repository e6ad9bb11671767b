/* SPDX-License-Identifier: GPL-2.0-only */
/* snapshot.h -- this node's part of a step, copied on the loop for a worker (worker.h): the
 * step's view (analysis.h) with every model, site and task copied, then, on the worker, the
 * live stacks of its blocked tasks. The loop takes what a walk needs (which thread, at which
 * call, in which process) and never waits for a walk; the worker never reads the registry. */
#pragma once

#include "view.h"

struct pdi_daemon;
struct pdi_step;
struct pdi_wire_writer;

/* Live stacks taken per snapshot: each stops a task for a moment, and a stopped or traced
 * task costs up to PDI_STACK_WALK_TIMEOUT_MS before its walk gives up */
#define PDI_SNAPSHOT_MAX_WALKS 64

struct pdi_snapshot {
	struct pdi_view view;  /* owns its tasks and models; its sites are STEP's */
	struct pdi_step *step; /* a skeleton of the step: name, ids, executable, call sites and
				  the tasks' ranks (no model, no process): what sample runs of the
				  program are matched against (samples.h) */
	uint64_t blocked_after_ns; /* in one call this long, a task is blocked (the hang judge's) */
};

/* On the loop: step S as pdi_view_local() sees it now (where each task is), copied. 0, -ENOMEM. */
int pdi_snapshot_take(struct pdi_daemon *d, struct pdi_step *s, struct pdi_snapshot **ret);
/* On a worker: the live stacks of the blocked tasks, and of the tasks that show as computing
 * while their probes were thinned, which their stacks place in a call or outside MPI (at most
 * PDI_SNAPSHOT_MAX_WALKS). A walk that fails (the task is gone, stopped too long, traced)
 * leaves that task without a stack, where the loop saw it.
 * 0, or -ENOMEM. */
int pdi_snapshot_walk(struct pdi_snapshot *snap);
/* NULL ok. */
void pdi_snapshot_free(struct pdi_snapshot *snap);

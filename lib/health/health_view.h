/* SPDX-License-Identifier: GPL-2.0-only */
/* health_view.h -- a step's view (view.h) as the hang judge (health.h) sees it, and its
 * analysis (analysis.h) in the words of a hang's one line: what confirms, across all of a
 * step's nodes, a hang its first node suspected, and what the user is told of it. Pure. */
#pragma once

#include <stddef.h>

#include "analysis.h"
#include "health.h"

/* The tasks of V as the judge's input, into OUT (room for v->ntasks): what each does (where
 * it is, and what the kernel of its node said: stopped, sleeping, computing), how long since
 * it last moved (the time it has been where it is), and its state's durations pooled over
 * V's models. Tasks that ended are left out. Returns how many. */
unsigned pdi_health_tasks_of_view(const struct pdi_view *v, struct pdi_health_task *out);

/* What A found, as the line says it after "looks hung since ...: ": the least-progressed
 * task(s) and what they do, then where the others wait, e.g. "least progressed [2], computing,
 * 100% CPU, no MPI call for 41 s (after MPI_Waitall@solver.c:212); the others wait in
 * MPI_Allreduce@solver.c:230". "" when it found nothing to say. */
void pdi_health_diagnosis(const struct pdi_analysis *a, char *buf, size_t len);

/* A hang one node suspected, judged on A's view (the whole step's, gathered from all of its
 * nodes) with H's record and parameters: the verdict over every task into RET (hung, or ok
 * when a task elsewhere moved or is in a state known to last this long), and what A found in
 * LINE (pdi_health_diagnosis; RET's critical is -1). 0, or -ENOMEM (RET and LINE untouched). */
int pdi_health_confirm(const struct pdi_health_judge *h, const struct pdi_analysis *a, struct pdi_health_verdict *ret,
		       char *line, size_t len);

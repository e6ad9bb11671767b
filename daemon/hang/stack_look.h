/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_look.h -- the hang judge's look at live stacks: the tasks of a step that its thinned
 * probes show computing while they are still (progress.h asks, look_wanted) have their stacks
 * read on a worker (stack_place.h, the placement the report uses), and what each says lands in
 * its progress record on the loop for the next tick. The loop never walks a stack and never
 * waits for one. */
#pragma once

struct pdi_daemon;
struct pdi_step;
struct pdi_task_progress;

/* On the loop, after a tick sampled S: the tasks whose record PROGRESS (by S's task index, N
 * of them) asks for a look get one, at most PDI_SNAPSHOT_MAX_WALKS a job. A look that cannot
 * be started is answered "unknown" at once (the task stays where its probes put it). */
void pdi_hang_stack_look(struct pdi_daemon *d, struct pdi_step *s, struct pdi_task_progress *progress, unsigned n);

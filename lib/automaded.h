/* SPDX-License-Identifier: GPL-2.0-only */
/* automaded.h -- AutomaDeD's localization on one run without sample runs (sec. 4.2-4.3):
 * the faulty phase, the faulty task in it, and the transitions that make it differ.
 *
 * Without sample runs, normal behaviour is a task's own other phases: each task's model in
 * phase p is compared with its models in the other phases (nu trained on those), the phase
 * whose models differ most is the faulty one (temporary effects), and in it the task that
 * differs most. With 5 phases or more, the prologue (MPI_Init up to the loop) and the
 * epilogue (the loop's rest and MPI_Finalize) are left out: they differ by construction. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "smm.h"

#define PDI_TOP_TRANSITIONS 5

struct pdi_transition_score {
	uint64_t from, to; /* state keys */
	double score;
};

struct pdi_automaded {
	uint32_t nphases;         /* analysed: the fewest any task has */
	uint32_t first_phase;     /* 1 when the prologue is left out */
	double *phase_score;      /* per phase: the tasks' deviations, summed */
	uint32_t faulty_phase;
	double phase_margin;      /* faulty score over the next highest: 1 = no contrast */
	double *task_score;       /* per task, in the faulty phase */
	size_t faulty_task;       /* index into the tasks given */
	double task_margin;
	struct pdi_transition_score top[PDI_TOP_TRANSITIONS];
	size_t ntop;
};

/* -EINVAL when there is nothing to compare: fewer than 2 phases to compare, or no task. */
int pdi_automaded_run(const struct pdi_model *const *tasks, size_t ntasks, enum pdi_timedist dist,
		      struct pdi_automaded *ret);
void pdi_automaded_done(struct pdi_automaded *a);

/* SPDX-License-Identifier: GPL-2.0-only */
/* pace.h -- how much of a task's computation in a phase went beyond the usual pace of its
 * transitions: a fault makes the same work take longer, the program's nature is more work.
 *
 * AutomaDeD compares a transition's times with its times elsewhere (3.2-3.3: the run's other
 * phases when there is no sample run), not a phase's total with other phases' totals. Totals
 * mix two things a person tells apart at once:
 *   - a rank that does more of its usual work at the usual pace of that work: in HPCC's
 *     fault-free runs at a load of 15-19 the process column factorising HPL's panel made 10-20
 *     computations of 11-16 ms between MPI_Isend and MPI_Test in each 0.5 s phase while its
 *     peers waited, as in the other phases it did so, and "lost" 1.0-1.1 s over 2-3 phases
 *     (issue 9: abnormal, z 10-13, against its own phases only);
 *   - the same work at a slower pace: a rank spinning or stopped between two calls turns one
 *     computation of milliseconds into seconds, a CPU hog on its core stretches every one.
 * So each computation state's usual time per visit is the median of its mean over the task's
 * other phases, and a phase counts, per state, the visits' time beyond it. A state the task
 * has in no other phase has no usual pace: its time is kept apart (unpaced_s), for the caller
 * to count in full where peers are its yardstick (lost_time.h) or not at all where nothing else
 * is (the phase's length, automaded.h). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct pdi_pace {
	double *beyond_s;  /* n x nphases: computation beyond its states' usual pace (s) */
	double *unpaced_s; /* n x nphases: computation in states seen in no other phase (s) */
	size_t n;
	uint32_t nphases, first, end;
};

/* The pace of N models over phases [FIRST, END) of each (a phase a model lacks counts 0).
 * 0, -EINVAL (no phase), or -ENOMEM; *RET untouched on failure. Free with pdi_pace_done(). */
int pdi_pace_of(const struct pdi_model *const *models, size_t n, uint32_t first, uint32_t end,
		struct pdi_pace *ret);
void pdi_pace_done(struct pdi_pace *p);

/* Model T's computation beyond its usual pace in phase P (s); 0 outside. */
double pdi_pace_beyond_s(const struct pdi_pace *p, size_t t, uint32_t phase);
/* The same plus its computation in states seen in no other phase (s); 0 outside. */
double pdi_pace_with_unpaced_s(const struct pdi_pace *p, size_t t, uint32_t phase);

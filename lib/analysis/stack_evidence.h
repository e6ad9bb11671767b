/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_evidence.h -- a rank seen computing while its peers were seen waiting. When the
 * overhead budget thins the probes of every rank, a rank spinning outside MPI for seconds
 * leaves the same long stretch after its last seen call on every rank's model: nothing in the
 * ended step's models tells it from its peers. The hang judge's looks at live stacks during
 * the step (model/stack_seen.h) can: the rank whose stack was outside MPI while its peers'
 * stacks were inside MPI calls at the same time is the one they waited for. Pure code. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "view.h"

#define PDI_STACK_EVIDENCE_TOLERANCE_NS 1500000000ull /* looks of one tick land within this */
/* a rank still and computing is looked at again 3 s later while it stays so: a peer's look
 * until then falls in the same stretch unless the rank moved meanwhile */
#define PDI_STACK_EVIDENCE_AFTER_NS 3000000000ull

struct pdi_stack_evidence {
	bool found;
	unsigned task;       /* the computing one: index into the view's tasks */
	int rank;
	uint32_t phase;      /* its phase whose window holds the first look that found it computing */
	uint64_t t_first, t_last; /* those looks (its CLOCK_MONOTONIC) */
	unsigned waiting;    /* peers seen inside an MPI call at the same time */
	int peer_rank;       /* one of them, */
	uint16_t peer_fn;    /* and the call it was in */
};

/* The one rank V's stack looks show computing while every one of its peers was seen waiting
 * inside MPI -- any one peer when ANY_PEER -- and no other rank was seen computing then, into
 * *RET (found false when none, or when two ranks would qualify: the looks do not single one
 * out). A peer no look saw then is not taken for waiting: in a healthy meep under a tiny
 * budget, the one rank not looked at was computing as well, as two were in the next run. A
 * look counts only after a second its probes would have shown calls in (still_before). */
void pdi_stack_evidence(const struct pdi_view *v, bool any_peer, struct pdi_stack_evidence *ret);

/* E in words into BUF: "rank 2 was computing outside MPI on its live stack (2 looks over 3.0 s)
 * while 3 peers waited inside MPI (rank 0 in MPI_Waitsome)". */
void pdi_stack_evidence_text(const struct pdi_stack_evidence *e, char *buf, size_t len);

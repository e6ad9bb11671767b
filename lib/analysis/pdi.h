/* SPDX-License-Identifier: GPL-2.0-only */
/* pdi.h -- PDI's progress dependence: who waits for whom in a hung step, and the
 * least-progressed (LP) task(s) behind it (PDI sec. 3.2, 4.2, 4.3).
 *
 * Each task's Markov model (all its phases together) gives the all-path probability of
 * reaching one state from another; Table 1 turns the pair of probabilities into a
 * dependence. Where the table cannot decide (two tasks inside one loop: both 1.0), the
 * tasks' visit counts of their states order them, a dynamic stand-in for STAT-TO's loop
 * order variables. Blocked point-to-point calls add the dependence on their peers, and
 * tasks blocked in a collective depend on every task that has not entered it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Dependence of a task in state i on a task in state j (PDI's integers: OR is the union). */
enum pdi_dep {
	PDI_DEP_NONE = 0,
	PDI_DEP_ON = 1,      /* the task in i waits for the one in j */
	PDI_DEP_BY = 2,      /* the task in j waits for the one in i */
	PDI_DEP_UNDEFINED = 3,
};

/* Table 1: from the forward P(i->j) and backward P(j->i) all-path probabilities. */
enum pdi_dep pdi_dep_from_table(double forward, double backward);

/* A task's Markov model: the transitions of all its phases, with their probabilities. */
struct pdi_mm {
	const struct pdi_model *model;
	struct pdi_u64map idx; /* state key -> index */
	uint64_t *keys;
	uint32_t n;
	uint32_t *first; /* CSR: edges of state s are [first[s], first[s+1]) */
	uint32_t *to;
	double *p;
};

int pdi_mm_build(const struct pdi_model *m, struct pdi_mm *ret);
void pdi_mm_done(struct pdi_mm *mm);
/* The probability of ever reaching TO from FROM (after leaving FROM: a loop returns to it
 * with its return probability). 0 when either state is unknown. */
double pdi_mm_reach(const struct pdi_mm *mm, uint64_t from, uint64_t to);

/* Where one task is. */
struct pdi_position {
	int rank;
	uint64_t state;     /* a communication state (pdi_state_comm) */
	bool inside;        /* blocked inside that call; false: computing after it */
	bool finished;      /* past MPI_Finalize: takes no part */
	bool collective;    /* the call it is inside is a blocking collective (of all the tasks) */
	const struct pdi_mm *mm;
	const int32_t *peers; /* ranks a blocked point-to-point call waits for */
	size_t npeers;
};

/* Tasks that share a position, and what the analysis concluded about them. */
struct pdi_group {
	uint64_t state;
	bool inside;
	bool collective;    /* inside a blocking collective */
	int *ranks;
	size_t n;
	bool p2p_dependent; /* some task of it waits for a peer in another group */
	bool lp;            /* least progressed: it waits for nobody, others wait for it */
};

struct pdi_pdg {
	struct pdi_group *groups;
	size_t ngroups;
	uint8_t *dep; /* ngroups x ngroups: dep[g * ngroups + h] = enum pdi_dep of g towards h */
	size_t nlp;
};

/* Build the progress dependence graph over the groups of TASKS and find the LP group(s). */
int pdi_pdg_build(const struct pdi_position *tasks, size_t n, struct pdi_pdg *ret);
void pdi_pdg_done(struct pdi_pdg *g);

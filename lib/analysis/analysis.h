/* SPDX-License-Identifier: GPL-2.0-only */
/* analysis.h -- the diagnosis of one step's view (view.h), computed once and rendered by
 * render.h: where every task is, PDI's least-progressed task(s) of a hang, AutomaDeD on the per-phase models
 * (tasks with identical models collapsed into classes first, earlier normal runs of the
 * program as sample runs), the STAT prefix tree of the tasks' current call paths, and what
 * could not be concluded and why. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "automaded.h"
#include "baseline.h"
#include "eqclass.h"
#include "pdi.h"
#include "stack_evidence.h"
#include "view.h"

/* Earlier normal runs of the step's program, loaded by the caller (the daemon's store):
 * AutomaDeD's sample runs. rows[r][i] is run r's model of the view's task i. */
struct pdi_analysis_samples {
	const struct pdi_model *const *const *rows;
	unsigned nruns;
};

/* Tasks that are at the same place. */
struct pdi_where_group {
	enum pdi_where_kind kind;
	const char *text;
	int *ranks;
	size_t n;
};

#define PDI_ANALYSIS_MAX_LIMITS 8

enum pdi_phase_kind { PDI_PHASE_SETUP, PDI_PHASE_STEADY, PDI_PHASE_TEARDOWN };
extern const char *const pdi_phase_kind_names[];

/* Where phase K sits in time, across the tasks that have it (the same index is the same
 * stretch of the program on every task): its wall-clock window, and whether it is set-up
 * (before the first regular phase), the steady state, or tear-down (after the last). */
struct pdi_phase_window {
	int64_t start_ns, end_ns;    /* the time of day, ns since the epoch; 0 when unknown */
	double start_s, end_s;       /* seconds since the step began */
	enum pdi_phase_kind kind;
};

struct pdi_analysis {
	const struct pdi_view *view;
	const char *kind;            /* completed, hang, running, incomplete, not_monitored */
	struct pdi_where_group *groups; /* smallest first: the odd ones out lead */
	size_t ngroups;

	/* PDI, for a hang */
	bool has_pdg;
	struct pdi_pdg pdg;
	char lp[1024];               /* the least-progressed ranks, "[2]"; "" when PDI cannot tell */
	int *lp_ranks;               /* the same, sorted; NULL when none */
	size_t nlp;
	const char *lp_by;           /* what singled them out: "pdi", or "kernel" when the node saw them
					stopped or in uninterruptible sleep while the others wait */

	/* AutomaDeD, on classes of tasks with identical models */
	bool has_automaded;
	struct pdi_automaded am;
	struct pdi_eqclasses classes; /* members are indices into view->tasks */
	unsigned sample_runs;
	bool abnormal;               /* AutomaDeD's contrast beats the step's own noise: reported */
	bool beyond_noise;           /* the evidence beats the step's own variation and the floor
					(baseline), whether or not a phase and a task stand apart */
	double noise_z;              /* how far the faulty phase's score stands above the others', in
					robust standard deviations (median, MAD) */
	const char *confidence;      /* in words: "none", "low", "medium", "high" */
	struct pdi_baseline baseline; /* what healthy earlier runs showed by themselves: the seconds of
					evidence "abnormal" needs (floor_s), from them or the floor alone */
	double excess_s;             /* the time the faulty phase took beyond its usual length, on the
					task where it grew most (s): what a person would call the stall */

	/* the hang judge's looks at live stacks during the step (stack_evidence.h): a rank seen
	 * computing while its peers were seen waiting (all of them in set-up or tear-down) is the
	 * verdict when AutomaDeD found nothing abnormal, or blamed it among others */
	struct pdi_stack_evidence stack;
	bool by_stack;               /* the verdict is the stacks': phase stack.phase, rank stack.rank */

	struct pdi_ptree *tree;      /* NULL when it could not be built */

	struct pdi_phase_window *phases; /* per phase index, over all tasks; NULL when none */
	uint32_t nphases;

	char limits[PDI_ANALYSIS_MAX_LIMITS][240]; /* what could not be concluded, and why */
	size_t nlimits;
};

/* The analysis of V (which must outlive it), with SAMPLES (may be NULL: none) as AutomaDeD's
 * sample runs. Pure and reentrant: it reads V and SAMPLES only. 0, or -ENOMEM. */
int pdi_analysis_build(const struct pdi_view *v, const struct pdi_analysis_samples *samples,
		       struct pdi_analysis *ret);
void pdi_analysis_done(struct pdi_analysis *a);

/* How sure A's verdict is, and what it was judged against, in words into BUF: "high, against
 * 3 earlier runs of the program" or "low, against this step's own phases only (no earlier run
 * of the program)". */
void pdi_analysis_confidence_text(const struct pdi_analysis *a, char *buf, size_t len);

/* Phase P's window as people read it into BUF: "16.1 s – 16.9 s after start (05:12:44.1 –
 * 05:12:44.9 UTC), steady state"; "" when unknown. */
void pdi_analysis_phase_text(const struct pdi_analysis *a, uint32_t p, char *buf, size_t len);
/* A time of day (ns since the epoch) as ISO 8601 UTC with milliseconds into BUF. */
void pdi_time_iso(int64_t epoch_ns, char *buf, size_t len);

/* Room for one rank per task of A's view (task counts go to the heap, never the stack);
 * NULL when out of memory. free() it. */
int *pdi_analysis_ranks_alloc(const struct pdi_analysis *a);
/* The ranks of AutomaDeD's model (class) I, formatted as "[0-3,5]" ("?" out of memory). */
void pdi_analysis_class_ranks(const struct pdi_analysis *a, size_t i, char *buf, size_t len);
/* The ranks below the step's task count that no node reported, as "[6-7]" into BUF (""
 * when none, or the count is unknown). */
void pdi_analysis_missing_ranks(const struct pdi_analysis *a, char *buf, size_t len);
/* The ranks AutomaDeD blames: the faulty cluster when it is a minority, else the faulty
 * class. Into RANKS (room for view->ntasks); returns how many, sorted. */
size_t pdi_analysis_faulty_ranks(const struct pdi_analysis *a, int *ranks);

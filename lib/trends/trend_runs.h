/* SPDX-License-Identifier: GPL-2.0-only */
/* trend_runs.h -- from the stored runs a user may read to the trends of one program: which
 * runs are of that program (same path, latest build), which feature they vary (task count at
 * one input size, or input size at one task count), their per-task series, and one line for
 * each thing left out. Pure: the caller reads the runs from whichever store. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trends.h"

struct pdi_trend_site_total {
	const char *name; /* FUNC@FILE:LINE: the same site across runs and rebuilds */
	uint64_t calls, bytes, time_ns;
};

struct pdi_trend_run {
	const char *step, *executable, *build, *verdict;
	int64_t ended;
	uint64_t input_size; /* 0: none given */
	uint32_t tasks;      /* the step's task count: the feature */
	uint32_t counted;    /* the tasks the totals are summed over (a node's part, or all) */
	const struct pdi_trend_site_total *sites;
	size_t nsites;
};

/* The trends of one program, ready to render (trends.h): DOC. Owns everything it points to. */
struct pdi_trend_set {
	struct pdi_trend_doc doc;
	struct pdi_trend_report reports[2];
	struct pdi_trend_input inputs[2];
	struct pdi_trends trends[2];
	char *program, *executable, *build;
	char **names;   /* the sites of the chosen runs, sorted */
	size_t nnames;
	double *x[2], *values[2];
	char **notes;
	size_t nnotes;
};

/* Is a run of EXECUTABLE (whose identity is BUILD) one of PROGRAM, as named below? */
bool pdi_trend_is_program(const char *executable, const char *build, const char *program);

/* The trends of PROGRAM (an executable's absolute path, its file name when only one stored
 * program has it, or "build-id:..."/"file:..." as stored) over RUNS, from SOURCE ("site store",
 * "local store"). Runs that did not complete, or of another build than the most recent run's,
 * are left out with a note. 0; or -ENOENT (no run of PROGRAM), -EINVAL (too few runs or sizes
 * to fit), -ENOTUNIQ (several programs have that name), -ENOMEM, with one line in ERR saying
 * what is wrong and what to do. RET untouched on failure. */
int pdi_trend_set_build(const char *program, const char *source, const struct pdi_trend_run *runs, size_t n,
			struct pdi_trend_set **ret, char *err, size_t errlen);
/* NULL ok. */
void pdi_trend_set_free(struct pdi_trend_set *s);

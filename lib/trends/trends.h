/* SPDX-License-Identifier: GPL-2.0-only */
/* trends.h -- ti-trend-prof (sec. 4-5) on pdimon's stored runs: per call site, how the calls,
 * bytes and time per task grow with a feature of the run (its task count, or the input size
 * the user gave), fitted as a + bx and a + bx^c, ranked least scalable first, and the sites
 * that grow faster than the rest flagged. Pure: the caller gathers the runs.
 *
 * Fitting: a + bx by least squares, a + bx^c by GSL's trust-region nonlinear least squares
 * from a few starting exponents. As in the paper the model with the smaller error is taken,
 * but the power law only when it halves the linear model's error and its exponent differs
 * from 1: with as few sizes as sites are usually run at, it always fits at least as well. A
 * series whose fitted values change by less than PDI_TREND_FLAT_SPREAD over the sizes seen is
 * flat (exponent 0): noise in a constant count must not read as a steep power law. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pdi_trend_metric { PDI_TREND_CALLS, PDI_TREND_BYTES, PDI_TREND_TIME, PDI_TREND_NMETRICS };
extern const char *const pdi_trend_metric_names[PDI_TREND_NMETRICS]; /* "calls", "bytes", "time" */

enum pdi_trend_model { PDI_TREND_FLAT, PDI_TREND_LINEAR, PDI_TREND_POWER };
extern const char *const pdi_trend_model_names[]; /* "flat", "linear", "power" */

/* A flat series: fitted values within this fraction of their mean over the sizes seen. */
#define PDI_TREND_FLAT_SPREAD 0.02
/* Flagged: a count (calls, bytes) whose exponent exceeds the median exponent of all sites'
 * series of that metric by this much, that grows over the sizes seen by PDI_TREND_FLAG_GROWTH
 * at least, fitted with r2 >= PDI_TREND_FLAG_R2. Time is fitted and ranked but never
 * flagged: it follows the machine's load as much as the program (two cores shared by eight
 * ranks make every wait grow). */
#define PDI_TREND_FLAG_MARGIN 0.5
#define PDI_TREND_FLAG_GROWTH 1.25
#define PDI_TREND_FLAG_R2 0.8
/* Power-law exponents outside this are taken as a failed fit. */
#define PDI_TREND_MAX_EXPONENT 6.0

struct pdi_trend_fit {
	enum pdi_trend_model model; /* the one chosen */
	double a, b, c, r2;         /* the chosen model as a + b x^c: c = 1 linear, b = c = 0 flat */
	double lin_a, lin_b, lin_r2;
	bool pow_ok;                /* the power law converged (needs 3 distinct sizes) */
	double pow_a, pow_b, pow_c, pow_r2;
};

/* Fit the N points (X[i], Y[i]): X > 0, at least 2 distinct. 0, or -EINVAL (too few distinct
 * X, or a non-finite or non-positive X), -ENOMEM; RET untouched on failure. */
int pdi_trend_fit(const double *x, const double *y, size_t n, struct pdi_trend_fit *ret);
/* The fitted model at X. */
double pdi_trend_eval(const struct pdi_trend_fit *f, double x);

/* Runs as columns, sites as rows: VALUES[(site * NRUNS + run) * PDI_TREND_NMETRICS + metric]
 * is the metric per task of SITE in RUN, 0 when the site made no call in that run. */
struct pdi_trend_input {
	size_t nruns;
	const double *x;          /* each run's feature: task count or input size, > 0 */
	size_t nsites;
	const char *const *sites; /* names, for ties and the caller's rendering */
	const double *values;
};

struct pdi_trend_entry {
	uint32_t site; /* index into the input's sites */
	enum pdi_trend_metric metric;
	struct pdi_trend_fit fit;
	double growth;  /* the fit at the largest size over the fit at the smallest (1: none) */
	bool flagged;
};

struct pdi_trends {
	struct pdi_trend_entry *v; /* ranked: least scalable first */
	size_t n;
	size_t nflagged;
	double median_exponent[PDI_TREND_NMETRICS];
	double xmin, xmax;
};

/* Fit every site's series of each metric that is not zero throughout, rank them and flag
 * those that grow faster than the rest. Ranking: counts (calls, bytes) before time, which
 * depends on the machine's load; within each, series that grow, by exponent (to two
 * decimals), then coefficient, both descending (ti-trend-prof's order); then flat ones; then
 * those that shrink; ties by site name. 0, -EINVAL (fewer than 2 distinct sizes), -ENOMEM;
 * RET untouched on failure. */
int pdi_trends_compute(const struct pdi_trend_input *in, struct pdi_trends *ret);
/* Accepts a zeroed struct; leaves it zeroed. */
void pdi_trends_done(struct pdi_trends *t);

/* ---- rendering (trends_render.c) ---- */

/* One feature's trends over a program's runs, as `pdimon trends` shows them. */
struct pdi_trend_report {
	const char *feature;    /* "tasks" or "input_size": what the sizes are */
	double held;            /* the other feature, the same in every run: the input size (0:
				   none given) for "tasks", the task count for "input_size" */
	const struct pdi_trend_input *in;
	const struct pdi_trends *trends;
};

/* What the trends are of, and what was left out (one line each). */
struct pdi_trend_doc {
	const char *program, *executable, *build; /* build: the build ID, or "" */
	const char *source;                        /* "site store" or "local store" */
	const struct pdi_trend_report *reports;    /* the first is the document's own; others nest */
	size_t nreports;
	const char *const *notes;
	size_t nnotes;
};

/* The JSON document (schema in pdimon(1)), a text table, or an SVG chart of the first report's
 * top-ranked series with their fits. malloc'd; NULL when out of memory. */
char *pdi_trends_render_json(const struct pdi_trend_doc *d);
char *pdi_trends_render_text(const struct pdi_trend_doc *d);
char *pdi_trends_render_svg(const struct pdi_trend_doc *d);

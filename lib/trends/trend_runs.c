/* SPDX-License-Identifier: GPL-2.0-only */
/* trend_runs.c -- choosing the runs trends fit, and laying them out as series.
 *
 * ti-trend-prof varies one feature at a time (sec. 4): task counts at a fixed input size, or
 * input sizes at a fixed task count. Runs of several input sizes and task counts are split
 * that way: the task-count trend over the largest group of runs that share an input size (or
 * gave none), the input-size trend over the largest group that share a task count. A run of
 * other code (a rebuild) is not the same program for this: only the most recent build's runs
 * are compared. Sites are matched by name across runs, as sample runs match them. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errline.h"
#include "trend_runs.h"

bool pdi_trend_is_program(const char *executable, const char *build, const char *program)
{
	if (program[0] == '/')
		return !strcmp(executable, program);
	if (!strncmp(program, "build-id:", 9) || !strncmp(program, "file:", 5))
		return !strcmp(build, program);
	return !strcmp(basename(executable), program);
}

static bool is_program(const struct pdi_trend_run *r, const char *program)
{
	return pdi_trend_is_program(r->executable, r->build, program);
}

static int add_note(struct pdi_trend_set *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add_note(struct pdi_trend_set *s, const char *fmt, ...)
{
	char **v = realloc(s->notes, (s->nnotes + 1) * sizeof(*v));
	va_list ap;
	int r;

	if (!v)
		return -ENOMEM;
	s->notes = v;
	va_start(ap, fmt);
	r = vasprintf(&v[s->nnotes], fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	s->nnotes++;
	return 0;
}

/* ---- which runs ---- */

/* The runs of PROGRAM's most recent build that completed, into KEEP (indices); notes for the rest. */
static int choose_runs(struct pdi_trend_set *s, const char *program, const struct pdi_trend_run *runs, size_t n,
		       size_t *keep, size_t *ret_nkeep, char *err, size_t errlen)
{
	const struct pdi_trend_run *latest = NULL;
	size_t nkeep = 0, other_build = 0, not_completed = 0, matched = 0;

	for (size_t i = 0; i < n; i++) {
		if (!is_program(&runs[i], program))
			continue;
		if (latest && strcmp(latest->executable, runs[i].executable))
			return pdi_errline(err, errlen, -ENOTUNIQ, "several programs are called %s (%s, %s): name one by its path",
				    program, latest->executable, runs[i].executable);
		matched++;
		if (!latest || runs[i].ended > latest->ended)
			latest = &runs[i];
	}
	if (!latest)
		return pdi_errline(err, errlen, -ENOENT, "no stored run of %s that you may read (pdimon steps --all lists them)",
			    program);
	for (size_t i = 0; i < n; i++) {
		if (!is_program(&runs[i], program))
			continue;
		if (strcmp(runs[i].build, latest->build))
			other_build++;
		else if (strcmp(runs[i].verdict, "completed"))
			not_completed++;
		else
			keep[nkeep++] = i;
	}
	if (!(s->program = strdup(program)) || !(s->executable = strdup(latest->executable)) ||
	    !(s->build = strdup(latest->build)))
		return -ENOMEM;
	if (other_build && add_note(s, "%zu run%s of an earlier build of %s left out: it was rebuilt since", other_build,
				    other_build == 1 ? "" : "s", latest->executable) < 0)
		return -ENOMEM;
	if (not_completed && add_note(s, "%zu run%s that did not complete (hung, failed or partly seen) left out",
				      not_completed, not_completed == 1 ? "" : "s") < 0)
		return -ENOMEM;
	if (matched == 1)
		return pdi_errline(err, errlen, -EINVAL, "%s has 1 stored run; trends need runs at 2 or more task counts or input "
						  "sizes (3 or more to fit a power law)", latest->executable);
	if (nkeep < 2)
		return pdi_errline(err, errlen, -EINVAL, "%s has %zu usable run%s of its latest build (%zu of an earlier build, %zu "
						  "that did not complete); trends need 2 or more", latest->executable, nkeep,
			    nkeep == 1 ? "" : "s", other_build, not_completed);
	*ret_nkeep = nkeep;
	return 0;
}

/* ---- features ---- */

enum feature { BY_TASKS, BY_SIZE };

static double feature_of(const struct pdi_trend_run *r, enum feature f)
{
	return f == BY_TASKS ? (double)r->tasks : (double)r->input_size;
}

static double held_of(const struct pdi_trend_run *r, enum feature f)
{
	return f == BY_TASKS ? (double)r->input_size : (double)r->tasks;
}

/* The group of KEEP that share the held feature and vary F the most: its held value and the
 * number of distinct F values in it (0 when no group varies F). */
static size_t best_group(const struct pdi_trend_run *runs, const size_t *keep, size_t nkeep, enum feature f,
			 double *ret_held)
{
	size_t best = 0, best_runs = 0;

	for (size_t i = 0; i < nkeep; i++) {
		const struct pdi_trend_run *a = &runs[keep[i]];
		size_t distinct = 0, members = 0;

		if (f == BY_SIZE && !a->input_size)
			continue;
		for (size_t j = 0; j < nkeep; j++) {
			const struct pdi_trend_run *b = &runs[keep[j]];
			bool seen = false;

			if (held_of(b, f) != held_of(a, f) || (f == BY_SIZE && !b->input_size))
				continue;
			members++;
			for (size_t k = 0; k < j && !seen; k++)
				seen = held_of(&runs[keep[k]], f) == held_of(a, f) &&
				       feature_of(&runs[keep[k]], f) == feature_of(b, f) &&
				       (f != BY_SIZE || runs[keep[k]].input_size);
			distinct += !seen;
		}
		if (distinct > best || (distinct == best && members > best_runs)) {
			best = distinct;
			best_runs = members;
			*ret_held = held_of(a, f);
		}
	}
	return best >= 2 ? best : 0;
}

/* ---- series ---- */

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every site name of the runs in KEEP, sorted and unique. */
static int collect_names(struct pdi_trend_set *s, const struct pdi_trend_run *runs, const size_t *keep, size_t nkeep)
{
	size_t total = 0, n = 0;

	for (size_t i = 0; i < nkeep; i++)
		total += runs[keep[i]].nsites;
	s->names = calloc(total + 1, sizeof(*s->names));
	if (!s->names)
		return -ENOMEM;
	for (size_t i = 0; i < nkeep; i++)
		for (size_t k = 0; k < runs[keep[i]].nsites; k++)
			s->names[n++] = (char *)runs[keep[i]].sites[k].name;
	qsort(s->names, n, sizeof(*s->names), by_str);
	for (size_t i = 0; i < n; i++)
		if (s->nnames == 0 || strcmp(s->names[s->nnames - 1], s->names[i]))
			s->names[s->nnames++] = s->names[i];
	for (size_t i = 0; i < s->nnames; i++)
		if (!(s->names[i] = strdup(s->names[i]))) {
			for (size_t k = i; k < s->nnames; k++)
				s->names[k] = NULL;
			return -ENOMEM;
		}
	return 0;
}

/* One feature's input: the runs of KEEP in the group HELD, as per-task series. */
static int lay_out(struct pdi_trend_set *s, int slot, const struct pdi_trend_run *runs, const size_t *keep,
		   size_t nkeep, enum feature f, double held)
{
	size_t nruns = 0, col = 0;
	double *x, *v;

	for (size_t i = 0; i < nkeep; i++)
		nruns += held_of(&runs[keep[i]], f) == held && (f != BY_SIZE || runs[keep[i]].input_size);
	x = s->x[slot] = calloc(nruns, sizeof(*x));
	v = s->values[slot] = calloc(s->nnames * nruns * PDI_TREND_NMETRICS + 1, sizeof(*v));
	if (!x || !v)
		return -ENOMEM;
	for (size_t i = 0; i < nkeep; i++) {
		const struct pdi_trend_run *r = &runs[keep[i]];
		double per = r->counted ? 1.0 / r->counted : 0;

		if (held_of(r, f) != held || (f == BY_SIZE && !r->input_size))
			continue;
		x[col] = feature_of(r, f);
		for (size_t k = 0; k < r->nsites; k++) {
			char *key = (char *)r->sites[k].name, **hit;
			double *cell;

			hit = bsearch(&key, s->names, s->nnames, sizeof(*s->names), by_str);
			cell = &v[((size_t)(hit - s->names) * nruns + col) * PDI_TREND_NMETRICS];
			/* namesakes (two calls on one line) add up */
			cell[PDI_TREND_CALLS] += (double)r->sites[k].calls * per;
			cell[PDI_TREND_BYTES] += (double)r->sites[k].bytes * per;
			cell[PDI_TREND_TIME] += (double)r->sites[k].time_ns * 1e-9 * per;
		}
		col++;
	}
	s->inputs[slot] = (struct pdi_trend_input){.nruns = nruns, .x = x, .nsites = s->nnames,
						   .sites = (const char *const *)s->names, .values = v};
	s->reports[slot] = (struct pdi_trend_report){.feature = f == BY_TASKS ? "tasks" : "input_size", .held = held,
						     .in = &s->inputs[slot], .trends = &s->trends[slot]};
	return pdi_trends_compute(&s->inputs[slot], &s->trends[slot]);
}

void pdi_trend_set_free(struct pdi_trend_set *s)
{
	if (!s)
		return;
	for (int i = 0; i < 2; i++) {
		pdi_trends_done(&s->trends[i]);
		free(s->x[i]);
		free(s->values[i]);
	}
	for (size_t i = 0; s->names && i < s->nnames; i++)
		free(s->names[i]);
	free(s->names);
	for (size_t i = 0; i < s->nnotes; i++)
		free(s->notes[i]);
	free(s->notes);
	free(s->program);
	free(s->executable);
	free(s->build);
	free(s);
}

static int build(struct pdi_trend_set *s, const char *program, const char *source, const struct pdi_trend_run *runs,
		 size_t n, size_t *keep, char *err, size_t errlen)
{
	double held_tasks = 0, held_size = 0;
	size_t nkeep = 0, by_tasks, by_size;
	int r, slot = 0;

	if ((r = choose_runs(s, program, runs, n, keep, &nkeep, err, errlen)) < 0)
		return r;
	by_tasks = best_group(runs, keep, nkeep, BY_TASKS, &held_tasks);
	by_size = best_group(runs, keep, nkeep, BY_SIZE, &held_size);
	if (!by_tasks && !by_size)
		return pdi_errline(err, errlen, -EINVAL, "the %zu usable runs of %s all ran at %u tasks%s: trends need runs at 2 or "
						  "more task counts (or input sizes given with --pdi-monitor=size=N)",
			    nkeep, s->executable, runs[keep[0]].tasks, runs[keep[0]].input_size ? " and one input size" : "");
	if ((r = collect_names(s, runs, keep, nkeep)) < 0)
		return r;
	if (by_tasks && (r = lay_out(s, slot++, runs, keep, nkeep, BY_TASKS, held_tasks)) < 0)
		return r;
	if (by_size && (r = lay_out(s, slot++, runs, keep, nkeep, BY_SIZE, held_size)) < 0)
		return r;
	s->doc = (struct pdi_trend_doc){.program = s->program, .executable = s->executable, .build = s->build,
					.source = source, .reports = s->reports, .nreports = (size_t)slot,
					.notes = (const char *const *)s->notes, .nnotes = s->nnotes};
	return 0;
}

int pdi_trend_set_build(const char *program, const char *source, const struct pdi_trend_run *runs, size_t n,
			struct pdi_trend_set **ret, char *err, size_t errlen)
{
	/* on the heap: the document points into the set */
	struct pdi_trend_set *s = calloc(1, sizeof(*s));
	size_t *keep = calloc(n + 1, sizeof(*keep));
	int r = s && keep ? 0 : -ENOMEM;

	if (errlen)
		err[0] = '\0';
	if (r == 0)
		r = build(s, program, source, runs, n, keep, err, errlen);
	free(keep);
	if (r < 0) {
		if (r == -ENOMEM && errlen && !err[0])
			pdi_errline(err, errlen, r, "out of memory");
		pdi_trend_set_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* analysis.c -- the diagnosis of one step (see analysis.h). Every part that cannot run says
 * why in a limit line instead: a verdict that names what it could not conclude beats a
 * made-up answer. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "mpi_funcs.h"
#include "prefix_tree.h"
#include "ranges.h"
#include "samples.h"

#define PDI_CLEAR_MARGIN 1.2   /* a phase or task this much above the next one is reported */
#define PDI_MIN_PHASES 6       /* compared phases below which no phase is singled out */
#define PDI_SAMPLE_RUNS 3      /* earlier runs taken as AutomaDeD's sample runs */
#define PDI_CLASS_TOLERANCE 0.05 /* tasks whose times agree this closely share a class */

const char *const pdi_where_names[] = {
	[PDI_WHERE_FINISHED] = "finished", [PDI_WHERE_BLOCKED] = "blocked", [PDI_WHERE_IN_MPI] = "in_mpi",
	[PDI_WHERE_COMPUTING] = "computing", [PDI_WHERE_NO_MPI] = "no_mpi"};

static void add_limit(struct pdi_analysis *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_limit(struct pdi_analysis *a, const char *fmt, ...)
{
	va_list ap;

	if (a->nlimits == PDI_ANALYSIS_MAX_LIMITS)
		return;
	va_start(ap, fmt);
	vsnprintf(a->limits[a->nlimits++], sizeof(a->limits[0]), fmt, ap);
	va_end(ap);
}

/* Tasks grouped by where they are; groups sorted smallest first: the odd ones out lead. */
static int group_tasks(struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	struct pdi_where_group *g = calloc(s->ntasks ? s->ntasks : 1, sizeof(*g));
	size_t ng = 0;

	if (!g)
		return -ENOMEM;
	a->groups = g;
	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct pdi_where *w = &s->tasks[i].where;
		size_t k = 0;

		while (k < ng && !(g[k].kind == w->kind && !strcmp(g[k].text, w->text)))
			k++;
		if (k == ng) {
			g[ng] = (struct pdi_where_group){.kind = w->kind, .text = w->text,
							 .ranks = calloc(s->ntasks, sizeof(int))};
			if (!g[ng++].ranks)
				return -ENOMEM;
			a->ngroups = ng;
		}
		g[k].ranks[g[k].n++] = s->tasks[i].rank;
	}
	for (size_t i = 1; i < ng; i++) /* a handful of groups: insertion sort */
		for (size_t j = i; j > 0 && g[j].n < g[j - 1].n; j--) {
			struct pdi_where_group x = g[j];
			g[j] = g[j - 1];
			g[j - 1] = x;
		}
	return 0;
}

static const char *verdict_kind(const struct pdi_analysis *a)
{
	bool blocked = false, all_finished = a->ngroups > 0;

	for (size_t i = 0; i < a->ngroups; i++) {
		blocked |= a->groups[i].kind == PDI_WHERE_BLOCKED;
		all_finished &= a->groups[i].kind == PDI_WHERE_FINISHED;
	}
	if (!a->view->ntasks)
		return "not_monitored";
	if (all_finished)
		return "completed";
	if (blocked)
		return "hang";
	return pdi_view_running(a->view) ? "running" : "incomplete";
}

/* PDI on the view's tasks: the progress dependence graph and the least-progressed ranks. */
static int least_progressed(struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	size_t cap = s->ntasks ? s->ntasks : 1, n = 0, nlp = 0;
	struct pdi_position *pos = calloc(cap, sizeof(*pos));
	struct pdi_mm *mm = calloc(cap, sizeof(*mm));
	int *ranks = calloc(cap, sizeof(*ranks));
	int r = -ENOMEM;

	if (!pos || !mm || !ranks)
		goto out;
	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct pdi_view_task *t = &s->tasks[i];
		const struct pdi_where *w = &t->where;

		if (w->site < 0 || w->kind == PDI_WHERE_NO_MPI || t->rank < 0)
			continue; /* nowhere known: no part in the graph */
		if ((r = pdi_mm_build(t->model, &mm[n])) < 0)
			goto out;
		pos[n] = (struct pdi_position){.rank = t->rank, .state = pdi_state_comm((uint32_t)w->site),
					       .inside = w->kind == PDI_WHERE_BLOCKED || w->kind == PDI_WHERE_IN_MPI,
					       .finished = w->kind == PDI_WHERE_FINISHED, .mm = &mm[n],
					       .peers = w->peers, .npeers = w->npeers,
					       .collective = (uint64_t)w->site < s->nsites &&
							     pdi_mpi_funcs[s->sites[w->site].fn].cls == PDI_FC_COLL};
		n++;
	}
	if ((r = pdi_pdg_build(pos, n, &a->pdg)) < 0)
		goto out;
	a->has_pdg = true;
	for (size_t k = 0; k < a->pdg.ngroups; k++)
		for (size_t x = 0; a->pdg.groups[k].lp && x < a->pdg.groups[k].n; x++)
			ranks[nlp++] = a->pdg.groups[k].ranks[x];
	if (nlp)
		pdi_ranges_format(ranks, nlp, a->lp, sizeof(a->lp));
	else
		add_limit(a, "PDI could not single out a least-progressed task: the blocked tasks do not wait "
			     "on one another in a way their models can order");
	r = 0;
out:
	for (size_t k = 0; k < n; k++)
		pdi_mm_done(&mm[k]);
	free(mm);
	free(pos);
	free(ranks);
	return r;
}

/* The ranks of the view's tasks that PRED picks, as "[0-3]" into BUF; 0 when none. */
static size_t ranks_where(const struct pdi_view *s, bool (*pred)(const struct pdi_view_task *), char *buf, size_t len)
{
	int *ranks = malloc((s->ntasks + 1) * sizeof(*ranks)); /* a task count: never on the stack */
	size_t n = 0;

	for (unsigned i = 0; i < s->ntasks; i++)
		if (pred(&s->tasks[i]))
			n++;
	if (n && !ranks)
		snprintf(buf, len, "?");
	else if (n) {
		n = 0;
		for (unsigned i = 0; i < s->ntasks; i++)
			if (pred(&s->tasks[i]))
				ranks[n++] = s->tasks[i].rank;
		pdi_ranges_format(ranks, n, buf, len);
	}
	free(ranks);
	return n;
}

static bool made_no_call(const struct pdi_view_task *t)
{
	return t->model->nphases == 0;
}

static bool incomplete(const struct pdi_view_task *t)
{
	return t->lost || t->model->dropped_states || t->model->dropped_edges;
}

static bool missed_calls(const struct pdi_view_task *t)
{
	return t->gap;
}

/* the overhead budget thinned its probes for a while (unobserved.h) */
static bool observed_in_part(const struct pdi_view_task *t)
{
	return t->model->unobserved.n > 0;
}

/* Classes of the tasks that made MPI calls, and their sample runs' models lined up. */
static int automaded_input(struct pdi_store *store, struct pdi_analysis *a, const struct pdi_model ***ret_models,
			   uint32_t **ret_weights, struct pdi_samples *samples, const struct pdi_model ***ret_rows)
{
	const struct pdi_view *s = a->view;
	const struct pdi_model **all = calloc(s->ntasks + 1, sizeof(*all)), **models = NULL, **rows = NULL;
	uint32_t *index = calloc(s->ntasks + 1, sizeof(*index)), *weights = NULL;
	size_t n = 0;
	int r = -ENOMEM;

	if (!all || !index)
		goto out;
	for (unsigned i = 0; i < s->ntasks; i++)
		if (s->tasks[i].model->nphases > 0) {
			index[n] = i;
			all[n++] = s->tasks[i].model;
		}
	if ((r = pdi_eqclass_build(all, n, PDI_CLASS_TOLERANCE, &a->classes)) < 0)
		goto out;
	r = -ENOMEM;
	/* members index the view's tasks from here on */
	for (size_t c = 0; c < a->classes.n; c++)
		for (uint32_t k = 0; k < a->classes.classes[c].n; k++)
			a->classes.classes[c].members[k] = index[a->classes.classes[c].members[k]];
	models = calloc(a->classes.n + 1, sizeof(*models));
	weights = calloc(a->classes.n + 1, sizeof(*weights));
	if (!models || !weights)
		goto out;
	for (size_t c = 0; c < a->classes.n; c++) {
		models[c] = a->classes.classes[c].model;
		weights[c] = a->classes.classes[c].n;
	}
	/* the store holds this node's part of earlier steps: sample runs of a one-node view only */
	if (store && s->local && s->local->executable &&
	    pdi_samples_load(store, s->local, PDI_SAMPLE_RUNS, samples) == 0 && samples->nruns) {
		rows = calloc(samples->nruns * a->classes.n + 1, sizeof(*rows));
		if (!rows)
			goto out;
		for (unsigned run = 0; run < samples->nruns; run++)
			for (size_t c = 0; c < a->classes.n; c++)
				rows[run * a->classes.n + c] = samples->runs[run].row[a->classes.classes[c].members[0]];
		a->sample_runs = samples->nruns;
	}
	*ret_models = models;
	*ret_weights = weights;
	*ret_rows = rows;
	models = NULL;
	weights = NULL;
	r = 0;
out:
	free(all);
	free(index);
	free(models);
	free(weights);
	return r;
}

/* AutomaDeD on classes of the tasks' per-phase models. */
static int automaded(struct pdi_store *store, struct pdi_analysis *a)
{
	const struct pdi_model **models = NULL, **rows = NULL;
	struct pdi_samples samples = {0};
	uint32_t *weights = NULL;
	const char *why = NULL;
	int r;

	r = automaded_input(store, a, &models, &weights, &samples, &rows);
	if (r < 0)
		goto out;
	r = pdi_automaded_run(&(struct pdi_automaded_input){.models = models, .weights = weights, .n = a->classes.n,
							     .dist = PDI_TIME_GAUSS, .samples = rows,
							     .nsamples = rows ? a->sample_runs : 0},
			      &a->am, &why);
	if (r == -EINVAL) {
		add_limit(a, "AutomaDeD: %s", why ? why : "nothing to compare");
		r = 0;
		goto out;
	}
	if (r < 0)
		goto out;
	a->has_automaded = true;
	if (a->am.end_phase - a->am.first_phase < PDI_MIN_PHASES && !a->sample_runs)
		add_limit(a, "AutomaDeD: only %u phases compared and no earlier run to compare with: too few to "
			     "single out a phase with confidence",
			  a->am.end_phase - a->am.first_phase);
	a->abnormal = a->am.phase_margin >= PDI_CLEAR_MARGIN && a->am.task_margin >= PDI_CLEAR_MARGIN &&
		      a->am.ntop > 0 && (a->am.end_phase - a->am.first_phase >= PDI_MIN_PHASES || a->sample_runs);
out:
	pdi_samples_done(&samples);
	free(models);
	free(weights);
	free(rows);
	return r;
}

/* STAT's view: the tasks' current call paths merged, ordered by progress: the live stacks of
 * blocked tasks, the calling function and call site of the others. */
static int prefix_tree(struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	int r = pdi_ptree_new(&a->tree);

	for (unsigned i = 0; r == 0 && i < s->ntasks; i++) {
		const struct pdi_view_task *t = &s->tasks[i];
		const struct pdi_where *w = &t->where;
		const char *frames[2];
		size_t n = 0;

		if (t->stack) {
			r = pdi_ptree_add(a->tree, t->rank, (const char *const *)t->stack, t->nstack, t->progress);
			continue;
		}
		if (w->site >= 0 && (uint64_t)w->site < s->nsites)
			frames[n++] = s->sites[w->site].caller && s->sites[w->site].caller[0] ? s->sites[w->site].caller : "?";
		switch (w->kind) {
		case PDI_WHERE_FINISHED: frames[n++] = "(finished)"; break;
		case PDI_WHERE_NO_MPI: frames[n++] = "(no MPI call)"; break;
		default: frames[n++] = w->text; break;
		}
		r = pdi_ptree_add(a->tree, t->rank, frames, n, t->progress);
	}
	return r;
}

int pdi_analysis_build(struct pdi_store *store, const struct pdi_view *s, struct pdi_analysis *ret)
{
	struct pdi_analysis *a = ret;
	char ranks[256];
	int r;

	*a = (struct pdi_analysis){.view = s};
	pdi_eqclasses_init(&a->classes, PDI_CLASS_TOLERANCE);
	if (s->nmissing) {
		char lost[160];
		size_t len = 0;

		for (unsigned i = 0; i < s->nmissing && len + 1 < sizeof(ranks); i++)
			len += (size_t)snprintf(ranks + len, sizeof(ranks) - len, "%s%s (%s)", i ? ", " : "", s->missing[i],
						s->missing_why[i]);
		pdi_analysis_missing_ranks(a, lost, sizeof(lost));
		add_limit(a, "partial: %u of %u nodes answered; missing %s%s%s", s->nodes_answered, s->nodes, ranks,
			  lost[0] ? "; ranks not heard from " : "", lost);
	}
	if ((r = group_tasks(a)) < 0)
		goto fail;
	a->kind = verdict_kind(a);
	if (!s->ntasks)
		add_limit(a, "no MPI task was monitored: nothing to analyse");
	else if (s->ntasks == 1)
		add_limit(a, "a single task: AutomaDeD compares its phases with each other only, and PDI has no other "
			     "task to order it against");
	if (ranks_where(s, made_no_call, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s made no MPI call: they have no model to analyse", ranks);
	if (ranks_where(s, incomplete, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s lost events or dropped states: their models are incomplete, so their scores "
			     "understate them", ranks);
	if (ranks_where(s, missed_calls, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s made calls while pdimond was down: their models miss them", ranks);
	if (ranks_where(s, observed_in_part, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s were probed in part to keep them within max_overhead_pct (their \"unobserved\" "
			     "intervals): calls of the functions named there are missing from their models for that "
			     "time, so transitions around them, and where a rank was inside them, may be unseen", ranks);
	if (!strcmp(a->kind, "hang") && (r = least_progressed(a)) < 0)
		goto fail;
	if ((r = automaded(store, a)) < 0 || (r = prefix_tree(a)) < 0)
		goto fail;
	return 0;
fail:
	pdi_analysis_done(a);
	return r;
}

void pdi_analysis_done(struct pdi_analysis *a)
{
	for (size_t i = 0; a->groups && i < a->ngroups; i++)
		free(a->groups[i].ranks);
	free(a->groups);
	if (a->has_pdg)
		pdi_pdg_done(&a->pdg);
	if (a->has_automaded)
		pdi_automaded_done(&a->am);
	pdi_eqclasses_done(&a->classes);
	pdi_ptree_free(a->tree);
	*a = (struct pdi_analysis){0};
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

void pdi_analysis_missing_ranks(const struct pdi_analysis *a, char *buf, size_t len)
{
	const struct pdi_view *v = a->view;
	int *seen = malloc((v->ntasks + 1) * sizeof(*seen)), *lost;
	size_t nlost = 0, k = 0;

	buf[0] = '\0';
	if (!seen || !v->expected_tasks || v->ntasks >= v->expected_tasks) {
		free(seen);
		return;
	}
	for (unsigned i = 0; i < v->ntasks; i++)
		seen[i] = v->tasks[i].rank;
	qsort(seen, v->ntasks, sizeof(*seen), cmp_int);
	lost = malloc((v->expected_tasks - v->ntasks + 1) * sizeof(*lost));
	/* the ranks 0..expected-1 the sorted list of those seen skips */
	for (int r = 0; lost && r < (int)v->expected_tasks && nlost < v->expected_tasks - v->ntasks; r++) {
		while (k < v->ntasks && seen[k] < r)
			k++;
		if (k == v->ntasks || seen[k] != r)
			lost[nlost++] = r;
	}
	if (nlost)
		pdi_ranges_format(lost, nlost, buf, len);
	free(lost);
	free(seen);
}

static size_t class_ranks(const struct pdi_analysis *a, size_t c, int *ranks)
{
	const struct pdi_eqclass *k = &a->classes.classes[c];

	for (uint32_t i = 0; i < k->n; i++)
		ranks[i] = a->view->tasks[k->members[i]].rank;
	return k->n;
}

int *pdi_analysis_ranks_alloc(const struct pdi_analysis *a)
{
	return malloc((a->view->ntasks + 1) * sizeof(int));
}

void pdi_analysis_class_ranks(const struct pdi_analysis *a, size_t i, char *buf, size_t len)
{
	int *ranks = pdi_analysis_ranks_alloc(a);
	size_t n;

	if (!ranks) {
		snprintf(buf, len, "?");
		return;
	}
	n = class_ranks(a, i, ranks);
	qsort(ranks, n, sizeof(*ranks), cmp_int);
	pdi_ranges_format(ranks, n, buf, len);
	free(ranks);
}

size_t pdi_analysis_faulty_ranks(const struct pdi_analysis *a, int *ranks)
{
	const struct pdi_automaded *am = &a->am;
	size_t n = 0, in_cluster = 0;

	if (!a->has_automaded)
		return 0;
	for (size_t c = 0; c < a->classes.n; c++)
		if (am->cluster[c] == am->faulty_cluster)
			in_cluster += a->classes.classes[c].n;
	if (am->nclusters > 1 && 2 * in_cluster < a->view->ntasks) {
		for (size_t c = 0; c < a->classes.n; c++)
			if (am->cluster[c] == am->faulty_cluster)
				n += class_ranks(a, c, ranks + n);
	} else {
		n = class_ranks(a, am->faulty_task, ranks);
	}
	qsort(ranks, n, sizeof(*ranks), cmp_int);
	return n;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* analysis.c -- the diagnosis of one step (see analysis.h). Every part that cannot run says
 * why in a limit line instead: a verdict that names what it could not conclude beats a
 * made-up answer. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "baseline.h"
#include "mpi_funcs.h"
#include "prefix_tree.h"
#include "ranges.h"
#include "u64map.h"

#define PDI_CLEAR_MARGIN 1.2   /* a phase or task this much above the next one is reported */
/* The noise floor of "abnormal": the faulty phase's score must stand this many robust standard
 * deviations (1.4826 MAD) above the median of the step's other phases. The maximum of ~50
 * phases of pure noise reaches about 4 (fault-free runs of real programs in the campaign,
 * bench/apps.py); an injected 2-5 s stall stands at tens to thousands. */
#define PDI_NOISE_Z 8.0
#define PDI_NOISE_Z_HIGH 30.0
#define PDI_MIN_PHASES 6       /* compared phases below which no phase is singled out */
#define PDI_CLASS_TOLERANCE 0.05 /* tasks whose times agree this closely share a class */

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
	/* no task in one call for long, but the hang judge saw none progress: they poll, or compute */
	if (blocked || (a->view->hung && pdi_view_running(a->view)))
		return "hang";
	return pdi_view_running(a->view) ? "running" : "incomplete";
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

static bool held_by_kernel(const struct pdi_where *w)
{
	return w->act.kind == PDI_ACT_STOPPED || w->act.kind == PDI_ACT_DISK;
}

/* T shows as computing, but the overhead budget thinned its probes since its last seen call:
 * it may as well be blocked in a call its probes did not see begin. Its live stack tells
 * (where.by_stack); without it, nobody can. */
static bool maybe_in_unseen_call(const struct pdi_view_task *t)
{
	return t->where.kind == PDI_WHERE_COMPUTING && !t->where.by_stack &&
	       pdi_unobserved_blind_since(&t->model->unobserved, t->model->last_exit);
}

/* T computes outside MPI, and has since before the blocked tasks blocked (FOR_NS ago). */
static bool computing_all_along(const struct pdi_view_task *t, uint64_t for_ns)
{
	return t->running && t->where.kind == PDI_WHERE_COMPUTING && t->where.for_ns >= for_ns &&
	       !held_by_kernel(&t->where) && !maybe_in_unseen_call(t);
}

/* Whether the NLP RANKS PDI found are the tasks computing all along since FOR_NS: then PDI
 * said it, and its answer stands as its own. */
static bool same_ranks_computing(const struct pdi_view *s, const int *ranks, size_t nlp, uint64_t for_ns)
{
	size_t same = 0;

	for (unsigned i = 0; i < s->ntasks; i++)
		if (computing_all_along(&s->tasks[i], for_ns)) {
			size_t k = 0;

			while (k < nlp && ranks[k] != s->tasks[i].rank)
				k++;
			if (k == nlp)
				return false;
			same++;
		}
	return same == nlp;
}

/* PDI on the view's tasks: the progress dependence graph and the least-progressed ranks. The
 * Markov model is built once per model object (a gathered view shares one among a class). */
static int least_progressed(struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	size_t cap = s->ntasks ? s->ntasks : 1, n = 0, nlp = 0, nmm = 0;
	struct pdi_position *pos = calloc(cap, sizeof(*pos));
	struct pdi_mm *mm = calloc(cap, sizeof(*mm));
	int *ranks = calloc(cap, sizeof(*ranks));
	struct pdi_u64map built = {0}; /* model object -> its Markov model in MM */
	int r = -ENOMEM;

	if (!pos || !mm || !ranks)
		goto out;
	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct pdi_view_task *t = &s->tasks[i];
		const struct pdi_where *w = &t->where;
		uint64_t key = (uint64_t)(uintptr_t)t->model;
		uint32_t k;

		if (w->site < 0 || w->kind == PDI_WHERE_NO_MPI || t->rank < 0)
			continue; /* nowhere known: no part in the graph */
		if ((k = pdi_u64map_get(&built, key)) == PDI_U64MAP_NONE) {
			if ((r = pdi_mm_build(t->model, &mm[nmm])) < 0)
				goto out;
			k = (uint32_t)nmm++;
			if ((r = pdi_u64map_put(&built, key, k)) < 0)
				goto out;
		}
		pos[n] = (struct pdi_position){.rank = t->rank, .state = pdi_state_comm((uint32_t)w->site),
					       .inside = w->kind == PDI_WHERE_BLOCKED || w->kind == PDI_WHERE_IN_MPI,
					       .finished = w->kind == PDI_WHERE_FINISHED, .mm = &mm[k],
					       .peers = w->peers, .npeers = w->npeers,
					       .collective = (uint64_t)w->site < s->nsites &&
							     pdi_mpi_funcs[s->sites[w->site].fn].cls == PDI_FC_COLL};
		n++;
	}
	if ((r = pdi_pdg_build(pos, n, &a->pdg)) < 0)
		goto out;
	a->has_pdg = true;
	a->lp_by = "pdi";
	for (size_t k = 0; k < a->pdg.ngroups; k++)
		for (size_t x = 0; a->pdg.groups[k].lp && x < a->pdg.groups[k].n; x++)
			ranks[nlp++] = a->pdg.groups[k].ranks[x];
	/* A task the kernel holds (stopped by a signal, in uninterruptible sleep) cannot move by
	 * itself, while a task waiting in MPI moves as soon as its peer does: when a minority is
	 * so held, every other task waits for it, directly or not, wherever it sits (the same
	 * call as the waiting ones, or an earlier collective they have gone past). */
	{
		size_t nheld = 0;

		for (unsigned i = 0; i < s->ntasks; i++)
			if (s->tasks[i].running && held_by_kernel(&s->tasks[i].where))
				nheld++;
		if (nheld && 2 * nheld < s->ntasks) {
			nlp = 0;
			for (unsigned i = 0; i < s->ntasks; i++)
				if (s->tasks[i].running && held_by_kernel(&s->tasks[i].where))
					ranks[nlp++] = s->tasks[i].rank;
			a->lp_by = "kernel";
		}
	}
	/* A minority that has computed outside MPI since before the others blocked cannot be
	 * waiting for them through MPI, while they wait for someone: that minority holds the step.
	 * It is taken when PDI could not order the tasks (its Table 1 leaves a loop's states
	 * undefined, and a wait with no known peer has no point-to-point edge), and over PDI's
	 * answer when every other task waits in MPI: a probabilistic order does not beat that. */
	if (strcmp(a->lp_by, "kernel")) {
		uint64_t blocked_since = UINT64_MAX;
		size_t nblocked = 0, nout = 0, nrunning = 0;

		for (unsigned i = 0; i < s->ntasks; i++)
			if (s->tasks[i].running && s->tasks[i].where.kind == PDI_WHERE_BLOCKED) {
				nblocked++;
				if (s->tasks[i].where.for_ns < blocked_since)
					blocked_since = s->tasks[i].where.for_ns;
			}
		/* tasks that poll in MPI are never long in one call, nor out of it: the judge's quiet
		 * says since when they wait */
		if (s->hung && s->hung_for_ns < blocked_since)
			blocked_since = s->hung_for_ns;
		for (unsigned i = 0; i < s->ntasks; i++) {
			const struct pdi_view_task *t = &s->tasks[i];

			nrunning += t->running;
			if (computing_all_along(t, blocked_since))
				nout++;
			else if (s->hung && t->running &&
				 (t->where.kind == PDI_WHERE_IN_MPI || t->where.kind == PDI_WHERE_COMPUTING))
				nblocked++;
		}
		if (!nblocked)
			nout = 0;
		if (nout && 2 * nout < s->ntasks && (nlp == 0 || nlp == n || nblocked + nout == nrunning) &&
		    !same_ranks_computing(s, ranks, nlp, blocked_since)) {
			nlp = 0;
			for (unsigned i = 0; i < s->ntasks; i++)
				if (computing_all_along(&s->tasks[i], blocked_since))
					ranks[nlp++] = s->tasks[i].rank;
			a->lp_by = "outside_mpi";
		}
	}
	if (nlp) {
		qsort(ranks, nlp, sizeof(*ranks), cmp_int);
		pdi_ranges_format(ranks, nlp, a->lp, sizeof(a->lp));
		for (size_t k = 0; strcmp(a->lp_by, "pdi") && k < a->pdg.ngroups; k++) { /* the graph says so too */
			a->pdg.groups[k].lp = false;
			for (size_t x = 0; x < a->pdg.groups[k].n; x++)
				if (bsearch(&a->pdg.groups[k].ranks[x], ranks, nlp, sizeof(*ranks), cmp_int))
					a->pdg.groups[k].lp = true;
		}
		a->lp_ranks = ranks;
		a->nlp = nlp;
		ranks = NULL;
	}
	else
		add_limit(a, "PDI could not single out a least-progressed task: the blocked tasks do not wait "
			     "on one another in a way their models can order");
	r = 0;
out:
	pdi_u64map_free(&built);
	for (size_t k = 0; k < nmm; k++)
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

static bool missed_calls(const struct pdi_view_task *t)
{
	return t->gap;
}

/* inside a call its thinned probes did not see begin, found on its live stack */
static bool in_call_by_stack(const struct pdi_view_task *t)
{
	return t->where.by_stack && (t->where.kind == PDI_WHERE_BLOCKED || t->where.kind == PDI_WHERE_IN_MPI);
}

/* the overhead budget thinned its probes for a while (unobserved.h) */
static bool observed_in_part(const struct pdi_view_task *t)
{
	return t->model->unobserved.n > 0;
}

/* its budget began degraded, as earlier runs of its program needed (budget_learn.h) */
static bool degraded_from_earlier_runs(const struct pdi_view_task *t)
{
	return pdi_unobserved_any_from_earlier_runs(&t->model->unobserved);
}

/* Classes of the tasks that made MPI calls (members index the view's tasks). Tasks that share
 * one model object (a gathered view holds one model per class of each node) are classed
 * once: digesting 100,000 copies of a few models would cost seconds. */
static int classify(struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	uint64_t *keys = calloc(s->ntasks + 1, sizeof(*keys));
	uint32_t *index = calloc(s->ntasks + 1, sizeof(*index)), *members = calloc(s->ntasks + 1, sizeof(*members));
	struct pdi_eqclasses same;
	size_t n = 0;
	int r = -ENOMEM;

	if (!keys || !index || !members)
		goto out;
	for (unsigned i = 0; i < s->ntasks; i++)
		if (s->tasks[i].model->nphases > 0) {
			index[n] = i;
			keys[n++] = (uint64_t)(uintptr_t)s->tasks[i].model;
		}
	if ((r = pdi_eqclass_by_key(keys, n, &same)) < 0)
		goto out;
	for (size_t k = 0; r >= 0 && k < same.n; k++) {
		const struct pdi_eqclass *o = &same.classes[k];
		const struct pdi_model *m = s->tasks[index[o->members[0]]].model;

		for (uint32_t x = 0; x < o->n; x++)
			members[x] = index[o->members[x]];
		r = pdi_eqclass_add(&a->classes, m, pdi_model_digest(m, PDI_CLASS_TOLERANCE), members, o->n, NULL);
	}
	pdi_eqclasses_done(&same);
	r = r < 0 ? r : 0;
out:
	free(keys);
	free(index);
	free(members);
	return r;
}

/* AutomaDeD's input: one model per class, weighted by its tasks, and the sample runs' models
 * of each class's first task lined up with them. */
static int automaded_input(const struct pdi_analysis_samples *samples, struct pdi_analysis *a,
			   const struct pdi_model ***ret_models, uint32_t **ret_weights, const struct pdi_model ***ret_rows)
{
	const struct pdi_model **models = NULL, **rows = NULL;
	uint32_t *weights = NULL;
	int r;

	if ((r = classify(a)) < 0)
		return r;
	r = -ENOMEM;
	models = calloc(a->classes.n + 1, sizeof(*models));
	weights = calloc(a->classes.n + 1, sizeof(*weights));
	if (!models || !weights)
		goto out;
	for (size_t c = 0; c < a->classes.n; c++) {
		models[c] = a->classes.classes[c].model;
		weights[c] = a->classes.classes[c].n;
	}
	if (samples && samples->nruns) {
		rows = calloc(samples->nruns * a->classes.n + 1, sizeof(*rows));
		if (!rows)
			goto out;
		for (unsigned run = 0; run < samples->nruns; run++) {
			const struct pdi_model **row = rows + a->sample_runs * a->classes.n;
			bool phased = true;

			for (size_t c = 0; c < a->classes.n; c++) {
				row[c] = samples->rows[run][a->classes.classes[c].members[0]];
				phased &= row[c] && (row[c]->nphases >= 2 || models[c]->nphases < 2);
			}
			/* a run of one phase (NWChem's, when the budget its earlier runs learned thinned
			 * the collectives phases are cut on from the start) has no phase to line up with
			 * a step of several: comparing with it would find nothing, not tell normal from
			 * abnormal. Against a step of one phase it is like with like. */
			a->sample_runs += phased;
		}
		if (!a->sample_runs) {
			free(rows);
			rows = NULL;
		}
	}
	*ret_models = models;
	*ret_weights = weights;
	*ret_rows = rows;
	models = NULL;
	weights = NULL;
	r = 0;
out:
	free(models);
	free(weights);
	return r;
}

/* AutomaDeD on classes of the tasks' per-phase models. */
static int automaded(const struct pdi_analysis_samples *samples, struct pdi_analysis *a)
{
	const struct pdi_model **models = NULL, **rows = NULL;
	uint32_t *weights = NULL;
	const char *why = NULL;
	bool few, held;
	int r;

	r = automaded_input(samples, a, &models, &weights, &rows);
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
	/* with few phases, what is usual for a phase is not known: only a task the kernel's counts
	 * single out against its peers in the phase it lost its time in (held by the kernel, or on a
	 * CPU a stall's worth longer than any of them: lost_time.h), or one not getting CPU against
	 * its peers in the same phases (starved.h) is named */
	few = a->am.end_phase - a->am.first_phase < PDI_MIN_PHASES && !a->sample_runs;
	held = (a->am.by_lost && (a->am.lost.kind == PDI_LOST_HELD ||
				  pdi_lost_kernel_alone(&a->am.lost, (const struct pdi_model *const *)models,
							a->classes.n))) ||
	       a->am.by_starved || /* its share of the CPU against its peers' in the same phases */
	       a->am.by_group;     /* every rank's against its own usual, and what the job's group took */
	if (few && !held)
		add_limit(a, "AutomaDeD: only %u phases compared and no earlier run to compare with: too few to "
			     "single out a phase with confidence",
			  a->am.end_phase - a->am.first_phase);
	/* the evidence against the step's own variation, and the seconds of it that healthy
	 * earlier runs of the program reach by themselves (AutomaDeD 3.4: the threshold trained on
	 * sample runs; the documented floor without any) */
	{
		struct pdi_evidence e;

		pdi_evidence_of(&a->am, &e);
		a->excess_s = e.excess_s;
		a->noise_z = e.z;
	}
	r = pdi_baseline_of(&(struct pdi_automaded_input){.models = models, .weights = weights, .n = a->classes.n,
							  .dist = PDI_TIME_GAUSS, .samples = rows,
							  .nsamples = rows ? a->sample_runs : 0},
			    &a->baseline);
	if (r < 0)
		goto out;
	/* the evidence beats the step's own variation and what earlier runs reach by themselves */
	a->beyond_noise = a->noise_z >= PDI_NOISE_Z &&
		       (a->am.by_lost || a->am.by_starved || a->am.by_group
				? a->excess_s >= a->baseline.floor_s
				: a->am.ntop > 0 && (a->excess_s >= a->baseline.floor_s ||
						     (a->am.effect == PDI_EFFECT_PERMANENT && a->sample_runs)));
	a->abnormal = a->beyond_noise && a->am.phase_margin >= PDI_CLEAR_MARGIN && a->am.task_margin >= PDI_CLEAR_MARGIN &&
		      a->view->ntasks > 1 && (!few || held);
	a->confidence = !a->abnormal ? "none" : a->noise_z >= PDI_NOISE_Z_HIGH && a->am.task_margin >= 2 ? "high"
						: a->noise_z >= 2 * PDI_NOISE_Z ? "medium" : "low";
	if (!a->abnormal && a->am.ntop > 0 && (a->baseline.runs || a->am.end_phase - a->am.first_phase >= PDI_MIN_PHASES)) {
		char against[160], why[200];

		if (a->baseline.runs)
			snprintf(against, sizeof(against), "; %u earlier run%s of the program showed up to %.2f s by themselves",
				 a->baseline.runs, a->baseline.runs > 1 ? "s" : "", a->baseline.excess_s);
		else
			against[0] = '\0';
		/* the reason the verdict is "nothing abnormal": beyond the noise but not singled out is
		 * no "normal variation" (Monitor.transient_stall_phase at a load of 42 said it of 59.5
		 * deviations and 2.99 s) */
		if (!a->beyond_noise)
			snprintf(why, sizeof(why), "within the normal variation (abnormal from %.0f deviations and %.2f s%s)",
				 PDI_NOISE_Z, a->baseline.floor_s, against);
		else if (a->am.phase_margin < PDI_CLEAR_MARGIN)
			snprintf(why, sizeof(why), "beyond the normal variation, but another phase stands within %.2f times "
				 "of it (a phase is named from %.1f times the next)", a->am.phase_margin, PDI_CLEAR_MARGIN);
		else if (a->am.task_margin < PDI_CLEAR_MARGIN)
			snprintf(why, sizeof(why), "beyond the normal variation, but no task stands apart in it (the most "
				 "deviant one %.2f times the next, named from %.1f)", a->am.task_margin, PDI_CLEAR_MARGIN);
		else
			snprintf(why, sizeof(why), "beyond the normal variation, but a step of one task has no peer to "
				 "single it out from");
		add_limit(a, "AutomaDeD: the most deviant phase (%u) stands %.1f robust deviations above the others and took "
			     "%.2f s longer than usual: %s",
			  a->am.faulty_phase, a->noise_z, a->excess_s, why);
	}
out:
	free(models);
	free(weights);
	free(rows);
	return r;
}

const char *const pdi_phase_kind_names[] = {
	[PDI_PHASE_SETUP] = "setup", [PDI_PHASE_STEADY] = "steady", [PDI_PHASE_TEARDOWN] = "teardown"};

/* Every phase's wall-clock window over the tasks that have it, and its kind: set-up and
 * tear-down are the prologue and epilogue AutomaDeD leaves out of its comparison (the first
 * and last phase from 3 phases on when it did not run). */
static int phase_windows(struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	uint32_t n = 0, first, end;
	int64_t t0 = 0;

	for (unsigned i = 0; i < s->ntasks; i++)
		if (s->tasks[i].model->nphases > n)
			n = s->tasks[i].model->nphases;
	if (!n)
		return 0;
	a->phases = calloc(n, sizeof(*a->phases));
	if (!a->phases)
		return -ENOMEM;
	a->nphases = n;
	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct pdi_view_task *t = &s->tasks[i];

		for (uint32_t p = 0; t->wall_offset_ns && p < t->model->nphases; p++) {
			const struct pdi_phase *ph = &t->model->phases[p];
			int64_t b = (int64_t)ph->t_start + t->wall_offset_ns, e = (int64_t)ph->t_end + t->wall_offset_ns;

			if (!a->phases[p].start_ns || b < a->phases[p].start_ns)
				a->phases[p].start_ns = b;
			if (e > a->phases[p].end_ns)
				a->phases[p].end_ns = e;
		}
	}
	/* the step began when it was registered (whole seconds), or at its first MPI call if earlier */
	t0 = s->started * 1000000000ll;
	if (a->phases[0].start_ns && (!t0 || a->phases[0].start_ns < t0))
		t0 = a->phases[0].start_ns;
	if (a->has_automaded) {
		first = a->am.first_phase;
		end = a->am.end_phase;
	} else {
		first = n >= 3 ? 1 : 0;
		end = n >= 3 ? n - 1 : n;
	}
	for (uint32_t p = 0; p < n; p++) {
		struct pdi_phase_window *w = &a->phases[p];

		w->kind = p < first ? PDI_PHASE_SETUP : p >= end ? PDI_PHASE_TEARDOWN : PDI_PHASE_STEADY;
		if (w->start_ns) {
			w->start_s = (double)(w->start_ns - t0) / 1e9;
			w->end_s = (double)(w->end_ns - t0) / 1e9;
		}
	}
	return 0;
}

void pdi_analysis_confidence_text(const struct pdi_analysis *a, char *buf, size_t len)
{
	if (a->sample_runs)
		snprintf(buf, len, "%s, against %u earlier run%s of the program", a->confidence, a->sample_runs,
			 a->sample_runs > 1 ? "s" : "");
	else
		snprintf(buf, len, "%s, against this step's own phases only (no earlier run of the program)",
			 a->confidence);
}

void pdi_time_iso(int64_t epoch_ns, char *buf, size_t len)
{
	time_t sec = (time_t)(epoch_ns / 1000000000);
	struct tm tm;

	if (!epoch_ns || !gmtime_r(&sec, &tm)) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(epoch_ns % 1000000000 / 1000000));
}

void pdi_analysis_phase_text(const struct pdi_analysis *a, uint32_t p, char *buf, size_t len)
{
	const struct pdi_phase_window *w;
	char b[40], e[40];

	if (p >= a->nphases || !a->phases[p].start_ns) {
		snprintf(buf, len, "%s", "");
		return;
	}
	w = &a->phases[p];
	pdi_time_iso(w->start_ns, b, sizeof(b));
	pdi_time_iso(w->end_ns, e, sizeof(e));
	/* the time of day only: the date is the report's */
	snprintf(buf, len, "%.1f s – %.1f s after start (%.12s – %.12s UTC), %s", w->start_s, w->end_s,
		 strchr(b, 'T') ? strchr(b, 'T') + 1 : b, strchr(e, 'T') ? strchr(e, 'T') + 1 : e,
		 w->kind == PDI_PHASE_SETUP ? "set-up" : w->kind == PDI_PHASE_TEARDOWN ? "tear-down" : "steady state");
}

/* The stacks' verdict (stack_evidence.h), where AutomaDeD's leaves room: it found nothing
 * abnormal, or blamed the rank the stacks single out among others. It never overrides an
 * abnormal verdict that names other ranks (the kernel's own evidence of a held rank among
 * them), nor speaks of a hang (PDI's). Every peer must have been seen waiting; where one peer
 * suffices (below), not in set-up and tear-down, where one rank computing while others wait
 * is common. (A look needs probes the budget thinned, so a high call rate just before: rare
 * before a code's first loop; and when phases stop being cut, a set-up phase may hold most of
 * the run, as meep's did.) */
static int stack_verdict(struct pdi_analysis *a)
{
	const struct pdi_stack_evidence *e = &a->stack;
	int *ranks;
	size_t n;
	bool among = false;

	pdi_stack_evidence(a->view, false, &a->stack);
	/* AutomaDeD's phase beat the noise but no task stood out (HPCC: a spin's phase 97.8
	 * deviations above the others, 4.9 s long, every task alike within 0.2%): there, one peer
	 * seen waiting while the rank computed, in that very phase, is enough */
	if (!e->found && a->has_automaded && !a->abnormal && a->am.phase_margin >= PDI_CLEAR_MARGIN &&
	    a->am.task_margin < PDI_CLEAR_MARGIN && a->beyond_noise) {
		pdi_stack_evidence(a->view, true, &a->stack);
		if (e->found && e->phase != a->am.faulty_phase)
			a->stack.found = false;
	}
	if (!e->found || !strcmp(a->kind, "hang") || e->phase >= a->nphases ||
	    (a->phases[e->phase].kind != PDI_PHASE_STEADY && e->waiting + 1 < a->view->ntasks))
		return 0;
	if (a->abnormal) {
		if (!(ranks = pdi_analysis_ranks_alloc(a)))
			return -ENOMEM;
		n = pdi_analysis_faulty_ranks(a, ranks);
		for (size_t i = 0; i < n; i++)
			among |= ranks[i] == e->rank;
		free(ranks);
		if (!among || n == 1)
			return 0;
	}
	a->by_stack = true;
	a->abnormal = true;
	a->confidence = "medium";
	return 0;
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

int pdi_analysis_build(const struct pdi_view *s, const struct pdi_analysis_samples *samples, struct pdi_analysis *ret)
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
	if (ranks_where(s, pdi_view_task_incomplete, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s lost events or dropped states: their models are incomplete, so their scores "
			     "understate them", ranks);
	if (ranks_where(s, missed_calls, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s made calls while pdimond was down: their models miss them", ranks);
	if (ranks_where(s, maybe_in_unseen_call, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s show as computing, but functions of theirs were probed in part since their last "
			     "seen call: they may be inside such a call instead; which, cannot be told, so they are not "
			     "taken for computing", ranks);
	if (ranks_where(s, in_call_by_stack, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s are inside MPI calls their probes did not see begin (found on their live stacks): "
			     "the call sites are unknown, and how long they have been there is a lower bound", ranks);
	if (ranks_where(s, observed_in_part, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s were probed in part to keep them, or a rank of their step on the same node, within "
			     "max_overhead_pct (their \"unobserved\" "
			     "intervals): calls of the functions named there are missing from their models for that "
			     "time, so transitions around them, and where a rank was inside them, may be unseen", ranks);
	if (ranks_where(s, degraded_from_earlier_runs, ranks, sizeof(ranks)))
		add_limit(a, "ranks %s were " PDI_UNOBSERVED_EARLIER_RUNS " (their \"unobserved\" intervals with "
			     "from_earlier_runs), before any rate of this run was measured", ranks);
	if (!strcmp(a->kind, "hang") && (r = least_progressed(a)) < 0)
		goto fail;
	if ((r = automaded(samples, a)) < 0 || (r = phase_windows(a)) < 0 || (r = stack_verdict(a)) < 0 ||
	    (r = prefix_tree(a)) < 0)
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
	free(a->lp_ranks);
	free(a->phases);
	pdi_eqclasses_done(&a->classes);
	pdi_ptree_free(a->tree);
	*a = (struct pdi_analysis){0};
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

/* The model of class C: its first member's. */
static const struct pdi_model *class_model(const struct pdi_analysis *a, size_t c)
{
	return a->view->tasks[a->classes.classes[c].members[0]].model;
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

	if (a->by_stack) {
		ranks[0] = a->stack.rank;
		return 1;
	}
	if (!a->has_automaded)
		return 0;
	if (am->by_lost && am->lost.taken)
		return class_ranks(a, am->lost.taker, ranks); /* the one task that took the CPU */
	if (am->by_lost) {
		/* the task that lost the time, and any that lost nearly as much in the same phase
		 * by itself, not to the CPU the first one took from it */
		for (size_t c = 0; c < a->classes.n; c++)
			if (c == am->lost.task ||
			    (pdi_lost_of(&am->lost, c, am->lost.peak, NULL) >= PDI_LOST_ALSO_SHARE * am->lost.peak_s &&
			     !pdi_lost_cpu_taken(&am->lost, c, class_model(a, am->lost.task), class_model(a, c))))
				n += class_ranks(a, c, ranks + n);
		qsort(ranks, n, sizeof(*ranks), cmp_int);
		return n;
	}
	if (am->by_group)
		return 0; /* every rank alike: the job's group took it, no rank did */
	if (am->by_starved) {
		/* the task not getting CPU, and any that shares its CPU (fell nearly as far behind) */
		for (size_t c = 0; c < a->classes.n; c++)
			if (pdi_starved_named(&am->starved, c))
				n += class_ranks(a, c, ranks + n);
		qsort(ranks, n, sizeof(*ranks), cmp_int);
		return n;
	}
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

/* SPDX-License-Identifier: GPL-2.0-only */
/* report.c -- a step's report: the analysis (analysis.c) rendered as the JSON document of
 * `pdimon report --json` and `pdimon analyze --json`, as the few lines srun prints, as the
 * longer text of `pdimon analyze`, and as Graphviz for `pdimon analyze --dot`. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "daemon.h"
#include "gather.h"
#include "json.h"
#include "log.h"
#include "prefix_tree.h"
#include "ranges.h"
#include "report.h"
#include "slurm_nodes.h"

static const char *const effect_names[] = {
	[PDI_EFFECT_NONE] = "none", [PDI_EFFECT_TEMPORARY] = "temporary", [PDI_EFFECT_PERMANENT] = "permanent"};

/* 1 - next/best: 0 when nothing stands out, towards 1 when one thing does. */
static double confidence(double margin)
{
	return margin > 1 ? 1.0 - 1.0 / margin : 0.0;
}

static int first_rank(const struct pdi_analysis *a, size_t class)
{
	return a->view->tasks[a->classes.classes[class].members[0]].rank;
}

/* A transition with the ranks of the class it was found in, and the call it leads to. */
static void json_transition(struct pdi_json *j, const struct pdi_analysis *a, const struct pdi_transition_score *t,
			    const char *score_key)
{
	const struct pdi_view *s = a->view;
	uint32_t site = pdi_state_site(t->to);
	char from[1100], to[1100];

	pdi_view_state_name(s, t->from, from, sizeof(from));
	pdi_view_state_name(s, t->to, to, sizeof(to));
	pdi_json_obj_begin(j);
	pdi_json_kv_str(j, "from", from);
	pdi_json_kv_str(j, "to", to);
	pdi_json_kv_double(j, score_key, t->score);
	pdi_json_kv_int(j, "rank", first_rank(a, t->task));
	pdi_analysis_class_ranks(a, t->task, from, sizeof(from));
	pdi_json_kv_str(j, "ranks", from);
	if (site < s->nsites) {
		pdi_json_key(j, "site");
		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "name", s->sites[site].name);
		pdi_json_kv_str(j, "caller", s->sites[site].caller ? s->sites[site].caller : "");
		pdi_json_kv_str(j, "file", s->sites[site].file ? s->sites[site].file : "");
		pdi_json_kv_int(j, "line", s->sites[site].line);
		pdi_json_obj_end(j);
	}
	pdi_json_obj_end(j);
}

static void json_transitions(struct pdi_json *j, const struct pdi_analysis *a, const char *key,
			     const struct pdi_transition_score *v, size_t n, const char *score_key)
{
	pdi_json_key(j, key);
	pdi_json_arr_begin(j);
	for (size_t k = 0; k < n; k++)
		json_transition(j, a, &v[k], score_key);
	pdi_json_arr_end(j);
}

/* PDI's progress dependence graph: groups of tasks and who waits for whom. */
static void json_pdg(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_pdg *g = &a->pdg;
	char buf[4096];

	pdi_json_key(j, "pdg");
	pdi_json_obj_begin(j);
	pdi_json_key(j, "groups");
	pdi_json_arr_begin(j);
	for (size_t k = 0; k < g->ngroups; k++) {
		pdi_ranges_format(g->groups[k].ranks, g->groups[k].n, buf, sizeof(buf));
		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "ranks", buf);
		pdi_json_kv_str(j, "at", pdi_view_site_name(a->view, pdi_state_site(g->groups[k].state)));
		pdi_json_kv_bool(j, "inside", g->groups[k].inside);
		pdi_json_kv_bool(j, "point_to_point_dependent", g->groups[k].p2p_dependent);
		pdi_json_kv_bool(j, "least_progressed", g->groups[k].lp);
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
	/* "waits_for": the first group waits for the second; "undefined": PDI cannot tell */
	pdi_json_key(j, "edges");
	pdi_json_arr_begin(j);
	for (size_t x = 0; x < g->ngroups; x++)
		for (size_t y = 0; y < g->ngroups; y++) {
			uint8_t dep = g->dep[x * g->ngroups + y];

			if (dep != PDI_DEP_ON && !(dep == PDI_DEP_UNDEFINED && x < y))
				continue;
			pdi_json_obj_begin(j);
			pdi_json_kv_uint(j, "from", x);
			pdi_json_kv_uint(j, "to", y);
			pdi_json_kv_str(j, "dependence", dep == PDI_DEP_ON ? "waits_for" : "undefined");
			pdi_json_obj_end(j);
		}
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
}

static void json_rank_list(struct pdi_json *j, const char *key, const int *ranks, size_t n)
{
	pdi_json_key(j, key);
	pdi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++)
		pdi_json_int(j, ranks[i]);
	pdi_json_arr_end(j);
}

static void json_automaded(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_automaded *am = &a->am;
	int ranks[a->view->ntasks + 1];
	size_t n = pdi_analysis_faulty_ranks(a, ranks);
	char buf[4096];

	pdi_json_key(j, "automaded");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "phases", am->nphases);
	pdi_json_kv_uint(j, "first_phase", am->first_phase);
	pdi_json_kv_uint(j, "end_phase", am->end_phase);
	pdi_json_kv_uint(j, "sample_runs", a->sample_runs);
	pdi_json_kv_uint(j, "classes", a->classes.n);
	pdi_json_key(j, "phase_scores");
	pdi_json_arr_begin(j);
	for (uint32_t p = 0; p < am->nphases; p++)
		pdi_json_double(j, am->phase_score[p]);
	pdi_json_arr_end(j);
	pdi_json_kv_str(j, "effect", effect_names[am->effect]);
	pdi_json_kv_uint(j, "faulty_phase", am->faulty_phase);
	pdi_json_kv_double(j, "phase_margin", am->phase_margin);
	pdi_json_kv_double(j, "phase_confidence", confidence(am->phase_margin));
	pdi_json_kv_double(j, "split_ratio", am->split_ratio);
	pdi_json_kv_double(j, "step_t", am->step_t);
	pdi_json_kv_int(j, "faulty_rank", first_rank(a, am->faulty_task));
	json_rank_list(j, "faulty_ranks", ranks, n);
	pdi_ranges_format(ranks, n, buf, sizeof(buf));
	pdi_json_kv_str(j, "faulty_ranks_text", buf);
	pdi_json_kv_double(j, "task_margin", am->task_margin);
	pdi_json_kv_double(j, "task_confidence", confidence(am->task_margin));
	pdi_json_key(j, "clusters");
	pdi_json_arr_begin(j);
	for (uint32_t k = 0; k < am->nclusters; k++) {
		int members[a->view->ntasks + 1];
		size_t m = 0;

		for (size_t c = 0; c < a->classes.n; c++)
			for (uint32_t x = 0; am->cluster[c] == k && x < a->classes.classes[c].n; x++)
				members[m++] = a->view->tasks[a->classes.classes[c].members[x]].rank;
		pdi_ranges_format(members, m, buf, sizeof(buf));
		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "ranks", buf);
		pdi_json_kv_uint(j, "count", m);
		pdi_json_kv_bool(j, "faulty", k == am->faulty_cluster);
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
	pdi_json_kv_double(j, "threshold", am->threshold);
	json_transitions(j, a, "transitions", am->top, am->ntop, "score");
	json_transitions(j, a, "unusual_transitions", am->unusual, am->nunusual, "log10_probability");
	if (am->has_change) {
		pdi_json_key(j, "shift");
		pdi_json_obj_begin(j);
		pdi_json_kv_uint(j, "phase", am->change_phase);
		json_transitions(j, a, "transitions", &am->change, 1, "theta_increase");
		pdi_json_obj_end(j);
	}
	pdi_json_kv_bool(j, "abnormal", a->abnormal);
	pdi_json_obj_end(j);
}

/* The ranks of PDI's least-progressed groups, and the phase the first of them is in. */
static size_t lp_ranks(const struct pdi_analysis *a, int *ranks, int64_t *ret_phase)
{
	size_t n = 0;

	*ret_phase = -1;
	for (size_t k = 0; a->has_pdg && k < a->pdg.ngroups; k++)
		for (size_t x = 0; a->pdg.groups[k].lp && x < a->pdg.groups[k].n; x++)
			ranks[n++] = a->pdg.groups[k].ranks[x];
	for (unsigned i = 0; n && i < a->view->ntasks; i++)
		if (a->view->tasks[i].rank == ranks[0] && a->view->tasks[i].model->nphases)
			*ret_phase = a->view->tasks[i].model->nphases - 1;
	return n;
}

/* The verdict in one place, whichever analysis made it: PDI for a hang (the phase the
 * least-progressed task stopped in, and where it stopped), AutomaDeD otherwise. */
static void json_diagnosis(struct pdi_json *j, const struct pdi_analysis *a)
{
	int ranks[a->view->ntasks + 1];
	int64_t phase;
	size_t n;

	pdi_json_key(j, "diagnosis");
	pdi_json_obj_begin(j);
	if (!strcmp(a->kind, "hang") && (n = lp_ranks(a, ranks, &phase)) > 0) {
		pdi_json_kv_str(j, "method", "pdi");
		pdi_json_kv_str(j, "effect", "hang");
		pdi_json_key(j, "faulty_phase");
		if (phase >= 0)
			pdi_json_int(j, phase);
		else
			pdi_json_null(j);
		json_rank_list(j, "faulty_ranks", ranks, n);
		pdi_json_kv_double(j, "confidence", 1.0);
		pdi_json_key(j, "stopped_at");
		pdi_json_arr_begin(j);
		for (unsigned i = 0; i < a->view->ntasks; i++) {
			const struct pdi_where *w = &a->view->tasks[i].where;

			for (size_t k = 0; k < n; k++)
				if (ranks[k] == a->view->tasks[i].rank) {
					pdi_json_obj_begin(j);
					pdi_json_kv_int(j, "rank", ranks[k]);
					pdi_json_kv_str(j, "status", pdi_where_names[w->kind]);
					pdi_json_kv_str(j, "where", w->text);
					pdi_json_obj_end(j);
				}
		}
		pdi_json_arr_end(j);
	} else if (a->has_automaded) {
		n = pdi_analysis_faulty_ranks(a, ranks);
		pdi_json_kv_str(j, "method", "automaded");
		pdi_json_kv_str(j, "effect", effect_names[a->am.effect]);
		pdi_json_kv_int(j, "faulty_phase", a->am.faulty_phase);
		json_rank_list(j, "faulty_ranks", ranks, n);
		pdi_json_kv_double(j, "confidence", confidence(a->am.phase_margin) * confidence(a->am.task_margin));
	} else {
		pdi_json_kv_str(j, "method", "none");
	}
	pdi_json_kv_bool(j, "abnormal", !strcmp(a->kind, "hang") || a->abnormal);
	if (a->has_automaded)
		json_transitions(j, a, "transitions", a->am.top, a->am.ntop, "score");
	pdi_json_key(j, "limits");
	pdi_json_arr_begin(j);
	for (size_t i = 0; i < a->nlimits; i++)
		pdi_json_str(j, a->limits[i]);
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
}

static void json_task(struct pdi_json *j, const struct pdi_view_task *t)
{
	const struct pdi_model *m = t->model;
	uint32_t nstates = 0, nedges = 0;

	for (uint32_t k = 0; k < m->nphases; k++) {
		nstates += m->phases[k].nstates;
		nedges += m->phases[k].nedges;
	}
	pdi_json_obj_begin(j);
	pdi_json_kv_int(j, "rank", t->rank);
	pdi_json_kv_int(j, "pid", t->pid);
	pdi_json_kv_str(j, "state", t->running ? "running" : "ended");
	pdi_json_kv_str(j, "status", pdi_where_names[t->where.kind]);
	pdi_json_kv_str(j, "where", t->where.text);
	pdi_json_kv_uint(j, "for_ns", t->where.for_ns);
	pdi_json_kv_uint(j, "calls", m->calls);
	pdi_json_kv_uint(j, "phases", m->nphases);
	pdi_json_kv_uint(j, "states", nstates);
	pdi_json_kv_uint(j, "transitions", nedges);
	pdi_json_kv_uint(j, "events_lost", t->lost);
	pdi_json_kv_bool(j, "incomplete", t->lost || m->dropped_states || m->dropped_edges);
	pdi_json_obj_end(j);
}

static void json_nodes(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	char ranks[4096];

	pdi_analysis_missing_ranks(a, ranks, sizeof(ranks));
	pdi_json_key(j, "nodes");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "count", s->nodes);
	pdi_json_kv_uint(j, "answered", s->nodes_answered);
	pdi_json_kv_bool(j, "partial", s->nmissing > 0);
	pdi_json_kv_str(j, "missing_ranks", ranks);
	pdi_json_key(j, "missing");
	pdi_json_arr_begin(j);
	for (unsigned i = 0; i < s->nmissing; i++) {
		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "node", s->missing[i]);
		pdi_json_kv_str(j, "why", s->missing_why[i]);
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
}

static char *render_json(const struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	struct pdi_json j;
	char ranks[4096];

	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_kv_str(&j, "step", s->name);
	pdi_json_kv_uint(&j, "job_id", s->job_id);
	pdi_json_kv_uint(&j, "step_id", s->step_id);
	pdi_json_kv_uint(&j, "uid", s->uid);
	pdi_json_kv_str(&j, "state", pdi_view_running(s) ? "running" : "ended");
	pdi_json_kv_int(&j, "started", s->started);
	pdi_json_key(&j, "ended");
	if (s->ended)
		pdi_json_int(&j, s->ended);
	else
		pdi_json_null(&j);
	json_nodes(&j, a);
	pdi_json_key(&j, "verdict");
	pdi_json_obj_begin(&j);
	pdi_json_kv_str(&j, "kind", a->kind);
	if (a->has_pdg) {
		json_pdg(&j, a);
		pdi_json_kv_str(&j, "least_progressed", a->lp);
	}
	pdi_json_key(&j, "groups");
	pdi_json_arr_begin(&j);
	for (size_t i = 0; i < a->ngroups; i++) {
		pdi_ranges_format(a->groups[i].ranks, a->groups[i].n, ranks, sizeof(ranks));
		pdi_json_obj_begin(&j);
		pdi_json_kv_str(&j, "status", pdi_where_names[a->groups[i].kind]);
		pdi_json_kv_str(&j, "where", a->groups[i].text);
		pdi_json_kv_str(&j, "ranks", ranks);
		pdi_json_kv_uint(&j, "count", a->groups[i].n);
		pdi_json_obj_end(&j);
	}
	pdi_json_arr_end(&j);
	pdi_json_obj_end(&j);
	json_diagnosis(&j, a);
	if (a->has_automaded)
		json_automaded(&j, a);
	if (a->tree) {
		pdi_json_key(&j, "prefix_tree");
		(void)pdi_ptree_render_json(a->tree, &j);
	}
	pdi_json_key(&j, "tasks");
	pdi_json_arr_begin(&j);
	for (unsigned i = 0; i < s->ntasks; i++)
		json_task(&j, &s->tasks[i]);
	pdi_json_arr_end(&j);
	pdi_json_obj_end(&j);
	return pdi_json_steal(&j);
}

/* AutomaDeD's line of the summary, when its contrast is clear and the step did not hang
 * (a hang is PDI's: the hung phase is the last one, which AutomaDeD leaves out). */
static void summary_automaded(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_automaded *am = &a->am;
	char from[1100], to[1100], ranks[1024];
	int v[a->view->ntasks + 1];

	if (!a->has_automaded || !a->abnormal || !strcmp(a->kind, "hang"))
		return;
	pdi_view_state_name(a->view, am->top[0].from, from, sizeof(from));
	pdi_view_state_name(a->view, am->top[0].to, to, sizeof(to));
	pdi_ranges_format(v, pdi_analysis_faulty_ranks(a, v), ranks, sizeof(ranks));
	if (am->effect == PDI_EFFECT_PERMANENT)
		pdi_json_printf(j, "pdimon: behaviour shifted in phase %u and stayed so, in rank%s %s, at %s => %s\n",
				am->faulty_phase, strpbrk(ranks, ",-") ? "s" : "", ranks, from, to);
	else
		pdi_json_printf(j, "pdimon: behaviour changed most in phase %u (%.1fx the next), in rank%s %s (%.1fx the next), "
				   "at %s => %s\n",
				am->faulty_phase, am->phase_margin, strpbrk(ranks, ",-") ? "s" : "", ranks, am->task_margin,
				from, to);
}

static void summary_lines(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	char ranks[256];

	if (!strcmp(a->kind, "not_monitored")) {
		pdi_json_printf(j, "pdimon: step %s: no MPI task was monitored\n", s->name);
		return;
	}
	if (!strcmp(a->kind, "completed")) {
		uint64_t calls = 0;

		for (unsigned i = 0; i < s->ntasks; i++)
			calls += s->tasks[i].model->calls;
		pdi_json_printf(j, "pdimon: step %s: all %u tasks completed (%" PRIu64 " MPI calls)%s\n", s->name,
				s->ntasks, calls, a->abnormal ? "" : "; nothing abnormal found");
		summary_automaded(j, a);
		return;
	}
	if (!strcmp(a->kind, "hang"))
		pdi_json_printf(j, "pdimon: step %s: tasks %s blocked in MPI%s — %u tasks:\n", s->name,
				pdi_view_running(s) ? "are" : "were", pdi_view_running(s) ? "" : " when it ended", s->ntasks);
	else
		pdi_json_printf(j, "pdimon: step %s: %s — %u tasks:\n", s->name,
				pdi_view_running(s) ? "still running" : "it did not complete", s->ntasks);
	for (size_t i = 0; i < a->ngroups && i < 6; i++) {
		const struct pdi_where_group *g = &a->groups[i];

		pdi_ranges_format(g->ranks, g->n, ranks, sizeof(ranks));
		switch (g->kind) {
		case PDI_WHERE_BLOCKED: pdi_json_printf(j, "pdimon:   %s blocked in %s\n", ranks, g->text); break;
		case PDI_WHERE_IN_MPI: pdi_json_printf(j, "pdimon:   %s in %s\n", ranks, g->text); break;
		case PDI_WHERE_COMPUTING: pdi_json_printf(j, "pdimon:   %s computing %s (not in MPI)\n", ranks, g->text); break;
		case PDI_WHERE_FINISHED: pdi_json_printf(j, "pdimon:   %s finished\n", ranks); break;
		case PDI_WHERE_NO_MPI: pdi_json_printf(j, "pdimon:   %s made no MPI call\n", ranks); break;
		}
	}
	if (a->lp[0])
		pdi_json_printf(j, "pdimon: least progressed: %s — the others wait, directly or not, for %s (PDI)\n", a->lp,
				strpbrk(a->lp, ",-") ? "them" : "it");
	else if (!strcmp(a->kind, "hang") && a->ngroups > 1 && a->groups[0].kind == PDI_WHERE_COMPUTING) {
		pdi_ranges_format(a->groups[0].ranks, a->groups[0].n, ranks, sizeof(ranks));
		pdi_json_printf(j, "pdimon: suspect %s: the others wait in MPI while it computes\n", ranks);
	}
	summary_automaded(j, a);
}

static char *render_summary(const struct pdi_analysis *a)
{
	struct pdi_json j;

	pdi_json_init(&j);
	summary_lines(&j, a);
	return pdi_json_steal(&j);
}

static void text_transitions(struct pdi_json *j, const struct pdi_analysis *a, const char *title,
			     const struct pdi_transition_score *v, size_t n, const char *score_name)
{
	char from[1100], to[1100], ranks[1024];

	if (!n)
		return;
	pdi_json_printf(j, "\n%s\n", title);
	for (size_t k = 0; k < n; k++) {
		pdi_view_state_name(a->view, v[k].from, from, sizeof(from));
		pdi_view_state_name(a->view, v[k].to, to, sizeof(to));
		pdi_analysis_class_ranks(a, v[k].task, ranks, sizeof(ranks));
		pdi_json_printf(j, "  %zu. %s => %s\n     ranks %s, %s %.3g\n", k + 1, from, to, ranks, score_name, v[k].score);
	}
}

static void text_automaded(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_automaded *am = &a->am;
	char ranks[1024];
	int v[a->view->ntasks + 1];

	pdi_json_printf(j, "\nPhases (AutomaDeD: %u compared, %s; effect %s):\n", am->end_phase - am->first_phase,
			a->sample_runs ? "against earlier runs" : "against each other", effect_names[am->effect]);
	for (uint32_t p = am->first_phase; p < am->end_phase; p++)
		pdi_json_printf(j, "  phase %-3u score %-10.3g%s\n", p, am->phase_score[p],
				p == am->faulty_phase ? (am->effect == PDI_EFFECT_PERMANENT ? "  <- behaviour shifted here"
											   : "  <- most deviant")
						      : "");
	pdi_ranges_format(v, pdi_analysis_faulty_ranks(a, v), ranks, sizeof(ranks));
	pdi_json_printf(j, "\nFaulty task(s): %s (phase confidence %.2f, task confidence %.2f; %zu cluster%s of %zu "
			   "model class%s)\n",
			ranks, confidence(am->phase_margin), confidence(am->task_margin), am->nclusters,
			am->nclusters == 1 ? "" : "s", a->classes.n, a->classes.n == 1 ? "" : "es");
	text_transitions(j, a, "Characteristic transitions (most different from normal first):", am->top, am->ntop,
			 "score");
	text_transitions(j, a, "Unusual transitions (least probable times first):", am->unusual, am->nunusual,
			 "log10 p");
	if (am->has_change)
		text_transitions(j, a, "Where behaviour shifted (largest rise in variation, earliest first):", &am->change,
				 1, "theta rise");
}

static char *render_text(const struct pdi_analysis *a)
{
	struct pdi_json j;

	pdi_json_init(&j);
	summary_lines(&j, a);
	if (a->has_pdg && a->pdg.ngroups) {
		char ranks[4096];

		pdi_json_printf(&j, "\nProgress dependence (PDI):\n");
		for (size_t k = 0; k < a->pdg.ngroups; k++) {
			pdi_ranges_format(a->pdg.groups[k].ranks, a->pdg.groups[k].n, ranks, sizeof(ranks));
			pdi_json_printf(&j, "  %s %s %s%s\n", ranks, a->pdg.groups[k].inside ? "in" : "after",
					pdi_view_site_name(a->view, pdi_state_site(a->pdg.groups[k].state)),
					a->pdg.groups[k].lp ? "  <- least progressed" : "");
		}
	}
	if (a->has_automaded)
		text_automaded(&j, a);
	if (a->tree) {
		pdi_json_printf(&j, "\nWhere the tasks are (prefix tree, least progressed first):\n");
		(void)pdi_ptree_render_text(a->tree, &j);
	}
	if (a->nlimits) {
		pdi_json_printf(&j, "\nNot concluded:\n");
		for (size_t i = 0; i < a->nlimits; i++)
			pdi_json_printf(&j, "  - %s\n", a->limits[i]);
	}
	return pdi_json_steal(&j);
}

/* The progress dependence graph, then the prefix tree: two graphs `dot` draws one after
 * the other. */
static char *render_dot(const struct pdi_analysis *a)
{
	struct pdi_json j;
	char ranks[4096];

	pdi_json_init(&j);
	if (a->has_pdg) {
		const struct pdi_pdg *g = &a->pdg;

		pdi_json_printf(&j, "digraph pdg {\n  label=\"progress dependence (PDI): an edge waits for its target\";\n");
		for (size_t k = 0; k < g->ngroups; k++) {
			pdi_ranges_format(g->groups[k].ranks, g->groups[k].n, ranks, sizeof(ranks));
			pdi_json_printf(&j, "  g%zu [label=\"%s\\n%s %s\"%s];\n", k, ranks, g->groups[k].inside ? "in" : "after",
					pdi_view_site_name(a->view, pdi_state_site(g->groups[k].state)),
					g->groups[k].lp ? ", style=filled, fillcolor=salmon" : "");
		}
		for (size_t x = 0; x < g->ngroups; x++)
			for (size_t y = 0; y < g->ngroups; y++)
				if (g->dep[x * g->ngroups + y] == PDI_DEP_ON)
					pdi_json_printf(&j, "  g%zu -> g%zu;\n", x, y);
		pdi_json_printf(&j, "}\n");
	}
	if (a->tree)
		(void)pdi_ptree_render_dot(a->tree, &j);
	return pdi_json_steal(&j);
}

/* The view of step JOB.STEP (NAME) on NODES, gathered up a tree rooted here (DESIGN "Across
 * nodes"), for UID. This node may be one of NODES or not. */
static int gather_view(struct pdi_daemon *d, uint32_t job, uint32_t step, const char *name, uid_t uid,
		       char *const *nodes, unsigned nnodes, uint32_t expected_tasks, struct pdi_view *v)
{
	const char **tree = calloc(nnodes + 2, sizeof(*tree));
	struct pdi_gather_result res = {0};
	unsigned n = 0, members = 0;
	int r;

	if (!tree)
		return -ENOMEM;
	/* this node roots the tree: position 0, then the others in Slurm's order */
	tree[n++] = d->cfg.node_name;
	for (unsigned i = 0; i < nnodes; i++)
		if (strcmp(nodes[i], d->cfg.node_name))
			tree[n++] = nodes[i];
	members = n - (n > nnodes);
	r = pdi_gather_run(d->gather, job, step, name, uid, tree, n, 0, &res);
	if (r == 0) {
		r = pdi_view_from_gather(&res, members, v);
		pdi_gather_result_done(&res);
	}
	if (r == 0)
		v->expected_tasks = expected_tasks;
	if (r < 0)
		log_warning("Step %s: gathering from its %u nodes failed: %s", name, members, strerror(-r));
	free(tree);
	return r;
}

/* The analysis of step S for UID: with GATHER and more than one node, of the view gathered
 * from all of them; otherwise (or when the gather could not run at all) of this node's. */
static int analyse(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, bool gather, struct pdi_view *v,
		   struct pdi_analysis *a)
{
	int r = -ENOENT;

	if (gather && s->nnodes > 1 && d->gather && d->cfg.node_name)
		r = gather_view(d, s->job_id, s->step_id, s->name, uid, s->nodes, s->nnodes, s->total_tasks, v);
	if (r < 0 && (r = pdi_view_local(d, s, v)) < 0)
		return r;
	r = pdi_analysis_build(d->store, v, a);
	if (r < 0)
		pdi_view_done(v);
	return r;
}

/* Whether this node builds the whole step's report: the first of its nodes does (it is where
 * srun asks, and one gather per step end is enough); the others their own part. */
static bool reports_for_all(const struct pdi_daemon *d, const struct pdi_step *s)
{
	return s->nnodes > 1 && d->cfg.node_name && !strcmp(s->nodes[0], d->cfg.node_name);
}

static int build_once(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, char **ret_json, char **ret_summary)
{
	struct pdi_analysis a;
	struct pdi_view v;
	int r = analyse(d, s, uid, reports_for_all(d, s), &v, &a);

	if (r < 0)
		return r;
	*ret_json = render_json(&a);
	*ret_summary = render_summary(&a);
	pdi_analysis_done(&a);
	pdi_view_done(&v);
	if (!*ret_json || !*ret_summary) {
		free(*ret_json);
		free(*ret_summary);
		return -ENOMEM;
	}
	return 0;
}

int pdi_report_build(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, char **ret_json, char **ret_summary)
{
	int r;

	/* an ended step's report is built once: srun polls for it, and the analysis is not free
	 * (it is built for the step's owner: whoever may read the step reads the same report) */
	if (!s->report_json && !pdi_step_running(s)) {
		r = build_once(d, s, s->uid, &s->report_json, &s->report_summary);
		if (r < 0)
			return r;
	}
	if (s->report_json) {
		*ret_json = strdup(s->report_json);
		*ret_summary = strdup(s->report_summary);
		if (!*ret_json || !*ret_summary) {
			free(*ret_json);
			free(*ret_summary);
			return -ENOMEM;
		}
		return 0;
	}
	return build_once(d, s, uid, ret_json, ret_summary);
}

static char *render(const struct pdi_analysis *a, const char *format)
{
	return !strcmp(format, "json") ? render_json(a) : !strcmp(format, "dot") ? render_dot(a) : render_text(a);
}

int pdi_report_analyze_elsewhere(struct pdi_daemon *d, uint32_t job, uint32_t step, uid_t uid, const char *format,
				 char **ret_text)
{
	struct pdi_analysis a;
	struct pdi_view v;
	char name[32], **nodes;
	unsigned n;
	int r;

	if (!d->gather)
		return -ENOENT;
	snprintf(name, sizeof(name), "%u.%u", job, step);
	r = pdi_slurm_step_nodes(job, step, d->cfg.gather_timeout_ms, &nodes, &n);
	if (r < 0)
		return r == -ETIMEDOUT ? r : -ENOENT;
	r = gather_view(d, job, step, name, uid, nodes, n, 0, &v);
	for (unsigned i = 0; i < n; i++)
		free(nodes[i]);
	free(nodes);
	if (r < 0)
		return r;
	/* no node gave its part: none has the step, or none lets UID read it */
	if (v.nodes_answered == 0) {
		pdi_view_done(&v);
		return -ENOENT;
	}
	if ((r = pdi_analysis_build(NULL, &v, &a)) == 0) {
		*ret_text = render(&a, format);
		pdi_analysis_done(&a);
		r = *ret_text ? 0 : -ENOMEM;
	}
	pdi_view_done(&v);
	return r;
}

int pdi_report_analyze(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, const char *format, char **ret_text)
{
	struct pdi_analysis a;
	struct pdi_view v;
	char *summary;
	int r;

	/* the report is the whole step's on its first node, and on a step of one node */
	if (!strcmp(format, "json") && (s->nnodes <= 1 || reports_for_all(d, s))) {
		r = pdi_report_build(d, s, uid, ret_text, &summary);
		if (r == 0)
			free(summary);
		return r;
	}
	/* asked for by a user: the whole step, from whichever of its nodes */
	if ((r = analyse(d, s, uid, true, &v, &a)) < 0)
		return r;
	*ret_text = render(&a, format);
	pdi_analysis_done(&a);
	pdi_view_done(&v);
	return *ret_text ? 0 : -ENOMEM;
}

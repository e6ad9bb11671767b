/* SPDX-License-Identifier: GPL-2.0-only */
/* render_json.c -- an analysis as the JSON document of `pdimon report --json` and `pdimon
 * analyze --json` (its schema is in pdimon(1)). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "mpi_funcs.h"
#include "ranges.h"
#include "prefix_tree.h"
#include "rank_phases.h"
#include "render.h"

const char *pdi_effect_name(enum pdi_effect e)
{
	static const char *const names[] = {
		[PDI_EFFECT_NONE] = "none", [PDI_EFFECT_TEMPORARY] = "temporary", [PDI_EFFECT_PERMANENT] = "permanent"};

	return names[e];
}

double pdi_confidence(double margin)
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
	if (!strcmp(score_key, "score")) /* characteristic: where the time went, or 0 */
		pdi_json_kv_double(j, "lost_s", t->lost_s);
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

static void json_doubles(struct pdi_json *j, const char *key, const double *v, uint32_t n)
{
	pdi_json_key(j, key);
	pdi_json_arr_begin(j);
	for (uint32_t i = 0; i < n; i++)
		pdi_json_double(j, v[i]);
	pdi_json_arr_end(j);
}

/* The time one task lost against its peers, where it lost most (lost_time.h). */
static void json_lost(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_lost *l = &a->am.lost;

	pdi_json_key(j, "lost");
	pdi_json_obj_begin(j);
	pdi_json_kv_bool(j, "found", l->found);
	pdi_json_kv_bool(j, "usage", l->has_usage);
	if (l->found) {
		pdi_json_kv_int(j, "rank", first_rank(a, l->task));
		pdi_json_kv_str(j, "kind", pdi_lost_kind_names[l->kind]);
		pdi_json_kv_uint(j, "peak_phase", l->peak);
		pdi_json_kv_uint(j, "first_phase", l->onset);
		pdi_json_kv_uint(j, "last_phase", l->last);
		pdi_json_kv_double(j, "peak_s", l->peak_s);
		pdi_json_kv_double(j, "total_s", l->total_s);
		pdi_json_kv_double(j, "next_task_s", l->next_task_s);
		pdi_json_kv_double(j, "other_phase_s", l->other_phase_s);
		pdi_json_kv_double(j, "noise_s", l->noise_s);
		pdi_json_kv_double(j, "z", l->z);
		pdi_json_kv_bool(j, "taken", l->taken);
		if (l->taken) {
			char doing[300];

			pdi_lost_taken_text(l, doing, sizeof(doing));
			pdi_json_kv_int(j, "taker_rank", first_rank(a, l->taker));
			pdi_json_kv_double(j, "taker_share", l->taker_share);
			pdi_json_kv_double(j, "next_share", l->next_share);
			pdi_json_kv_double(j, "taker_cpu_s", l->taker_cpu_s);
			pdi_json_kv_double(j, "next_cpu_s", l->next_cpu_s);
			pdi_json_kv_double(j, "other_lead_s", l->other_lead_s);
			pdi_json_kv_str(j, "doing", doing);
		}
	}
	pdi_json_obj_end(j);
}

/* The ranks the interference hit, the furthest behind first (pdi_starved_hit()): each class's
 * members in turn. */
static void json_starved_hit(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_starved *s = &a->am.starved;
	size_t *hit = malloc(s->n * sizeof(*hit)), k;

	if (!hit) {
		j->failed = true;
		return;
	}
	k = pdi_starved_hit(s, hit);
	pdi_json_key(j, "hit_ranks");
	pdi_json_arr_begin(j);
	for (size_t i = 0; i < k; i++)
		for (size_t m = 0; m < a->classes.classes[hit[i]].n; m++)
			pdi_json_int(j, a->view->tasks[a->classes.classes[hit[i]].members[m]].rank);
	pdi_json_arr_end(j);
	free(hit);
}

/* The task not getting CPU against its peers, where it fell furthest behind (starved.h). */
static void json_starved(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_starved *s = &a->am.starved;
	char doing[300];

	pdi_json_key(j, "starved");
	pdi_json_obj_begin(j);
	pdi_json_kv_bool(j, "found", s->found);
	pdi_json_kv_bool(j, "usage", s->has_usage);
	if (s->found) {
		pdi_starved_text(s, doing, sizeof(doing));
		pdi_json_kv_int(j, "rank", first_rank(a, s->task));
		pdi_json_kv_uint(j, "peak_phase", s->peak);
		pdi_json_kv_uint(j, "first_phase", s->onset);
		pdi_json_kv_uint(j, "last_phase", s->last);
		pdi_json_kv_double(j, "share_ratio", s->ratio);
		pdi_json_kv_double(j, "wait_share", s->wait_share);
		pdi_json_kv_double(j, "peers_wait_share", s->peers_wait_share);
		pdi_json_kv_double(j, "run_s", s->run_s);
		pdi_json_kv_double(j, "wait_s", s->wait_s);
		pdi_json_kv_double(j, "z", s->z);
		pdi_json_kv_bool(j, "taken", s->taken);
		if (s->taken) {
			pdi_json_kv_int(j, "taker_rank", first_rank(a, s->taker));
			pdi_json_kv_double(j, "taker_cpu_s", s->taker_cpu_s);
			pdi_json_kv_double(j, "next_cpu_s", s->next_cpu_s);
		}
		pdi_json_kv_str(j, "doing", doing);
		json_starved_hit(j, a);
	}
	pdi_json_obj_end(j);
}

/* Every rank lost CPU alike, and what the job's own group used beyond its ranks (alike.h). */
static void json_group(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_alike *g = &a->am.starved.alike;
	char doing[400];

	pdi_json_key(j, "group_took");
	pdi_json_obj_begin(j);
	pdi_json_kv_bool(j, "read", g->read);
	pdi_json_kv_bool(j, "fell", g->fell);
	pdi_json_kv_bool(j, "found", g->found);
	if (g->fell) {
		/* the group's part only where it was read over the run */
		const struct {
			const char *key;
			double v;
		} f[] = {{"run_s", g->run_s},		{"fall", g->fall},
			 {"z", g->z},			{"ranks_cpus_before", g->ranks_before},
			 {"ranks_cpus", g->ranks_during}, {"others_cpus_before", g->others_before},
			 {"others_cpus", g->others_during}, {"took", g->took},
			 {"group_z", g->group_z}};
		size_t n = isnan(g->others_during) || isnan(g->others_before) ? 5 : sizeof(f) / sizeof(f[0]);

		pdi_alike_text(g, doing, sizeof(doing));
		pdi_json_kv_uint(j, "first_phase", g->onset);
		pdi_json_kv_uint(j, "last_phase", g->last);
		for (size_t i = 0; i < n; i++)
			pdi_json_kv_double(j, f[i].key, f[i].v);
		pdi_json_kv_str(j, "doing", doing);
	}
	pdi_json_obj_end(j);
}

static void json_automaded(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_automaded *am = &a->am;
	int *ranks = pdi_analysis_ranks_alloc(a), *members = pdi_analysis_ranks_alloc(a);
	size_t n;
	char buf[4096];

	if (!ranks || !members) {
		j->failed = true;
		goto out;
	}
	n = pdi_analysis_faulty_ranks(a, ranks);
	pdi_json_key(j, "automaded");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "phases", am->nphases);
	pdi_json_kv_uint(j, "first_phase", am->first_phase);
	pdi_json_kv_uint(j, "end_phase", am->end_phase);
	pdi_json_kv_uint(j, "sample_runs", a->sample_runs);
	pdi_json_key(j, "baseline");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "runs", a->baseline.runs);
	pdi_json_kv_double(j, "excess_s", a->baseline.excess_s);
	pdi_json_kv_double(j, "floor_s", a->baseline.floor_s);
	pdi_json_obj_end(j);
	pdi_json_kv_uint(j, "classes", a->classes.n);
	json_doubles(j, "phase_scores", am->phase_score, am->nphases);
	json_doubles(j, "phase_excess_s", am->phase_excess, am->nphases);
	json_doubles(j, "phase_imbalance_s", am->lost.phase_s, am->nphases);
	pdi_json_kv_bool(j, "phase_by_time", am->by_time);
	json_lost(j, a);
	pdi_json_kv_bool(j, "phase_by_cpu_share", am->by_starved);
	json_starved(j, a);
	pdi_json_kv_bool(j, "phase_by_group_cpu", am->by_group);
	json_group(j, a);
	pdi_json_kv_str(j, "effect", pdi_effect_name(am->effect));
	pdi_json_kv_uint(j, "faulty_phase", am->faulty_phase);
	pdi_json_kv_double(j, "phase_margin", am->phase_margin);
	pdi_json_kv_double(j, "phase_confidence", pdi_confidence(am->phase_margin));
	pdi_json_kv_double(j, "split_ratio", am->split_ratio);
	pdi_json_kv_double(j, "step_t", am->step_t);
	pdi_json_kv_int(j, "faulty_rank", first_rank(a, am->faulty_task));
	json_rank_list(j, "faulty_ranks", ranks, n);
	pdi_ranges_format(ranks, n, buf, sizeof(buf));
	pdi_json_kv_str(j, "faulty_ranks_text", buf);
	pdi_json_kv_double(j, "task_margin", am->task_margin);
	pdi_json_kv_double(j, "task_confidence", pdi_confidence(am->task_margin));
	pdi_json_key(j, "clusters");
	pdi_json_arr_begin(j);
	for (uint32_t k = 0; k < am->nclusters; k++) {
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
out:
	free(ranks);
	free(members);
}

/* Phase P's window as an object (nothing when P has no known window). */
static void json_phase_window(struct pdi_json *j, const struct pdi_analysis *a, uint32_t p)
{
	const struct pdi_phase_window *w = &a->phases[p];
	char t[40];

	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "phase", p);
	pdi_json_kv_str(j, "kind", pdi_phase_kind_names[w->kind]);
	if (w->start_ns) {
		pdi_json_kv_double(j, "start_s", w->start_s);
		pdi_json_kv_double(j, "end_s", w->end_s);
		pdi_time_iso(w->start_ns, t, sizeof(t));
		pdi_json_kv_str(j, "start", t);
		pdi_time_iso(w->end_ns, t, sizeof(t));
		pdi_json_kv_str(j, "end", t);
	}
	pdi_json_obj_end(j);
}

static void json_phases(struct pdi_json *j, const struct pdi_analysis *a)
{
	pdi_json_key(j, "phases");
	pdi_json_arr_begin(j);
	for (uint32_t p = 0; p < a->nphases; p++)
		json_phase_window(j, a, p);
	pdi_json_arr_end(j);
}

/* The faulty phase's window and its text, beside the phase number. */
static void json_faulty_window(struct pdi_json *j, const struct pdi_analysis *a, int64_t p)
{
	char text[200];

	if (p < 0 || (uint64_t)p >= a->nphases)
		return;
	pdi_json_key(j, "faulty_phase_window");
	json_phase_window(j, a, (uint32_t)p);
	pdi_analysis_phase_text(a, (uint32_t)p, text, sizeof(text));
	pdi_json_kv_str(j, "faulty_phase_text", text);
}

/* The least-progressed ranks, and the phase the first of them is in. */
static size_t lp_ranks(const struct pdi_analysis *a, int *ranks, int64_t *ret_phase)
{
	size_t n = a->nlp;

	*ret_phase = -1;
	if (n)
		memcpy(ranks, a->lp_ranks, n * sizeof(*ranks));
	for (unsigned i = 0; n && i < a->view->ntasks; i++)
		if (a->view->tasks[i].rank == ranks[0] && a->view->tasks[i].model->nphases)
			*ret_phase = a->view->tasks[i].model->nphases - 1;
	return n;
}

/* How sure the verdict is in words, and what it was judged against: earlier runs of the
 * program, or the step's own phases only. BUF is room for the text. */
static void json_confidence(struct pdi_json *j, const struct pdi_analysis *a, char *buf, size_t len)
{
	pdi_json_kv_str(j, "confidence_words", a->confidence);
	pdi_json_kv_str(j, "judged_against", a->sample_runs ? "earlier_runs" : "own_phases");
	pdi_analysis_confidence_text(a, buf, len);
	pdi_json_kv_str(j, "confidence_text", buf);
}

/* The verdict in one place, whichever analysis made it: PDI for a hang (the phase the
 * least-progressed task stopped in, and where it stopped), AutomaDeD otherwise. */
static void json_diagnosis(struct pdi_json *j, const struct pdi_analysis *a)
{
	int *ranks = pdi_analysis_ranks_alloc(a);
	char doing[400], sure[160];
	int64_t phase;
	size_t n;

	if (!ranks) {
		j->failed = true;
		return;
	}
	pdi_json_key(j, "diagnosis");
	pdi_json_obj_begin(j);
	if (!strcmp(a->kind, "hang") && (n = lp_ranks(a, ranks, &phase)) > 0) {
		pdi_json_kv_str(j, "method", a->lp_by);
		pdi_json_kv_str(j, "effect", "hang");
		pdi_json_key(j, "faulty_phase");
		if (phase >= 0)
			pdi_json_int(j, phase);
		else
			pdi_json_null(j);
		json_faulty_window(j, a, phase);
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
					pdi_json_kv_str(j, "activity", pdi_activity_names[w->act.kind]);
					pdi_view_task_doing(&a->view->tasks[i], doing, sizeof(doing));
					pdi_json_kv_str(j, "doing", doing);
					pdi_json_obj_end(j);
				}
		}
		pdi_json_arr_end(j);
	} else if (a->by_stack) {
		pdi_stack_evidence_text(&a->stack, doing, sizeof(doing));
		pdi_json_kv_str(j, "method", "stack");
		pdi_json_kv_str(j, "effect", "temporary");
		pdi_json_kv_int(j, "faulty_phase", a->stack.phase);
		json_faulty_window(j, a, a->stack.phase);
		json_rank_list(j, "faulty_ranks", &a->stack.rank, 1);
		json_confidence(j, a, sure, sizeof(sure));
		pdi_json_kv_str(j, "doing", doing);
	} else if (a->has_automaded) {
		n = pdi_analysis_faulty_ranks(a, ranks);
		pdi_json_kv_str(j, "method", "automaded");
		pdi_json_kv_str(j, "effect", pdi_effect_name(a->am.effect));
		pdi_json_kv_int(j, "faulty_phase", a->am.faulty_phase);
		json_faulty_window(j, a, a->am.faulty_phase);
		json_rank_list(j, "faulty_ranks", ranks, n);
		pdi_json_kv_double(j, "confidence", a->abnormal ? pdi_confidence(a->am.phase_margin) *
										   pdi_confidence(a->am.task_margin)
								 : 0.0);
		json_confidence(j, a, sure, sizeof(sure));
		pdi_json_kv_double(j, "noise_z", a->noise_z);
		pdi_json_kv_double(j, "excess_s", a->excess_s);
		if (a->am.by_starved) {
			pdi_starved_text(&a->am.starved, doing, sizeof(doing));
			pdi_json_kv_str(j, "doing", doing);
		} else if (a->am.by_group) {
			pdi_alike_text(&a->am.starved.alike, doing, sizeof(doing));
			pdi_json_kv_str(j, "doing", doing);
		} else if (a->am.by_lost && a->am.lost.taken) {
			pdi_lost_taken_text(&a->am.lost, doing, sizeof(doing));
			pdi_json_kv_str(j, "doing", doing);
		}
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
	free(ranks);
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
	pdi_json_kv_bool(j, "by_stack", t->where.by_stack);
	pdi_json_kv_uint(j, "calls", m->calls);
	pdi_json_kv_uint(j, "phases", m->nphases);
	pdi_json_kv_uint(j, "states", nstates);
	pdi_json_kv_uint(j, "transitions", nedges);
	pdi_json_kv_uint(j, "events_lost", t->lost);
	pdi_json_kv_bool(j, "incomplete", pdi_view_task_incomplete(t));
	pdi_unobserved_json(&m->unobserved, j, pdi_mpi_func_name); /* the overhead budget's marks */
	pdi_stack_seen_json(&m->stack_seen, j, pdi_mpi_func_name); /* and what the live stack said then */
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

/* Ranks x phases, for the HTML report's map (rank_phases.h). */
static void json_rank_phases(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	const struct pdi_model **models = calloc(s->ntasks + 1, sizeof(*models));
	int *ranks = calloc(s->ntasks + 1, sizeof(*ranks));

	for (unsigned i = 0; models && ranks && i < s->ntasks; i++) {
		models[i] = s->tasks[i].model;
		ranks[i] = s->tasks[i].rank;
	}
	if (!models || !ranks || pdi_rank_phases_json(j, ranks, models, s->ntasks) < 0)
		j->failed = true;
	free(models);
	free(ranks);
}

char *pdi_render_json(const struct pdi_analysis *a)
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
	json_phases(&j, a);
	if (a->has_automaded)
		json_automaded(&j, a);
	if (a->tree) {
		pdi_json_key(&j, "prefix_tree");
		(void)pdi_ptree_render_json(a->tree, &j);
	}
	json_rank_phases(&j, a);
	pdi_json_key(&j, "tasks");
	pdi_json_arr_begin(&j);
	for (unsigned i = 0; i < s->ntasks; i++)
		json_task(&j, &s->tasks[i]);
	pdi_json_arr_end(&j);
	pdi_json_obj_end(&j);
	return pdi_json_steal(&j);
}

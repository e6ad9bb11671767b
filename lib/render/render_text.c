/* SPDX-License-Identifier: GPL-2.0-only */
/* render_text.c -- an analysis for people: the few lines srun prints, and the longer text of
 * `pdimon analyze`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "mpi_funcs.h"
#include "ranges.h"
#include "prefix_tree.h"
#include "render.h"

/* The ranks a CPU interference hit, when more than one: the furthest behind first (starved.h,
 * pdi_starved_hit()). */
static void starved_hit(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_starved *s = &a->am.starved;
	size_t *hit = malloc(s->n * sizeof(*hit)), k, nranks = 0;
	char ranks[1024] = "", one[256];

	if (!hit) {
		j->failed = true;
		return;
	}
	k = pdi_starved_hit(s, hit);
	for (size_t i = 0; i < k; i++) {
		nranks += a->classes.classes[hit[i]].n;
		pdi_analysis_class_ranks(a, hit[i], one, sizeof(one));
		snprintf(ranks + strlen(ranks), sizeof(ranks) - strlen(ranks), "%s%s", i ? ", then " : "", one);
	}
	free(hit);
	if (nranks > 1)
		pdi_json_printf(j, "pdimon:   the interference hit %zu ranks, not one: %s, by how far each fell behind its "
				   "peers (they shared the busy CPU)\n",
				nranks, ranks);
}

/* AutomaDeD's line of the summary, when its contrast is clear and the step did not hang
 * (a hang is PDI's: the hung phase is the last one, which AutomaDeD leaves out). */
static void summary_automaded(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_automaded *am = &a->am;
	char from[1100], to[1100], at[2300] = "", ranks[1024], when[200], phase[240], sure[160];
	int *v;

	if (!a->has_automaded || !a->abnormal || !strcmp(a->kind, "hang"))
		return;
	if (!(v = pdi_analysis_ranks_alloc(a))) {
		j->failed = true;
		return;
	}
	pdi_analysis_phase_text(a, am->faulty_phase, when, sizeof(when));
	snprintf(phase, sizeof(phase), "%u%s%s%s", am->faulty_phase, when[0] ? " (" : "", when, when[0] ? ")" : "");
	if (am->ntop) { /* none: a step of one phase where no transition held the time lost */
		pdi_view_state_name(a->view, am->top[0].from, from, sizeof(from));
		pdi_view_state_name(a->view, am->top[0].to, to, sizeof(to));
		snprintf(at, sizeof(at), ", at %s => %s", from, to);
	}
	pdi_ranges_format(v, pdi_analysis_faulty_ranks(a, v), ranks, sizeof(ranks));
	free(v);
	pdi_analysis_confidence_text(a, sure, sizeof(sure));
	if (am->by_group) {
		char doing[400];

		pdi_alike_text(&am->starved.alike, doing, sizeof(doing));
		pdi_json_printf(j, "pdimon: every rank lost CPU alike from phase %s, to a process of the job's own "
				   "(confidence %s)\n",
				phase, sure);
		pdi_json_printf(j, "pdimon:   %s\n", doing);
		return;
	}
	if (am->effect == PDI_EFFECT_PERMANENT)
		pdi_json_printf(j, "pdimon: behaviour shifted in phase %s and stayed so, in rank%s %s%s (confidence %s)\n",
				phase, strpbrk(ranks, ",-") ? "s" : "", ranks, at, sure);
	else
		pdi_json_printf(j, "pdimon: behaviour changed most in phase %s (%.1fx the next), in rank%s %s (%.1fx the "
				   "next)%s (confidence %s)\n",
				phase, am->phase_margin, strpbrk(ranks, ",-") ? "s" : "", ranks, am->task_margin, at, sure);
	if (am->by_starved) {
		const struct pdi_starved *s = &am->starved;
		size_t named = s->taken ? s->taker : s->task;
		char doing[300];

		pdi_starved_text(s, doing, sizeof(doing));
		pdi_json_printf(j, "pdimon:   %s: rank %d %s\n", s->taken ? "took the CPU" : "not getting CPU",
				a->view->tasks[a->classes.classes[named].members[0]].rank, doing);
		starved_hit(j, a);
	} else if (am->by_lost && am->lost.taken) {
		char doing[300];

		pdi_lost_taken_text(&am->lost, doing, sizeof(doing));
		pdi_json_printf(j, "pdimon:   took the CPU: rank %d %s\n",
				a->view->tasks[a->classes.classes[am->lost.taker].members[0]].rank, doing);
	}
}

/* The step's verdict: the stacks' (stack_evidence.h) when it is theirs, AutomaDeD's otherwise. */
static void summary_verdict(struct pdi_json *j, const struct pdi_analysis *a)
{
	char when[200], doing[300], sure[160];

	if (!a->by_stack) {
		summary_automaded(j, a);
		return;
	}
	pdi_analysis_phase_text(a, a->stack.phase, when, sizeof(when));
	pdi_stack_evidence_text(&a->stack, doing, sizeof(doing));
	pdi_analysis_confidence_text(a, sure, sizeof(sure));
	pdi_json_printf(j, "pdimon: rank %d stalled the others in phase %u%s%s%s: %s (confidence %s)\n", a->stack.rank,
			a->stack.phase, when[0] ? " (" : "", when, when[0] ? ")" : "", doing, sure);
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
		summary_verdict(j, a);
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
		case PDI_WHERE_COMPUTING: pdi_json_printf(j, "pdimon:   %s outside MPI, %s\n", ranks, g->text); break;
		case PDI_WHERE_FINISHED: pdi_json_printf(j, "pdimon:   %s finished\n", ranks); break;
		case PDI_WHERE_NO_MPI: pdi_json_printf(j, "pdimon:   %s made no MPI call\n", ranks); break;
		}
	}
	if (a->lp[0]) {
		pdi_json_printf(j, "pdimon: least progressed: %s — the others wait, directly or not, for %s (%s)\n", a->lp,
				strpbrk(a->lp, ",-") ? "them" : "it",
				!strcmp(a->lp_by, "kernel") ? "the node's kernel holds it" : "PDI");
		for (size_t k = 0; k < a->nlp && k < 4; k++)
			for (unsigned i = 0; i < s->ntasks; i++)
				if (s->tasks[i].rank == a->lp_ranks[k]) {
					char doing[300];

					pdi_view_task_doing(&s->tasks[i], doing, sizeof(doing));
					pdi_json_printf(j, "pdimon:   rank %d: %s\n", a->lp_ranks[k], doing);
				}
	}
	else if (!strcmp(a->kind, "hang") && a->ngroups > 1 && a->groups[0].kind == PDI_WHERE_COMPUTING) {
		pdi_ranges_format(a->groups[0].ranks, a->groups[0].n, ranks, sizeof(ranks));
		pdi_json_printf(j, "pdimon: suspect %s: the others wait in MPI while it is outside MPI\n", ranks);
	}
	summary_verdict(j, a);
}

char *pdi_render_summary(const struct pdi_analysis *a)
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
		pdi_json_printf(j, "  %zu. %s => %s\n     ranks %s, %s %.3g", k + 1, from, to, ranks, score_name, v[k].score);
		if (v[k].lost_s > 0)
			pdi_json_printf(j, ", %.2f s longer than on its peers", v[k].lost_s);
		pdi_json_printf(j, "\n");
	}
}

static void text_automaded(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_automaded *am = &a->am;
	char ranks[1024];
	int *v = pdi_analysis_ranks_alloc(a);

	if (!v) {
		j->failed = true;
		return;
	}
	pdi_json_printf(j, "\nPhases (AutomaDeD: %u compared, %s; effect %s):\n", am->end_phase - am->first_phase,
			a->sample_runs ? "against earlier runs" : "against each other", pdi_effect_name(am->effect));
	for (uint32_t p = 0; p < am->nphases; p++) {
		char when[200];

		pdi_analysis_phase_text(a, p, when, sizeof(when));
		if (p < am->first_phase || p >= am->end_phase)
			pdi_json_printf(j, "  phase %-3u (not compared)  %s\n", p, when);
		else
			pdi_json_printf(j, "  phase %-3u score %-10.3g %s%s\n", p, am->phase_score[p], when,
					p == am->faulty_phase ? (am->effect == PDI_EFFECT_PERMANENT ? "  <- behaviour shifted here"
												   : "  <- most deviant")
							      : "");
	}
	pdi_ranges_format(v, pdi_analysis_faulty_ranks(a, v), ranks, sizeof(ranks));
	free(v);
	if (am->by_group) /* no task is named: the job's group took it from every rank */
		pdi_json_printf(j, "\nFaulty task(s): none, every rank lost CPU alike to a process of the job's own "
				   "(phase confidence %.2f)\n",
				pdi_confidence(am->phase_margin));
	else
		pdi_json_printf(j, "\nFaulty task(s): %s (phase confidence %.2f, task confidence %.2f; %zu cluster%s of "
				   "%zu model class%s)\n",
				ranks, pdi_confidence(am->phase_margin), pdi_confidence(am->task_margin), am->nclusters,
				am->nclusters == 1 ? "" : "s", a->classes.n, a->classes.n == 1 ? "" : "es");
	text_transitions(j, a,
			 am->ntop && am->top[0].lost_s > 0
				 ? "Characteristic transitions (where the faulty task lost its time first, then the most "
				   "different from normal):"
				 : "Characteristic transitions (most different from normal first):",
			 am->top, am->ntop, "score");
	text_transitions(j, a, "Unusual transitions (least probable times first):", am->unusual, am->nunusual,
			 "log10 p");
	if (am->has_change)
		text_transitions(j, a, "Where behaviour shifted (largest rise in variation, earliest first):", &am->change,
				 1, "theta rise");
}

/* What the hang judge's looks at live stacks found during the step (model/stack_seen.h). */
static void text_stack_seen(struct pdi_json *j, const struct pdi_analysis *a)
{
	const struct pdi_view *s = a->view;
	bool any = false;

	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct pdi_view_task *t = &s->tasks[i];
		const struct pdi_stack_seen_log *l = &t->model->stack_seen;

		for (uint32_t k = 0; k < l->n; k++) {
			char doing[96], at[64] = "";

			if (!any)
				pdi_json_printf(j, "\nLive stacks read while the probes were thinned:\n");
			any = true;
			pdi_stack_seen_text(&l->v[k], pdi_mpi_func_name, doing, sizeof(doing));
			if (t->wall_offset_ns && s->started)
				snprintf(at, sizeof(at), " %.1f s - %.1f s after start,",
					 (double)((int64_t)l->v[k].t_first + t->wall_offset_ns - s->started * 1000000000ll) / 1e9,
					 (double)((int64_t)l->v[k].t_last + t->wall_offset_ns - s->started * 1000000000ll) / 1e9);
			pdi_json_printf(j, "  rank %d:%s %s (%u look%s)\n", t->rank, at, doing, l->v[k].looks,
					l->v[k].looks == 1 ? "" : "s");
		}
	}
}

char *pdi_render_text(const struct pdi_analysis *a)
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
	text_stack_seen(&j, a);
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

/* SPDX-License-Identifier: GPL-2.0-only */
/* health_view.c -- a step's view as the hang judge's input, and its analysis as a hang's line
 * (health_view.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health_view.h"
#include "ranges.h"

/* a task outside MPI using less CPU than this is not computing */
#define IDLE_CPU_PCT 5

static enum pdi_motion motion_of(const struct pdi_where *w)
{
	const struct pdi_task_activity *a = &w->act;

	if (w->kind == PDI_WHERE_FINISHED)
		return PDI_MOTION_FINISHED;
	if (w->kind == PDI_WHERE_NO_MPI)
		return PDI_MOTION_STARTING;
	if (a->kind == PDI_ACT_STOPPED)
		return PDI_MOTION_STOPPED;
	if (w->kind == PDI_WHERE_BLOCKED || w->kind == PDI_WHERE_IN_MPI)
		return PDI_MOTION_WAITING;
	if ((a->kind == PDI_ACT_SLEEPING || a->kind == PDI_ACT_DISK) && a->cpu_pct >= 0 && a->cpu_pct <= IDLE_CPU_PCT)
		return PDI_MOTION_IDLE;
	return PDI_MOTION_COMPUTING;
}

unsigned pdi_health_tasks_of_view(const struct pdi_view *v, struct pdi_health_task *out)
{
	const struct pdi_model **models = calloc(v->ntasks + 1, sizeof(*models));
	unsigned n = 0, nmodels = 0;

	/* the state durations of a program are pooled over its tasks' models: one of each
	 * distinct model is enough (a view's tasks share their class's model) */
	for (unsigned i = 0; models && i < v->ntasks; i++)
		if (v->tasks[i].model && (!nmodels || models[nmodels - 1] != v->tasks[i].model))
			models[nmodels++] = v->tasks[i].model;
	for (unsigned i = 0; i < v->ntasks; i++) {
		const struct pdi_view_task *t = &v->tasks[i];
		const struct pdi_where *w = &t->where;
		struct pdi_health_task *h = &out[n];

		if (!t->running)
			continue;
		*h = (struct pdi_health_task){.rank = t->rank, .motion = motion_of(w), .idle_s = (double)w->for_ns / 1e9};
		if (w->site >= 0 && models && (h->motion == PDI_MOTION_WAITING || h->motion == PDI_MOTION_COMPUTING ||
					       h->motion == PDI_MOTION_IDLE))
			pdi_state_durations_of(models, nmodels,
					       w->kind == PDI_WHERE_COMPUTING ? pdi_state_after((uint32_t)w->site)
									: pdi_state_comm((uint32_t)w->site),
					       &h->state);
		n++;
	}
	free(models);
	return n;
}

/* The view's task of rank RANK, NULL when none. */
static const struct pdi_view_task *task_of(const struct pdi_view *v, int rank)
{
	for (unsigned i = 0; i < v->ntasks; i++)
		if (v->tasks[i].rank == rank)
			return &v->tasks[i];
	return NULL;
}

void pdi_health_diagnosis(const struct pdi_analysis *a, char *buf, size_t len)
{
	const struct pdi_view_task *lp = a->nlp ? task_of(a->view, a->lp_ranks[0]) : NULL;
	char doing[800], ranks[256];
	size_t used = 0, shown = 0, waiting = 0;

	buf[0] = '\0';
	if (a->lp[0]) {
		doing[0] = '\0';
		if (lp && a->nlp == 1)
			pdi_view_task_doing(lp, doing, sizeof(doing));
		used += (size_t)snprintf(buf, len, "least progressed %s%s%s", a->lp, doing[0] ? ", " : "", doing);
	}
	/* where the others are, the largest groups of waiting tasks first (groups are sorted
	 * smallest first: the odd ones out lead); "the others" when one group is all of them */
	for (size_t k = 0; k < a->ngroups; k++)
		waiting += a->groups[k].kind == PDI_WHERE_BLOCKED || a->groups[k].kind == PDI_WHERE_IN_MPI;
	for (size_t k = a->ngroups; k-- > 0 && used < len && shown < 3;) {
		const struct pdi_where_group *g = &a->groups[k];
		bool others;

		if (g->kind != PDI_WHERE_BLOCKED && g->kind != PDI_WHERE_IN_MPI)
			continue;
		pdi_ranges_format(g->ranks, g->n, ranks, sizeof(ranks));
		others = a->lp[0] && waiting == 1 && g->n + a->nlp == a->view->ntasks;
		used += (size_t)snprintf(buf + used, len - used, "%s%s wait in %s", used ? "; " : "",
					 others ? "the others" : ranks, g->text);
		shown++;
	}
}

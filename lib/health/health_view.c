/* SPDX-License-Identifier: GPL-2.0-only */
/* health_view.c -- a step's view as the hang judge's input, and its analysis as a hang's line
 * (health_view.h). */
#include <errno.h>
#include <stdbool.h>
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

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The view's task of rank RANK, NULL when none. */
static const struct pdi_view_task *task_of(const struct pdi_view *v, int rank)
{
	for (unsigned i = 0; i < v->ntasks; i++)
		if (v->tasks[i].rank == rank)
			return &v->tasks[i];
	return NULL;
}

/* The waiting groups of A merged by place (one call site may be two groups: blocked on one
 * node, just in the call on another), into PLACES (room for a->ngroups) with their ranks
 * sorted in RANKS (room for every task); returns how many places, the largest first. */
struct place {
	const char *text;
	int *ranks;
	size_t n;
};

static struct place *place_of(struct place *places, size_t *nplaces, const char *text)
{
	for (size_t i = 0; i < *nplaces; i++)
		if (!strcmp(places[i].text, text))
			return &places[i];
	places[*nplaces] = (struct place){.text = text};
	return &places[(*nplaces)++];
}

static bool waiting(const struct pdi_where_group *g)
{
	return g->kind == PDI_WHERE_BLOCKED || g->kind == PDI_WHERE_IN_MPI;
}

static size_t waiting_places(const struct pdi_analysis *a, struct place *places, int *ranks)
{
	size_t nplaces = 0, off = 0;

	/* how many at each place, then each place's ranks together */
	for (size_t k = 0; k < a->ngroups; k++)
		if (waiting(&a->groups[k]))
			place_of(places, &nplaces, a->groups[k].text)->n += a->groups[k].n;
	for (size_t i = 0; i < nplaces; i++) {
		places[i].ranks = ranks + off;
		off += places[i].n;
		places[i].n = 0;
	}
	for (size_t k = 0; k < a->ngroups; k++) {
		const struct pdi_where_group *g = &a->groups[k];
		struct place *p;

		if (!waiting(g))
			continue;
		p = place_of(places, &nplaces, g->text);
		memcpy(p->ranks + p->n, g->ranks, g->n * sizeof(*ranks));
		p->n += g->n;
	}
	for (size_t i = 0; i < nplaces; i++) {
		qsort(places[i].ranks, places[i].n, sizeof(*ranks), cmp_int);
		for (size_t k = i + 1; k < nplaces; k++)
			if (places[k].n > places[i].n) {
				struct place t = places[i];

				places[i] = places[k];
				places[k] = t;
			}
	}
	return nplaces;
}

void pdi_health_diagnosis(const struct pdi_analysis *a, char *buf, size_t len)
{
	const struct pdi_view_task *lp = a->nlp ? task_of(a->view, a->lp_ranks[0]) : NULL;
	struct place *places = calloc(a->ngroups + 1, sizeof(*places));
	int *ranks = calloc(a->view->ntasks + 1, sizeof(*ranks));
	char doing[800], set[256];
	size_t used = 0, nplaces;

	buf[0] = '\0';
	if (a->lp[0]) {
		doing[0] = '\0';
		if (lp && a->nlp == 1)
			pdi_view_task_doing(lp, doing, sizeof(doing));
		used += (size_t)snprintf(buf, len, "least progressed %s%s%s", a->lp, doing[0] ? ", " : "", doing);
	}
	if (!places || !ranks)
		goto out;
	/* where the others wait, the largest places first (at most three); "the others" when one
	 * place holds all of them */
	nplaces = waiting_places(a, places, ranks);
	for (size_t k = 0; k < nplaces && k < 3 && used < len; k++) {
		bool others = a->lp[0] && nplaces == 1 && places[k].n + a->nlp == a->view->ntasks;

		pdi_ranges_format(places[k].ranks, places[k].n, set, sizeof(set));
		used += (size_t)snprintf(buf + used, len - used, "%s%s wait in %s", used ? "; " : "",
					 others ? "the others" : set, places[k].text);
	}
out:
	free(places);
	free(ranks);
}

int pdi_health_confirm(const struct pdi_health_judge *h, const struct pdi_analysis *a, struct pdi_health_verdict *ret,
		       char *line, size_t len)
{
	struct pdi_health_task *tasks = calloc(a->view->ntasks + 1, sizeof(*tasks));
	unsigned n;

	if (!tasks)
		return -ENOMEM;
	n = pdi_health_tasks_of_view(a->view, tasks);
	pdi_health_judge_tasks(h, tasks, n, ret);
	ret->critical = -1; /* an index into TASKS: LINE names the least progressed */
	free(tasks);
	pdi_health_diagnosis(a, line, len);
	return 0;
}

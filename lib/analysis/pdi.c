/* SPDX-License-Identifier: GPL-2.0-only */
/* pdi.c -- progress dependence graph and least-progressed tasks (PDI). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pdi.h"

#define ONE (1.0 - 1e-9)
#define SWEEPS 500 /* value iteration: enough for loops of hundreds of states */

enum pdi_dep pdi_dep_from_table(double forward, double backward)
{
	if (forward <= 0 && backward <= 0)
		return PDI_DEP_NONE; /* different branches */
	if (forward <= 0)
		return PDI_DEP_ON; /* j can come back to i, i cannot reach j: j is behind */
	if (backward <= 0)
		return PDI_DEP_BY;
	if (forward >= ONE && backward < ONE)
		return PDI_DEP_BY; /* i must reach j, j may never come back: j waits for i */
	if (backward >= ONE && forward < ONE)
		return PDI_DEP_ON;
	return PDI_DEP_UNDEFINED;
}

int pdi_mm_build(const struct pdi_model *m, struct pdi_mm *ret)
{
	struct pdi_mm mm = {.model = m};
	uint32_t nedges = 0, cap = 0;
	uint64_t *ek = NULL; /* (from index << 32 | to index) of merged edges */
	double *ec = NULL;
	struct pdi_u64map eidx = {0};
	double *out = NULL;
	int r = -ENOMEM;

	for (uint32_t ph = 0; ph < m->nphases; ph++) {
		const struct pdi_phase *p = &m->phases[ph];

		for (uint32_t i = 0; i < p->nstates; i++)
			if (pdi_u64map_get(&mm.idx, p->states[i].key) == PDI_U64MAP_NONE) {
				uint64_t *k = realloc(mm.keys, sizeof(*k) * (mm.n + 1));
				if (!k)
					goto fail;
				mm.keys = k;
				if (pdi_u64map_put(&mm.idx, p->states[i].key, mm.n) < 0)
					goto fail;
				mm.keys[mm.n++] = p->states[i].key;
			}
		for (uint32_t i = 0; i < p->nedges; i++) {
			uint64_t f = pdi_u64map_get(&mm.idx, p->states[p->edges[i].from].key);
			uint64_t t = pdi_u64map_get(&mm.idx, p->states[p->edges[i].to].key);
			uint64_t key = f << 32 | t;
			uint32_t x = pdi_u64map_get(&eidx, key);

			if (x == PDI_U64MAP_NONE) {
				if (nedges == cap) {
					uint32_t ncap = cap ? cap * 2 : 64;
					uint64_t *nk = realloc(ek, sizeof(*nk) * ncap);
					double *nc = nk ? realloc(ec, sizeof(*nc) * ncap) : NULL;

					if (nk)
						ek = nk;
					if (!nk || !nc)
						goto fail;
					ec = nc;
					cap = ncap;
				}
				if (pdi_u64map_put(&eidx, key, nedges) < 0)
					goto fail;
				x = nedges++;
				ek[x] = key;
				ec[x] = 0;
			}
			ec[x] += (double)p->edges[i].time.n;
		}
	}
	mm.first = calloc(mm.n + 1, sizeof(*mm.first));
	mm.to = malloc(sizeof(*mm.to) * (nedges + 1));
	mm.p = malloc(sizeof(*mm.p) * (nedges + 1));
	out = calloc(mm.n + 1, sizeof(*out));
	if (!mm.first || !mm.to || !mm.p || !out)
		goto fail;
	for (uint32_t i = 0; i < nedges; i++) {
		mm.first[(ek[i] >> 32) + 1]++;
		out[ek[i] >> 32] += ec[i];
	}
	for (uint32_t s = 0; s < mm.n; s++)
		mm.first[s + 1] += mm.first[s];
	{
		uint32_t *fill = calloc(mm.n + 1, sizeof(*fill));

		if (!fill)
			goto fail;
		for (uint32_t i = 0; i < nedges; i++) {
			uint32_t f = (uint32_t)(ek[i] >> 32), at = mm.first[f] + fill[f]++;

			mm.to[at] = (uint32_t)ek[i];
			mm.p[at] = out[f] > 0 ? ec[i] / out[f] : 0;
		}
		free(fill);
	}
	r = 0;
	*ret = mm;
	mm = (struct pdi_mm){0};
fail:
	free(ek);
	free(ec);
	free(out);
	pdi_u64map_free(&eidx);
	pdi_mm_done(&mm);
	return r;
}

void pdi_mm_done(struct pdi_mm *mm)
{
	pdi_u64map_free(&mm->idx);
	free(mm->keys);
	free(mm->first);
	free(mm->to);
	free(mm->p);
	*mm = (struct pdi_mm){0};
}

double pdi_mm_reach(const struct pdi_mm *mm, uint64_t from, uint64_t to)
{
	uint32_t f = pdi_u64map_get(&mm->idx, from), t = pdi_u64map_get(&mm->idx, to);
	double *h, res = 0;

	if (f == PDI_U64MAP_NONE || t == PDI_U64MAP_NONE)
		return 0;
	h = calloc(mm->n, sizeof(*h));
	if (!h)
		return 0;
	/* h[s]: the probability of reaching T from S; T absorbs with 1. Monotone from 0, so
	 * value iteration converges from below. States are numbered in order of first visit,
	 * so a state's successors mostly come after it: sweeping backwards carries a value
	 * along a whole chain in one sweep instead of one state per sweep. */
	for (int sweep = 0; sweep < SWEEPS; sweep++) {
		double change = 0;

		for (uint32_t s = mm->n; s-- > 0;) {
			double v = 0;

			if (s == t)
				continue;
			for (uint32_t e = mm->first[s]; e < mm->first[s + 1]; e++)
				v += mm->p[e] * (mm->to[e] == t ? 1.0 : h[mm->to[e]]);
			change = fmax(change, fabs(v - h[s]));
			h[s] = v;
		}
		if (change < 1e-12)
			break;
	}
	/* from F itself: leave it first, so F == T asks whether a loop comes back */
	for (uint32_t e = mm->first[f]; e < mm->first[f + 1]; e++)
		res += mm->p[e] * (mm->to[e] == t ? 1.0 : h[mm->to[e]]);
	free(h);
	return fmin(res, 1.0);
}

/* How often task T has entered state S: the model counts completed calls, and a task
 * blocked inside S has entered it once more. */
static uint64_t entered(const struct pdi_position *t, uint64_t s)
{
	return pdi_model_visits(t->mm->model, s) + (t->inside && t->state == s);
}

/* Has Y done everything X has: entered X's state at least as often as X, while X has not
 * entered Y's state as often as Y? The order of two tasks inside one loop. */
static bool ahead(const struct pdi_position *y, const struct pdi_position *x)
{
	return entered(y, x->state) >= entered(x, x->state) && entered(x, y->state) < entered(y, y->state);
}

static enum pdi_dep dependence(const struct pdi_position *x, const struct pdi_position *y)
{
	enum pdi_dep d = pdi_dep_from_table(pdi_mm_reach(x->mm, x->state, y->state),
					    pdi_mm_reach(x->mm, y->state, x->state));

	if (d != PDI_DEP_UNDEFINED)
		return d;
	if (ahead(y, x))
		return PDI_DEP_BY;
	if (ahead(x, y))
		return PDI_DEP_ON;
	return PDI_DEP_UNDEFINED;
}

/* Where tasks are grouped: one map per side of a call (inside it, or computing after it),
 * from the state to its group; and, for point-to-point peers, from a rank to its group. */
struct grouping {
	struct pdi_u64map by_state[2];
	struct pdi_u64map by_rank;
	uint32_t *of_task; /* per task: its group, PDI_U64MAP_NONE when finished */
	int *rep;          /* per group: a task standing for it, for the visit-count order */
};

static void grouping_done(struct grouping *gr)
{
	pdi_u64map_free(&gr->by_state[0]);
	pdi_u64map_free(&gr->by_state[1]);
	pdi_u64map_free(&gr->by_rank);
	free(gr->of_task);
	free(gr->rep);
}

/* Groups of TASKS by position, each with exactly the room its ranks need. */
static int make_groups(const struct pdi_position *tasks, size_t n, struct pdi_pdg *g, struct grouping *gr)
{
	gr->of_task = malloc(sizeof(*gr->of_task) * (n ? n : 1));
	gr->rep = malloc(sizeof(*gr->rep) * (n ? n : 1));
	g->groups = calloc(n ? n : 1, sizeof(*g->groups));
	if (!gr->of_task || !gr->rep || !g->groups)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct pdi_u64map *map = &gr->by_state[tasks[i].inside];
		uint32_t k;

		gr->of_task[i] = PDI_U64MAP_NONE;
		if (tasks[i].finished)
			continue;
		k = pdi_u64map_get(map, tasks[i].state);
		if (k == PDI_U64MAP_NONE) {
			k = (uint32_t)g->ngroups++;
			if (pdi_u64map_put(map, tasks[i].state, k) < 0)
				return -ENOMEM;
			g->groups[k] = (struct pdi_group){.state = tasks[i].state, .inside = tasks[i].inside,
							  .collective = tasks[i].inside && tasks[i].collective};
			gr->rep[k] = (int)i;
		}
		gr->of_task[i] = k;
		g->groups[k].n++; /* counted now, filled below */
	}
	for (size_t k = 0; k < g->ngroups; k++) {
		g->groups[k].ranks = malloc(sizeof(int) * g->groups[k].n);
		if (!g->groups[k].ranks)
			return -ENOMEM;
		g->groups[k].n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t k = gr->of_task[i];
		uint64_t rank = (uint32_t)tasks[i].rank;

		if (k == PDI_U64MAP_NONE)
			continue;
		g->groups[k].ranks[g->groups[k].n++] = tasks[i].rank;
		if (pdi_u64map_get(&gr->by_rank, rank) == PDI_U64MAP_NONE && pdi_u64map_put(&gr->by_rank, rank, k) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Tasks of one group that judge with one model judge alike: is this the pair's first task?
 * 1, 0, or -ENOMEM. Thousands of tasks of a class of equal models (eqclass.h) share one. */
struct judges {
	struct pdi_u64map model_id; /* model's address -> a small number */
	struct pdi_u64map seen;     /* group << 32 | model number */
};

static int first_judge(struct judges *j, uint32_t group, const struct pdi_mm *mm)
{
	uint32_t id = pdi_u64map_get(&j->model_id, (uintptr_t)mm);
	uint64_t pair;

	if (id == PDI_U64MAP_NONE) {
		id = j->model_id.used;
		if (pdi_u64map_put(&j->model_id, (uintptr_t)mm, id) < 0)
			return -ENOMEM;
	}
	pair = (uint64_t)group << 32 | id;
	if (pdi_u64map_get(&j->seen, pair) != PDI_U64MAP_NONE)
		return 0;
	return pdi_u64map_put(&j->seen, pair, 0) < 0 ? -ENOMEM : 1;
}

/* Task I's view of every other group, OR-ed into the matrix (Table 2). */
static int judge(const struct pdi_position *tasks, size_t i, const struct grouping *gr, struct judges *j,
		 struct pdi_pdg *g)
{
	uint32_t gi = gr->of_task[i];
	int r = first_judge(j, gi, tasks[i].mm);

	if (r < 0)
		return r;
	for (size_t h = 0; r == 1 && h < g->ngroups; h++) {
		enum pdi_dep d;

		if (h == gi)
			continue;
		d = dependence(&tasks[i], &tasks[gr->rep[h]]);
		g->dep[gi * g->ngroups + h] |= (uint8_t)d;
		g->dep[h * g->ngroups + gi] |= (uint8_t)(d == PDI_DEP_ON ? PDI_DEP_BY : d == PDI_DEP_BY ? PDI_DEP_ON : d);
	}
	return 0;
}

static void depends(struct pdi_pdg *g, size_t a, size_t b)
{
	g->dep[a * g->ngroups + b] = PDI_DEP_ON;
	g->dep[b * g->ngroups + a] = PDI_DEP_BY;
}

/* Collective dependence: tasks blocked inside a collective wait for every task that is not
 * inside it with them, for it cannot complete without them. The probabilities cannot see
 * it where a task sits in a state the others' models never had (a stray receive before
 * the collective); what the tasks are doing says it. Applied after the union. */
static void collective_edges(struct pdi_pdg *g)
{
	for (size_t a = 0; a < g->ngroups; a++)
		for (size_t b = 0; g->groups[a].collective && b < g->ngroups; b++)
			if (b != a && !(g->groups[b].collective && g->groups[b].state == g->groups[a].state))
				depends(g, a, b);
}

/* Point-to-point dependence (4.2): a task blocked in a receive, send or wait on a peer waits
 * for that peer's group, whatever the models say: it is what the task is doing, where the
 * probabilities are only what its past suggests. Not towards a group inside a collective:
 * that one waits for this one, and a Wait's peers include requests already complete. Two
 * groups that wait for each other so (a deadlock: a message lost) keep both waits. Applied
 * after the union, so that it wins. */
static int p2p_edges(const struct pdi_position *tasks, size_t n, const struct grouping *gr, struct pdi_pdg *g)
{
	size_t ng = g->ngroups;
	uint8_t *p2p = calloc(ng * ng + 1, 1);

	if (!p2p)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t gi = gr->of_task[i];

		for (size_t p = 0; gi != PDI_U64MAP_NONE && tasks[i].inside && p < tasks[i].npeers; p++) {
			uint32_t gp = pdi_u64map_get(&gr->by_rank, (uint32_t)tasks[i].peers[p]);

			if (gp == PDI_U64MAP_NONE || gp == gi || g->groups[gp].collective)
				continue;
			p2p[gi * ng + gp] = 1;
			g->groups[gi].p2p_dependent = true;
		}
	}
	for (size_t a = 0; a < ng; a++)
		for (size_t b = 0; b < ng; b++)
			if (p2p[a * ng + b]) {
				g->dep[a * ng + b] = PDI_DEP_ON;
				if (!p2p[b * ng + a])
					g->dep[b * ng + a] = PDI_DEP_BY;
			}
	free(p2p);
	return 0;
}

static bool waits_for(const struct pdi_pdg *g, size_t a, size_t b)
{
	return g->dep[a * g->ngroups + b] == PDI_DEP_ON;
}

#define PDI_MAX_CYCLE_GROUPS 512 /* the deadlock search is cubic in the groups: none beyond */

/* REACH[a * ng + b]: a waits for b, directly or through others. */
static int reachability(const struct pdi_pdg *g, uint8_t **ret)
{
	size_t ng = g->ngroups;
	uint8_t *reach = calloc(ng * ng + 1, 1);
	size_t *stack = malloc((ng + 1) * sizeof(*stack));

	if (!reach || !stack) {
		free(reach);
		free(stack);
		return -ENOMEM;
	}
	for (size_t a = 0; a < ng; a++) {
		size_t top = 0;

		stack[top++] = a;
		while (top) {
			size_t x = stack[--top];

			for (size_t y = 0; y < ng; y++)
				if (waits_for(g, x, y) && !reach[a * ng + y]) {
					reach[a * ng + y] = 1;
					stack[top++] = y;
				}
		}
	}
	free(stack);
	*ret = reach;
	return 0;
}

/* Is A in a cycle of waits that waits for nothing outside it (a deadlock: each waits for a
 * message of the other), that another group waits for or that holds every group? */
static bool in_deadlock(const struct pdi_pdg *g, const uint8_t *reach, size_t a)
{
	size_t ng = g->ngroups, members = 1;
	bool waited = false;

	if (!reach[a * ng + a])
		return false; /* in no cycle */
	for (size_t x = 0; x < ng; x++) {
		if (x == a)
			continue;
		if (reach[a * ng + x] && !reach[x * ng + a])
			return false; /* waits for something beyond its cycle */
		members += reach[a * ng + x];
		waited |= !reach[a * ng + x] && reach[x * ng + a];
	}
	return waited || members == ng;
}

/* LP (4.3): the groups that wait for nobody and are waited for, and not for a peer elsewhere;
 * where none does, the groups of a deadlock that the others wait for. */
static int least_progressed(struct pdi_pdg *g)
{
	size_t ng = g->ngroups;
	uint8_t *reach;

	for (size_t a = 0; a < ng; a++) {
		bool waits = false, waited = false;

		for (size_t b = 0; b < ng; b++) {
			waits |= waits_for(g, a, b);
			waited |= g->dep[a * ng + b] == PDI_DEP_BY;
		}
		g->groups[a].lp = !waits && (waited || ng == 1) && !g->groups[a].p2p_dependent;
		g->nlp += g->groups[a].lp;
	}
	if (g->nlp || ng > PDI_MAX_CYCLE_GROUPS)
		return 0;
	if (reachability(g, &reach) < 0)
		return -ENOMEM;
	for (size_t a = 0; a < ng; a++) {
		g->groups[a].lp = in_deadlock(g, reach, a);
		g->nlp += g->groups[a].lp;
	}
	free(reach);
	return 0;
}

int pdi_pdg_build(const struct pdi_position *tasks, size_t n, struct pdi_pdg *ret)
{
	struct pdi_pdg g = {0};
	struct grouping gr = {0};
	struct judges j = {0};
	int r;

	if ((r = make_groups(tasks, n, &g, &gr)) < 0)
		goto fail;
	g.dep = calloc(g.ngroups * g.ngroups + 1, 1);
	if (!g.dep) {
		r = -ENOMEM;
		goto fail;
	}
	/* each task judges with its own model; the union is a bitwise OR (Table 2) */
	for (size_t i = 0; i < n; i++)
		if (gr.of_task[i] != PDI_U64MAP_NONE && (r = judge(tasks, i, &gr, &j, &g)) < 0)
			goto fail;
	collective_edges(&g);
	if ((r = p2p_edges(tasks, n, &gr, &g)) < 0 || (r = least_progressed(&g)) < 0)
		goto fail;
	*ret = g;
	g = (struct pdi_pdg){0};
fail:
	grouping_done(&gr);
	pdi_u64map_free(&j.model_id);
	pdi_u64map_free(&j.seen);
	pdi_pdg_done(&g);
	return r;
}

void pdi_pdg_done(struct pdi_pdg *g)
{
	for (size_t i = 0; g->groups && i < g->ngroups; i++)
		free(g->groups[i].ranks);
	free(g->groups);
	free(g->dep);
	*g = (struct pdi_pdg){0};
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* pace.c -- computation beyond its transitions' usual pace, per task and phase (see pace.h). */
#include <errno.h>
#include <stdlib.h>

#include "pace.h"

/* One computation state of one phase: its visits and their mean time. */
struct visit {
	uint64_t key;
	uint32_t phase;
	uint64_t n;
	double mean_ns;
};

static int cmp_visit(const void *x, const void *y)
{
	const struct visit *a = x, *b = y;

	if (a->key != b->key)
		return (a->key > b->key) - (a->key < b->key);
	return (a->mean_ns > b->mean_ns) - (a->mean_ns < b->mean_ns);
}

/* The median of the G sorted means of V but the I-th: the state's usual time per visit in the
 * task's other phases (one vote per phase). */
static double median_without(const struct visit *v, size_t g, size_t i)
{
	size_t m = g - 1, lo = (m - 1) / 2, hi = m / 2;
	double a = v[lo < i ? lo : lo + 1].mean_ns, b = v[hi < i ? hi : hi + 1].mean_ns;

	return (a + b) / 2;
}

/* Model M's computation states over phases [FIRST, END) into V (room for all their edges);
 * returns how many. An edge out of a computation state goes to the call that ended it: the
 * state's key names both calls, so it has one edge per phase. */
static size_t visits_of(const struct pdi_model *m, uint32_t first, uint32_t end, struct visit *v)
{
	size_t k = 0;

	for (uint32_t p = first; p < end && p < m->nphases; p++) {
		const struct pdi_phase *ph = &m->phases[p];

		for (uint32_t e = 0; e < ph->nedges; e++) {
			uint64_t key = ph->states[ph->edges[e].from].key;

			if (pdi_state_is_comp(key) && ph->edges[e].time.n)
				v[k++] = (struct visit){.key = key, .phase = p, .n = ph->edges[e].time.n,
							.mean_ns = ph->edges[e].time.mean};
		}
	}
	return k;
}

static size_t edges_in(const struct pdi_model *m, uint32_t first, uint32_t end)
{
	size_t k = 0;

	for (uint32_t p = first; p < end && p < m->nphases; p++)
		k += m->phases[p].nedges;
	return k;
}

int pdi_pace_of(const struct pdi_model *const *models, size_t n, uint32_t first, uint32_t end,
		struct pdi_pace *ret)
{
	struct pdi_pace pc = {.n = n, .first = first, .end = end, .nphases = end};
	struct visit *v = NULL;
	size_t room = 1;

	if (!n || first >= end)
		return -EINVAL;
	for (size_t t = 0; t < n; t++) {
		size_t k = edges_in(models[t], first, end);

		room = k > room ? k : room;
	}
	pc.beyond_s = calloc(n * pc.nphases, sizeof(*pc.beyond_s));
	pc.unpaced_s = calloc(n * pc.nphases, sizeof(*pc.unpaced_s));
	v = malloc(room * sizeof(*v));
	if (!pc.beyond_s || !pc.unpaced_s || !v) {
		free(v);
		pdi_pace_done(&pc);
		return -ENOMEM;
	}
	for (size_t t = 0; t < n; t++) {
		size_t k = visits_of(models[t], first, end, v);

		qsort(v, k, sizeof(*v), cmp_visit);
		for (size_t s = 0, g; s < k; s += g) {
			for (g = 1; s + g < k && v[s + g].key == v[s].key; g++)
				;
			for (size_t i = 0; i < g; i++) {
				const struct visit *x = &v[s + i];
				size_t at = t * pc.nphases + x->phase;

				if (g == 1) {
					pc.unpaced_s[at] += (double)x->n * x->mean_ns / 1e9;
				} else {
					double usual = median_without(v + s, g, i);

					if (x->mean_ns > usual)
						pc.beyond_s[at] += (double)x->n * (x->mean_ns - usual) / 1e9;
				}
			}
		}
	}
	free(v);
	*ret = pc;
	return 0;
}

void pdi_pace_done(struct pdi_pace *p)
{
	free(p->beyond_s);
	free(p->unpaced_s);
	*p = (struct pdi_pace){0};
}

double pdi_pace_beyond_s(const struct pdi_pace *p, size_t t, uint32_t phase)
{
	return t < p->n && phase >= p->first && phase < p->end ? p->beyond_s[t * p->nphases + phase] : 0;
}

double pdi_pace_with_unpaced_s(const struct pdi_pace *p, size_t t, uint32_t phase)
{
	return t < p->n && phase >= p->first && phase < p->end
		       ? p->beyond_s[t * p->nphases + phase] + p->unpaced_s[t * p->nphases + phase]
		       : 0;
}

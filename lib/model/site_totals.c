/* SPDX-License-Identifier: GPL-2.0-only */
/* site_totals.c -- per-site calls, bytes and time of a task, from its semi-Markov model: a
 * communication state's visits are its calls, its bytes what they moved, and the time spent
 * in it before each transition (the edge's distribution: count times mean) its time. */
#include <math.h>

#include "site_totals.h"

static void add_sat(uint64_t *into, uint64_t v)
{
	if (__builtin_add_overflow(*into, v, into))
		*into = UINT64_MAX;
}

void pdi_site_totals_add(struct pdi_site_total *v, uint32_t nsites, const struct pdi_model *m)
{
	for (uint32_t p = 0; p < m->nphases; p++) {
		const struct pdi_phase *ph = &m->phases[p];

		for (uint32_t i = 0; i < ph->nstates; i++) {
			const struct pdi_state *st = &ph->states[i];
			uint32_t site = pdi_state_site(st->key);

			if (pdi_state_is_comp(st->key) || site >= nsites)
				continue;
			add_sat(&v[site].calls, st->visits);
			add_sat(&v[site].bytes, st->bytes);
		}
		for (uint32_t e = 0; e < ph->nedges; e++) {
			const struct pdi_edge *ed = &ph->edges[e];
			uint64_t key = ph->states[ed->from].key, site = pdi_state_site(key);
			double ns = (double)ed->time.n * ed->time.mean;

			if (pdi_state_is_comp(key) || site >= nsites || !(ns > 0))
				continue;
			add_sat(&v[site].time_ns, ns >= 1.8e19 ? UINT64_MAX : (uint64_t)llround(ns));
		}
	}
}

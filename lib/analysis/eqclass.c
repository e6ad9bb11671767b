/* SPDX-License-Identifier: GPL-2.0-only */
/* eqclass.c -- model digests and equivalence classes of tasks (see eqclass.h).
 *
 * Times are quantized by rounding the mantissa of their IEEE double to the bits the
 * tolerance leaves: a relative (logarithmic, piecewise linear per octave) scale that costs
 * an integer add and a shift, where log() would dominate the digest of a large model.
 * A state or an edge hashes on its own and a phase adds them up, which makes the digest
 * independent of the order states and edges were first seen in without sorting them. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eqclass.h"

#define MANTISSA_BITS 52
#define EDGE_WORDS (4 + 2 * (PDI_HIST_BUCKETS + 1))

/* Low mantissa bits dropped: the largest 2^-k not above TOLERANCE keeps k bits. */
static unsigned quant_shift(double tolerance)
{
	int kept;

	if (!(tolerance > 0))
		return 0;
	if (tolerance >= 1)
		return MANTISSA_BITS;
	kept = -ilogb(tolerance);
	return kept >= MANTISSA_BITS ? 0 : MANTISSA_BITS - (unsigned)kept;
}

/* X rounded to the nearest multiple of 2^SHIFT units in the last place. Times are not
 * negative, so the bit pattern is monotone in X and a carry moves to the next octave. */
static uint64_t quantize(double x, unsigned shift)
{
	uint64_t bits;

	memcpy(&bits, &x, sizeof(bits));
	return shift ? (bits + (1ull << (shift - 1))) >> shift : bits;
}

/* What the analyses read of edge E, times quantized: hashing and comparing both use it. */
static size_t edge_words(const struct pdi_edge *e, unsigned shift, uint64_t w[EDGE_WORDS])
{
	size_t n = 0;

	w[n++] = e->time.n;
	w[n++] = quantize(e->time.mean, shift);
	w[n++] = quantize(pdi_gauss_stddev(&e->time), shift);
	w[n++] = e->hist.n;
	for (unsigned i = 0; i < e->hist.n && i <= PDI_HIST_BUCKETS; i++) {
		w[n++] = quantize(e->hist.mean[i], shift);
		w[n++] = e->hist.count[i];
	}
	return n;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31);
}

/* Spreads a finished element's hash over all bits, so that a sum of them stays strong. */
static uint64_t finish(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

static uint64_t phase_digest(const struct pdi_phase *p, unsigned shift)
{
	uint64_t states = 0, edges = 0, w[EDGE_WORDS];

	for (uint32_t i = 0; i < p->nstates; i++)
		states += finish(mix(mix(1, p->states[i].key), p->states[i].visits));
	for (uint32_t i = 0; i < p->nedges; i++) {
		const struct pdi_edge *e = &p->edges[i];
		uint64_t h = mix(mix(2, p->states[e->from].key), p->states[e->to].key);
		size_t n = edge_words(e, shift, w);

		for (size_t k = 0; k < n; k++)
			h = mix(h, w[k]);
		edges += finish(h);
	}
	return mix(mix(mix(mix(3, p->nstates), p->nedges), states), edges);
}

/* Phase P's share of the kernel's counts, in the quarter-seconds the analysis can tell apart
 * (lost_time.h: a stall is a second or more): time held and time waiting for a CPU. Two tasks
 * whose call timings agree can differ there alone -- one stopped inside MPI, the others
 * waiting for it in the same call. All zero when not read. */
static void usage_words(const struct pdi_model *m, uint32_t p, uint64_t w[2])
{
	struct pdi_phase_usage u;

	w[0] = w[1] = 0;
	if (pdi_model_phase_usage(m, p, &u)) {
		w[0] = (u.held_ns + 125000000) / 250000000;
		w[1] = (u.wait_ns + 125000000) / 250000000;
	}
}

uint64_t pdi_model_digest(const struct pdi_model *m, double tolerance)
{
	unsigned shift = quant_shift(tolerance);
	uint64_t h = mix(4, m->nphases), u[2];

	for (uint32_t i = 0; i < m->nphases; i++) {
		usage_words(m, i, u);
		h = mix(mix(mix(h, phase_digest(&m->phases[i], shift)), u[0]), u[1]);
	}
	return finish(h);
}

static bool edges_equivalent(const struct pdi_edge *a, const struct pdi_edge *b, unsigned shift)
{
	uint64_t wa[EDGE_WORDS], wb[EDGE_WORDS];
	size_t n = edge_words(a, shift, wa);

	return n == edge_words(b, shift, wb) && memcmp(wa, wb, n * sizeof(*wa)) == 0;
}

/* Equal sizes and every state and edge of A found equal in B: a one-to-one match, since
 * keys are unique within a phase. */
static bool phases_equivalent(const struct pdi_phase *a, const struct pdi_phase *b, unsigned shift)
{
	if (a->nstates != b->nstates || a->nedges != b->nedges)
		return false;
	for (uint32_t i = 0; i < a->nstates; i++) {
		uint32_t j = pdi_phase_state(b, a->states[i].key);

		if (j == PDI_U64MAP_NONE || b->states[j].visits != a->states[i].visits)
			return false;
	}
	for (uint32_t i = 0; i < a->nedges; i++) {
		const struct pdi_edge *e = &a->edges[i];
		const struct pdi_edge *f = pdi_phase_edge(b, a->states[e->from].key, a->states[e->to].key);

		if (!f || !edges_equivalent(e, f, shift))
			return false;
	}
	return true;
}

bool pdi_model_equivalent(const struct pdi_model *a, const struct pdi_model *b, double tolerance)
{
	unsigned shift = quant_shift(tolerance);

	if (a == b)
		return true;
	if (a->nphases != b->nphases)
		return false;
	for (uint32_t i = 0; i < a->nphases; i++) {
		uint64_t ua[2], ub[2];

		usage_words(a, i, ua);
		usage_words(b, i, ub);
		if (!phases_equivalent(&a->phases[i], &b->phases[i], shift) || ua[0] != ub[0] || ua[1] != ub[1])
			return false;
	}
	return true;
}

void pdi_eqclasses_init(struct pdi_eqclasses *c, double tolerance)
{
	*c = (struct pdi_eqclasses){.tolerance = tolerance};
}

void pdi_eqclasses_done(struct pdi_eqclasses *c)
{
	for (size_t i = 0; c->classes && i < c->n; i++)
		free(c->classes[i].members);
	free(c->classes);
	pdi_u64map_free(&c->by_digest);
	*c = (struct pdi_eqclasses){0};
}

static bool belongs(const struct pdi_eqclasses *c, const struct pdi_eqclass *cl, const struct pdi_model *m)
{
	if (!cl->model || !m)
		return !cl->model && !m;
	return pdi_model_equivalent(cl->model, m, c->tolerance);
}

static int add_members(struct pdi_eqclass *cl, const uint32_t *members, uint32_t n)
{
	if (cl->n + n > cl->cap) {
		uint32_t cap = cl->cap ? cl->cap : 4;
		uint32_t *v;

		while (cap < cl->n + n)
			cap *= 2;
		v = realloc(cl->members, sizeof(*v) * cap);
		if (!v)
			return -ENOMEM;
		cl->members = v;
		cl->cap = cap;
	}
	memcpy(cl->members + cl->n, members, sizeof(*members) * n);
	cl->n += n;
	return 0;
}

static int new_class(struct pdi_eqclasses *c, const struct pdi_model *m, uint64_t digest, uint32_t collides_with,
		     const uint32_t *members, uint32_t n)
{
	struct pdi_eqclass cl = {.model = m, .digest = digest, .next = PDI_U64MAP_NONE};
	uint32_t idx = (uint32_t)c->n;

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct pdi_eqclass *v = realloc(c->classes, sizeof(*v) * cap);

		if (!v)
			return -ENOMEM;
		c->classes = v;
		c->cap = cap;
	}
	if (add_members(&cl, members, n) < 0)
		return -ENOMEM;
	if (collides_with == PDI_U64MAP_NONE && pdi_u64map_put(&c->by_digest, digest, idx) < 0) {
		free(cl.members);
		return -ENOMEM;
	}
	if (collides_with != PDI_U64MAP_NONE)
		c->classes[collides_with].next = idx;
	c->classes[c->n++] = cl;
	return 0;
}

int pdi_eqclass_add(struct pdi_eqclasses *c, const struct pdi_model *m, uint64_t digest, const uint32_t *members,
		    uint32_t n, uint32_t *ret_class)
{
	uint32_t last = PDI_U64MAP_NONE;
	int r;

	for (uint32_t i = pdi_u64map_get(&c->by_digest, digest); i != PDI_U64MAP_NONE; i = c->classes[i].next) {
		if (belongs(c, &c->classes[i], m)) {
			if ((r = add_members(&c->classes[i], members, n)) < 0)
				return r;
			if (ret_class)
				*ret_class = i;
			return 0;
		}
		last = i;
	}
	if ((r = new_class(c, m, digest, last, members, n)) < 0)
		return r;
	if (ret_class)
		*ret_class = (uint32_t)c->n - 1;
	return 1;
}

/* One class per distinct model of MODELS or, with MODELS NULL, per distinct key of KEYS. */
static int build(const struct pdi_model *const *models, const uint64_t *keys, size_t n, double tolerance,
		 struct pdi_eqclasses *ret)
{
	struct pdi_eqclasses c;

	pdi_eqclasses_init(&c, tolerance);
	for (uint32_t i = 0; i < n; i++) {
		const struct pdi_model *m = models ? models[i] : NULL;
		int r = pdi_eqclass_add(&c, m, m ? pdi_model_digest(m, tolerance) : keys[i], &i, 1, NULL);

		if (r < 0) {
			pdi_eqclasses_done(&c);
			return r;
		}
	}
	*ret = c;
	return 0;
}

int pdi_eqclass_build(const struct pdi_model *const *models, size_t n, double tolerance,
		      struct pdi_eqclasses *ret)
{
	return build(models, NULL, n, tolerance, ret);
}

int pdi_eqclass_by_key(const uint64_t *keys, size_t n, struct pdi_eqclasses *ret)
{
	return build(NULL, keys, n, 0, ret);
}

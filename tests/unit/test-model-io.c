/* SPDX-License-Identifier: GPL-2.0-only */
/* test-model-io.c -- model blobs: exact round trips, resuming after a decode, hostile input. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "model.h"
#include "model_io.h"
#include "mpi_funcs.h"
#include "unobserved.h"

static uint16_t fn_id(const char *name)
{
	int i = pdi_mpi_func_find(name);

	cr_assert_geq(i, 0, "%s is in the table", name);
	return (uint16_t)i;
}

/* ---- call scripts: a synthetic program's calls, replayable into several models ---- */

struct script {
	struct pdi_call *v;
	size_t n, cap;
	uint64_t t;
	uint64_t rng;
};

static void script_init(struct script *s)
{
	*s = (struct script){.t = 1000000000, .rng = 0x9e3779b97f4a7c15ull};
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Compute for COMP ns, then spend DUR ns in FN at SITE; times jitter so histograms fill up. */
static void add(struct script *s, uint32_t site, const char *fn, uint64_t comp, uint64_t dur, int32_t peer, uint64_t req)
{
	struct pdi_call *c;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		cr_assert_not_null(s->v);
	}
	comp += rnd(&s->rng) % (comp / 4 + 1);
	dur += rnd(&s->rng) % (dur / 4 + 1);
	c = &s->v[s->n++];
	*c = (struct pdi_call){.site = site, .fn = fn_id(fn), .t_enter = s->t + comp, .t_exit = s->t + comp + dur,
			       .peer = peer, .tag = (int32_t)(site * 3), .req = req,
			       .bytes = peer != PDI_NO_PEER ? 8 * (rnd(&s->rng) % 1000) : 0};
	s->t = c->t_exit;
}

static void script_free(struct script *s)
{
	free(s->v);
}

/* Irecv, Isend, Waitall, Barrier: requests, and a collective per iteration for automatic phases. */
static void ring(struct script *s, unsigned iters)
{
	for (unsigned i = 0; i < iters; i++) {
		add(s, 1, "MPI_Irecv", 2000, 10, 4, 0x1000 + 2 * (i % 3));
		add(s, 2, "MPI_Isend", 5, 20, 6, 0x1001 + 2 * (i % 3));
		add(s, 3, "MPI_Waitall", 1000, 300, PDI_NO_PEER, 0);
		add(s, 4, "MPI_Barrier", 7, 400, PDI_NO_PEER, 0);
	}
}

/* Init, K Pcontrol-marked loops, Finalize. */
static void pcontrol(struct script *s, unsigned k)
{
	add(s, 100, "MPI_Init", 0, 1000, PDI_NO_PEER, 0);
	for (unsigned ph = 0; ph < k; ph++) {
		add(s, 50, "MPI_Pcontrol", 777, 3, PDI_NO_PEER, 0);
		for (unsigned i = 0; i < 5 + 3 * ph; i++) {
			add(s, 51, "MPI_Allreduce", 40, 60, PDI_NO_PEER, 0);
			add(s, 52, "MPI_Sendrecv", 10, 90, (int32_t)ph, 0);
		}
	}
	add(s, 101, "MPI_Finalize", 5, 1, PDI_NO_PEER, 0);
}

/* A prologue of broadcasts, then a loop of period 3 in collectives. */
static void periodic(struct script *s, unsigned iters)
{
	add(s, 98, "MPI_Init", 0, 100, PDI_NO_PEER, 0);
	for (unsigned i = 0; i < 5; i++)
		add(s, 99, "MPI_Bcast", 10, 10, PDI_NO_PEER, 0);
	for (unsigned i = 0; i < iters; i++) {
		add(s, 10, "MPI_Allreduce", 20, 30, PDI_NO_PEER, 0);
		add(s, 11, "MPI_Sendrecv", 1, 5, 1, 0);
		add(s, 12, "MPI_Bcast", 2, 6, PDI_NO_PEER, 0);
		add(s, 13, "MPI_Sendrecv", 3, 7, 2, 0);
		add(s, 14, "MPI_Barrier", 4, 8, PDI_NO_PEER, 0);
	}
}

/* Ever new sites and leaked requests: drops everything a small budget can drop. */
static void sprawl(struct script *s, unsigned n)
{
	for (uint32_t i = 0; i < n; i++) {
		add(s, 1, "MPI_Barrier", 10, 10, PDI_NO_PEER, 0);
		add(s, 2 + i % 97, "MPI_Isend", 10, 10, 1, 0x10000 + i);
		add(s, 500 + i, "MPI_Send", 10, 10, 2, 0);
	}
}

/* Feed calls FROM..TO of S, reading the kernel's counts (made up from the call's time) after each,
 * so that every phase is placed (its counts at its first call). */
static void feed(struct pdi_model *m, const struct script *s, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		cr_assert_eq(pdi_model_add_call(m, &s->v[i]), 0, "call %zu", i);
		pdi_model_usage_add(m, &(struct pdi_usage){.at_ns = s->v[i].t_exit, .cpu_ns = s->v[i].t_exit / 2,
							   .wait_ns = s->v[i].t_exit / 4,
							   .group_ns = s->v[i].t_exit * 3 / 4});
	}
}

/* ---- comparing models ---- */

static void assert_same_map(const struct pdi_u64map *a, const struct pdi_u64map *b, const char *what)
{
	cr_assert_eq(a->used, b->used, "%s: %u and %u keys", what, a->used, b->used);
	cr_assert_eq(a->mask, b->mask, "%s: tables of %u and %u slots", what, a->mask + 1, b->mask + 1);
}

static void assert_same_phase(const struct pdi_phase *a, const struct pdi_phase *b, uint32_t ph)
{
	cr_assert_eq(a->t_start, b->t_start, "phase %u", ph);
	cr_assert_eq(a->t_end, b->t_end, "phase %u", ph);
	cr_assert(memcmp(&a->usage, &b->usage, sizeof(a->usage)) == 0, "phase %u usage", ph);
	cr_assert_eq(a->nstates, b->nstates, "phase %u", ph);
	cr_assert_eq(a->cap_states, b->cap_states, "phase %u", ph);
	cr_assert_eq(a->nedges, b->nedges, "phase %u", ph);
	cr_assert_eq(a->cap_edges, b->cap_edges, "phase %u", ph);
	assert_same_map(&a->state_idx, &b->state_idx, "states");
	assert_same_map(&a->edge_idx, &b->edge_idx, "edges");
	for (uint32_t i = 0; i < a->nstates; i++) {
		cr_assert_eq(a->states[i].key, b->states[i].key, "phase %u state %u", ph, i);
		cr_assert_eq(a->states[i].visits, b->states[i].visits, "phase %u state %u", ph, i);
		cr_assert_eq(a->states[i].bytes, b->states[i].bytes, "phase %u state %u", ph, i);
		cr_assert_eq(pdi_phase_state(b, a->states[i].key), i, "phase %u state %u is indexed", ph, i);
	}
	for (uint32_t i = 0; i < a->nedges; i++) {
		const struct pdi_edge *x = &a->edges[i], *y = &b->edges[i];

		cr_assert_eq(x->from, y->from, "phase %u edge %u", ph, i);
		cr_assert_eq(x->to, y->to, "phase %u edge %u", ph, i);
		cr_assert_eq(pdi_u64map_get(&b->edge_idx, (uint64_t)y->from << 32 | y->to), i);
		cr_assert_eq(x->time.n, y->time.n, "phase %u edge %u", ph, i);
		cr_assert(memcmp(&x->time.mean, &y->time.mean, sizeof(double)) == 0, "phase %u edge %u mean", ph, i);
		cr_assert(memcmp(&x->time.m2, &y->time.m2, sizeof(double)) == 0, "phase %u edge %u m2", ph, i);
		cr_assert_eq(x->hist.n, y->hist.n, "phase %u edge %u", ph, i);
		for (unsigned k = 0; k < x->hist.n; k++) {
			cr_assert(memcmp(&x->hist.mean[k], &y->hist.mean[k], sizeof(float)) == 0);
			cr_assert_eq(x->hist.count[k], y->hist.count[k]);
		}
	}
}

static void assert_same_model(const struct pdi_model *a, const struct pdi_model *b)
{
	cr_assert_eq(a->nphases, b->nphases);
	cr_assert_eq(a->cap_phases, b->cap_phases);
	for (uint32_t i = 0; i < a->nphases; i++)
		assert_same_phase(&a->phases[i], &b->phases[i], i);
	cr_assert(memcmp(&a->usage_now, &b->usage_now, sizeof(a->usage_now)) == 0);
	cr_assert_eq(a->started, b->started);
	cr_assert_eq(a->last_site, b->last_site);
	cr_assert_eq(a->last_fn, b->last_fn);
	cr_assert_eq(a->last_enter, b->last_enter);
	cr_assert_eq(a->last_exit, b->last_exit);
	cr_assert_eq(a->calls, b->calls);
	cr_assert_eq(a->saw_pcontrol, b->saw_pcontrol);
	cr_assert_eq(a->ncollectives, b->ncollectives);
	cr_assert_eq(!a->coll_fns, !b->coll_fns, "period sample %p and %p", (void *)a->coll_fns,
		     (void *)b->coll_fns);
	if (a->coll_fns)
		cr_assert(memcmp(a->coll_fns, b->coll_fns, sizeof(uint32_t) * PDI_MODEL_PERIOD_SAMPLE) == 0);
	cr_assert_eq(a->auto_next_cut, b->auto_next_cut);
	cr_assert_eq(a->auto_len, b->auto_len);
	cr_assert_eq(a->nreqs, b->nreqs);
	cr_assert_eq(a->cap_reqs, b->cap_reqs);
	assert_same_map(&a->req_idx, &b->req_idx, "requests");
	for (uint32_t i = 0; i < a->nreqs; i++) {
		const struct pdi_request *x = &a->reqs[i], *y = &b->reqs[i];

		cr_assert(x->handle == y->handle && x->peer == y->peer && x->tag == y->tag && x->site == y->site &&
				  x->fn == y->fn,
			  "request %u", i);
		cr_assert_eq(pdi_model_find_request(b, a->reqs[i].handle), &b->reqs[i]);
	}
	cr_assert_eq(a->bytes, b->bytes, "bytes %zu and %zu", a->bytes, b->bytes);
	cr_assert_eq(a->dropped_states, b->dropped_states);
	cr_assert_eq(a->dropped_edges, b->dropped_edges);
	cr_assert_eq(a->dropped_requests, b->dropped_requests);
	cr_assert_eq(a->folded_phase_cuts, b->folded_phase_cuts);
	cr_assert_eq(a->stack_seen.n, b->stack_seen.n);
	cr_assert_eq(a->stack_seen.dropped, b->stack_seen.dropped);
	cr_assert(memcmp(a->stack_seen.v, b->stack_seen.v, a->stack_seen.n * sizeof(a->stack_seen.v[0])) == 0);
	cr_assert_eq(a->usage_log.n, b->usage_log.n);
	cr_assert_eq(a->usage_log.gap_ns, b->usage_log.gap_ns);
	cr_assert(memcmp(a->usage_log.v, b->usage_log.v, a->usage_log.n * sizeof(a->usage_log.v[0])) == 0);
}

struct blob {
	void *p;
	size_t len;
};

static struct blob encode(const struct pdi_model *m)
{
	struct blob b;

	cr_assert_eq(pdi_model_encode(m, &b.p, &b.len), 0);
	return b;
}

static void assert_same_blob(struct blob a, struct blob b, const char *when)
{
	cr_assert_eq(a.len, b.len, "%s: %zu and %zu bytes", when, a.len, b.len);
	cr_assert(memcmp(a.p, b.p, a.len) == 0, "%s: same length, different bytes", when);
}

/* Decode M's blob into RET with M's configuration; the copy equals M and re-encodes alike. */
static void round_trip(const struct pdi_model *m, struct pdi_model *ret)
{
	struct blob a = encode(m), b;

	cr_assert_eq(pdi_model_decode(a.p, a.len, &m->cfg, ret), 0);
	assert_same_model(m, ret);
	b = encode(ret);
	assert_same_blob(a, b, "re-encoded");
	free(a.p);
	free(b.p);
}

/* At every STRIDE-th call of S, decode a copy and feed both models the rest of S: they must
 * end up identical, as a daemon restarted at that point would. */
static void resume_everywhere(const struct pdi_model_config *cfg, const struct script *s, size_t stride)
{
	struct pdi_model whole;

	pdi_model_init(&whole, cfg);
	feed(&whole, s, 0, s->n);
	for (size_t k = 0; k <= s->n; k += stride) {
		struct pdi_model a, b;
		struct blob ea, eb, ew;

		pdi_model_init(&a, cfg);
		feed(&a, s, 0, k);
		round_trip(&a, &b);
		feed(&a, s, k, s->n);
		feed(&b, s, k, s->n);
		assert_same_model(&a, &b);
		ea = encode(&a);
		eb = encode(&b);
		ew = encode(&whole);
		assert_same_blob(ea, eb, "original and decoded after the rest of the calls");
		assert_same_blob(ea, ew, "interrupted and uninterrupted");
		free(ea.p);
		free(eb.p);
		free(ew.p);
		pdi_model_done(&a);
		pdi_model_done(&b);
	}
	pdi_model_done(&whole);
}

/* ---- round trips ---- */

Test(model_io, empty_model)
{
	struct pdi_model m, d;

	pdi_model_init(&m, NULL);
	round_trip(&m, &d);
	cr_assert_eq(d.nphases, 0);
	cr_assert_null(d.phases);
	cr_assert_eq(d.bytes, 0);
	pdi_model_done(&d);
	pdi_model_done(&m);
}

/* What the live stack said comes back, episodes merged and the oldest dropped past the bound. */
Test(model_io, what_the_stack_said)
{
	struct pdi_model m, d;
	uint16_t allreduce = (uint16_t)pdi_mpi_func_find("MPI_Allreduce");

	pdi_model_init(&m, NULL);
	pdi_stack_seen_add(&m.stack_seen, PDI_STACK_SEEN_OUTSIDE, 1000000000);
	pdi_stack_seen_add(&m.stack_seen, PDI_STACK_SEEN_OUTSIDE, 4000000000); /* the same episode */
	pdi_stack_seen_add(&m.stack_seen, allreduce, 5000000000);
	cr_assert_eq(m.stack_seen.n, 2);
	cr_assert_eq(m.stack_seen.v[0].looks, 2);
	cr_assert_eq(m.stack_seen.v[0].t_last, 4000000000);
	round_trip(&m, &d);
	cr_assert_eq(d.stack_seen.v[1].fn, allreduce);
	pdi_model_done(&d);
	for (uint64_t i = 0; i < PDI_STACK_SEEN_MAX; i++)
		pdi_stack_seen_add(&m.stack_seen, i % 2 ? allreduce : PDI_STACK_SEEN_OUTSIDE, 6000000000 + i * 10000000000);
	cr_assert_eq(m.stack_seen.n, PDI_STACK_SEEN_MAX);
	cr_assert_eq(m.stack_seen.dropped, 2);
	cr_assert_eq(m.stack_seen.v[0].t_first, 6000000000, "the oldest went first");
	round_trip(&m, &d);
	pdi_model_done(&d);
	pdi_model_done(&m);
}

/* A budget mark that earlier runs of the program set comes back saying so. */
Test(model_io, a_mark_from_earlier_runs)
{
	struct pdi_model m, d;
	uint16_t test = (uint16_t)pdi_mpi_func_find("MPI_Test");

	pdi_model_init(&m, NULL);
	cr_assert_eq(pdi_unobserved_begin(&m.unobserved, test, PDI_UNOBS_SAMPLED, 3, 0, 0, 1000), 0);
	pdi_unobserved_from_earlier_runs(&m.unobserved, test);
	cr_assert_eq(pdi_unobserved_begin(&m.unobserved, test, PDI_UNOBS_DETACHED, 0, 90000, 5000, 2000), 0);
	round_trip(&m, &d);
	cr_assert_eq(d.unobserved.n, 2);
	cr_assert_eq(d.unobserved.v[0].from_earlier_runs, 1);
	cr_assert_eq(d.unobserved.v[1].from_earlier_runs, 0, "a later level of this run's own");
	cr_assert(pdi_unobserved_any_from_earlier_runs(&d.unobserved));
	pdi_model_done(&d);
	pdi_model_done(&m);
}

static void check_decoded(struct pdi_model *m);

/* The fixture, read whole (tests/unit/fixtures/, PDI_TEST_FIXTURES set by meson). */
static void *read_fixture(const char *name, size_t *ret_len)
{
	char path[512];
	FILE *f;
	void *p = malloc(1 << 16);

	snprintf(path, sizeof(path), "%s/%s", PDI_TEST_FIXTURES, name);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	cr_assert_not_null(p);
	*ret_len = fread(p, 1, 1 << 16, f);
	cr_assert(feof(f) && *ret_len > 24, "%s: read whole", path);
	fclose(f);
	return p;
}

/* A's budget marks are those make-model-format6.c wrote, from_earlier_runs as given per mark. */
static void assert_format6_marks(const struct pdi_model *m, const uint8_t earlier[4])
{
	const struct pdi_unobserved *u = m->unobserved.v;

	cr_assert_eq(m->unobserved.n, 4);
	cr_assert_eq(m->unobserved.stretched, 0);
	cr_assert_eq(u[0].fn, fn_id("MPI_Test"));
	cr_assert_eq(u[0].level, PDI_UNOBS_SAMPLED);
	cr_assert_eq(u[0].duty_log2, 3);
	cr_assert_eq(u[0].t_start, 1050000000);
	cr_assert_eq(u[0].t_end, 0, "still sampled when it was stored");
	cr_assert_eq(u[0].rate, 120000);
	cr_assert_eq(u[0].cost_ppm, 41000);
	cr_assert_eq(u[1].fn, fn_id("MPI_Iprobe"));
	cr_assert_eq(u[1].level, PDI_UNOBS_DETACHED);
	cr_assert_eq(u[1].t_start, 1100000000);
	cr_assert_eq(u[1].t_end, 3100000000);
	cr_assert_eq(u[1].rate, 950000);
	cr_assert_eq(u[1].cost_ppm, 230000);
	cr_assert_eq(u[2].fn, PDI_UNOBSERVED_ALL);
	cr_assert_eq(u[2].level, PDI_UNOBS_GAP);
	cr_assert_eq(u[2].t_end, 1350000000);
	cr_assert_eq(u[3].fn, PDI_UNOBSERVED_ALL);
	cr_assert_eq(u[3].level, PDI_UNOBS_LOST);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(u[i].from_earlier_runs, earlier[i], "mark %u", i);
	/* what the marks are read for: a task may have called unseen since the sampling began */
	cr_assert(pdi_unobserved_blind_since(&m->unobserved, 1060000000));
	cr_assert(pdi_unobserved_overlaps(&m->unobserved, fn_id("MPI_Iprobe"), 3000000000, 3000000001));
	cr_assert_not(pdi_unobserved_overlaps(&m->unobserved, fn_id("MPI_Iprobe"), 3200000000, 3300000000));
}

/* A model stored by a pdimond of format 6, with the overhead budget's marks, made by that
 * format's own writer (fixtures/make-model-format6.c): the marks survive the read, with
 * from_earlier_runs, which format 6 lacks, as 0; written again it is format 7, and a mark from
 * earlier runs set then survives too. */
Test(model_io, format6_budget_marks)
{
	static const uint8_t none[4] = {0}, first[4] = {1, 0, 0, 0};
	struct pdi_model m, d;
	size_t len;
	uint8_t *blob = read_fixture("model-format6-budget.bin", &len);
	uint32_t version = (uint32_t)blob[8] | (uint32_t)blob[9] << 8;

	cr_assert_eq(version, 6, "the fixture is of format 6");
	cr_assert_eq(pdi_model_decode(blob, len, NULL, &m), 0);
	cr_assert_eq(m.calls, 800);
	cr_assert_eq(m.nphases, 1);
	cr_assert_eq(m.phases[0].nstates, 8);
	cr_assert_eq(m.stack_seen.n, 1);
	cr_assert_eq(m.stack_seen.v[0].fn, fn_id("MPI_Waitall"));
	assert_format6_marks(&m, none);
	cr_assert_not(pdi_unobserved_any_from_earlier_runs(&m.unobserved));
	round_trip(&m, &d); /* in format 7 */
	assert_format6_marks(&d, none);
	pdi_model_done(&d);
	pdi_unobserved_from_earlier_runs(&m.unobserved, fn_id("MPI_Test"));
	round_trip(&m, &d);
	assert_format6_marks(&d, first);
	cr_assert(pdi_unobserved_any_from_earlier_runs(&d.unobserved));
	check_decoded(&d);
	pdi_model_done(&d);
	pdi_model_done(&m);
	free(blob);
}

Test(model_io, ring_with_automatic_phases_and_merges)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct script s;
	struct pdi_model m;

	cfg.auto_phase_min_collectives = 4;
	cfg.max_phases = 5;
	script_init(&s);
	ring(&s, 96 + 240);
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, s.n);
	cr_assert_eq(m.nphases, 5);
	cr_assert_gt(m.auto_len, 4, "phases were merged: auto_len %u", m.auto_len);
	cr_assert_gt(m.nreqs, 0);
	cr_assert_gt(m.phases[0].states[0].bytes, 0, "data volumes are kept too");
	pdi_model_done(&m);
	resume_everywhere(&cfg, &s, 7); /* through the period sample, the cuts and every halving */
	script_free(&s);
}

/* A task whose phases are folded into one (its collective count fell in doubt, lib/model)
 * keeps no more room than one phase needs, and its model is read back: a snapshot of such a task
 * was once refused as corrupt (90 phases' room for 4), and the step's report failed. */
Test(model_io, phases_folded_to_one)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct script s;
	struct pdi_model m, d;

	cfg.auto_phase_min_collectives = 4;
	cfg.max_phases = 200;
	script_init(&s);
	ring(&s, 96 + 600);
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, s.n);
	cr_assert_gt(m.nphases, 40, "cut into many phases first: %u", m.nphases);
	pdi_model_fold_past(&m, 0);
	cr_assert_eq(m.nphases, 1);
	cr_assert_leq(m.cap_phases, 16, "room for %u phases kept", m.cap_phases);
	round_trip(&m, &d);
	pdi_model_done(&d);
	pdi_model_done(&m);
	script_free(&s);
}

Test(model_io, ring_without_phases)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct script s;

	cfg.auto_phases = false;
	script_init(&s);
	ring(&s, 60);
	resume_everywhere(&cfg, &s, 5);
	script_free(&s);
}

Test(model_io, pcontrol_phases_folded_past_the_bound)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct pdi_model m;
	struct script s;

	cfg.max_phases = 5;
	script_init(&s);
	pcontrol(&s, 8);
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, s.n);
	cr_assert(m.saw_pcontrol);
	cr_assert_gt(m.folded_phase_cuts, 0);
	pdi_model_done(&m);
	resume_everywhere(&cfg, &s, 1);
	script_free(&s);
}

Test(model_io, period_sample_in_flight)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct pdi_model m, d;
	struct script s;

	cfg.auto_phase_min_collectives = 4;
	script_init(&s);
	periodic(&s, 60);
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, 100); /* 5 + ~57 collectives: the sample is half full */
	cr_assert_not_null(m.coll_fns);
	cr_assert_lt(m.ncollectives, PDI_MODEL_PERIOD_SAMPLE);
	round_trip(&m, &d);
	cr_assert_not_null(d.coll_fns);
	pdi_model_done(&d);
	pdi_model_done(&m);
	resume_everywhere(&cfg, &s, 3);
	script_free(&s);
}

Test(model_io, memory_bound_and_drops)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct pdi_model m;
	struct script s;

	cfg.max_bytes = 24 * 1024;
	cfg.max_phases = 5;
	cfg.auto_phase_min_collectives = 2;
	script_init(&s);
	sprawl(&s, 800);
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, s.n);
	cr_assert_gt(m.dropped_states, 0);
	cr_assert_gt(m.dropped_edges, 0);
	cr_assert_gt(m.dropped_requests, 0);
	pdi_model_done(&m);
	resume_everywhere(&cfg, &s, 97);
	script_free(&s);
}

Test(model_io, request_table_cap)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct pdi_model m, d;
	struct script s;

	cfg.max_bytes = 8 << 20;
	cfg.auto_phases = false;
	script_init(&s);
	for (uint32_t i = 0; i < 5000; i++)
		add(&s, 1 + i % 3, i % 2 ? "MPI_Isend" : "MPI_Irecv", 10, 10, (int32_t)i, 0x7f0000000000ull + 8 * i);
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, s.n);
	cr_assert_eq(m.nreqs, 4096);
	cr_assert_eq(m.dropped_requests, 5000 - 4096);
	round_trip(&m, &d);
	cr_assert_eq(pdi_model_find_request(&d, 0x7f0000000000ull + 8 * 4095)->peer, 4095);
	cr_assert_null(pdi_model_find_request(&d, 0x7f0000000000ull + 8 * 4096));
	pdi_model_done(&d);
	pdi_model_done(&m);
	resume_everywhere(&cfg, &s, 1000);
	script_free(&s);
}

Test(model_io, decoding_takes_the_callers_configuration)
{
	struct pdi_model_config cfg = pdi_model_config_default, small = pdi_model_config_default;
	struct pdi_model m, d;
	struct script s, more;
	struct blob b;
	size_t bytes;

	cfg.auto_phases = false;
	script_init(&s);
	sprawl(&s, 200);
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, s.n);
	b = encode(&m);
	/* a daemon restarted with a smaller budget keeps the model whole; it just stops growing */
	small.max_bytes = 4096;
	small.max_phases = 4;
	cr_assert_eq(pdi_model_decode(b.p, b.len, &small, &d), 0);
	cr_assert_eq(d.cfg.max_bytes, 4096);
	cr_assert_eq(d.cfg.max_phases, 5, "normalised like pdi_model_init() does");
	cr_assert_eq(d.bytes, m.bytes);
	bytes = d.bytes;
	script_init(&more);
	more.t = s.t;
	for (uint32_t i = 0; i < 50; i++)
		add(&more, 5000 + i, "MPI_Send", 10, 10, 1, 0);
	feed(&d, &more, 0, more.n);
	cr_assert_eq(d.bytes, bytes);
	cr_assert_gt(d.dropped_states, m.dropped_states);
	script_free(&more);
	pdi_model_done(&d);
	/* NULL is the default configuration */
	cr_assert_eq(pdi_model_decode(b.p, b.len, NULL, &d), 0);
	cr_assert_eq(d.cfg.max_bytes, pdi_model_config_default.max_bytes);
	pdi_model_done(&d);
	free(b.p);
	pdi_model_done(&m);
	script_free(&s);
}

Test(model_io, header_layout)
{
	struct pdi_model m;
	struct script s;
	struct blob b;
	const uint8_t *p;

	script_init(&s);
	ring(&s, 3);
	pdi_model_init(&m, NULL);
	feed(&m, &s, 0, s.n);
	b = encode(&m);
	p = b.p;
	cr_assert(memcmp(p, "PDIM", 4) == 0);
	cr_assert_eq(p[8] | p[9] << 8 | p[10] << 16 | (uint32_t)p[11] << 24, PDI_MODEL_FORMAT);
	cr_assert_eq(p[16] | p[17] << 8 | p[18] << 16 | (uint64_t)p[19] << 24, b.len);
	cr_assert_eq(p[4] | p[5] << 8 | p[6] << 16 | (uint32_t)p[7] << 24, crc32(0, p + 8, (uInt)(b.len - 8)));
	free(b.p);
	pdi_model_done(&m);
	script_free(&s);
}

Test(model_io, encode_rejects_unknown_functions)
{
	struct pdi_model m;
	struct script s;
	void *p = NULL;
	size_t len = 0;

	script_init(&s);
	ring(&s, 2);
	pdi_model_init(&m, NULL);
	feed(&m, &s, 0, s.n);
	m.reqs[0].fn = (uint16_t)pdi_mpi_nfuncs;
	cr_assert_eq(pdi_model_encode(&m, &p, &len), -EINVAL);
	cr_assert_null(p);
	pdi_model_done(&m);
	script_free(&s);
}

/* ---- corrupt and hostile blobs ---- */

static struct blob sample_blob(unsigned iters)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct pdi_model m;
	struct script s;
	struct blob b;

	cfg.auto_phase_min_collectives = 4;
	cfg.max_phases = 5;
	script_init(&s);
	ring(&s, iters);
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, s.n);
	b = encode(&m);
	pdi_model_done(&m);
	script_free(&s);
	return b;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Make P's header agree with its length and content again, as a forger would. */
static void reseal(uint8_t *p, size_t len)
{
	put_le(p + 16, len, 8);
	put_le(p + 4, crc32(0, p + 8, (uInt)(len - 8)), 4);
}

/* A model decoded from anything must hold together and keep working. */
static void check_decoded(struct pdi_model *m)
{
	static uint16_t barrier, isend;
	struct pdi_call c = {.t_enter = 1, .t_exit = 2, .peer = PDI_NO_PEER};
	void *p;
	size_t len;

	for (uint32_t i = 0; i < m->nphases; i++) {
		const struct pdi_phase *ph = &m->phases[i];

		cr_assert_leq(ph->nstates, ph->cap_states);
		cr_assert_leq(ph->nedges, ph->cap_edges);
		for (uint32_t e = 0; e < ph->nedges; e++) {
			cr_assert_lt(ph->edges[e].from, ph->nstates);
			cr_assert_lt(ph->edges[e].to, ph->nstates);
			cr_assert_leq(ph->edges[e].hist.n, PDI_HIST_BUCKETS);
		}
	}
	for (uint32_t i = 0; i < m->nreqs; i++)
		cr_assert_lt(m->reqs[i].fn, pdi_mpi_nfuncs);
	cr_assert_lt(m->last_fn, pdi_mpi_nfuncs);
	if (!barrier) {
		barrier = fn_id("MPI_Barrier");
		isend = fn_id("MPI_Isend");
	}
	for (unsigned i = 0; i < 120; i++) { /* past a period sample in progress */
		c.site = i % 5;
		c.fn = i % 7 ? barrier : isend;
		c.req = i;
		c.t_enter += 10;
		c.t_exit += 10;
		cr_assert_eq(pdi_model_add_call(m, &c), 0);
	}
	cr_assert_eq(pdi_model_encode(m, &p, &len), 0);
	free(p);
}

Test(model_io, every_truncation_is_rejected)
{
	struct blob b = sample_blob(120);
	struct pdi_model m;
	uint8_t *cut = malloc(b.len);

	cr_log_info("truncating a %zu-byte blob", b.len);
	for (size_t len = 0; len < b.len; len++) {
		cr_assert_eq(pdi_model_decode(b.p, len, NULL, &m), -EBADMSG, "length %zu", len);
		/* with a header forged to match, the payload itself comes up short */
		if (len >= 24) {
			memcpy(cut, b.p, len);
			reseal(cut, len);
			cr_assert_eq(pdi_model_decode(cut, len, NULL, &m), -EBADMSG, "forged length %zu", len);
		}
	}
	cr_assert_eq(pdi_model_decode(NULL, 0, NULL, &m), -EBADMSG);
	free(cut);
	free(b.p);
}

Test(model_io, every_byte_flip_is_rejected)
{
	struct blob b = sample_blob(120);
	uint8_t *p = b.p;
	uint64_t rng = 42;
	struct pdi_model m;

	for (size_t i = 0; i < b.len; i++) {
		uint8_t x = (uint8_t)(rnd(&rng) % 255 + 1), old = p[i];

		p[i] ^= x;
		cr_assert_eq(pdi_model_decode(p, b.len, NULL, &m), -EBADMSG, "byte %zu ^ %#x", i, x);
		p[i] = old;
	}
	cr_assert_eq(pdi_model_decode(p, b.len, NULL, &m), 0);
	pdi_model_done(&m);
	free(b.p);
}

Test(model_io, trailing_bytes_are_rejected)
{
	struct blob b = sample_blob(10);
	uint8_t *p = realloc(b.p, b.len + 1);
	struct pdi_model m;

	p[b.len] = 0;
	cr_assert_eq(pdi_model_decode(p, b.len + 1, NULL, &m), -EBADMSG, "the header's length says otherwise");
	reseal(p, b.len + 1);
	cr_assert_eq(pdi_model_decode(p, b.len + 1, NULL, &m), -EBADMSG, "the payload says otherwise");
	free(p);
}

/* The checksum stops random damage; behind it the parser must stand on its own. Mutate,
 * reseal, decode: anything may come out but a crash, a leak or an inconsistent model. */
Test(model_io, forged_mutations_never_crash)
{
	struct blob b = sample_blob(110);
	uint8_t *p = malloc(b.len);
	uint64_t rng = 7;
	unsigned ok = 0, bad = 0, newer = 0;

	for (unsigned it = 0; it < 8000; it++) {
		struct pdi_model m;
		unsigned flips = 1 + rnd(&rng) % 4;
		int r;

		memcpy(p, b.p, b.len);
		for (unsigned f = 0; f < flips; f++) {
			size_t at = 24 + rnd(&rng) % (b.len - 24);

			switch (rnd(&rng) % 3) {
			case 0:
				p[at] ^= (uint8_t)(1u << rnd(&rng) % 8);
				break;
			case 1:
				p[at] = (uint8_t)rnd(&rng);
				break;
			default: /* counts and indices near their limits */
				p[at] = rnd(&rng) % 2 ? 0xff : 0;
				break;
			}
		}
		reseal(p, b.len);
		r = pdi_model_decode(p, b.len, NULL, &m);
		if (r == 0) {
			ok++;
			check_decoded(&m);
			pdi_model_done(&m);
		} else if (r == -EPROTONOSUPPORT) {
			newer++;
		} else {
			cr_assert_eq(r, -EBADMSG, "mutation %u: %d", it, r);
			bad++;
		}
	}
	cr_log_info("forged mutations: %u decoded, %u rejected, %u unknown functions", ok, bad, newer);
	cr_assert_gt(ok, 0);
	cr_assert_gt(bad, 0);
	free(p);
	free(b.p);
}

Test(model_io, newer_format_is_not_supported)
{
	struct blob b = sample_blob(10);
	uint8_t *p = b.p;
	struct pdi_model m;

	put_le(p + 8, PDI_MODEL_FORMAT + 1, 4);
	reseal(p, b.len);
	cr_assert_eq(pdi_model_decode(p, b.len, NULL, &m), -EPROTONOSUPPORT);
	put_le(p + 8, UINT32_MAX, 4);
	reseal(p, b.len);
	cr_assert_eq(pdi_model_decode(p, b.len, NULL, &m), -EPROTONOSUPPORT);
	/* a later format may grow the payload: the header still reads */
	p = realloc(p, b.len + 100);
	memset(p + b.len, 0xa5, 100);
	reseal(p, b.len + 100);
	cr_assert_eq(pdi_model_decode(p, b.len + 100, NULL, &m), -EPROTONOSUPPORT);
	/* but a damaged version field is damage */
	put_le(p + 8, PDI_MODEL_FORMAT + 1, 4);
	cr_assert_eq(pdi_model_decode(p, b.len + 100, NULL, &m), -EBADMSG);
	put_le(p + 8, 0, 4);
	reseal(p, b.len + 100);
	cr_assert_eq(pdi_model_decode(p, b.len + 100, NULL, &m), -EBADMSG, "there is no version 0");
	free(p);
}

/* ---- hand-made blobs, field by field as model_io.c documents them ---- */

struct forge {
	uint32_t version; /* the format written: 1, or 2 (f_v2) */
	uint8_t b[4096];
	size_t n;
};

static void f_le(struct forge *f, uint64_t v, unsigned n)
{
	cr_assert_leq(f->n + n, sizeof(f->b));
	put_le(f->b + f->n, v, n);
	f->n += n;
}

static void f_zero(struct forge *f, size_t n)
{
	cr_assert_leq(f->n + n, sizeof(f->b));
	memset(f->b + f->n, 0, n);
	f->n += n;
}

static void f_str(struct forge *f, const char *s)
{
	f_le(f, strlen(s), 1);
	memcpy(f->b + f->n, s, strlen(s));
	f->n += strlen(s);
}

/* Header, a function table of FN, the scalars (ncollectives NCOLL), an empty sample. */
static void f_start(struct forge *f, const char *fn, uint64_t ncoll)
{
	f->version = 1;
	f->n = 24;
	f_le(f, 1, 2);
	f_str(f, fn);
	for (unsigned i = 0; i < 9; i++)
		f_le(f, i == 5 ? ncoll : 1000 + i, 8);
	f_le(f, 0, 4); /* auto_len */
	f_le(f, 7, 4); /* last_site */
	f_le(f, 0, 2); /* last_fn */
	f_le(f, 1, 1); /* started */
}

/* After f_start(): the scalars format 3 adds (clock offset, merged phases). */
static void f_v3(struct forge *f)
{
	f->version = 3;
	f_le(f, 0, 8);
	f_le(f, 0, 8);
}

static int f_decode(struct forge *f, struct pdi_model *m)
{
	memcpy(f->b, "PDIM", 4);
	put_le(f->b + 8, f->version, 4);
	put_le(f->b + 12, 0, 4);
	reseal(f->b, f->n);
	return pdi_model_decode(f->b, f->n, NULL, m);
}

/* One phase with 2 states (the second's key KEY2) and one edge FROM -> TO with NB buckets;
 * then NREQ requests all with HANDLE. */
static int forge_model(uint64_t key2, uint32_t from, uint32_t to, uint8_t nb, uint32_t nreq, uint64_t handle)
{
	struct forge f;
	struct pdi_model m;
	int r;

	f_start(&f, "MPI_Isend", 0);
	f_le(&f, 0, 4);                  /* no period sample */
	f_le(&f, 1, 4);                  /* nphases */
	f_le(&f, 8, 4);                  /* cap_phases */
	f_le(&f, 10, 8);                 /* t_start */
	f_le(&f, 20, 8);                 /* t_end */
	f_le(&f, 2, 4);                  /* nstates */
	f_le(&f, 8, 4);                  /* cap_states */
	f_le(&f, 7, 8);                  /* comm(7) */
	f_le(&f, 1, 8);                  /* visits */
	f_le(&f, 4096, 8);               /* bytes */
	f_le(&f, key2, 8);
	f_le(&f, 1, 8);
	f_le(&f, 0, 8);
	f_le(&f, 1, 4);                  /* nedges */
	f_le(&f, 8, 4);                  /* cap_edges */
	f_le(&f, from, 4);
	f_le(&f, to, 4);
	f_le(&f, 1, 8);                  /* n */
	f_le(&f, 0x4059000000000000, 8); /* 100.0 */
	f_le(&f, 0, 8);
	f_le(&f, nb, 1);
	for (uint8_t i = 0; i < nb; i++) {
		f_le(&f, 0x42c80000, 4); /* 100.0f */
		f_le(&f, 1, 4);
	}
	f_le(&f, nreq, 4);
	f_le(&f, 8, 4);
	for (uint32_t i = 0; i < nreq; i++) {
		f_le(&f, handle, 8);
		f_le(&f, 1, 4);
		f_le(&f, 2, 4);
		f_le(&f, 3, 4);
		f_le(&f, 0, 2);
	}
	r = f_decode(&f, &m);
	if (r == 0) {
		cr_assert_eq(m.nphases, 1);
		cr_assert_eq(m.phases[0].edges[0].time.mean, 100.0);
		cr_assert_eq(m.last_fn, fn_id("MPI_Isend"));
		cr_assert_eq(m.calls, 1000);
		cr_assert_eq(m.phases[0].states[0].bytes, 4096);
		check_decoded(&m);
		pdi_model_done(&m);
	}
	return r;
}

Test(model_io, forged_fields)
{
	const uint64_t comp = pdi_state_comp(7, 8);

	cr_assert_eq(forge_model(comp, 0, 1, 1, 1, 0x99), 0, "the well-formed forgery decodes");
	cr_assert_eq(forge_model(comp, 0, 1, 1, 2, 0x99), -EBADMSG, "a request handle twice");
	cr_assert_eq(forge_model(comp, 0, 1, 8, 1, 0x99), 0, "8 buckets");
	cr_assert_eq(forge_model(comp, 0, 1, 9, 1, 0x99), -EBADMSG, "9 buckets");
	cr_assert_eq(forge_model(comp, 0, 1, 255, 1, 0x99), -EBADMSG);
	cr_assert_eq(forge_model(comp, 0, 2, 1, 1, 0x99), -EBADMSG, "an edge to a state that is not there");
	cr_assert_eq(forge_model(comp, UINT32_MAX, 1, 1, 1, 0x99), -EBADMSG);
	cr_assert_eq(forge_model(7, 0, 1, 1, 1, 0x99), -EBADMSG, "a state key twice");
}

static int forge_counts(uint32_t nphases, uint32_t cap_phases, uint32_t nstates, uint32_t cap_states)
{
	struct forge f;
	struct pdi_model m;
	int r;

	f_start(&f, "MPI_Send", 0);
	f_le(&f, 0, 4);
	f_le(&f, nphases, 4);
	f_le(&f, cap_phases, 4);
	f_le(&f, 0, 8);
	f_le(&f, 0, 8);
	f_le(&f, nstates, 4);
	f_le(&f, cap_states, 4);
	for (uint32_t i = 0; i < nstates && i < 4; i++) {
		f_le(&f, i, 8);
		f_le(&f, 1, 8);
		f_le(&f, 0, 8);
	}
	f_le(&f, 0, 4); /* no edges */
	f_le(&f, 0, 4);
	f_le(&f, 0, 4); /* no requests */
	f_le(&f, 0, 4);
	r = f_decode(&f, &m);
	if (r == 0)
		pdi_model_done(&m);
	return r;
}

Test(model_io, forged_counts_allocate_nothing_big)
{
	cr_assert_eq(forge_counts(1, 8, 4, 8), 0);
	cr_assert_eq(forge_counts(1, 1, 4, 4), 0, "capacities need not follow today's growth policy");
	cr_assert_eq(forge_counts(UINT32_MAX, UINT32_MAX, 4, 8), -EBADMSG);
	cr_assert_eq(forge_counts(1, UINT32_MAX, 4, 8), -EBADMSG);
	cr_assert_eq(forge_counts(1, 0, 4, 8), -EBADMSG, "fewer slots than phases");
	cr_assert_eq(forge_counts(1, 8, UINT32_MAX, UINT32_MAX), -EBADMSG);
	cr_assert_eq(forge_counts(1, 8, 4, UINT32_MAX), -EBADMSG);
	cr_assert_eq(forge_counts(1, 8, 4, 3), -EBADMSG);
	cr_assert_eq(forge_counts(2, 8, 4, 8), -EBADMSG, "a phase missing");
}

Test(model_io, forged_function_table)
{
	struct forge f;
	struct pdi_model m;
	static const struct {
		const char *name;
		int want;
	} cases[] = {
		{"MPI_Send", 0},
		{"PMPI_Send", 0},
		{"MPI_Frobnicate", -EPROTONOSUPPORT},
		{"", -EBADMSG},
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f_start(&f, cases[i].name, 0);
		f_zero(&f, 4 * 5);
		cr_assert_eq(f_decode(&f, &m), cases[i].want, "function %s", cases[i].name);
		if (cases[i].want == 0) {
			cr_assert_eq(m.last_fn, fn_id("MPI_Send"));
			pdi_model_done(&m);
		}
	}
	/* a NUL inside a name */
	f_start(&f, "MPI_SendXjunk", 0);
	f.b[24 + 2 + 1 + 8] = 0;
	f_zero(&f, 4 * 5);
	cr_assert_eq(f_decode(&f, &m), -EBADMSG);
	/* last_fn past the table */
	f_start(&f, "MPI_Send", 0);
	f.b[f.n - 3] = 1;
	f_zero(&f, 4 * 5);
	cr_assert_eq(f_decode(&f, &m), -EBADMSG);
	/* unknown flags */
	f_start(&f, "MPI_Send", 0);
	f.b[f.n - 1] = 4;
	f_zero(&f, 4 * 5);
	cr_assert_eq(f_decode(&f, &m), -EBADMSG);
}

static int forge_sample(uint64_t ncoll, uint32_t nsample, uint32_t version)
{
	struct forge f;
	struct pdi_model m;
	int r;

	f_start(&f, "MPI_Barrier", ncoll);
	if (version == 3)
		f_v3(&f);
	else
		f.version = version;
	f_le(&f, nsample, 4);
	for (uint32_t i = 0; i < nsample && i < 200; i++)
		f_le(&f, version == 3 ? 0 : i, version == 3 ? 2 : 4); /* format 3: the function's index */
	f_zero(&f, 4 * 4);
	if (version >= 2)
		f_zero(&f, 4 + 8); /* nothing unobserved */
	r = f_decode(&f, &m);
	if (r == 0) {
		/* formats 1 and 2 sampled sites, useless for a period of functions: dropped */
		cr_assert_eq(!!m.coll_fns, version == 3 && nsample);
		if (version == 3 && nsample)
			cr_assert_eq(m.coll_fns[nsample - 1], fn_id("MPI_Barrier"));
		check_decoded(&m); /* goes on sampling where the blob stopped */
		pdi_model_done(&m);
	}
	return r;
}

Test(model_io, forged_period_sample)
{
	for (uint32_t v = 1; v <= 3; v++) {
		cr_assert_eq(forge_sample(0, 0, v), 0);
		cr_assert_eq(forge_sample(10, 10, v), 0);
		cr_assert_eq(forge_sample(95, 95, v), 0);
		cr_assert_eq(forge_sample(500, 0, v), 0);
		cr_assert_eq(forge_sample(10, 11, v), -EBADMSG);
		cr_assert_eq(forge_sample(10, 9, v), -EBADMSG);
		cr_assert_eq(forge_sample(200, 200, v), -EBADMSG, "more than the model samples");
		cr_assert_eq(forge_sample(96, 96, v), -EBADMSG);
	}
}

/* Point to point only: phases on the wall clock, cut and merged by slot parity. */
static void stencil(struct script *s, unsigned iters)
{
	for (unsigned i = 0; i < iters; i++) {
		add(s, 1, "MPI_Irecv", 2000000, 10, 4, 0x1000 + 2 * (i % 3));
		add(s, 2, "MPI_Isend", 5, 20, 6, 0x1001 + 2 * (i % 3));
		add(s, 3, "MPI_Waitall", 1000000, 300, PDI_NO_PEER, 0);
	}
}

Test(model_io, phases_on_the_wall_clock)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct script s;
	struct pdi_model m;

	cfg.max_phases = 9;
	cfg.auto_slots_from_ns = 1200000000; /* 0.2 s into the script */
	script_init(&s);
	stencil(&s, 1500); /* 4.5 s: 18 slots of 250 ms, merged to 500 ms and 1 s */
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, s.n);
	cr_assert(m.slots);
	cr_assert_gt(m.auto_len, 250, "phases were merged: auto_len %u", m.auto_len);
	pdi_model_done(&m);
	resume_everywhere(&cfg, &s, 97); /* through the turn to the wall clock and every halving */
	script_free(&s);
}

Test(model_io, early_phases_on_the_wall_clock)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct script s;
	struct pdi_model m;

	cfg.auto_slots_early_ns = 1500000000; /* 0.5 s into the script */
	cfg.auto_slots_from_ns = 4500000000;
	script_init(&s);
	stencil(&s, 600); /* 2.2 s: early slots only */
	pdi_model_init(&m, &cfg);
	feed(&m, &s, 0, s.n);
	cr_assert(m.slots && m.early);
	cr_assert_gt(m.nphases, 3);
	pdi_model_done(&m);
	stencil(&s, 900); /* on past the instant, where the early slots are kept */
	resume_everywhere(&cfg, &s, 97);
	script_free(&s);
}

/* A model of format VERSION with FLAGS, phases on the wall clock of AUTO_LEN ms, and the readings
 * through the step READINGS[0..N) (at, cpu, wait, group; the group's only from format 10). */
static int forge_readings(uint32_t version, uint8_t flags, uint32_t auto_len, const uint64_t (*readings)[4],
			  uint32_t n, struct pdi_model *ret)
{
	struct forge f;
	size_t at;

	f_start(&f, "MPI_Send", 0);
	at = f.n - 11; /* auto_len, last_site, last_fn, flags */
	put_le(f.b + at, auto_len, 4);
	f.b[f.n - 1] = flags;
	f_v3(&f);
	f.version = version;
	f_zero(&f, version >= 10 ? 32 : 24); /* usage_now */
	f_le(&f, 0, 4); /* no period sample */
	f_le(&f, 0, 4); /* no phases */
	f_le(&f, 0, 4);
	f_le(&f, 0, 4); /* no requests */
	f_le(&f, 0, 4);
	f_le(&f, 0, 4); /* nothing unobserved */
	f_le(&f, 0, 8);
	if (version >= 6) { /* nothing the stack said */
		f_le(&f, 0, 4);
		f_le(&f, 0, 8);
	}
	if (version >= 8) { /* the readings through the step */
		f_le(&f, 0, 8);
		f_le(&f, n, 4);
		for (uint32_t i = 0; i < n; i++)
			for (unsigned k = 0; k < (version >= 10 ? 4u : 3u); k++)
				f_le(&f, readings[i][k], 8);
	}
	return f_decode(&f, ret);
}

/* A model of format VERSION with FLAGS, phases on the wall clock of AUTO_LEN ms, nothing else. */
static int forge_slots(uint32_t version, uint8_t flags, uint32_t auto_len, struct pdi_model *ret)
{
	return forge_readings(version, flags, auto_len, NULL, 0, ret);
}

Test(model_io, the_groups_cpu_beside_each_reading)
{
	const uint64_t r[2][4] = {{1000, 10, 20, 500}, {2000, 30, 40, 900}};
	struct pdi_model m;

	cr_assert_eq(forge_readings(10, 1 | 4, 250, r, 2, &m), 0);
	cr_assert_eq(m.usage_log.n, 2);
	cr_assert(m.usage_log.v[0].group_ns == 500 && m.usage_log.v[1].group_ns == 900);
	pdi_model_done(&m);
	cr_assert_eq(forge_readings(9, 1 | 4, 250, r, 2, &m), 0, "format 9's readings, three counts each");
	cr_assert(m.usage_log.v[1].cpu_ns == 30 && m.usage_log.v[1].group_ns == 0, "no group's CPU: not read");
	pdi_model_done(&m);
}

Test(model_io, forged_slots)
{
	struct pdi_model m;

	cr_assert_eq(forge_slots(5, 1 | 4, 250, &m), 0, "the well-formed forgery decodes");
	cr_assert(m.slots);
	cr_assert_eq(m.auto_len, 250);
	pdi_model_done(&m);
	cr_assert_eq(forge_slots(5, 1, 250, &m), 0);
	cr_assert(!m.slots);
	pdi_model_done(&m);
	cr_assert_eq(forge_slots(5, 1 | 4, 0, &m), -EBADMSG, "slots of no length would divide by zero");
	cr_assert_eq(forge_slots(4, 1 | 4, 250, &m), -EBADMSG, "format 4 had no such flag");
	cr_assert_eq(forge_slots(9, 1 | 4 | 8, 250, &m), 0);
	cr_assert(m.slots && m.early);
	pdi_model_done(&m);
	cr_assert_eq(forge_slots(9, 1 | 8, 250, &m), -EBADMSG, "early phases are slots");
	cr_assert_eq(forge_slots(8, 1 | 4 | 8, 250, &m), -EBADMSG, "format 8 had no such flag");
}

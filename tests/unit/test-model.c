/* SPDX-License-Identifier: GPL-2.0-only */
/* test-model.c -- the per-task semi-Markov model: states, edges, phases, memory bound, requests. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_io.h"
#include "mpi_funcs.h"

/* A task replaying a synthetic program: the clock only moves forward. */
struct task {
	struct pdi_model m;
	uint64_t t;
};

static uint16_t fn_id(const char *name)
{
	int i = pdi_mpi_func_find(name);

	cr_assert_geq(i, 0, "%s is in the table", name);
	return (uint16_t)i;
}

static void task_init(struct task *k, const struct pdi_model_config *cfg)
{
	pdi_model_init(&k->m, cfg);
	k->t = 1000000000; /* 1 s into CLOCK_MONOTONIC */
}

/* Compute for COMP ns, then spend DUR ns in FN at SITE. */
static void call_full(struct task *k, uint32_t site, uint16_t fn, uint64_t comp, uint64_t dur, int32_t peer,
		      uint64_t req)
{
	struct pdi_call c = {
		.site = site,
		.fn = fn,
		.t_enter = k->t + comp,
		.t_exit = k->t + comp + dur,
		.peer = peer,
		.tag = 0,
		.req = req,
	};

	cr_assert_eq(pdi_model_add_call(&k->m, &c), 0, "call %llu at site %u", (unsigned long long)k->m.calls, site);
	k->t = c.t_exit;
}

static void call(struct task *k, uint32_t site, uint16_t fn, uint64_t comp, uint64_t dur)
{
	call_full(k, site, fn, comp, dur, PDI_NO_PEER, 0);
}

static const struct pdi_edge *find_edge(const struct pdi_phase *p, uint64_t from, uint64_t to)
{
	uint32_t f = pdi_phase_state(p, from), d = pdi_phase_state(p, to);

	if (f == PDI_U64MAP_NONE || d == PDI_U64MAP_NONE)
		return NULL;
	for (uint32_t i = 0; i < p->nedges; i++)
		if (p->edges[i].from == f && p->edges[i].to == d)
			return &p->edges[i];
	return NULL;
}

static uint64_t edge_count(const struct pdi_phase *p, uint64_t from, uint64_t to)
{
	const struct pdi_edge *e = find_edge(p, from, to);

	return e ? e->time.n : 0;
}

static uint64_t state_visits(const struct pdi_phase *p, uint64_t key)
{
	uint32_t i = pdi_phase_state(p, key);

	return i == PDI_U64MAP_NONE ? 0 : p->states[i].visits;
}

static uint64_t phase_transitions(const struct pdi_phase *p)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < p->nedges; i++)
		n += p->edges[i].time.n;
	return n;
}

static uint64_t model_transitions(const struct pdi_model *m)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < m->nphases; i++)
		n += phase_transitions(&m->phases[i]);
	return n;
}

static uint64_t model_visits(const struct pdi_model *m, bool comp)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < m->nphases; i++)
		for (uint32_t s = 0; s < m->phases[i].nstates; s++)
			if (pdi_state_is_comp(m->phases[i].states[s].key) == comp)
				n += m->phases[i].states[s].visits;
	return n;
}

/* What model.bytes should be: every array's capacity and every map's table. */
static size_t model_bytes(const struct pdi_model *m)
{
	size_t b = (size_t)m->cap_phases * sizeof(struct pdi_phase) + (size_t)m->cap_reqs * sizeof(struct pdi_request) +
		   pdi_u64map_bytes(&m->req_idx);

	for (uint32_t i = 0; i < m->nphases; i++) {
		const struct pdi_phase *p = &m->phases[i];

		b += (size_t)p->cap_states * sizeof(*p->states) + (size_t)p->cap_edges * sizeof(*p->edges) +
		     pdi_u64map_bytes(&p->state_idx) + pdi_u64map_bytes(&p->edge_idx);
	}
	return b;
}

/* Indices, maps and distributions agree with each other. */
static void check_model(const struct pdi_model *m)
{
	cr_assert_eq(m->bytes, model_bytes(m), "bytes %zu, arrays and maps hold %zu", m->bytes, model_bytes(m));
	cr_assert_leq(m->bytes, m->cfg.max_bytes);
	cr_assert_leq(m->nphases, m->cfg.max_phases);
	for (uint32_t i = 0; i < m->nphases; i++) {
		const struct pdi_phase *p = &m->phases[i];

		cr_assert_leq(p->t_start, p->t_end, "phase %u", i);
		if (i)
			cr_assert_leq(m->phases[i - 1].t_end, p->t_start, "phase %u", i);
		cr_assert_eq(p->state_idx.used, p->nstates);
		cr_assert_eq(p->edge_idx.used, p->nedges);
		for (uint32_t s = 0; s < p->nstates; s++)
			cr_assert_eq(pdi_phase_state(p, p->states[s].key), s, "phase %u state %u", i, s);
		for (uint32_t e = 0; e < p->nedges; e++) {
			const struct pdi_edge *x = &p->edges[e];

			cr_assert_lt(x->from, p->nstates);
			cr_assert_lt(x->to, p->nstates);
			cr_assert_eq(pdi_u64map_get(&p->edge_idx, (uint64_t)x->from << 32 | x->to), e);
			cr_assert_eq(pdi_hist_total(&x->hist), x->time.n, "phase %u edge %u", i, e);
			/* transitions alternate between communication and computation */
			cr_assert_neq(pdi_state_is_comp(p->states[x->from].key), pdi_state_is_comp(p->states[x->to].key));
		}
	}
}

/* Two phases hold the same states with the same visits and the same edges with the same counts. */
static void assert_same_shape(const struct pdi_phase *a, const struct pdi_phase *b, unsigned ia, unsigned ib)
{
	cr_assert_eq(a->nstates, b->nstates, "phases %u and %u: %u and %u states", ia, ib, a->nstates, b->nstates);
	cr_assert_eq(a->nedges, b->nedges, "phases %u and %u: %u and %u edges", ia, ib, a->nedges, b->nedges);
	for (uint32_t s = 0; s < a->nstates; s++)
		cr_assert_eq(a->states[s].visits, state_visits(b, a->states[s].key),
			     "phases %u and %u: state %#llx visited %llu and %llu times", ia, ib,
			     (unsigned long long)a->states[s].key, (unsigned long long)a->states[s].visits,
			     (unsigned long long)state_visits(b, a->states[s].key));
	for (uint32_t e = 0; e < a->nedges; e++) {
		uint64_t from = a->states[a->edges[e].from].key, to = a->states[a->edges[e].to].key;

		cr_assert_eq(a->edges[e].time.n, edge_count(b, from, to),
			     "phases %u and %u: edge %#llx -> %#llx taken %llu and %llu times", ia, ib,
			     (unsigned long long)from, (unsigned long long)to, (unsigned long long)a->edges[e].time.n,
			     (unsigned long long)edge_count(b, from, to));
	}
}

#define COMM(s) pdi_state_comm(s)
#define COMP(a, b) pdi_state_comp(a, b)

Test(model, state_keys)
{
	uint64_t c = COMP(7, 9);

	cr_assert_eq(COMM(7), 7u);
	cr_assert_not(pdi_state_is_comp(COMM(7)));
	cr_assert(pdi_state_is_comp(c));
	cr_assert_eq(pdi_state_site(c), 9u);
	cr_assert_eq(pdi_state_prev_site(c), 7u);
	cr_assert_eq(pdi_state_site(COMM(7)), 7u);
	cr_assert_neq(COMP(7, 9), COMP(9, 7));
	cr_assert_neq(COMP(0, 0), COMM(0));
}

Test(model, init_normalises_config)
{
	struct pdi_model m;
	struct pdi_model_config cfg = pdi_model_config_default;

	pdi_model_init(&m, NULL);
	cr_assert_eq(m.cfg.max_bytes, pdi_model_config_default.max_bytes);
	cr_assert_eq(m.cfg.max_phases, pdi_model_config_default.max_phases);
	cr_assert_eq(m.cfg.max_phases % 2, 1);
	cr_assert_eq(m.nphases, 0);
	cr_assert_eq(m.bytes, 0);
	pdi_model_done(&m);

	/* the phase bound is odd and at least 3: a prologue plus pairs of loop phases */
	static const uint32_t in[] = {0, 1, 2, 3, 4, 5, 64, 65};
	static const uint32_t out[] = {3, 3, 3, 3, 5, 5, 65, 65};
	for (unsigned i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		cfg.max_phases = in[i];
		pdi_model_init(&m, &cfg);
		cr_assert_eq(m.cfg.max_phases, out[i], "max_phases %u -> %u, want %u", in[i], m.cfg.max_phases, out[i]);
		pdi_model_done(&m);
	}
}

Test(model, first_call)
{
	struct task k;

	task_init(&k, NULL);
	call(&k, 3, fn_id("MPI_Init"), 0, 500);
	cr_assert_eq(k.m.nphases, 1);
	cr_assert_eq(k.m.calls, 1);
	cr_assert_eq(k.m.phases[0].nstates, 1);
	cr_assert_eq(k.m.phases[0].nedges, 0);
	cr_assert_eq(state_visits(&k.m.phases[0], COMM(3)), 1);
	cr_assert_eq(k.m.phases[0].t_start, 1000000000);
	cr_assert_eq(k.m.phases[0].t_end, 1000000500);
	check_model(&k.m);
	pdi_model_done(&k.m);
	cr_assert_null(k.m.phases);
	cr_assert_eq(k.m.bytes, 0);
}

/* Irecv(1), Isend(2), Waitall(3), Barrier(4) for N iterations, constant times. */
Test(model, ring)
{
	enum { N = 50 };
	const uint16_t irecv = fn_id("MPI_Irecv"), isend = fn_id("MPI_Isend"), waitall = fn_id("MPI_Waitall"),
		       barrier = fn_id("MPI_Barrier");
	struct pdi_model_config cfg = pdi_model_config_default;
	const struct pdi_phase *p;
	uint64_t t0;
	struct task k;

	cfg.auto_phases = false;
	task_init(&k, &cfg);
	t0 = k.t + 2000;
	for (unsigned i = 0; i < N; i++) {
		call_full(&k, 1, irecv, 2000, 10, 4, 0x1000 + 2 * i);
		call_full(&k, 2, isend, 5, 20, 6, 0x1001 + 2 * i);
		call(&k, 3, waitall, 1000, 300);
		call(&k, 4, barrier, 7, 400);
	}
	check_model(&k.m);
	cr_assert_eq(k.m.calls, 4 * N);
	cr_assert_eq(k.m.nphases, 1);
	p = &k.m.phases[0];
	cr_assert_eq(p->t_start, t0);
	cr_assert_eq(p->t_end, k.t);

	/* 4 communication states, 4 computation states between them */
	cr_assert_eq(p->nstates, 8);
	cr_assert_eq(p->nedges, 8);
	for (uint32_t s = 1; s <= 4; s++) {
		uint32_t next = s % 4 + 1;

		cr_assert_eq(state_visits(p, COMM(s)), N);
		cr_assert_eq(state_visits(p, COMP(s, next)), s == 4 ? N - 1 : N);
		cr_assert_eq(edge_count(p, COMM(s), COMP(s, next)), s == 4 ? N - 1 : N, "comm(%u)", s);
		cr_assert_eq(edge_count(p, COMP(s, next), COMM(next)), s == 4 ? N - 1 : N, "comp(%u,%u)", s, next);
	}
	cr_assert_null(find_edge(p, COMM(1), COMM(2)), "no comm -> comm edges");
	cr_assert_null(find_edge(p, COMM(4), COMP(1, 2)));
	cr_assert_eq(pdi_phase_state(p, COMP(2, 1)), PDI_U64MAP_NONE);

	/* comm -> comp is timed by the call, comp -> comm by the computation */
	static const double call_ns[] = {0, 10, 20, 300, 400}, comp_ns[] = {0, 5, 1000, 7, 2000};
	for (uint32_t s = 1; s <= 4; s++) {
		const struct pdi_edge *out = find_edge(p, COMM(s), COMP(s, s % 4 + 1));
		const struct pdi_edge *in = find_edge(p, COMP(s, s % 4 + 1), COMM(s % 4 + 1));

		cr_assert_not_null(out);
		cr_assert_not_null(in);
		cr_assert_eq(out->time.mean, call_ns[s], "comm(%u): mean %g", s, out->time.mean);
		cr_assert_eq(pdi_gauss_stddev(&out->time), 0.0);
		cr_assert_eq(in->time.mean, comp_ns[s], "comp(%u,_): mean %g", s, in->time.mean);
		cr_assert_eq(pdi_gauss_stddev(&in->time), 0.0);
		/* constant times: one histogram bucket */
		cr_assert_eq(out->hist.n, 1);
		cr_assert_eq(out->hist.mean[0], (float)call_ns[s]);
		cr_assert_eq(out->hist.count[0], out->time.n);
	}
	cr_assert_eq(model_transitions(&k.m), 2 * (4 * N - 1));
	cr_assert_eq(pdi_model_visits(&k.m, COMM(3)), N);
	cr_assert_eq(pdi_model_visits(&k.m, COMP(4, 1)), N - 1);
	cr_assert_eq(pdi_model_visits(&k.m, COMM(99)), 0);
	cr_assert_eq(k.m.dropped_states + k.m.dropped_edges + k.m.dropped_requests + k.m.folded_phase_cuts, 0);

	/* the requests of the last iteration are remembered */
	cr_assert_eq(k.m.nreqs, 2 * N);
	cr_assert_eq(pdi_model_find_request(&k.m, 0x1000 + 2 * (N - 1))->peer, 4);
	cr_assert_eq(pdi_model_find_request(&k.m, 0x1001 + 2 * (N - 1))->peer, 6);
	pdi_model_done(&k.m);
}

Test(model, varying_durations)
{
	const uint16_t send = fn_id("MPI_Send"), recv = fn_id("MPI_Recv");
	struct pdi_model_config cfg = pdi_model_config_default;
	const struct pdi_edge *e;
	struct task k;

	cfg.auto_phases = false;
	task_init(&k, &cfg);
	/* Send takes 100, 200, 300, 400 ns; the computation before Recv 10, 30 */
	for (unsigned i = 0; i < 4; i++) {
		call(&k, 1, send, 50, 100 * (i + 1));
		call(&k, 2, recv, i % 2 ? 30 : 10, 1);
	}
	e = find_edge(&k.m.phases[0], COMM(1), COMP(1, 2));
	cr_assert_not_null(e);
	cr_assert_eq(e->time.n, 4);
	cr_assert_float_eq(e->time.mean, 250.0, 1e-9);
	cr_assert_float_eq(pdi_gauss_stddev(&e->time), 111.80339887498948, 1e-9); /* sqrt(12500) */
	cr_assert_eq(e->hist.n, 4);
	e = find_edge(&k.m.phases[0], COMP(1, 2), COMM(2));
	cr_assert_not_null(e);
	cr_assert_float_eq(e->time.mean, 20.0, 1e-9);
	cr_assert_float_eq(pdi_gauss_stddev(&e->time), 10.0, 1e-9);
	cr_assert_eq(e->hist.n, 2);
	e = find_edge(&k.m.phases[0], COMP(2, 1), COMM(1));
	cr_assert_not_null(e);
	cr_assert_eq(e->time.n, 3);
	cr_assert_eq(e->time.mean, 50.0);
	check_model(&k.m);
	pdi_model_done(&k.m);
}

Test(model, overlapping_clock_counts_as_zero_computation)
{
	/* a call entered before the previous one's recorded exit (clock skew between CPUs)
	 * gives a zero computation time, not a huge unsigned one */
	const uint16_t send = fn_id("MPI_Send");
	struct pdi_model m;
	struct pdi_call a = {.site = 1, .fn = send, .t_enter = 1000, .t_exit = 2000, .peer = PDI_NO_PEER};
	struct pdi_call b = {.site = 2, .fn = send, .t_enter = 1990, .t_exit = 2500, .peer = PDI_NO_PEER};
	const struct pdi_edge *e;

	pdi_model_init(&m, NULL);
	cr_assert_eq(pdi_model_add_call(&m, &a), 0);
	cr_assert_eq(pdi_model_add_call(&m, &b), 0);
	e = find_edge(&m.phases[0], COMP(1, 2), COMM(2));
	cr_assert_not_null(e);
	cr_assert_eq(e->time.mean, 0.0);
	e = find_edge(&m.phases[0], COMM(1), COMP(1, 2));
	cr_assert_eq(e->time.mean, 1000.0);
	pdi_model_done(&m);
}

/* Init, then K Pcontrol markers each followed by an iteration loop, then Finalize. */
Test(model, pcontrol_phases)
{
	enum { K = 3 };
	static const unsigned iters[K] = {10, 20, 30};
	const uint16_t init = fn_id("MPI_Init"), pcontrol = fn_id("MPI_Pcontrol"),
		       allreduce = fn_id("MPI_Allreduce"), sendrecv = fn_id("MPI_Sendrecv"),
		       finalize = fn_id("MPI_Finalize");
	uint64_t marker_t[K];
	struct task k;

	task_init(&k, NULL);
	call(&k, 100, init, 0, 1000);
	for (unsigned ph = 0; ph < K; ph++) {
		call(&k, 50, pcontrol, 777, 3);
		marker_t[ph] = k.t - 3;
		for (unsigned i = 0; i < iters[ph]; i++) {
			call(&k, 51, allreduce, 40, 60);
			call(&k, 52, sendrecv, 10, 90);
		}
	}
	call(&k, 101, finalize, 5, 1);
	check_model(&k.m);

	cr_assert_eq(k.m.nphases, K + 1, "K markers give K + 1 phases, got %u", k.m.nphases);
	cr_assert(k.m.saw_pcontrol);
	cr_assert_eq(k.m.folded_phase_cuts, 0);

	/* phase 0: before the first marker. The computation before the marker belongs to
	 * it, the marker itself to phase 1. */
	const struct pdi_phase *p0 = &k.m.phases[0];
	cr_assert_eq(state_visits(p0, COMM(100)), 1);
	cr_assert_eq(state_visits(p0, COMP(100, 50)), 1);
	cr_assert_eq(state_visits(p0, COMM(50)), 0);
	cr_assert_eq(edge_count(p0, COMM(100), COMP(100, 50)), 1);
	cr_assert_eq(edge_count(p0, COMP(100, 50), COMM(50)), 1,
		     "the computation before a phase's first call is recorded in the phase before");
	cr_assert_eq(find_edge(p0, COMP(100, 50), COMM(50))->time.mean, 777.0);
	cr_assert_eq(p0->t_end, marker_t[0]);

	for (unsigned ph = 0; ph < K; ph++) {
		const struct pdi_phase *p = &k.m.phases[ph + 1];
		uint64_t n = iters[ph];
		bool last = ph == K - 1;
		uint32_t next = last ? 101 : 50;

		cr_assert_eq(p->t_start, marker_t[ph], "phase %u starts at its marker", ph + 1);
		if (!last)
			cr_assert_eq(p->t_end, marker_t[ph + 1]);
		cr_assert_eq(p->states[0].key, COMM(50), "phase %u starts at the marker", ph + 1);
		cr_assert_eq(state_visits(p, COMM(50)), 1);
		cr_assert_eq(state_visits(p, COMM(51)), n);
		cr_assert_eq(state_visits(p, COMM(52)), n);
		cr_assert_eq(edge_count(p, COMM(50), COMP(50, 51)), 1);
		cr_assert_eq(edge_count(p, COMP(50, 51), COMM(51)), 1);
		cr_assert_eq(edge_count(p, COMM(51), COMP(51, 52)), n);
		cr_assert_eq(edge_count(p, COMP(51, 52), COMM(52)), n);
		cr_assert_eq(edge_count(p, COMM(52), COMP(52, 51)), n - 1);
		cr_assert_eq(edge_count(p, COMP(52, 51), COMM(51)), n - 1);
		cr_assert_eq(edge_count(p, COMM(52), COMP(52, next)), 1);
		cr_assert_eq(edge_count(p, COMP(52, next), COMM(next)), 1, "phase %u's closing transition", ph + 1);
		cr_assert_eq(find_edge(p, COMM(51), COMP(51, 52))->time.mean, 60.0);
		cr_assert_eq(find_edge(p, COMP(52, 51), COMM(51))->time.mean, 40.0);
		/* 2n calls and the marker: 2n transitions out of them, 2n in */
		cr_assert_eq(phase_transitions(p), 4 * n + 2);
	}
	cr_assert_eq(state_visits(&k.m.phases[K], COMM(101)), 1);

	/* visits add up across phases */
	cr_assert_eq(pdi_model_visits(&k.m, COMM(51)), 60);
	cr_assert_eq(pdi_model_visits(&k.m, COMM(50)), K);
	cr_assert_eq(pdi_model_visits(&k.m, COMP(52, 50)), K - 1);
	cr_assert_eq(pdi_model_visits(&k.m, COMM(100)), 1);

	/* every call after the first adds two transitions, phases or not */
	cr_assert_eq(model_transitions(&k.m), 2 * (k.m.calls - 1));
	cr_assert_eq(model_visits(&k.m, false), k.m.calls);
	cr_assert_eq(model_visits(&k.m, true), k.m.calls - 1);
	pdi_model_done(&k.m);
}

Test(model, pcontrol_bound_folds_cuts)
{
	const uint16_t pcontrol = fn_id("MPI_Pcontrol"), send = fn_id("MPI_Send");
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;

	cfg.max_phases = 5;
	task_init(&k, &cfg);
	call(&k, 1, send, 0, 10);
	for (unsigned i = 0; i < 10; i++) {
		call(&k, 2, pcontrol, 10, 1);
		call(&k, 3, send, 10, 10);
	}
	check_model(&k.m);
	cr_assert_eq(k.m.nphases, 5);
	cr_assert_eq(k.m.folded_phase_cuts, 6);
	/* the markers past the bound stay in the last phase */
	cr_assert_eq(state_visits(&k.m.phases[4], COMM(2)), 7);
	cr_assert_eq(model_transitions(&k.m), 2 * (k.m.calls - 1));
	pdi_model_done(&k.m);
}

Test(model, pcontrol_stops_automatic_phases)
{
	const uint16_t pcontrol = fn_id("MPI_Pcontrol"), barrier = fn_id("MPI_Barrier");
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;

	cfg.auto_phase_min_collectives = 4;
	task_init(&k, &cfg);
	for (unsigned i = 0; i < 100; i++) /* collectives 0..99: one automatic cut, at 96 */
		call(&k, 1, barrier, 10, 10);
	cr_assert_eq(k.m.nphases, 2);
	call(&k, 2, pcontrol, 10, 1);
	cr_assert_eq(k.m.nphases, 3);
	for (unsigned i = 0; i < 200; i++)
		call(&k, 1, barrier, 10, 10);
	cr_assert_eq(k.m.nphases, 3, "no automatic cuts once the program marks its phases");
	cr_assert_eq(state_visits(&k.m.phases[2], COMM(1)), 200);
	check_model(&k.m);
	pdi_model_done(&k.m);
}

/* Barrier(1), Isend(2), Irecv(3), Waitall(4) per iteration. */
static void barrier_loop(struct task *k, unsigned iters, void (*each_call)(const struct task *))
{
	const uint16_t barrier = fn_id("MPI_Barrier"), isend = fn_id("MPI_Isend"), irecv = fn_id("MPI_Irecv"),
		       waitall = fn_id("MPI_Waitall");

	for (unsigned i = 0; i < iters; i++) {
		call(k, 1, barrier, 300, 50);
		if (each_call)
			each_call(k);
		call_full(k, 2, isend, 3, 7, 1, 0x100);
		call_full(k, 3, irecv, 4, 8, 2, 0x200);
		call(k, 4, waitall, 5, 90);
		if (each_call)
			each_call(k);
	}
}

static void no_phase_before_96_collectives(const struct task *k)
{
	if (k->m.ncollectives <= 96)
		cr_assert_eq(k->m.nphases, 1, "%llu collectives, %u phases", (unsigned long long)k->m.ncollectives,
			     k->m.nphases);
	else
		cr_assert_gt(k->m.nphases, 1);
}

Test(model, automatic_phases)
{
	enum { L = 4, CUTS = 10 };
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;

	cfg.auto_phase_min_collectives = L;
	task_init(&k, &cfg);
	/* 96 iterations of prologue, CUTS - 1 complete phases of L, and a partial one */
	barrier_loop(&k, 96 + (CUTS - 1) * L + 2, no_phase_before_96_collectives);
	check_model(&k.m);
	cr_assert_eq(k.m.auto_len, L, "period 1, at least %u collectives: %u", L, k.m.auto_len);
	cr_assert_eq(k.m.nphases, 1 + CUTS);
	cr_assert_eq(k.m.folded_phase_cuts, 0);

	/* the prologue: the first 96 iterations */
	cr_assert_eq(state_visits(&k.m.phases[0], COMM(1)), 96);
	cr_assert_eq(state_visits(&k.m.phases[0], COMM(4)), 96);
	cr_assert_eq(edge_count(&k.m.phases[0], COMP(4, 1), COMM(1)), 96);

	for (unsigned i = 1; i < CUTS; i++) {
		const struct pdi_phase *p = &k.m.phases[i];

		cr_assert_eq(p->states[0].key, COMM(1), "phase %u starts at the barrier", i);
		cr_assert_eq(p->nstates, 8);
		cr_assert_eq(p->nedges, 8);
		for (uint32_t s = 1; s <= 4; s++) {
			cr_assert_eq(state_visits(p, COMM(s)), L);
			cr_assert_eq(edge_count(p, COMM(s), COMP(s, s % 4 + 1)), L, "phase %u comm(%u)", i, s);
			cr_assert_eq(edge_count(p, COMP(s, s % 4 + 1), COMM(s % 4 + 1)), L, "phase %u comp(%u,_)", i, s);
		}
		assert_same_shape(&k.m.phases[1], p, 1, i);
	}
	/* the current phase: 2 iterations so far, no way out yet */
	cr_assert_eq(state_visits(&k.m.phases[CUTS], COMM(1)), 2);
	cr_assert_eq(edge_count(&k.m.phases[CUTS], COMM(4), COMP(4, 1)), 1);

	cr_assert_eq(pdi_model_visits(&k.m, COMM(1)), 96 + (CUTS - 1) * L + 2);
	cr_assert_eq(model_transitions(&k.m), 2 * (k.m.calls - 1));
	pdi_model_done(&k.m);
}

static void phases_bounded(const struct task *k)
{
	cr_assert_leq(k->m.nphases, 5);
	cr_assert_eq(model_transitions(&k->m), 2 * (k->m.calls - 1), "after %llu calls",
		     (unsigned long long)k->m.calls);
	cr_assert_eq(model_visits(&k->m, false), k->m.calls);
	cr_assert_eq(model_visits(&k->m, true), k->m.calls - 1);
}

Test(model, automatic_phases_merge_pairwise_past_max)
{
	enum { ITERS = 96 + 240 };
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;

	cfg.auto_phase_min_collectives = 4;
	cfg.max_phases = 5;
	task_init(&k, &cfg);
	barrier_loop(&k, ITERS, phases_bounded);
	check_model(&k.m);

	/* cuts at 96 + 4j until the first halving at 112; then the length doubles with every
	 * halving: 8 (at 112), 16 (128), 32 (160), 64 (224); phases 1-3 are complete, the
	 * fourth started at 288 */
	cr_assert_eq(k.m.auto_len, 64);
	cr_assert_eq(k.m.nphases, 5);
	cr_assert_eq(k.m.folded_phase_cuts, 0);
	cr_assert_eq(state_visits(&k.m.phases[0], COMM(1)), 96);
	for (unsigned i = 1; i <= 3; i++) {
		const struct pdi_phase *p = &k.m.phases[i];

		for (uint32_t s = 1; s <= 4; s++) {
			cr_assert_eq(state_visits(p, COMM(s)), 64, "phase %u comm(%u)", i, s);
			cr_assert_eq(edge_count(p, COMM(s), COMP(s, s % 4 + 1)), 64, "phase %u comm(%u)", i, s);
			cr_assert_eq(edge_count(p, COMP(s, s % 4 + 1), COMM(s % 4 + 1)), 64, "phase %u comp(%u,_)", i, s);
		}
		/* merged phases (1, 2) and a phase cut at the doubled length (3) look alike */
		assert_same_shape(&k.m.phases[1], p, 1, i);
		/* the merged distributions are the union of the parts */
		cr_assert_eq(find_edge(p, COMM(4), COMP(4, 1))->time.mean, 90.0);
		cr_assert_eq(find_edge(p, COMP(4, 1), COMM(1))->time.mean, 300.0);
	}
	cr_assert_eq(k.m.phases[1].t_end, k.m.phases[2].t_start);
	cr_assert_eq(state_visits(&k.m.phases[4], COMM(1)), ITERS - 288);
	cr_assert_eq(pdi_model_visits(&k.m, COMM(2)), ITERS);
	pdi_model_done(&k.m);
}

Test(model, automatic_phases_follow_the_period)
{
	/* a prologue of 5 broadcasts, then a loop with 3 collectives at different sites */
	const uint16_t init = fn_id("MPI_Init"), bcast = fn_id("MPI_Bcast"), allreduce = fn_id("MPI_Allreduce"),
		       sendrecv = fn_id("MPI_Sendrecv"), barrier = fn_id("MPI_Barrier");
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;
	unsigned complete;

	cfg.auto_phase_min_collectives = 4;
	task_init(&k, &cfg);
	call(&k, 98, init, 0, 100);
	for (unsigned i = 0; i < 5; i++)
		call(&k, 99, bcast, 10, 10);
	for (unsigned i = 0; i < 60; i++) {
		call(&k, 10, allreduce, 20, 30);
		call(&k, 11, sendrecv, 1, 5);
		call(&k, 12, bcast, 2, 6);
		call(&k, 13, sendrecv, 3, 7);
		call(&k, 14, barrier, 4, 8);
	}
	check_model(&k.m);
	cr_assert_eq(k.m.auto_len % 3, 0, "auto_len %u holds whole iterations", k.m.auto_len);
	cr_assert_eq(k.m.auto_len, 6, "the smallest multiple of 3 >= 4");
	/* 185 collectives, cuts at 96, 102, ..., 180 */
	cr_assert_eq(k.m.nphases, 1 + 15);
	complete = k.m.nphases - 2;
	for (unsigned i = 1; i <= complete; i++) {
		const struct pdi_phase *p = &k.m.phases[i];

		/* collective 96 is the loop's 91st: the Bcast of an iteration */
		cr_assert_eq(p->states[0].key, COMM(12), "phase %u starts at %#llx", i,
			     (unsigned long long)p->states[0].key);
		for (uint32_t s = 10; s <= 14; s++)
			cr_assert_eq(state_visits(p, COMM(s)), 2, "phase %u site %u", i, s);
		assert_same_shape(&k.m.phases[1], p, 1, i);
	}
	cr_assert_eq(model_transitions(&k.m), 2 * (k.m.calls - 1));
	pdi_model_done(&k.m);
}

Test(model, period_rounds_the_phase_length_up)
{
	/* the period is one of functions, which every task calls alike, not of call sites */
	const uint16_t loop[5] = {fn_id("MPI_Allreduce"), fn_id("MPI_Bcast"), fn_id("MPI_Allreduce"),
				  fn_id("MPI_Barrier"), fn_id("MPI_Bcast")};
	const uint16_t allreduce = fn_id("MPI_Allreduce");
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;

	/* period 5, default minimum 32: 35 collectives per phase */
	task_init(&k, &cfg);
	for (unsigned i = 0; i < 96; i++)
		call(&k, 20 + i % 5, loop[i % 5], 10, 10);
	cr_assert_eq(k.m.auto_len, 35);
	cr_assert_eq(k.m.nphases, 1);
	call(&k, 20 + 96 % 5, loop[96 % 5], 10, 10);
	cr_assert_eq(k.m.nphases, 2);
	cr_assert_eq(k.m.phases[1].first_collective, 96);
	pdi_model_done(&k.m);

	/* no minimum: one period per phase */
	cfg.auto_phase_min_collectives = 0;
	task_init(&k, &cfg);
	for (unsigned i = 0; i < 96; i++)
		call(&k, 20 + i % 5, loop[i % 5], 10, 10);
	cr_assert_eq(k.m.auto_len, 5);
	pdi_model_done(&k.m);

	/* sites that differ but functions that repeat (a rank that calls the same collective from
	 * elsewhere): the period is the functions' */
	task_init(&k, &cfg);
	for (unsigned i = 0; i < 96; i++)
		call(&k, 1000 + i, allreduce, 10, 10);
	cr_assert_eq(k.m.auto_len, 1);
	pdi_model_done(&k.m);

	/* no period within 32: every collective counts as one */
	cfg.auto_phase_min_collectives = 7;
	task_init(&k, &cfg);
	for (unsigned i = 0; i < 96; i++)
		call(&k, 1000 + i, loop[(i * i + i / 7) % 5], 10, 10);
	cr_assert_eq(k.m.auto_len, 7);
	pdi_model_done(&k.m);
}

Test(model, automatic_phases_off)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;

	cfg.auto_phases = false;
	cfg.auto_phase_min_collectives = 4;
	task_init(&k, &cfg);
	barrier_loop(&k, 300, NULL);
	cr_assert_eq(k.m.nphases, 1);
	cr_assert_eq(edge_count(&k.m.phases[0], COMM(1), COMP(1, 2)), 300);
	pdi_model_done(&k.m);
}

Test(model, memory_bound)
{
	enum { SITES = 5000 };
	const uint16_t send = fn_id("MPI_Send");
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;

	cfg.max_bytes = 16 * 1024;
	cfg.auto_phases = false;
	task_init(&k, &cfg);
	for (uint32_t s = 0; s < SITES; s++) {
		call(&k, s, send, 10, 10); /* asserts the call is accepted */
		cr_assert_leq(k.m.bytes, cfg.max_bytes, "after site %u: %zu bytes", s, k.m.bytes);
		cr_assert_eq(k.m.bytes, model_bytes(&k.m), "after site %u", s);
	}
	check_model(&k.m);
	cr_log_info("16 KiB model after %u distinct sites: %zu bytes, %u states, %u edges, "
		    "dropped %llu states, %llu edges",
		    SITES, k.m.bytes, k.m.phases[0].nstates, k.m.phases[0].nedges,
		    (unsigned long long)k.m.dropped_states, (unsigned long long)k.m.dropped_edges);
	cr_assert_gt(k.m.dropped_states, 0);
	cr_assert_gt(k.m.dropped_edges, 0);
	cr_assert_eq(k.m.calls, SITES);
	cr_assert_lt(k.m.phases[0].nstates, 2 * SITES);

	/* still working: known states keep counting */
	cr_assert_eq(edge_count(&k.m.phases[0], COMM(1), COMP(1, 2)), 1);
	call(&k, 1, send, 10, 10);
	call(&k, 2, send, 10, 10);
	cr_assert_eq(edge_count(&k.m.phases[0], COMM(1), COMP(1, 2)), 2);
	cr_assert_eq(edge_count(&k.m.phases[0], COMP(1, 2), COMM(2)), 2);
	cr_assert_eq(pdi_model_visits(&k.m, COMM(1)), 2);
	cr_assert_eq(k.m.calls, SITES + 2);
	cr_assert_leq(k.m.bytes, cfg.max_bytes);
	pdi_model_done(&k.m);
}

Test(model, memory_bound_with_phases)
{
	/* phases, merges and requests under a small budget: the bound and the accounting hold */
	const uint16_t barrier = fn_id("MPI_Barrier"), isend = fn_id("MPI_Isend"), send = fn_id("MPI_Send");
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;

	cfg.max_bytes = 24 * 1024;
	cfg.max_phases = 5;
	cfg.auto_phase_min_collectives = 2;
	task_init(&k, &cfg);
	for (uint32_t i = 0; i < 3000; i++) {
		call(&k, 1, barrier, 10, 10);
		call_full(&k, 2 + i % 97, isend, 10, 10, 1, 0x1000 + i);
		call(&k, 500 + i % 13, send, 10, 10);
		cr_assert_leq(k.m.bytes, cfg.max_bytes, "iteration %u: %zu bytes", i, k.m.bytes);
		cr_assert_eq(k.m.bytes, model_bytes(&k.m), "iteration %u", i);
	}
	check_model(&k.m);
	cr_assert_gt(k.m.dropped_states + k.m.dropped_edges + k.m.dropped_requests, 0);
	pdi_model_done(&k.m);
}

Test(model, requests)
{
	const uint16_t isend = fn_id("MPI_Isend"), irecv = fn_id("MPI_Irecv"), wait = fn_id("MPI_Wait"),
		       ibarrier = fn_id("MPI_Ibarrier"), send = fn_id("MPI_Send");
	const uint64_t H = 0x7ffd12345678ull;
	const struct pdi_request *r;
	struct task k;

	task_init(&k, NULL);
	cr_assert_null(pdi_model_find_request(&k.m, H));
	call_full(&k, 3, isend, 10, 10, 5, H);
	r = pdi_model_find_request(&k.m, H);
	cr_assert_not_null(r);
	cr_assert_eq(r->handle, H);
	cr_assert_eq(r->peer, 5);
	cr_assert_eq(r->site, 3);
	cr_assert_eq(r->fn, isend);

	/* a Wait completes it but does not create one; nor do blocking calls */
	call_full(&k, 4, wait, 10, 10, PDI_NO_PEER, H);
	call_full(&k, 5, wait, 10, 10, PDI_NO_PEER, H + 8);
	call_full(&k, 6, send, 10, 10, 2, H + 16);
	cr_assert_null(pdi_model_find_request(&k.m, H + 8));
	cr_assert_null(pdi_model_find_request(&k.m, H + 16));
	cr_assert_eq(k.m.nreqs, 1);

	/* the MPI library reuses the handle: the entry is overwritten */
	call_full(&k, 7, irecv, 10, 10, 9, H);
	r = pdi_model_find_request(&k.m, H);
	cr_assert_not_null(r);
	cr_assert_eq(r->peer, 9);
	cr_assert_eq(r->site, 7);
	cr_assert_eq(r->fn, irecv);
	cr_assert_eq(k.m.nreqs, 1);

	/* nonblocking collectives create requests too; a zero handle is none */
	call_full(&k, 8, ibarrier, 10, 10, PDI_NO_PEER, H + 24);
	call_full(&k, 9, isend, 10, 10, 3, 0);
	cr_assert_not_null(pdi_model_find_request(&k.m, H + 24));
	cr_assert_eq(pdi_model_find_request(&k.m, H + 24)->peer, PDI_NO_PEER);
	cr_assert_null(pdi_model_find_request(&k.m, 0));
	cr_assert_eq(k.m.nreqs, 2);
	cr_assert_eq(k.m.dropped_requests, 0);
	check_model(&k.m);
	pdi_model_done(&k.m);
}

Test(model, request_table_is_capped)
{
	const uint16_t isend = fn_id("MPI_Isend");
	struct task k;

	task_init(&k, NULL);
	for (uint32_t i = 0; i < 5000; i++)
		call_full(&k, 1, isend, 1, 1, (int32_t)i, 0x10000 + 16 * (uint64_t)i);
	cr_assert_eq(k.m.nreqs, 4096);
	cr_assert_eq(k.m.dropped_requests, 5000 - 4096);
	cr_assert_eq(pdi_model_find_request(&k.m, 0x10000 + 16 * 4095ull)->peer, 4095);
	cr_assert_null(pdi_model_find_request(&k.m, 0x10000 + 16 * 4096ull));
	/* known handles are still updated */
	call_full(&k, 1, isend, 1, 1, -7, 0x10000);
	cr_assert_eq(pdi_model_find_request(&k.m, 0x10000)->peer, -7);
	cr_assert_eq(k.m.dropped_requests, 5000 - 4096);
	check_model(&k.m);
	pdi_model_done(&k.m);
}

Test(model, bytes_of_1000_site_loop)
{
	enum { SITES = 1000, PASSES = 5 };
	const uint16_t send = fn_id("MPI_Send");
	struct task k;

	task_init(&k, NULL);
	for (unsigned i = 0; i < PASSES; i++)
		for (uint32_t s = 0; s < SITES; s++)
			call(&k, s, send, 10, 10);
	check_model(&k.m);
	cr_assert_eq(k.m.nphases, 1);
	cr_assert_eq(k.m.phases[0].nstates, 2 * SITES);
	cr_assert_eq(k.m.phases[0].nedges, 2 * SITES);
	cr_assert_eq(k.m.dropped_states + k.m.dropped_edges, 0);
	cr_log_info("model of a loop over %u distinct comm sites: %zu bytes (%.1f KiB, %.0f bytes per site; "
		    "%u states, %u edges, state array cap %u, edge array cap %u)",
		    SITES, k.m.bytes, k.m.bytes / 1024.0, (double)k.m.bytes / SITES, k.m.phases[0].nstates,
		    k.m.phases[0].nedges, k.m.phases[0].cap_states, k.m.phases[0].cap_edges);
	pdi_model_done(&k.m);
}

/* ---- renaming sites (another run's models into this step's numbering) ---- */

enum { LSITES = 7 }; /* the call sites of the programs below, numbered 0..LSITES-1 */

/* Init, then ITERS iterations of Irecv/Isend/Waitall/Allreduce (fewer than the period sample,
 * so the collective sites are still kept), with SITE[] naming the sites. */
static void loop_program(struct task *k, const uint32_t *site, unsigned iters)
{
	const uint16_t init = fn_id("MPI_Init"), irecv = fn_id("MPI_Irecv"), isend = fn_id("MPI_Isend"),
		       waitall = fn_id("MPI_Waitall"), allreduce = fn_id("MPI_Allreduce");

	call(k, site[0], init, 100, 50);
	for (unsigned i = 0; i < iters; i++) {
		call_full(k, site[1], irecv, 20 + i, 3, 1, 0x100 + i % 4);
		call_full(k, site[2], isend, 5, 4, 1, 0x200 + i % 4);
		call(k, site[3], waitall, 7, 300 + 10 * i);
		call(k, site[4], allreduce, 1000 + i, 40);
	}
}

/* Init, then three Pcontrol phases of Send/Recv loops that differ per phase, with SITE[]. */
static void phased_program(struct task *k, const uint32_t *site)
{
	const uint16_t init = fn_id("MPI_Init"), pcontrol = fn_id("MPI_Pcontrol"), send = fn_id("MPI_Send"),
		       recv = fn_id("MPI_Recv"), barrier = fn_id("MPI_Barrier");

	call(k, site[0], init, 100, 50);
	for (unsigned p = 0; p < 3; p++) {
		call(k, site[5], pcontrol, 10, 1);
		for (unsigned i = 0; i < 10 + p; i++) {
			call(k, site[1 + (i + p) % 2], send, 30, 5 + i);
			call(k, site[3], recv, 40, 7);
		}
		call(k, site[6], barrier, 3, 90);
	}
}

static void encode_ok(const struct pdi_model *m, void **buf, size_t *len)
{
	cr_assert_eq(pdi_model_encode(m, buf, len), 0);
}

static void assert_same_blob(const struct pdi_model *a, const struct pdi_model *b, const char *what)
{
	void *x, *y;
	size_t nx, ny;

	encode_ok(a, &x, &nx);
	encode_ok(b, &y, &ny);
	cr_assert_eq(nx, ny, "%s: %zu and %zu bytes encoded", what, nx, ny);
	cr_assert_eq(memcmp(x, y, nx), 0, "%s: the encoded models differ", what);
	free(x);
	free(y);
}

/* What a renamed model must be: the one the same calls make under the new numbering. */
static void assert_remap_is_renumbering(void (*program)(struct task *, const uint32_t *))
{
	static const uint32_t here[LSITES] = {0, 1, 2, 3, 4, 5, 6}, there[LSITES] = {9, 2, 7, 0, 4, 11, 3};
	uint32_t map[LSITES];
	struct task a, b;

	for (unsigned i = 0; i < LSITES; i++)
		map[here[i]] = there[i];
	task_init(&a, NULL);
	task_init(&b, NULL);
	program(&a, here);
	program(&b, there);
	cr_assert_eq(pdi_model_remap_sites(&a.m, map, LSITES), 0);
	check_model(&a.m);
	cr_assert_eq(a.m.bytes, b.m.bytes);
	assert_same_blob(&a.m, &b.m, "renamed");
	for (uint32_t i = 0; i < a.m.nphases; i++) {
		assert_same_shape(&a.m.phases[i], &b.m.phases[i], i, i);
		assert_same_shape(&b.m.phases[i], &a.m.phases[i], i, i);
	}
	/* and it goes on taking calls in the new numbering exactly as the other */
	call(&a, there[3], fn_id("MPI_Barrier"), 5, 5);
	call(&b, there[3], fn_id("MPI_Barrier"), 5, 5);
	check_model(&a.m);
	assert_same_blob(&a.m, &b.m, "renamed, then one more call");
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
}

static void loop_program_20(struct task *k, const uint32_t *site)
{
	loop_program(k, site, 20);
}

Test(model, remap_is_renumbering)
{
	assert_remap_is_renumbering(loop_program_20);
}

Test(model, remap_is_renumbering_with_phases)
{
	assert_remap_is_renumbering(phased_program);
}

Test(model, remap_merges_sites_it_makes_one)
{
	static const uint32_t here[LSITES] = {0, 1, 2, 3, 4, 5, 6}, merged[LSITES] = {0, 1, 1, 3, 4, 5, 6};
	struct task a, b;

	task_init(&a, NULL);
	task_init(&b, NULL);
	phased_program(&a, here);
	phased_program(&b, merged);
	cr_assert_gt(a.m.phases[1].nstates, b.m.phases[1].nstates);
	cr_assert_eq(pdi_model_remap_sites(&a.m, merged, LSITES), 0);
	check_model(&a.m);
	cr_assert_eq(a.m.nphases, b.m.nphases);
	cr_assert_eq(model_transitions(&a.m), model_transitions(&b.m));
	cr_assert_eq(model_visits(&a.m, false), model_visits(&b.m, false));
	cr_assert_eq(model_visits(&a.m, true), model_visits(&b.m, true));
	for (uint32_t i = 0; i < a.m.nphases; i++) {
		cr_assert_eq(a.m.phases[i].nstates, b.m.phases[i].nstates, "phase %u", i);
		cr_assert_eq(a.m.phases[i].nedges, b.m.phases[i].nedges, "phase %u", i);
		assert_same_shape(&a.m.phases[i], &b.m.phases[i], i, i);
		assert_same_shape(&b.m.phases[i], &a.m.phases[i], i, i);
	}
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
}

Test(model, remap_to_foreign_sites_keeps_states_apart)
{
	static const uint32_t here[LSITES] = {0, 1, 2, 3, 4, 5, 6};
	const uint32_t far = PDI_SITE_MAX - 10;
	uint32_t map[LSITES] = {0, 1, 2, 3, 4, 5, 6};
	struct task a;

	task_init(&a, NULL);
	loop_program(&a, here, 20);
	map[2] = far; /* a site the other numbering lacks */
	cr_assert_eq(pdi_model_remap_sites(&a.m, map, LSITES), 0);
	check_model(&a.m);
	cr_assert_eq(state_visits(&a.m.phases[0], COMM(far)), 20);
	cr_assert_eq(state_visits(&a.m.phases[0], COMM(2)), 0);
	cr_assert_eq(edge_count(&a.m.phases[0], COMP(1, far), COMM(far)), 20);
	cr_assert_eq(edge_count(&a.m.phases[0], COMM(far), COMP(far, 3)), 20);
	cr_assert_eq(pdi_state_prev_site(COMP(far, 3)), far);
	pdi_model_done(&a.m);
}

Test(model, remap_refuses_what_it_cannot_name)
{
	static const uint32_t here[LSITES] = {0, 1, 2, 3, 4, 5, 6};
	uint32_t map[LSITES] = {0, 1, 2, 3, 4, 5, 6};
	struct task a;
	void *before, *after;
	size_t nb, na, bytes;

	task_init(&a, NULL);
	phased_program(&a, here);
	encode_ok(&a.m, &before, &nb);
	bytes = a.m.bytes;
	/* the model names site 6: a map of 6 sites does not cover it */
	cr_assert_eq(pdi_model_remap_sites(&a.m, map, LSITES - 1), -EINVAL);
	map[4] = PDI_SITE_MAX + 1u; /* a computation state could not name it */
	cr_assert_eq(pdi_model_remap_sites(&a.m, map, LSITES), -EINVAL);
	encode_ok(&a.m, &after, &na);
	cr_assert_eq(nb, na);
	cr_assert_eq(memcmp(before, after, nb), 0, "the model is untouched");
	cr_assert_eq(a.m.bytes, bytes);
	check_model(&a.m);
	free(before);
	free(after);
	pdi_model_done(&a.m);
}

Test(model, remap_of_empty_model)
{
	struct pdi_model m;

	pdi_model_init(&m, NULL);
	cr_assert_eq(pdi_model_remap_sites(&m, NULL, 0), 0);
	cr_assert_eq(m.nphases, 0);
	check_model(&m);
	pdi_model_done(&m);
}

/* ---- phases that line up across tasks (issue 9, deliverable 6) ---- */

/* One iteration of a program shaped like a real code: a world Allreduce, then CALLS calls on
 * sites that depend on ITER (the work moves around a 60-site cycle), and a collective of a
 * process grid's row (PDI_CALL_SUBCOMM), which this task may or may not make. */
static void grid_iteration(struct task *k, unsigned iter, unsigned calls, bool in_row)
{
	const uint16_t allreduce = fn_id("MPI_Allreduce"), send = fn_id("MPI_Send"), bcast = fn_id("MPI_Bcast");

	call(k, 1, allreduce, 100, 10);
	for (unsigned i = 0; i < calls; i++)
		call(k, 100 + (iter * 7 + i) % 60, send, 50, 5);
	if (in_row) {
		struct pdi_call c = {.site = 2, .fn = bcast, .t_enter = k->t + 10, .t_exit = k->t + 20,
				     .peer = PDI_NO_PEER, .flags = PDI_CALL_SUBCOMM};

		cr_assert_eq(pdi_model_add_call(&k->m, &c), 0);
		k->t = c.t_exit;
	}
}

Test(model, subcommunicator_collectives_do_not_cut)
{
	struct task a, b;

	/* A makes row collectives, B does not: their phases still start at the same world
	 * collectives, and A's row collectives are not counted */
	task_init(&a, NULL);
	task_init(&b, NULL);
	for (unsigned it = 0; it < 400; it++) {
		grid_iteration(&a, it, 3, true);
		grid_iteration(&b, it, 3, false);
	}
	cr_assert_eq(a.m.ncollectives, 400);
	cr_assert_eq(a.m.nphases, b.m.nphases);
	cr_assert_gt(a.m.nphases, 5);
	for (uint32_t i = 0; i < a.m.nphases; i++)
		cr_assert_eq(a.m.phases[i].first_collective, b.m.phases[i].first_collective, "phase %u", i);
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
}

Test(model, memory_bound_merges_phases_instead_of_dropping)
{
	struct pdi_model_config cfg = pdi_model_config_default, big = pdi_model_config_default;
	struct task a, b;

	/* A's budget holds a few phases of this program, B's all of them */
	cfg.max_bytes = 400 * 1024;
	big.max_bytes = 64 << 20;
	task_init(&a, &cfg);
	task_init(&b, &big);
	for (unsigned it = 0; it < 3000; it++) {
		grid_iteration(&a, it, 6, it % 2);
		grid_iteration(&b, it, 6, it % 2);
	}
	cr_log_info("%u phases of %u collectives in %zu bytes, %llu merged", a.m.nphases, a.m.auto_len, a.m.bytes,
		    (unsigned long long)a.m.merged_phases);
	cr_assert_gt(a.m.merged_phases, 0);
	cr_assert_leq(a.m.bytes, cfg.max_bytes);
	cr_assert_eq(a.m.dropped_states + a.m.dropped_edges + a.m.folded_phase_cuts, 0, "states %llu edges %llu",
		     (unsigned long long)a.m.dropped_states, (unsigned long long)a.m.dropped_edges);
	cr_assert_gt(a.m.auto_len, b.m.auto_len);
	/* phases stay on the grid of their length: B merged to A's length is A, phase by phase */
	cr_assert_eq(pdi_model_coarsen(&b.m, a.m.auto_len), 0);
	cr_assert_eq(a.m.nphases, b.m.nphases);
	for (uint32_t i = 0; i < a.m.nphases; i++) {
		cr_assert_eq(a.m.phases[i].first_collective, b.m.phases[i].first_collective, "phase %u", i);
		cr_assert_eq(a.m.phases[i].nstates, b.m.phases[i].nstates, "phase %u", i);
		cr_assert_eq(a.m.phases[i].t_start, b.m.phases[i].t_start, "phase %u", i);
		if (i > 0)
			cr_assert_eq(a.m.phases[i].first_collective, 96 + (uint64_t)(i - 1) * a.m.auto_len);
	}
	/* a gathered view lines its models up the same way */
	{
		struct pdi_model two[2] = {a.m, b.m};

		cr_assert_eq(pdi_models_line_up(two, 2), 0);
	}
	/* and both take the next calls alike */
	for (unsigned it = 3000; it < 3200; it++) {
		grid_iteration(&a, it, 6, false);
		grid_iteration(&b, it, 6, false);
	}
	cr_assert_eq(a.m.nphases, b.m.nphases);
	cr_assert_eq(a.m.phases[a.m.nphases - 1].first_collective, b.m.phases[b.m.nphases - 1].first_collective);
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
}

/* A and B run ITERS iterations of the grid program; A's probes miss iterations [FROM, FROM + N)
 * (they happen, its clock moves on) and its unobserved log says so with a record of LEVEL for
 * FN (PDI_UNOBSERVED_ALL: every function). */
static void run_with_unseen(struct task *a, struct task *b, unsigned iters, unsigned from, unsigned n, uint16_t fn,
			    uint8_t level)
{
	for (unsigned it = 0; it < iters; it++) {
		uint64_t t0 = b->t;

		grid_iteration(b, it, 3, false);
		if (it >= from && it < from + n) {
			if (it == from)
				cr_assert_eq(pdi_unobserved_add(&a->m.unobserved, fn, level, t0, t0 + 1), 0);
			a->t = b->t;
			if (it + 1 == from + n)
				a->m.unobserved.v[a->m.unobserved.n - 1].t_end = b->t;
			continue;
		}
		grid_iteration(a, it, 3, false);
	}
}

/* A and B lined up as a gathered view lines up its models. */
static void line_up_two(struct task *a, struct task *b)
{
	struct pdi_model two[2] = {a->m, b->m};

	cr_assert_eq(pdi_models_line_up(two, 2), 0);
	a->m = two[0];
	b->m = two[1];
}

static void assert_lined_up(const struct pdi_model *a, const struct pdi_model *b)
{
	cr_assert_eq(a->nphases, b->nphases);
	for (uint32_t i = 0; i < a->nphases; i++)
		cr_assert_eq(a->phases[i].first_collective, b->phases[i].first_collective, "phase %u", i);
}

/* Two sibling tasks' models, checked whole, then freed. */
static void check_and_free_two(struct task *a, struct task *b)
{
	check_model(&a->m);
	check_model(&b->m);
	pdi_model_done(&a->m);
	pdi_model_done(&b->m);
}

Test(model, unseen_collectives_stop_the_cuts_and_siblings_fold_at_the_same_one)
{
	struct task a, b;
	uint64_t calls_b;

	/* A missed 3 world Allreduces in a gap of its probes (the overhead budget moved them): its
	 * count is 3 short from then on, so its later cuts would fall 3 iterations late */
	task_init(&a, NULL);
	task_init(&b, NULL);
	run_with_unseen(&a, &b, 400, 200, 3, PDI_UNOBSERVED_ALL, PDI_UNOBS_GAP);
	cr_assert_eq(a.m.auto_next_cut, PDI_MODEL_NO_CUT, "A cuts no more");
	cr_assert_neq(b.m.auto_next_cut, PDI_MODEL_NO_CUT);
	cr_assert_gt(b.m.nphases, a.m.nphases);
	/* A's last phase starts at the last cut before the gap */
	cr_assert_eq(pdi_model_cut_horizon(&a.m), 96 + 3 * 32);
	cr_assert_eq(pdi_model_cut_horizon(&b.m), UINT64_MAX);
	calls_b = model_transitions(&b.m);
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	cr_assert_eq(a.m.nphases, 5);
	cr_assert_eq(model_transitions(&b.m), calls_b, "folded, not dropped");
	check_model(&a.m);
	check_model(&b.m);
	/* B cuts no more either, and its later calls go to the last phase */
	cr_assert_eq(b.m.auto_next_cut, PDI_MODEL_NO_CUT);
	for (unsigned it = 400; it < 500; it++) {
		grid_iteration(&a, it, 3, false);
		grid_iteration(&b, it, 3, false);
	}
	assert_lined_up(&a.m, &b.m);
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
}

Test(model, what_may_hide_a_collective_stops_the_cuts)
{
	static const struct {
		const char *fn;
		uint8_t level;
		bool stops;
	} cases[] = {
		{"MPI_Allreduce", PDI_UNOBS_SAMPLED, true}, {"MPI_Allreduce", PDI_UNOBS_DETACHED, true},
		{NULL, PDI_UNOBS_LOST, true},               {NULL, PDI_UNOBS_GAP, true},
		{"MPI_Allreduce", PDI_UNOBS_ENTRY_ONLY, false}, /* every call still seen */
		{"MPI_Send", PDI_UNOBS_DETACHED, false},       /* not a collective */
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct task a, b;

		task_init(&a, NULL);
		task_init(&b, NULL);
		run_with_unseen(&a, &b, 300, 150, 1, cases[i].fn ? fn_id(cases[i].fn) : PDI_UNOBSERVED_ALL,
				cases[i].level);
		cr_assert_eq(a.m.auto_next_cut == PDI_MODEL_NO_CUT, cases[i].stops, "case %u", i);
		pdi_model_done(&a.m);
		pdi_model_done(&b.m);
	}
}

Test(model, a_loss_noticed_late_folds_the_cuts_made_since)
{
	struct task a;
	uint32_t before = 0;
	uint64_t t_lost;

	/* the daemon counts lost events when it next looks: the record starts in the past */
	task_init(&a, NULL);
	for (unsigned it = 0; it < 250; it++)
		grid_iteration(&a, it, 3, false);
	t_lost = a.m.phases[a.m.nphases - 1].t_start - 1;
	before = a.m.nphases;
	for (unsigned it = 250; it < 300; it++)
		grid_iteration(&a, it, 3, false);
	cr_assert_gt(a.m.nphases, before);
	cr_assert_eq(pdi_unobserved_add(&a.m.unobserved, PDI_UNOBSERVED_ALL, PDI_UNOBS_LOST, t_lost, a.t), 0);
	/* as good as stopped before its next call, and stopped by it */
	cr_assert_eq(pdi_model_cut_horizon(&a.m), a.m.phases[before - 2].first_collective);
	grid_iteration(&a, 300, 3, false);
	cr_assert_eq(a.m.nphases, before - 1);
	cr_assert_eq(a.m.auto_next_cut, PDI_MODEL_NO_CUT);
	cr_assert_eq(pdi_model_cut_horizon(&a.m), a.m.phases[before - 2].first_collective);
	/* a record starting earlier still, once stopped (a gap is marked when the probes are back):
	 * the cuts made since fold too */
	cr_assert_eq(pdi_unobserved_add(&a.m.unobserved, PDI_UNOBSERVED_ALL, PDI_UNOBS_GAP, a.m.phases[2].t_start, a.t),
		     0);
	grid_iteration(&a, 301, 3, false);
	cr_assert_eq(a.m.nphases, 2);
	cr_assert_eq(pdi_model_cut_horizon(&a.m), 96);
	check_model(&a.m);
	pdi_model_done(&a.m);
}

Test(model, collectives_unseen_before_the_period_leave_one_phase)
{
	struct task a, b;

	/* the loop's period is found on the first 96 collectives: one missing there, and A could
	 * find another period than B; it cuts none, and B folds into one phase too */
	task_init(&a, NULL);
	task_init(&b, NULL);
	run_with_unseen(&a, &b, 300, 50, 1, fn_id("MPI_Allreduce"), PDI_UNOBS_SAMPLED);
	cr_assert_eq(a.m.nphases, 1);
	cr_assert_eq(a.m.auto_len, 0);
	cr_assert_eq(pdi_model_cut_horizon(&a.m), 0);
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	cr_assert_eq(b.m.nphases, 1);
	check_model(&b.m);
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
}

Test(model, coarsen_refuses_what_it_cannot_line_up)
{
	struct task k;

	task_init(&k, NULL);
	cr_assert_eq(pdi_model_coarsen(&k.m, 64), -EINVAL, "no automatic phases yet");
	for (unsigned it = 0; it < 300; it++)
		grid_iteration(&k, it, 1, false);
	cr_assert_eq(k.m.auto_len, 32);
	cr_assert_eq(pdi_model_coarsen(&k.m, 48), -EINVAL, "not a power of two times 32");
	cr_assert_eq(pdi_model_coarsen(&k.m, 32), 0);
	cr_assert_eq(pdi_model_coarsen(&k.m, 128), 0);
	cr_assert_eq(k.m.auto_len, 128);
	pdi_model_done(&k.m);
}

Test(model, phases_carry_the_wall_clock)
{
	struct task k;

	task_init(&k, NULL);
	k.m.clock_offset_ns = 1700000000000000000ll;
	call(&k, 1, fn_id("MPI_Barrier"), 10, 10);
	cr_assert_eq(pdi_phase_wall_ns(&k.m, k.m.phases[0].t_start), 1700000000000000000ll + 1000000010);
	pdi_model_done(&k.m);
}

/* A reading of the counts at T ns with CPU and WAIT so far. */
static void usage_at(struct task *k, uint64_t cpu, uint64_t wait)
{
	pdi_model_usage_add(&k->m, &(struct pdi_usage){.at_ns = k->t, .cpu_ns = cpu, .wait_ns = wait});
}

Test(model, counts_are_interpolated_between_readings)
{
	const struct pdi_usage r[] = {{100, 10, 20, 1000}, {200, 60, 20, 1100}, {300, 60, 120, 0}};
	struct pdi_usage u;

	u = pdi_usage_at(r, 3, 150);
	cr_assert(u.at_ns == 150 && u.cpu_ns == 35 && u.wait_ns == 20, "%lu %lu %lu", u.at_ns, u.cpu_ns, u.wait_ns);
	cr_assert_eq(u.group_ns, 1050, "the group's CPU too");
	cr_assert_eq(pdi_usage_at(r, 3, 250).group_ns, 0, "a reading without the group's CPU: none between");
	u = pdi_usage_at(r, 3, 275);
	cr_assert(u.at_ns == 275 && u.cpu_ns == 60 && u.wait_ns == 95);
	u = pdi_usage_at(r, 3, 200);
	cr_assert(u.at_ns == 200 && u.cpu_ns == 60 && u.wait_ns == 20, "a reading's own time: the reading");
	u = pdi_usage_at(r, 3, 50);
	cr_assert(u.at_ns == 100 && u.cpu_ns == 10, "before them all: the first, at its own time");
	u = pdi_usage_at(r, 3, 400);
	cr_assert(u.at_ns == 300 && u.wait_ns == 120, "after them all: the last");
	u = pdi_usage_at(r, 1, 150);
	cr_assert(u.at_ns == 100, "one reading");
}

Test(model, recent_readings_are_bounded)
{
	struct pdi_usage_recent r = {0};

	for (uint64_t i = 1; i <= PDI_USAGE_RECENT + 10; i++)
		pdi_usage_recent_add(&r, &(struct pdi_usage){.at_ns = i, .cpu_ns = i});
	cr_assert_eq(r.n, PDI_USAGE_RECENT);
	cr_assert_eq(r.v[0].at_ns, 11, "the oldest went");
	cr_assert_eq(r.v[PDI_USAGE_RECENT - 1].at_ns, PDI_USAGE_RECENT + 10);
}

Test(model, phases_share_the_kernels_counts)
{
	const uint16_t pcontrol = fn_id("MPI_Pcontrol"), send = fn_id("MPI_Send");
	struct pdi_phase_usage u;
	struct task k;

	task_init(&k, NULL);
	usage_at(&k, 1, 0);
	cr_assert_eq(k.m.usage_now.at_ns, 0, "no phase, nothing to read for");
	call(&k, 1, send, 0, 10);
	usage_at(&k, 100, 0);
	cr_assert_eq(k.m.phases[0].usage.at_ns, k.t, "no reading before it: the first after it");
	cr_assert_not(pdi_model_phase_usage(&k.m, 0, &u), "one reading spans no time");
	/* phase 0 runs 1 s: 0.5 s on a CPU, 0.2 s waiting for one, 0.3 s neither */
	k.t += 1000000000;
	call(&k, 2, pcontrol, 0, 10);
	cr_assert_eq(k.m.phases[1].usage.at_ns, 0, "no reading after its first call yet");
	usage_at(&k, 100 + 500000000, 200000000);
	cr_assert_eq(k.m.phases[1].usage.at_ns, k.m.phases[1].t_start, "its counts at its first call");
	cr_assert(pdi_model_phase_usage(&k.m, 0, &u));
	cr_assert_eq(u.wall_ns, 1000000000);
	cr_assert_eq(u.cpu_ns, 499999995, "%lu", u.cpu_ns); /* 10 ns of the 1 s between readings fell in phase 1 */
	cr_assert_eq(u.held_ns, 300000007, "%lu", u.held_ns);
	/* the current phase ends at the latest reading */
	k.t += 2000000000;
	usage_at(&k, 100 + 500000000 + 2000000000ull, 200000000);
	cr_assert(pdi_model_phase_usage(&k.m, 1, &u));
	cr_assert_eq(u.wall_ns, 2000000010);
	cr_assert_eq(k.m.phases[1].usage.at_ns, k.m.phases[1].t_start, "a phase keeps its counts");
	/* readings that go back are ignored */
	usage_at(&k, 5, 5);
	cr_assert_eq(k.m.usage_now.cpu_ns, 100 + 500000000 + 2000000000ull);
	cr_assert_not(pdi_model_phase_usage(&k.m, 2, &u), "no such phase");
	/* a phase begun after the latest reading: neither it nor the one before has a share until the
	 * next reading */
	call(&k, 2, pcontrol, 10, 10);
	cr_assert_eq(k.m.nphases, 3);
	cr_assert_not(pdi_model_phase_usage(&k.m, 1, &u), "its end is phase 2's counts, not known yet");
	k.t += 10;
	usage_at(&k, 3000000000ull, 200000000);
	cr_assert(pdi_model_phase_usage(&k.m, 1, &u));
	cr_assert(pdi_model_phase_usage(&k.m, 2, &u));
	pdi_model_done(&k.m);
}

/* ---- each phase's counts over its own time (issue 9, usage13) ---- */

#define READ_EVERY_NS 50000000ull  /* the daemon's timer (usage_interval_ms) */
#define BATCH_NS 100000000ull      /* calls are taken in a ring-buffer batch late (drain_interval_ms) */
#define SHARE 0.4                  /* the task's share of the CPU, always ready to run */
#define HOG_SHARE 0.04             /* ... once a process shares its CPU, from HOG_NS on */
#define HOG_NS 1937000000ull       /* 0.1 s before phase 1 ends */

/* The phases' first calls (ns): phase 1 ends 0.1 s after the hog came; phases 3 and 4 (49 ms and
 * 50 ms) begin in one batch, as meep's short phases do. */
static const uint64_t cut_ns[] = {1013000000ull, 2037000000ull, 3012000000ull, 3061000000ull, 3111000000ull,
				  4022000000ull};
#define NCUT (sizeof(cut_ns) / sizeof(cut_ns[0]))

/* The kernel's counts at T of the task that got SHARE of the CPU, HOG_SHARE from HOG_NS on. */
static struct pdi_usage hog_counts(uint64_t t)
{
	double cpu = SHARE * (double)(t < HOG_NS ? t : HOG_NS);

	if (t > HOG_NS)
		cpu += HOG_SHARE * (double)(t - HOG_NS);
	return (struct pdi_usage){.at_ns = t, .cpu_ns = (uint64_t)cpu, .wait_ns = t - (uint64_t)cpu};
}

/* A program of phases cut at CUT_NS with a call every 10 ms from 0.5 s on, taken in BATCH_NS late,
 * the counts read every READ_EVERY_NS in between, as pdimond's loop does: the ticks before a batch
 * are read first (those before its first call are not kept: no phase to place). */
static void hog_program(struct task *k)
{
	const uint16_t pcontrol = fn_id("MPI_Pcontrol"), barrier = fn_id("MPI_Barrier");
	uint64_t tick = READ_EVERY_NS * 10, end = cut_ns[NCUT - 1] + 500000000ull;
	size_t next = 0;

	task_init(k, NULL);
	for (uint64_t t = 500000000ull; t < end; t += 10000000ull) {
		bool cut = next < NCUT && t + 10000000ull > cut_ns[next];
		uint64_t at = cut ? cut_ns[next++] : t;
		uint64_t taken = (at / BATCH_NS + 1) * BATCH_NS + BATCH_NS;

		for (; tick <= taken; tick += READ_EVERY_NS) {
			struct pdi_usage u = hog_counts(tick);

			pdi_model_usage_add(&k->m, &u);
		}
		k->t = at;
		call(k, cut ? 2 : 1, cut ? pcontrol : barrier, 0, 1000);
		if (cut && at != t) { /* and the loop's call of this 10 ms */
			k->t = t > at ? t : at + 1000;
			call(k, 1, barrier, 0, 1000);
		}
	}
}

/* Every phase's share is over its own time, from its first call to the next phase's: the 0.1 s
 * of the hog at the end of phase 1 is phase 1's (before, its counts were read as pdimond took its
 * first call in, a batch late, and the next phase's the same: a hog in a phase's last 20-150 ms
 * showed first in the next one, which was named: five of the eight misses of seeds 400-501); and
 * phases begun in one batch each have a share (before, the first had none). */
Test(model, a_phase_gets_the_counts_of_its_own_time)
{
	struct pdi_phase_usage u;
	struct task k;

	hog_program(&k);
	cr_assert_eq(k.m.nphases, NCUT + 1, "%u phases", k.m.nphases);
	for (uint32_t p = 1; p < NCUT; p++) {
		const struct pdi_phase *ph = &k.m.phases[p];
		struct pdi_usage a = hog_counts(cut_ns[p - 1]), b = hog_counts(cut_ns[p]);

		cr_assert_eq(ph->t_start, cut_ns[p - 1]);
		cr_assert_eq(ph->usage.at_ns, ph->t_start, "phase %u: counts at its first call", p);
		cr_assert(pdi_model_phase_usage(&k.m, p, &u), "phase %u has a share", p);
		cr_assert_eq(u.wall_ns, cut_ns[p] - cut_ns[p - 1], "phase %u: %lu ns", p, u.wall_ns);
		/* linear between readings 50 ms apart, exact where the share did not change between them */
		cr_assert_leq(labs((long)u.cpu_ns - (long)(b.cpu_ns - a.cpu_ns)), 2, "phase %u: cpu %lu for %lu", p,
			      u.cpu_ns, b.cpu_ns - a.cpu_ns);
	}
	/* phase 1: the hog's last 0.1 s of 1.024 s in it, its share under SHARE by that */
	cr_assert(pdi_model_phase_usage(&k.m, 1, &u));
	cr_assert_lt((double)u.cpu_ns / (double)u.wall_ns, SHARE - 0.03);
	pdi_model_done(&k.m);
}

Test(model, merged_phases_keep_the_first_reading)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	const uint16_t barrier = fn_id("MPI_Barrier");
	struct pdi_phase_usage u;
	uint64_t cpu = 0;
	struct task k;

	cfg.max_phases = 5;
	cfg.auto_phase_min_collectives = 1;
	task_init(&k, &cfg);
	/* one collective per phase after the period sample; read after every call, the task on a CPU
	 * 60% of the time */
	for (unsigned i = 0; i < PDI_MODEL_PERIOD_SAMPLE + 40; i++) {
		call(&k, 1, barrier, 1000000, 1000000);
		cpu += 1200000;
		usage_at(&k, cpu, 0);
	}
	cr_assert_gt(k.m.merged_phases, 0, "phases were merged");
	for (uint32_t p = 0; p + 1 < k.m.nphases; p++) {
		cr_assert(pdi_model_phase_usage(&k.m, p, &u), "phase %u", p);
		cr_assert_eq(u.wall_ns, k.m.phases[p + 1].usage.at_ns - k.m.phases[p].usage.at_ns);
		cr_assert_leq(labs((long)(u.cpu_ns * 10) - (long)(u.wall_ns * 6)), 10, "phase %u: 60%% on a CPU", p);
	}
	pdi_model_done(&k.m);
}

/* ---- phases on the wall clock (codes without a loop of step-wide collectives) ---- */

#define MS 1000000ull

/* One step of a grid code: sends to NSEND neighbours and a row broadcast (a collective on a
 * communicator of its own), COMP_MS of computation in all. */
static void stencil_step(struct task *k, unsigned nsend, uint64_t comp_ms)
{
	const uint16_t isend = fn_id("MPI_Isend"), waitall = fn_id("MPI_Waitall"), bcast = fn_id("MPI_Bcast");
	struct pdi_call c;

	for (unsigned i = 0; i < nsend; i++)
		call_full(k, 10 + i, isend, comp_ms * MS / (nsend + 1), 1000, (int32_t)i, 0x100 + i);
	call(k, 20, waitall, comp_ms * MS / (nsend + 1), 20000);
	c = (struct pdi_call){.site = 21, .fn = bcast, .t_enter = k->t + 1000, .t_exit = k->t + 2000,
			      .peer = PDI_NO_PEER, .flags = PDI_CALL_SUBCOMM};
	cr_assert_eq(pdi_model_add_call(&k->m, &c), 0);
	k->t = c.t_exit;
}

static void slot_tasks_init(struct task *a, struct task *b)
{
	struct pdi_model_config cfg = pdi_model_config_default;

	cfg.auto_slots_from_ns = 3000000000ll; /* 2 s into the run (tasks start at 1 s) */
	task_init(a, &cfg);
	task_init(b, &cfg);
}

/* Each task's phase I starts in slot first_collective of auto_len ms. */
static void assert_in_slots(const struct pdi_model *m)
{
	for (uint32_t i = 1; i < m->nphases; i++)
		cr_assert_eq(m->phases[i].t_start / (m->auto_len * MS), m->phases[i].first_collective, "phase %u", i);
}

Test(model, grid_codes_cut_on_the_wall_clock)
{
	struct task a, b;

	/* A and B talk to different numbers of neighbours, at different paces, and make no
	 * collective on the whole step: by 3 s they turn to the wall clock */
	slot_tasks_init(&a, &b);
	while (a.t < 21000000000ull)
		stencil_step(&a, 4, 7);
	while (b.t < 21000000000ull)
		stencil_step(&b, 2, 11);
	cr_assert(a.m.slots && b.m.slots);
	cr_assert_eq(a.m.nphases, b.m.nphases, "every slot has calls of both");
	cr_assert_gt(a.m.nphases, 10);
	cr_assert_leq(a.m.nphases, 65);
	cr_assert_eq(a.m.auto_len, 500, "72 slots of 250 ms merged pairwise");
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	assert_in_slots(&a.m);
	assert_in_slots(&b.m);
	cr_assert_geq(a.m.phases[1].t_start, 3000000000ull, "set-up before the instant is phase 0");
	check_and_free_two(&a, &b);
}

Test(model, a_stopped_task_holds_one_wall_clock_phase_on_every_task)
{
	struct task a, b;
	uint64_t calls_a, stop = 8100000000ull;
	uint32_t p;

	/* B is stopped for 3 s at 8.1 s: it makes no call in six slots, A goes on polling; once
	 * lined up, the phase that holds the stop spans it on both */
	slot_tasks_init(&a, &b);
	while (a.t < 15000000000ull)
		stencil_step(&a, 3, 5);
	while (b.t < 15000000000ull) {
		stencil_step(&b, 3, 5);
		if (b.t >= stop && b.t < stop + 20 * MS)
			b.t += 3000 * MS;
	}
	calls_a = model_transitions(&a.m);
	cr_assert_gt(a.m.nphases, b.m.nphases);
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	cr_assert_eq(model_transitions(&a.m), calls_a, "folded, not dropped");
	for (p = 0; p + 1 < a.m.nphases && a.m.phases[p + 1].t_start <= stop; p++)
		;
	/* the slots B made no call in are gone from A too (A computes on, so it cut them) */
	cr_assert_lt(b.m.phases[p].t_start, stop);
	cr_assert_geq(a.m.phases[p].t_end, stop + 2750 * MS, "A's phase %u spans the stop's slots", p);
	cr_assert_geq(b.m.phases[p].t_end, stop + 3000 * MS, "B's phase %u spans the stop", p);
	/* later slots are cut and kept again on both */
	cr_assert_gt(a.m.phases[a.m.nphases - 1].t_start, stop + 4000 * MS);
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
}

Test(model, halving_on_the_wall_clock_keeps_the_grid)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task a, b;

	/* A's phase table is smaller: it merges its slots pairwise long before B; lined up, B
	 * merges as far and both hold the same slots */
	cfg.auto_slots_from_ns = 3000000000ll;
	cfg.max_phases = 9;
	task_init(&a, &cfg);
	task_init(&b, NULL);
	b.m.cfg.auto_slots_from_ns = cfg.auto_slots_from_ns;
	while (a.t < 9000000000ull)
		stencil_step(&a, 2, 3);
	while (b.t < 9000000000ull)
		stencil_step(&b, 2, 3);
	cr_assert_gt(a.m.auto_len, b.m.auto_len);
	line_up_two(&a, &b);
	cr_assert_eq(a.m.auto_len, b.m.auto_len);
	assert_lined_up(&a.m, &b.m);
	assert_in_slots(&a.m);
	assert_in_slots(&b.m);
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
}

Test(model, a_world_loop_keeps_its_phases_on_collectives)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k;

	cfg.auto_slots_from_ns = 3000000000ll;
	task_init(&k, &cfg);
	barrier_loop(&k, 400, NULL); /* 96 Barriers long before 3 s */
	while (k.t < 4000000000ull)
		barrier_loop(&k, 100, NULL);
	cr_assert(!k.m.slots);
	cr_assert_gt(k.m.nphases, 3);
	cr_assert_eq(k.m.phases[1].first_collective, 96);
	pdi_model_done(&k.m);
}

/* One step of a program in lockstep: COMP_MS of computation, then a world Allreduce and a send;
 * UNSEEN: the Allreduce happens but the probes miss it. */
static void world_step(struct task *k, uint64_t comp_ms, bool unseen)
{
	if (unseen)
		k->t += comp_ms * MS + 1000;
	else
		call(k, 1, fn_id("MPI_Allreduce"), comp_ms * MS, 1000);
	call_full(k, 2, fn_id("MPI_Send"), 1000, 500, 1, 0);
}

/* A and B step in lockstep, every collective seen, until A's clock passes END. */
static void world_steps_until(struct task *a, struct task *b, uint64_t end)
{
	while (a->t < end) {
		world_step(a, 5, false);
		world_step(b, 5, false);
		b->t = a->t;
	}
}

/* A and B as meep's ranks: a set-up of 44 world Allreduces until 2.32 s, then a time loop that
 * talks to different numbers of neighbours at different paces, until END; their step cuts early
 * phases from 1.5 s (0.5 s into the run) and decides at 5 s. */
static void early_tasks_run(struct task *a, struct task *b, uint64_t end)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	const uint16_t allreduce = fn_id("MPI_Allreduce");

	cfg.auto_slots_early_ns = 1500000000ll;
	cfg.auto_slots_from_ns = 5000000000ll;
	task_init(a, &cfg);
	task_init(b, &cfg);
	for (unsigned i = 0; i < 44; i++) {
		call(a, 1, allreduce, 30 * MS, 1000);
		call(b, 1, allreduce, 30 * MS, 1000);
	}
	while (a->t < end)
		stencil_step(a, 4, 7);
	while (b->t < end)
		stencil_step(b, 2, 11);
}

Test(model, a_code_without_a_world_loop_cuts_phases_before_the_instant)
{
	struct task a, b;

	/* a run that ends at 4.5 s, before its step decides at 5 s, was one set-up phase: now it has
	 * the slots from its set-up's last collective on, lined up, the set-up before them phase 0 */
	early_tasks_run(&a, &b, 4500000000ull);
	cr_assert(a.m.early && b.m.early);
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	cr_assert_geq(a.m.nphases, 8, "%u phases", a.m.nphases);
	assert_in_slots(&a.m);
	assert_in_slots(&b.m);
	cr_assert_geq(a.m.phases[1].t_start, 2500000000ull, "the first slot past the set-up");
	cr_assert_lt(a.m.phases[1].t_start, 2750000000ull);
	cr_assert_eq(state_visits(&a.m.phases[0], pdi_state_comm(1)), 44, "the set-up's collectives in phase 0");
	cr_assert_eq(state_visits(&b.m.phases[0], pdi_state_comm(1)), 44);
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
	/* past the instant the step decides for the wall clock: the early phases stay, cutting goes on */
	early_tasks_run(&a, &b, 8000000000ull);
	cr_assert(a.m.slots && !a.m.early && b.m.slots && !b.m.early);
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	assert_in_slots(&a.m);
	cr_assert_lt(a.m.phases[1].t_start, 2750000000ull, "the early phases are kept");
	cr_assert_gt(a.m.phases[a.m.nphases - 1].t_start, 7500000000ull, "and slots cut to the end");
	check_and_free_two(&a, &b);
}

Test(model, early_phases_fold_into_the_set_up_when_the_world_loop_shows)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task k, plain;

	/* a world loop slow to start (a loaded machine): its 96th collective comes at about 3.9 s,
	 * after the early instant, before the decision; the model is then the one a step without
	 * early phases makes */
	cfg.auto_slots_from_ns = 5000000000ll;
	task_init(&plain, &cfg);
	cfg.auto_slots_early_ns = 1500000000ll;
	task_init(&k, &cfg);
	for (unsigned i = 0; i < 96; i++) {
		world_step(&k, 30, false);
		world_step(&plain, 30, false);
		if (i == 50)
			cr_assert(k.m.early && k.m.nphases <= 2, "early slots fold at each collective of the sample");
	}
	while (k.t < 9000000000ull) {
		world_step(&k, 30, false);
		world_step(&plain, 30, false);
	}
	cr_assert(!k.m.slots && !k.m.early);
	cr_assert_eq(k.m.nphases, plain.m.nphases);
	cr_assert_eq(k.m.auto_len, plain.m.auto_len);
	for (uint32_t p = 0; p < k.m.nphases; p++) {
		cr_assert_eq(k.m.phases[p].first_collective, plain.m.phases[p].first_collective, "phase %u", p);
		cr_assert_eq(phase_transitions(&k.m.phases[p]), phase_transitions(&plain.m.phases[p]), "phase %u", p);
	}
	check_and_free_two(&k, &plain);
}

Test(model, an_early_sibling_does_not_turn_a_task_on_collectives)
{
	struct pdi_model_config cfg = pdi_model_config_default;
	struct task a, b;

	/* A has made its 96 world collectives and cuts on them; B is a few short of them (they
	 * straddle a snapshot), still cutting early slots: lined up, A stays on collectives */
	cfg.auto_slots_early_ns = 1500000000ll;
	cfg.auto_slots_from_ns = 5000000000ll;
	task_init(&a, &cfg);
	task_init(&b, &cfg);
	for (unsigned i = 0; i < 100; i++)
		world_step(&a, 30, false);
	for (unsigned i = 0; i < 94; i++)
		world_step(&b, 30, false);
	cr_assert(!a.m.slots && a.m.auto_len);
	cr_assert(b.m.early);
	line_up_two(&a, &b);
	cr_assert(!a.m.slots, "A's period is the step's");
	for (unsigned i = 0; i < 6; i++)
		world_step(&b, 30, false);
	cr_assert(!b.m.slots && !b.m.early);
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	check_and_free_two(&a, &b);
}

Test(model, tasks_that_chose_differently_line_up_on_the_wall_clock)
{
	struct task a, b;
	uint32_t cut_a;

	/* A saw 96 world collectives before the instant, B (whose count a collective straddled,
	 * say) did not: lined up, A turns to the wall clock as B did, its phases keep the slots they
	 * started in, and both go on cutting the same slots */
	slot_tasks_init(&a, &b);
	while (a.t < 9000000000ull)
		world_step(&a, 3, false);
	while (b.t < 9000000000ull)
		stencil_step(&b, 2, 3);
	cr_assert(!a.m.slots && a.m.nphases > 1);
	cr_assert(b.m.slots && b.m.nphases > 1);
	line_up_two(&a, &b);
	cr_assert(a.m.slots);
	assert_in_slots(&a.m);
	cut_a = a.m.nphases;
	while (a.t < 12100000000ull)
		world_step(&a, 3, false);
	while (b.t < 12100000000ull)
		stencil_step(&b, 2, 3);
	cr_assert_gt(a.m.nphases, cut_a, "A cuts on");
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	assert_in_slots(&a.m);
	cr_assert_gt(a.m.phases[a.m.nphases - 1].t_start, 11000000000ull, "both cut to the end");
	check_and_free_two(&a, &b);
}

Test(model, a_count_in_doubt_turns_to_the_wall_clock_and_siblings_follow)
{
	const uint16_t allreduce = fn_id("MPI_Allreduce");
	const uint64_t doubt = 2500000000ull, end = 12000000000ull;
	struct task a, b;
	uint64_t calls_a, calls_b;
	uint32_t before = 0;

	/* A and B cut on their world Allreduces (96 of them by 1.5 s); at 2.5 s the overhead budget
	 * samples the Allreduce on both, as it does for a step's tasks on a node: from then on A misses
	 * every third call, B every fifth, and their counts go astray. Neither may cut on them, but
	 * their phases must go on, lined up, rather than fold into one from 2.5 s to the end */
	slot_tasks_init(&a, &b);
	for (unsigned it = 0; a.t < end; it++) {
		if (a.t >= doubt && !a.m.unobserved.n) {
			cr_assert_eq(pdi_unobserved_begin(&a.m.unobserved, allreduce, PDI_UNOBS_SAMPLED, 1, 200, 2000, a.t), 0);
			cr_assert_eq(pdi_unobserved_begin(&b.m.unobserved, allreduce, PDI_UNOBS_SAMPLED, 1, 200, 2000, a.t), 0);
			before = a.m.nphases;
		}
		world_step(&a, 5, a.m.unobserved.n && it % 3 == 0);
		world_step(&b, 5, b.m.unobserved.n && it % 5 == 0);
		b.t = a.t; /* in lockstep */
	}
	cr_assert_gt(before, 3, "phases on the collectives before the doubt");
	calls_a = model_transitions(&a.m);
	calls_b = model_transitions(&b.m);
	line_up_two(&a, &b);
	cr_assert(a.m.slots && b.m.slots);
	assert_lined_up(&a.m, &b.m);
	cr_assert_eq(model_transitions(&a.m), calls_a, "folded, not dropped");
	cr_assert_eq(model_transitions(&b.m), calls_b, "folded, not dropped");
	cr_assert_gt(a.m.nphases, before + 10, "phases go on after the doubt");
	cr_assert_lt(a.m.phases[2].t_start, doubt, "the phases cut on collectives before it stay");
	cr_assert_gt(a.m.phases[a.m.nphases - 1].t_start, end - 1000 * MS, "cut to the end");
	for (uint32_t i = 1; i < a.m.nphases; i++) {
		uint64_t s = a.m.phases[i].t_start;

		/* none starts in the stretch between the doubt and the step's wall-clock instant */
		cr_assert(s < doubt || s >= 3000000000ull, "phase %u starts at %llu", i, (unsigned long long)s);
		cr_assert_eq(s / (a.m.auto_len * MS), a.m.phases[i].first_collective, "phase %u", i);
	}
	cr_assert_eq(pdi_model_cut_horizon(&a.m), UINT64_MAX, "slots need no count vouched for");
	check_and_free_two(&a, &b);
}

Test(model, a_loss_on_one_task_turns_its_siblings_at_line_up)
{
	struct task a, b;

	/* A's ring buffer was full for a moment (a loss of A alone): A turns at its next call, B, which
	 * saw everything, when the step is lined up; from then on both cut the same slots */
	slot_tasks_init(&a, &b);
	world_steps_until(&a, &b, 4000000000ull);
	cr_assert_eq(pdi_unobserved_add(&a.m.unobserved, PDI_UNOBSERVED_ALL, PDI_UNOBS_LOST, a.t - 10 * MS, a.t), 0);
	world_steps_until(&a, &b, a.t + 1);
	cr_assert(a.m.slots && !b.m.slots);
	line_up_two(&a, &b);
	cr_assert(b.m.slots);
	assert_lined_up(&a.m, &b.m);
	world_steps_until(&a, &b, 8000000000ull);
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	cr_assert_gt(a.m.phases[a.m.nphases - 1].t_start, 7000000000ull);
	check_and_free_two(&a, &b);
}

Test(model, tasks_that_ended_in_different_slots_line_up_to_the_end)
{
	struct task a, b;

	/* B computes on for 400 ms after A's last step: its MPI_Finalize falls in a later slot than
	 * A's, where A will never cut; lined up after both finalized, they hold the same phases */
	slot_tasks_init(&a, &b);
	while (a.t < 9010000000ull)
		stencil_step(&a, 3, 5);
	while (b.t < 9010000000ull)
		stencil_step(&b, 3, 5);
	call(&a, 30, fn_id("MPI_Finalize"), MS, MS);
	call(&b, 30, fn_id("MPI_Finalize"), 400 * MS, MS);
	cr_assert_eq(b.m.nphases, a.m.nphases + 1);
	line_up_two(&a, &b);
	assert_lined_up(&a.m, &b.m);
	cr_assert_geq(b.m.phases[b.m.nphases - 1].t_end, 9400000000ull, "B's last phase holds its last call");
	check_model(&b.m);
	pdi_model_done(&a.m);
	pdi_model_done(&b.m);
}

/* How long the probes were blind within a window: the union of the blind marks there, clipped
 * to it; entry-only and well-seen sampling are not blind, a sampling at a rate not measured is,
 * and a mark still open lasts to the window's end. */
Test(model, blind_time_is_the_union_of_blind_marks_in_the_window)
{
	struct pdi_unobserved_log l = {0};
	uint16_t send = (uint16_t)pdi_mpi_func_find("MPI_Send"), recv = (uint16_t)pdi_mpi_func_find("MPI_Recv"),
		 bcast = (uint16_t)pdi_mpi_func_find("MPI_Bcast"), test = (uint16_t)pdi_mpi_func_find("MPI_Test");

	cr_assert_eq(pdi_unobserved_blind_ns(&l, 0, 100), 0);
	/* not blind: entry only, and sampled 1/2 at 1000 calls a second (500 seen a second) */
	cr_assert_eq(pdi_unobserved_add(&l, test, PDI_UNOBS_ENTRY_ONLY, 0, 1000), 0);
	cr_assert_eq(pdi_unobserved_begin(&l, bcast, PDI_UNOBS_SAMPLED, 1, 1000, 100, 0), 0);
	pdi_unobserved_end(&l, bcast, 1000);
	cr_assert_eq(pdi_unobserved_blind_ns(&l, 0, 1000), 0);
	cr_assert(!pdi_unobserved_blind_through(&l, 0, 1000));
	/* blind: detached 100-300, sampled at a rate not measured 200-400 (they overlap), a gap 600-700 */
	cr_assert_eq(pdi_unobserved_begin(&l, send, PDI_UNOBS_DETACHED, 0, 5000, 100, 100), 0);
	pdi_unobserved_end(&l, send, 300);
	cr_assert_eq(pdi_unobserved_begin(&l, recv, PDI_UNOBS_SAMPLED, 3, 0, 100, 200), 0);
	pdi_unobserved_end(&l, recv, 400);
	cr_assert_eq(pdi_unobserved_add(&l, PDI_UNOBSERVED_ALL, PDI_UNOBS_GAP, 600, 700), 0);
	cr_expect_eq(pdi_unobserved_blind_ns(&l, 0, 1000), 400);
	cr_expect_eq(pdi_unobserved_blind_ns(&l, 250, 650), 200, "clipped: 250-400 and 600-650");
	cr_expect_eq(pdi_unobserved_blind_ns(&l, 450, 550), 0);
	cr_expect(pdi_unobserved_blind_through(&l, 250, 650));
	/* still open: to the window's end */
	cr_assert_eq(pdi_unobserved_begin(&l, send, PDI_UNOBS_DETACHED, 0, 5000, 100, 900), 0);
	cr_expect_eq(pdi_unobserved_blind_ns(&l, 800, 2000), 1100);
	cr_expect_eq(pdi_unobserved_blind_ns(&l, 500, 500), 0, "an empty window");
	pdi_unobserved_free(&l);
}

/* A task the hang judge found still and polling at look after look (HPCC's waiters, in MPI_Test
 * and MPI_Testany by turns) has polled since the first of those looks; a look elsewhere, a gap
 * between looks or a last look long ago ends the chain. */
Test(model, polling_since_the_first_of_unbroken_polling_looks)
{
	struct pdi_stack_seen_log l = {0};
	uint16_t test = (uint16_t)pdi_mpi_func_find("MPI_Test"), testany = (uint16_t)pdi_mpi_func_find("MPI_Testany"),
		 allreduce = (uint16_t)pdi_mpi_func_find("MPI_Allreduce");
	const uint64_t s = 1000000000ull;

	cr_assert_eq(pdi_stack_seen_polling_since(&l, 10 * s), 0);
	pdi_stack_seen_add(&l, PDI_STACK_SEEN_OUTSIDE, 1 * s);
	pdi_stack_seen_add(&l, testany, 4 * s);
	pdi_stack_seen_add(&l, test, 7 * s);
	pdi_stack_seen_add(&l, testany, 10 * s);
	pdi_stack_seen_add(&l, testany, 13 * s);
	cr_expect_eq(pdi_stack_seen_polling_since(&l, 14 * s), 4 * s, "polling since the look at 4 s");
	cr_expect_eq(pdi_stack_seen_polling_since(&l, 20 * s), 0, "the last look 7 s ago says nothing of now");
	/* a blocking call between: the chain starts after it */
	pdi_stack_seen_add(&l, allreduce, 16 * s);
	pdi_stack_seen_add(&l, test, 19 * s);
	cr_expect_eq(pdi_stack_seen_polling_since(&l, 20 * s), 19 * s);
	/* a gap of 6 s between looks: not one episode */
	pdi_stack_seen_add(&l, test, 25 * s);
	cr_expect_eq(pdi_stack_seen_polling_since(&l, 25 * s), 25 * s);
	pdi_stack_seen_add(&l, PDI_STACK_SEEN_OUTSIDE, 28 * s);
	cr_expect_eq(pdi_stack_seen_polling_since(&l, 28 * s), 0, "computing now");
}

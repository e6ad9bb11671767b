/* SPDX-License-Identifier: GPL-2.0-only */
/* test-automaded.c -- faulty phase, faulty task and characteristic transitions on models of
 * a loop with one injected stall. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>

#include "automaded.h"
#include "model.h"
#include "mpi_funcs.h"

enum { INIT = 1, PCONTROL, IRECV, ISEND, WAITALL, BARRIER };

/* What changes in one phase of a ring loop (task_model_ex()). */
struct change {
	int rank, phase;  /* the rank it hits, in the loop's phase (model phase PHASE + 1) */
	double stall_s;   /* that rank computes this long before the Barrier of the phase's middle
			     iteration, while its peers wait in that Barrier */
	double reshuffle; /* its every computation between Irecv and Isend takes this many times its
			     usual microseconds (a loaded machine's noise, no time lost) */
	double hiccup_ms; /* every rank, every phase: about one computation before the Barrier in four
			     is preempted for up to this long (a loaded machine) */
};

/* PHASES Pcontrol phases of ITERS ring iterations; in phase FAULT_PHASE the task computes
 * SLOW times longer before its Barrier; and change C (NULL: none). Timing jitter is
 * deterministic but uneven. */
static void task_model_ex(struct pdi_model *m, int rank, int phases, int iters, int fault_phase, double slow,
			  bool permanent, const struct change *c)
{
	static const char *fns[] = {"MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Barrier"};
	uint64_t t = 0;
	unsigned seed = (unsigned)rank * 7919u + 13u;

	pdi_model_init(m, NULL);
	if (phases > 0) {
		struct pdi_call init = {.site = INIT, .fn = (uint16_t)pdi_mpi_func_find("MPI_Init"), .peer = PDI_NO_PEER,
					.t_enter = 0, .t_exit = (t += 100000)};
		cr_assert_eq(pdi_model_add_call(m, &init), 0);
	}
	for (int p = 0; p < phases; p++) {
		struct pdi_call pc = {.site = PCONTROL, .fn = (uint16_t)pdi_mpi_func_find("MPI_Pcontrol"),
				      .peer = PDI_NO_PEER};
		bool here = c && p == c->phase;

		pc.t_enter = (t += 1000);
		pc.t_exit = (t += 500);
		cr_assert_eq(pdi_model_add_call(m, &pc), 0);
		for (int i = 0; i < iters; i++)
			for (int s = 0; s < 4; s++) {
				struct pdi_call x = {.site = IRECV + (uint32_t)s, .fn = (uint16_t)pdi_mpi_func_find(fns[s]),
						     .peer = PDI_NO_PEER};
				double gap = s == 3 ? 20000 : 2000, call = 3000;
				bool stall = here && s == 3 && i == iters / 2 && c->stall_s > 0;

				seed = seed * 1103515245u + 12345u;
				gap *= 0.9 + 0.2 * ((seed >> 16) % 1000) / 1000.0;
				if (s == 3 && (permanent ? p >= fault_phase : p == fault_phase && i >= iters / 2))
					gap *= slow;
				if (here && rank == c->rank && s == 1 && c->reshuffle > 0)
					gap *= c->reshuffle;
				if (c && s == 3 && (seed >> 8) % 4 == 0)
					gap += c->hiccup_ms * 1e6 * ((seed >> 12) % 1000) / 1000.0;
				if (stall && rank == c->rank)
					gap += c->stall_s * 1e9;
				else if (stall)
					call += c->stall_s * 1e9;
				x.t_enter = (t += (uint64_t)gap);
				x.t_exit = (t += (uint64_t)call);
				cr_assert_eq(pdi_model_add_call(m, &x), 0);
			}
	}
}

static void task_model(struct pdi_model *m, int rank, int phases, int iters, int fault_phase, double slow)
{
	task_model_ex(m, rank, phases, iters, fault_phase, slow, false, NULL);
}

static int run(const struct pdi_model *const *mp, size_t n, enum pdi_timedist dist, const struct pdi_model *const *samples,
	       size_t nsamples, struct pdi_automaded *a)
{
	return pdi_automaded_run(&(struct pdi_automaded_input){.models = mp, .n = n, .dist = dist, .samples = samples,
								.nsamples = nsamples}, a, NULL);
}

static void check(enum pdi_timedist dist)
{
	struct pdi_model m[4];
	const struct pdi_model *mp[4];
	struct pdi_automaded a;

	for (int r = 0; r < 4; r++) {
		task_model(&m[r], r, 8, 40, 5, r == 2 ? 6.0 : 1.0);
		mp[r] = &m[r];
	}
	cr_assert_eq(m[0].nphases, 9, "8 markers: 8 phases and the prologue");
	cr_assert_eq(pdi_automaded_run(&(struct pdi_automaded_input){.models = mp, .n = 4, .dist = dist}, &a, NULL), 0);
	cr_assert_eq(a.first_phase, 1);
	cr_assert_eq(a.faulty_phase, 6, "the 6th marked phase is model phase 6 (dist %d)", dist);
	/* histograms are less sensitive to a shift of a part of the times (AutomaDeD sec. 5) */
	cr_assert_gt(a.phase_margin, dist == PDI_TIME_GAUSS ? 1.2 : 1.0, "%f", a.phase_margin);
	cr_assert_eq(a.faulty_task, 2);
	cr_assert_gt(a.task_margin, 1.5, "%f", a.task_margin);
	cr_assert_geq(a.ntop, 1);
	cr_assert_eq(a.top[0].from, pdi_state_comp(WAITALL, BARRIER));
	cr_assert_eq(a.top[0].to, pdi_state_comm(BARRIER));
	cr_assert_eq(a.effect, PDI_EFFECT_TEMPORARY);
	/* 4.4: the stalled task's computation before the Barrier is the least probable */
	cr_assert_geq(a.nunusual, 1);
	cr_assert_eq(a.unusual[0].task, 2);
	cr_assert_eq(a.unusual[0].from, pdi_state_comp(WAITALL, BARRIER));
	cr_assert_lt(a.unusual[0].score, -2, "log10 p %f", a.unusual[0].score);
	pdi_automaded_done(&a);
	for (int r = 0; r < 4; r++)
		pdi_model_done(&m[r]);
}

Test(automaded, finds_the_stalled_phase_task_and_transition_gaussian)
{
	check(PDI_TIME_GAUSS);
}

Test(automaded, finds_the_stalled_phase_task_and_transition_histogram)
{
	check(PDI_TIME_HIST);
}

Test(automaded, nothing_to_compare)
{
	struct pdi_model m;
	const struct pdi_model *mp = &m;
	struct pdi_automaded a;

	task_model(&m, 0, 0, 0, -1, 1);
	cr_assert_eq(pdi_automaded_run(&(struct pdi_automaded_input){.models = &mp, .n = 1}, &a, NULL), -EINVAL);
	cr_assert_eq(pdi_automaded_run(&(struct pdi_automaded_input){.models = &mp, .n = 0}, &a, NULL), -EINVAL);
	pdi_model_done(&m);
}

Test(automaded, kmeans_splits_high_from_low)
{
	double v[] = {1, 1.2, 0.9, 9, 10, 1.1};
	uint8_t high[6];

	cr_assert_eq(pdi_kmeans2(v, 6, high), 2);
	cr_assert(high[3] && high[4] && !high[0] && !high[5]);
	cr_assert_eq(pdi_kmeans2(v, 1, high), 0, "one value: no split");
	double same[] = {3, 3, 3};
	cr_assert_eq(pdi_kmeans2(same, 3, high), 0);
}

/* A runaway thread from phase 4 on: rank 1 computes 3x longer in every later phase. */
Test(automaded, permanent_shift_is_the_first_changed_phase)
{
	struct pdi_model m[4];
	const struct pdi_model *mp[4];
	struct pdi_automaded a;

	for (int r = 0; r < 4; r++) {
		task_model_ex(&m[r], r, 10, 40, 5, r == 1 ? 3.0 : 1.0, true, NULL);
		mp[r] = &m[r];
	}
	cr_assert_eq(run(mp, 4, PDI_TIME_GAUSS, NULL, 0, &a), 0);
	cr_assert_eq(a.effect, PDI_EFFECT_PERMANENT, "split ratio %f, margin %f", a.split_ratio, a.phase_margin);
	cr_assert_eq(a.faulty_phase, 6, "marked phase 5 is model phase 6, got %u", a.faulty_phase);
	cr_assert_eq(a.faulty_task, 1);
	cr_assert(a.has_change);
	cr_assert_eq(a.change.task, 1);
	cr_assert_eq(a.change.to, pdi_state_comm(BARRIER));
	pdi_automaded_done(&a);
	for (int r = 0; r < 4; r++)
		pdi_model_done(&m[r]);
}

/* Sample runs: a clean earlier run is the normal behaviour, phase by phase. */
Test(automaded, sample_runs_are_the_normal_behaviour)
{
	struct pdi_model m[4], s[2][4];
	const struct pdi_model *mp[4], *sp[8];
	struct pdi_automaded a;

	for (int r = 0; r < 4; r++) {
		task_model(&m[r], r, 8, 40, 3, r == 3 ? 8.0 : 1.0);
		mp[r] = &m[r];
		for (int k = 0; k < 2; k++) {
			task_model(&s[k][r], r + 10 * (k + 1), 8, 40, -1, 1.0);
			sp[k * 4 + r] = &s[k][r];
		}
	}
	cr_assert_eq(run(mp, 4, PDI_TIME_HIST, sp, 2, &a), 0);
	cr_assert_eq(a.nsamples, 2);
	cr_assert_eq(a.faulty_phase, 4, "got %u", a.faulty_phase);
	cr_assert_eq(a.faulty_task, 3);
	cr_assert_eq(a.top[0].from, pdi_state_comp(WAITALL, BARRIER));
	pdi_automaded_done(&a);
	for (int r = 0; r < 4; r++) {
		pdi_model_done(&m[r]);
		pdi_model_done(&s[0][r]);
		pdi_model_done(&s[1][r]);
	}
}

/* Classes: weights make one model stand for many tasks; HAC isolates the faulty one. */
Test(automaded, clusters_isolate_the_faulty_task)
{
	struct pdi_model m[3];
	const struct pdi_model *mp[3];
	uint32_t weights[3] = {1000, 999, 1};
	struct pdi_automaded a;

	for (int r = 0; r < 3; r++) {
		task_model(&m[r], r, 8, 40, 5, r == 2 ? 20.0 : 1.0);
		mp[r] = &m[r];
	}
	cr_assert_eq(pdi_automaded_run(&(struct pdi_automaded_input){.models = mp, .weights = weights, .n = 3,
								       .dist = PDI_TIME_GAUSS}, &a, NULL), 0);
	cr_assert_eq(a.faulty_phase, 6);
	cr_assert_eq(a.faulty_task, 2);
	cr_assert_geq(a.nclusters, 2);
	cr_assert_neq(a.cluster[2], a.cluster[0], "the stalled task is a cluster of its own");
	cr_assert_eq(a.faulty_cluster, a.cluster[2]);
	pdi_automaded_done(&a);
	for (int r = 0; r < 3; r++)
		pdi_model_done(&m[r]);
}

static void lost_run(const struct change *c, struct pdi_model *m, struct pdi_automaded *a)
{
	const struct pdi_model *mp[4];

	for (int r = 0; r < 4; r++) {
		task_model_ex(&m[r], r, 8, 40, -1, 1.0, false, c);
		mp[r] = &m[r];
	}
	cr_assert_eq(run(mp, 4, PDI_TIME_GAUSS, NULL, 0, a), 0);
}

static void lost_done(struct pdi_model *m, struct pdi_automaded *a)
{
	pdi_automaded_done(a);
	for (int r = 0; r < 4; r++)
		pdi_model_done(&m[r]);
}

/* The characteristic transitions hold no transition twice, and in the faulty task. */
static void expect_distinct(const struct pdi_automaded *a)
{
	for (size_t i = 0; i < a->ntop; i++) {
		cr_expect_eq(a->top[i].task, a->faulty_task, "transition %zu in model %zu", i, a->top[i].task);
		for (size_t k = i + 1; k < a->ntop; k++)
			cr_expect(a->top[i].from != a->top[k].from || a->top[i].to != a->top[k].to,
				  "transitions %zu and %zu are the same", i, k);
	}
}

/* Rank 2 stalls 2 s before its Barrier in one iteration of phase 5, and its computations between
 * Irecv and Isend take ten times their microseconds there: the latter changes their distribution
 * more (the model-difference scores of 4.3 put it first), the former is where the time went. The
 * time lost names the phase and the task, and its transition comes first; the rest follow as
 * before, once each. */
Test(automaded, the_transition_that_lost_the_time_comes_first)
{
	struct change c = {.rank = 2, .phase = 4, .stall_s = 2.0, .reshuffle = 10, .hiccup_ms = 50};
	struct pdi_model m[4];
	struct pdi_automaded a;
	double most = 0;

	lost_run(&c, m, &a);
	cr_assert(a.by_lost, "the time lost picks the phase");
	cr_assert_eq(a.faulty_phase, 5);
	cr_assert_eq(a.faulty_task, 2);
	cr_assert(a.lost.has_at);
	cr_assert_geq(a.ntop, 2);
	cr_expect_eq(a.top[0].from, pdi_state_comp(WAITALL, BARRIER));
	cr_expect_eq(a.top[0].to, pdi_state_comm(BARRIER));
	/* the stall, give or take the hiccups of its phase against its peers' */
	cr_expect(a.top[0].lost_s > 1.9 && a.top[0].lost_s < 2.5, "lost %g s", a.top[0].lost_s);
	for (size_t k = 1; k < a.ntop; k++) {
		cr_expect_eq(a.top[k].lost_s, 0.0);
		cr_expect(k == 1 || a.top[k].score <= a.top[k - 1].score, "the rest by their scores");
		most = a.top[k].score > most ? a.top[k].score : most;
	}
	/* what the test is about: another transition differs more from normal */
	cr_expect_gt(most, a.top[0].score, "the stall's transition scored %g, the most of the rest %g", a.top[0].score,
		     most);
	cr_expect_eq(a.top[1].from, pdi_state_comp(IRECV, ISEND), "the reshuffled transition scores highest");
	expect_distinct(&a);
	lost_done(m, &a);
}

/* The same reshuffle with a stall of 0.4 s, under a stall's worth (PDI_EXCESS_FLOOR_S): the time
 * lost does not pick the phase, and the transitions are in the order of their scores alone, the
 * one the time went in no exception. */
Test(automaded, transitions_by_their_scores_when_the_finding_is_not_lost_time)
{
	struct change c = {.rank = 2, .phase = 4, .stall_s = 0.4, .reshuffle = 10, .hiccup_ms = 50};
	struct pdi_model m[4];
	struct pdi_automaded a;

	lost_run(&c, m, &a);
	cr_assert_not(a.by_lost);
	cr_expect(a.lost.has_at, "the time lost still knows its transition");
	cr_assert_geq(a.ntop, 2);
	for (size_t k = 0; k < a.ntop; k++) {
		cr_expect_eq(a.top[k].lost_s, 0.0);
		cr_expect(k == 0 || a.top[k].score <= a.top[k - 1].score, "by their scores");
	}
	expect_distinct(&a);
	lost_done(m, &a);
}

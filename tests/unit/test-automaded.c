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

/* PHASES Pcontrol phases of ITERS ring iterations; in phase FAULT_PHASE the task computes
 * SLOW times longer before its Barrier. Timing jitter is deterministic but uneven. */
static void task_model_ex(struct pdi_model *m, int rank, int phases, int iters, int fault_phase, double slow,
			  bool permanent)
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
		struct pdi_call c = {.site = PCONTROL, .fn = (uint16_t)pdi_mpi_func_find("MPI_Pcontrol"), .peer = PDI_NO_PEER};

		c.t_enter = (t += 1000);
		c.t_exit = (t += 500);
		cr_assert_eq(pdi_model_add_call(m, &c), 0);
		for (int i = 0; i < iters; i++)
			for (int s = 0; s < 4; s++) {
				struct pdi_call x = {.site = IRECV + (uint32_t)s, .fn = (uint16_t)pdi_mpi_func_find(fns[s]),
						     .peer = PDI_NO_PEER};
				double gap = s == 3 ? 20000 : 2000;

				seed = seed * 1103515245u + 12345u;
				gap *= 0.9 + 0.2 * ((seed >> 16) % 1000) / 1000.0;
				if (s == 3 && (permanent ? p >= fault_phase : p == fault_phase && i >= iters / 2))
					gap *= slow;
				x.t_enter = (t += (uint64_t)gap);
				x.t_exit = (t += 3000);
				cr_assert_eq(pdi_model_add_call(m, &x), 0);
			}
	}
}

static void task_model(struct pdi_model *m, int rank, int phases, int iters, int fault_phase, double slow)
{
	task_model_ex(m, rank, phases, iters, fault_phase, slow, false);
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
		task_model_ex(&m[r], r, 10, 40, 5, r == 1 ? 3.0 : 1.0, true);
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

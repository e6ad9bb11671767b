/* SPDX-License-Identifier: GPL-2.0-only */
/* test-automaded.c -- faulty phase, faulty task and characteristic transitions on models of
 * a loop with one injected stall. */
#include <criterion/criterion.h>
#include <errno.h>

#include "automaded.h"
#include "model.h"
#include "mpi_funcs.h"

enum { INIT = 1, PCONTROL, IRECV, ISEND, WAITALL, BARRIER };

/* PHASES Pcontrol phases of ITERS ring iterations; in phase FAULT_PHASE the task computes
 * SLOW times longer before its Barrier. Timing jitter is deterministic but uneven. */
static void task_model(struct pdi_model *m, int rank, int phases, int iters, int fault_phase, double slow)
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
				if (s == 3 && p == fault_phase && i >= iters / 2)
					gap *= slow;
				x.t_enter = (t += (uint64_t)gap);
				x.t_exit = (t += 3000);
				cr_assert_eq(pdi_model_add_call(m, &x), 0);
			}
	}
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
	cr_assert_eq(pdi_automaded_run(mp, 4, dist, &a), 0);
	cr_assert_eq(a.first_phase, 1);
	cr_assert_eq(a.faulty_phase, 6, "the 6th marked phase is model phase 6 (dist %d)", dist);
	/* histograms are less sensitive to a shift of a part of the times (AutomaDeD sec. 5) */
	cr_assert_gt(a.phase_margin, dist == PDI_TIME_GAUSS ? 1.2 : 1.0, "%f", a.phase_margin);
	cr_assert_eq(a.faulty_task, 2);
	cr_assert_gt(a.task_margin, 1.5, "%f", a.task_margin);
	cr_assert_geq(a.ntop, 1);
	cr_assert_eq(a.top[0].from, pdi_state_comp(WAITALL, BARRIER));
	cr_assert_eq(a.top[0].to, pdi_state_comm(BARRIER));
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
	cr_assert_eq(pdi_automaded_run(&mp, 1, PDI_TIME_GAUSS, &a), -EINVAL);
	cr_assert_eq(pdi_automaded_run(&mp, 0, PDI_TIME_GAUSS, &a), -EINVAL);
	pdi_model_done(&m);
}

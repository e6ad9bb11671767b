/* SPDX-License-Identifier: GPL-2.0-only */
/* test-pdi.c -- PDI's decision table, all-path probabilities, PDG and LP tasks. */
#include <criterion/criterion.h>
#include <math.h>

#include "model.h"
#include "mpi_funcs.h"
#include "pdi.h"

enum { IRECV = 1, ISEND, WAITALL, BARRIER, FINALIZE };

static void call(struct pdi_model *m, uint32_t site, const char *fn, uint64_t *t)
{
	struct pdi_call c = {.site = site, .fn = (uint16_t)pdi_mpi_func_find(fn), .peer = PDI_NO_PEER};

	c.t_enter = (*t += 1000);
	c.t_exit = (*t += 1000);
	cr_assert_eq(pdi_model_add_call(m, &c), 0);
}

/* A ring task that completed ITERS full iterations and then STOP more calls of the next. */
static void ring(struct pdi_model *m, int iters, int stop)
{
	static const char *fns[] = {"MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Barrier"};
	uint64_t t = 0;

	pdi_model_init(m, &(struct pdi_model_config){.max_bytes = 1 << 20, .max_phases = 65,
						    .auto_phase_min_collectives = 32, .auto_phases = false});
	for (int i = 0; i < iters; i++)
		for (int s = 0; s < 4; s++)
			call(m, IRECV + s, fns[s], &t);
	for (int s = 0; s < stop; s++)
		call(m, IRECV + s, fns[s], &t);
}

Test(pdi, decision_table)
{
	cr_assert_eq(pdi_dep_from_table(0, 0), PDI_DEP_NONE);
	cr_assert_eq(pdi_dep_from_table(1.0, 0), PDI_DEP_BY);     /* i must reach j, no way back */
	cr_assert_eq(pdi_dep_from_table(0, 0.3), PDI_DEP_ON);     /* j can come to i, not i to j */
	cr_assert_eq(pdi_dep_from_table(1.0, 0.9), PDI_DEP_BY);   /* the loop exit of Figure 4 */
	cr_assert_eq(pdi_dep_from_table(0.9, 1.0), PDI_DEP_ON);
	cr_assert_eq(pdi_dep_from_table(1.0, 1.0), PDI_DEP_UNDEFINED);
	cr_assert_eq(pdi_dep_from_table(0.5, 0.5), PDI_DEP_UNDEFINED);
	cr_assert_eq(PDI_DEP_ON | PDI_DEP_BY, PDI_DEP_UNDEFINED, "the union of conflicting edges (Table 2)");
}

Test(pdi, all_path_probabilities_through_a_loop_and_its_exit)
{
	struct pdi_model m;
	struct pdi_mm mm;
	uint64_t t = 0;

	/* 3 iterations of Irecv->Barrier, then Finalize */
	pdi_model_init(&m, NULL);
	for (int i = 0; i < 3; i++) {
		call(&m, IRECV, "MPI_Irecv", &t);
		call(&m, BARRIER, "MPI_Barrier", &t);
	}
	call(&m, FINALIZE, "MPI_Finalize", &t);
	cr_assert_eq(pdi_mm_build(&m, &mm), 0);
	/* from the loop everything ends at Finalize; back into the loop only while it loops */
	cr_assert_float_eq(pdi_mm_reach(&mm, pdi_state_comm(IRECV), pdi_state_comm(FINALIZE)), 1.0, 1e-6);
	cr_assert_float_eq(pdi_mm_reach(&mm, pdi_state_comm(FINALIZE), pdi_state_comm(IRECV)), 0.0, 1e-12);
	cr_assert_float_eq(pdi_mm_reach(&mm, pdi_state_comm(IRECV), pdi_state_comm(BARRIER)), 1.0, 1e-6);
	/* Barrier goes back to Irecv 2 times out of 3 */
	cr_assert_float_eq(pdi_mm_reach(&mm, pdi_state_comm(BARRIER), pdi_state_comm(IRECV)), 2.0 / 3, 1e-6);
	cr_assert_float_eq(pdi_mm_reach(&mm, pdi_state_comm(IRECV), pdi_state_comm(99)), 0.0, 1e-12);
	pdi_mm_done(&mm);
	pdi_model_done(&m);
}

/* The ring hang: rank 2 computes forever after its Waitall of iteration 5 (6th); ranks 0, 1
 * and 3 wait in the Barrier of that iteration. The loop makes Table 1 undecided; the visit
 * counts order the tasks. */
Test(pdi, the_rank_that_computes_while_the_others_wait_is_least_progressed)
{
	struct pdi_model m[4];
	struct pdi_mm mm[4];
	struct pdi_position pos[4];
	struct pdi_pdg g;

	for (int r = 0; r < 4; r++) {
		/* all completed Waitall #6; the model has not seen a call still in progress */
		ring(&m[r], 5, 3);
		cr_assert_eq(pdi_mm_build(&m[r], &mm[r]), 0);
		pos[r] = (struct pdi_position){.rank = r, .mm = &mm[r], .state = pdi_state_comm(r == 2 ? WAITALL : BARRIER),
					       .inside = r != 2};
	}
	cr_assert_eq(pdi_pdg_build(pos, 4, &g), 0);
	cr_assert_eq(g.ngroups, 2);
	cr_assert_eq(g.nlp, 1);
	for (size_t i = 0; i < g.ngroups; i++)
		if (g.groups[i].lp) {
			cr_assert_eq(g.groups[i].n, 1);
			cr_assert_eq(g.groups[i].ranks[0], 2);
		} else {
			cr_assert_eq(g.groups[i].n, 3);
		}
	pdi_pdg_done(&g);
	for (int r = 0; r < 4; r++) {
		pdi_mm_done(&mm[r]);
		pdi_model_done(&m[r]);
	}
}

/* Rank 2 stops before its 6th Irecv; rank 3 waits in Waitall for rank 2's message (a
 * point-to-point dependence); ranks 0 and 1 wait in the 6th Barrier. Rank 2 is LP; rank 3,
 * which waits for nobody in the loop order, is dropped as point-to-point dependent. */
Test(pdi, point_to_point_waits_are_not_least_progressed)
{
	struct pdi_model m[4];
	struct pdi_mm mm[4];
	struct pdi_position pos[4];
	const int32_t peers3[] = {2, 0};
	struct pdi_pdg g;

	ring(&m[0], 5, 3); /* inside Barrier #6 */
	ring(&m[1], 5, 3);
	ring(&m[2], 5, 0); /* after Barrier #5 */
	ring(&m[3], 5, 2); /* inside Waitall #6 */
	for (int r = 0; r < 4; r++)
		cr_assert_eq(pdi_mm_build(&m[r], &mm[r]), 0);
	pos[0] = (struct pdi_position){.rank = 0, .mm = &mm[0], .state = pdi_state_comm(BARRIER), .inside = true};
	pos[1] = (struct pdi_position){.rank = 1, .mm = &mm[1], .state = pdi_state_comm(BARRIER), .inside = true};
	pos[2] = (struct pdi_position){.rank = 2, .mm = &mm[2], .state = pdi_state_comm(BARRIER), .inside = false};
	pos[3] = (struct pdi_position){.rank = 3, .mm = &mm[3], .state = pdi_state_comm(WAITALL), .inside = true,
				       .peers = peers3, .npeers = 2};
	cr_assert_eq(pdi_pdg_build(pos, 4, &g), 0);
	cr_assert_eq(g.ngroups, 3);
	cr_assert_eq(g.nlp, 1);
	for (size_t i = 0; i < g.ngroups; i++) {
		if (g.groups[i].lp)
			cr_assert(g.groups[i].n == 1 && g.groups[i].ranks[0] == 2, "LP is rank %d", g.groups[i].ranks[0]);
		if (g.groups[i].state == pdi_state_comm(WAITALL))
			cr_assert(g.groups[i].p2p_dependent);
	}
	pdi_pdg_done(&g);
	for (int r = 0; r < 4; r++) {
		pdi_mm_done(&mm[r]);
		pdi_model_done(&m[r]);
	}
}

/* A master that computes while its workers wait for it in a receive from rank 0: models of
 * different codes say nothing about each other, the peers say it all. */
Test(pdi, point_to_point_peers_make_the_edge)
{
	struct pdi_model m[3];
	struct pdi_mm mm[3];
	struct pdi_position pos[3];
	const int32_t master[] = {0};
	struct pdi_pdg g;
	uint64_t t = 0;

	for (int r = 0; r < 3; r++) {
		pdi_model_init(&m[r], NULL);
		for (int i = 0; i < 5; i++)
			call(&m[r], r == 0 ? IRECV : ISEND + 10, "MPI_Recv", &t);
		cr_assert_eq(pdi_mm_build(&m[r], &mm[r]), 0);
		pos[r] = (struct pdi_position){.rank = r, .mm = &mm[r], .state = pdi_state_comm(r == 0 ? IRECV : ISEND + 10),
					       .inside = r != 0, .peers = r ? master : NULL, .npeers = r ? 1 : 0};
	}
	cr_assert_eq(pdi_pdg_build(pos, 3, &g), 0);
	cr_assert_eq(g.ngroups, 2);
	cr_assert_eq(g.nlp, 1);
	for (size_t i = 0; i < g.ngroups; i++)
		cr_assert_eq(g.groups[i].lp, g.groups[i].ranks[0] == 0, "group of rank %d", g.groups[i].ranks[0]);
	pdi_pdg_done(&g);
	for (int r = 0; r < 3; r++) {
		pdi_mm_done(&mm[r]);
		pdi_model_done(&m[r]);
	}
}

/* A stray receive before a collective: the others wait inside the collective for the one
 * task that never entered it, though no model has ever seen its state. */
Test(pdi, tasks_in_a_collective_wait_for_those_outside_it)
{
	struct pdi_model m[3];
	struct pdi_mm mm[3];
	struct pdi_position pos[3];
	struct pdi_pdg g;
	uint64_t t = 0;

	for (int r = 0; r < 3; r++) {
		ring(&m[r], 5, 3);
		if (r == 2)
			call(&m[r], 99, "MPI_Recv", &t);
		cr_assert_eq(pdi_mm_build(&m[r], &mm[r]), 0);
		pos[r] = (struct pdi_position){.rank = r, .mm = &mm[r], .inside = true,
					       .state = pdi_state_comm(r == 2 ? 99 : BARRIER), .collective = r != 2};
	}
	cr_assert_eq(pdi_pdg_build(pos, 3, &g), 0);
	cr_assert_eq(g.ngroups, 2);
	cr_assert_eq(g.nlp, 1);
	for (size_t i = 0; i < g.ngroups; i++)
		cr_assert_eq(g.groups[i].lp, g.groups[i].ranks[0] == 2, "group of rank %d", g.groups[i].ranks[0]);
	pdi_pdg_done(&g);
	for (int r = 0; r < 3; r++) {
		pdi_mm_done(&mm[r]);
		pdi_model_done(&m[r]);
	}
}

/* A message lost: rank 2 waits for rank 3's, rank 3 for rank 2's, the others in a
 * collective for both. The pair is the deadlock the others wait for. */
Test(pdi, a_deadlock_the_others_wait_for_is_least_progressed)
{
	struct pdi_model m[4];
	struct pdi_mm mm[4];
	struct pdi_position pos[4];
	const int32_t to3[] = {3}, to2[] = {2};
	struct pdi_pdg g;

	for (int r = 0; r < 4; r++) {
		ring(&m[r], 5, r < 2 ? 3 : 1);
		cr_assert_eq(pdi_mm_build(&m[r], &mm[r]), 0);
		pos[r] = (struct pdi_position){.rank = r, .mm = &mm[r], .inside = true,
					       .state = pdi_state_comm(r < 2 ? BARRIER : r == 2 ? IRECV : ISEND),
					       .collective = r < 2, .peers = r == 2 ? to3 : r == 3 ? to2 : NULL,
					       .npeers = r >= 2};
	}
	cr_assert_eq(pdi_pdg_build(pos, 4, &g), 0);
	cr_assert_eq(g.ngroups, 3);
	cr_assert_eq(g.nlp, 2);
	for (size_t i = 0; i < g.ngroups; i++)
		cr_assert_eq(g.groups[i].lp, g.groups[i].ranks[0] >= 2, "group of rank %d", g.groups[i].ranks[0]);
	pdi_pdg_done(&g);
	for (int r = 0; r < 4; r++) {
		pdi_mm_done(&mm[r]);
		pdi_model_done(&m[r]);
	}
}

Test(pdi, finished_tasks_take_no_part)
{
	struct pdi_model m;
	struct pdi_mm mm;
	struct pdi_position pos[2];
	struct pdi_pdg g;

	ring(&m, 2, 0);
	cr_assert_eq(pdi_mm_build(&m, &mm), 0);
	pos[0] = (struct pdi_position){.rank = 0, .mm = &mm, .state = pdi_state_comm(BARRIER), .finished = true};
	pos[1] = (struct pdi_position){.rank = 1, .mm = &mm, .state = pdi_state_comm(BARRIER), .inside = true};
	cr_assert_eq(pdi_pdg_build(pos, 2, &g), 0);
	cr_assert_eq(g.ngroups, 1);
	cr_assert_eq(g.groups[0].ranks[0], 1);
	pdi_pdg_done(&g);
	pdi_mm_done(&mm);
	pdi_model_done(&m);
}

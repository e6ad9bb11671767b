/* SPDX-License-Identifier: GPL-2.0-only */
/* test-smm.c -- AutomaDeD's Diff(A,B), nu weighting, characteristic transitions and HAC. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "model.h"
#include "mpi_funcs.h"
#include "smm.h"

/* A task looping over sites 1..4 (Irecv, Isend, Waitall, Barrier) ITERS times; the
 * computation before site 4 lasts COMP ns (+ JITTER * (i % 3)), everything else 1000 ns. */
static void ring_model(struct pdi_model *m, int iters, double comp, double jitter, double scale)
{
	const char *fns[] = {"MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Barrier"};
	uint64_t t = 1000;

	pdi_model_init(m, &(struct pdi_model_config){.max_bytes = 1 << 20, .max_phases = 65,
						    .auto_phase_min_collectives = 32, .auto_phases = false});
	for (int i = 0; i < iters; i++)
		for (int s = 0; s < 4; s++) {
			struct pdi_call c = {.site = (uint32_t)s + 1, .fn = (uint16_t)pdi_mpi_func_find(fns[s]),
					     .peer = PDI_NO_PEER};
			double gap = s == 3 ? comp + jitter * (i % 3) : 1000;

			t += (uint64_t)(gap * scale);
			c.t_enter = t;
			t += (uint64_t)(1000 * scale);
			c.t_exit = t;
			cr_assert_eq(pdi_model_add_call(m, &c), 0);
		}
}

static double diff_of(struct pdi_model *a, struct pdi_model *b, enum pdi_timedist dist, uint64_t worst[2])
{
	struct pdi_smm sa, sb;
	double d;

	cr_assert_eq(pdi_smm_build(&a->phases[0], &sa), 0);
	cr_assert_eq(pdi_smm_build(&b->phases[0], &sb), 0);
	d = pdi_smm_diff(&sa, &sb, NULL, dist, worst, NULL);
	pdi_smm_done(&sa);
	pdi_smm_done(&sb);
	return d;
}

Test(smm, identical_models_do_not_differ)
{
	struct pdi_model a, b;

	ring_model(&a, 50, 5000, 300, 1);
	ring_model(&b, 50, 5000, 300, 1);
	cr_assert_float_eq(diff_of(&a, &b, PDI_TIME_GAUSS, NULL), 0, 1e-9);
	cr_assert_float_eq(diff_of(&a, &b, PDI_TIME_HIST, NULL), 0, 1e-9);
	pdi_model_done(&a);
	pdi_model_done(&b);
}

Test(smm, a_slower_computation_differs_more_the_slower_it_is_and_is_the_worst_transition)
{
	struct pdi_model a, b, c;
	uint64_t worst[2];
	double d1, d2;

	ring_model(&a, 50, 5000, 300, 1);
	ring_model(&b, 50, 7500, 300, 1);
	ring_model(&c, 50, 15000, 300, 1);
	for (int dist = PDI_TIME_GAUSS; dist <= PDI_TIME_HIST; dist++) {
		d1 = diff_of(&a, &b, dist, worst);
		d2 = diff_of(&a, &c, dist, NULL);
		cr_assert_gt(d1, 0.1, "dist %d", dist);
		cr_assert_gt(d2, d1, "dist %d: %f <= %f", dist, d2, d1);
		/* the characteristic transition: comp(Waitall, Barrier) -> Barrier */
		cr_assert_eq(worst[0], pdi_state_comp(3, 4), "dist %d", dist);
		cr_assert_eq(worst[1], pdi_state_comm(4), "dist %d", dist);
	}
	pdi_model_done(&a);
	pdi_model_done(&b);
	pdi_model_done(&c);
}

Test(smm, the_clock_unit_does_not_matter)
{
	struct pdi_model a, b, a2, b2;

	ring_model(&a, 40, 5000, 300, 1);
	ring_model(&b, 40, 9000, 300, 1);
	ring_model(&a2, 40, 5000, 300, 1000);
	ring_model(&b2, 40, 9000, 300, 1000);
	cr_assert_float_eq(diff_of(&a, &b, PDI_TIME_GAUSS, NULL), diff_of(&a2, &b2, PDI_TIME_GAUSS, NULL), 1e-6);
	cr_assert_float_eq(diff_of(&a, &b, PDI_TIME_HIST, NULL), diff_of(&a2, &b2, PDI_TIME_HIST, NULL), 1e-6);
	pdi_model_done(&a);
	pdi_model_done(&b);
	pdi_model_done(&a2);
	pdi_model_done(&b2);
}

Test(smm, a_state_or_transition_in_one_model_only_costs_ten)
{
	struct pdi_model a, b;
	struct pdi_call extra = {.site = 9, .fn = (uint16_t)pdi_mpi_func_find("MPI_Allreduce"), .peer = PDI_NO_PEER};
	double d;

	ring_model(&a, 10, 5000, 0, 1);
	ring_model(&b, 10, 5000, 0, 1);
	/* b ends with one more call: a new comm state, a new comp state, two new transitions,
	 * and Barrier's next-state distribution changes */
	extra.t_enter = b.last_exit + 1000;
	extra.t_exit = extra.t_enter + 1000;
	cr_assert_eq(pdi_model_add_call(&b, &extra), 0);
	d = diff_of(&a, &b, PDI_TIME_GAUSS, NULL);
	cr_assert_geq(d, 40.0, "%f", d);
	cr_assert_lt(d, 42.0, "%f", d);
	pdi_model_done(&a);
	pdi_model_done(&b);
}

Test(smm, nu_weighs_down_transitions_that_are_noisy_anyway)
{
	struct pdi_model s[3], a, b;
	const struct pdi_smm *sp[3];
	struct pdi_smm ss[3], sa, sb;
	struct pdi_nu nu;
	double plain, weighted;

	/* in the samples the Barrier computation swings between 5 and 20 us: normal noise */
	ring_model(&s[0], 30, 5000, 0, 1);
	ring_model(&s[1], 30, 20000, 0, 1);
	ring_model(&s[2], 30, 10000, 0, 1);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pdi_smm_build(&s[i].phases[0], &ss[i]), 0);
		sp[i] = &ss[i];
	}
	cr_assert_eq(pdi_nu_train(&nu, sp, 3, PDI_TIME_GAUSS), 0);
	ring_model(&a, 30, 5000, 0, 1);
	ring_model(&b, 30, 12000, 0, 1);
	cr_assert_eq(pdi_smm_build(&a.phases[0], &sa), 0);
	cr_assert_eq(pdi_smm_build(&b.phases[0], &sb), 0);
	plain = pdi_smm_diff(&sa, &sb, NULL, PDI_TIME_GAUSS, NULL, NULL);
	weighted = pdi_smm_diff(&sa, &sb, &nu, PDI_TIME_GAUSS, NULL, NULL);
	cr_assert_lt(weighted, plain, "%f >= %f", weighted, plain);
	pdi_nu_done(&nu);
	for (int i = 0; i < 3; i++) {
		pdi_smm_done(&ss[i]);
		pdi_model_done(&s[i]);
	}
	pdi_smm_done(&sa);
	pdi_smm_done(&sb);
	pdi_model_done(&a);
	pdi_model_done(&b);
}

/* Items 0-4 close together, 5-7 close together, the groups far apart. */
static void two_groups(double *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			bool gi = i < 5, gj = j < 5;
			m[i * n + j] = i == j ? 0 : gi == gj ? 1.0 + 0.1 * (double)((i + j) % 3) : 50.0 + (double)(i + j);
		}
}

Test(smm, hac_finds_the_groups_at_the_trained_threshold)
{
	double m[64];
	uint32_t c[8];
	size_t k;

	two_groups(m, 8);
	k = pdi_hac(m, 8, pdi_hac_threshold(m, 8, 2), c);
	cr_assert_eq(k, 2);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(c[i], i < 5 ? 0u : 1u, "item %d in cluster %u", i, c[i]);
	cr_assert_eq(pdi_hac(m, 8, pdi_hac_threshold(m, 8, 1), c), 1);
	cr_assert_eq(pdi_hac(m, 8, pdi_hac_threshold(m, 8, 8), c), 8);
	cr_assert_eq(pdi_hac(m, 8, 0.5, c), 8);
	cr_assert_eq(pdi_hac(m, 8, 1e9, c), 1);
}

Test(smm, hac_single_linkage_chains)
{
	/* 0-1-2-3 each 1 apart along a line: single linkage joins the chain at 1 */
	double m[16];

	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			m[i * 4 + j] = fabs((double)(i - j));
	uint32_t c[4];
	cr_assert_eq(pdi_hac(m, 4, 1.0, c), 1);
	cr_assert_eq(pdi_hac(m, 4, 0.9, c), 4);
}

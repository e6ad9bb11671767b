/* SPDX-License-Identifier: GPL-2.0-only */
/* test-rank-phases.c -- ranks x phases: MPI's share per rank and phase, and the
 * aggregation of large steps that keeps an odd rank visible. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>

#include "json.h"
#include "model.h"
#include "mpi_funcs.h"
#include "rank_phases.h"

/* A task of PHASES Pcontrol phases, each 10 iterations of compute COMP µs (more by a pattern
 * of SEED's in each phase) then an Allreduce of MPI µs; in phase ODD_PHASE (if any) the
 * compute takes ODD_COMP µs instead. SEED's digits in base 13 vary the phases of different tasks. */
static void make_task(struct pdi_model *m, unsigned phases, uint64_t comp, uint64_t mpi, int odd_phase, uint64_t odd_comp,
		      unsigned seed)
{
	uint16_t init = (uint16_t)pdi_mpi_func_find("MPI_Init"), pcontrol = (uint16_t)pdi_mpi_func_find("MPI_Pcontrol"),
		 allreduce = (uint16_t)pdi_mpi_func_find("MPI_Allreduce");
	uint64_t t = 1000000000;
	struct pdi_call c = {.peer = PDI_NO_PEER};

	pdi_model_init(m, NULL);
	c = (struct pdi_call){.site = 1, .fn = init, .t_enter = t, .t_exit = t + 10, .peer = PDI_NO_PEER};
	cr_assert_eq(pdi_model_add_call(m, &c), 0);
	t += 10;
	for (unsigned p = 0; p < phases; p++) {
		c = (struct pdi_call){.site = 2, .fn = pcontrol, .t_enter = t, .t_exit = t + 1, .peer = PDI_NO_PEER};
		cr_assert_eq(pdi_model_add_call(m, &c), 0);
		t += 1;
		for (int i = 0; i < 10; i++) {
			uint64_t cp = 1000 * ((int)p == odd_phase ? odd_comp : comp + (seed / (p == 0 ? 1 : p == 1 ? 13 : p == 2 ? 169 : 2197) % 13) * 150);

			c = (struct pdi_call){.site = 3, .fn = allreduce, .t_enter = t + cp, .t_exit = t + cp + 1000 * mpi,
					      .peer = PDI_NO_PEER};
			cr_assert_eq(pdi_model_add_call(m, &c), 0);
			t += cp + 1000 * mpi;
		}
	}
}

static json_t *render(const int *ranks, struct pdi_model *models, size_t n)
{
	const struct pdi_model **mp = calloc(n, sizeof(*mp));
	struct pdi_json j;
	json_error_t err;
	json_t *doc, *rp;
	char *text;

	for (size_t i = 0; i < n; i++)
		mp[i] = &models[i];
	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	cr_assert_eq(pdi_rank_phases_json(&j, ranks, mp, n), 0);
	pdi_json_obj_end(&j);
	text = pdi_json_steal(&j);
	doc = json_loads(text, 0, &err);
	cr_assert(doc, "valid JSON: %s", err.text);
	free(text);
	free(mp);
	rp = json_incref(json_object_get(doc, "rank_phases")); /* NULL when absent */
	json_decref(doc);
	return rp;
}

Test(rank_phases, a_row_per_rank_with_the_share_in_mpi)
{
	struct pdi_model m[3];
	int ranks[3] = {0, 1, 2};

	for (int i = 0; i < 3; i++)
		make_task(&m[i], 3, 300, 100, i == 1 ? 2 : -1, 2700, 0);
	json_t *rp = render(ranks, m, 3), *rows = json_object_get(rp, "rows");

	cr_assert_str_eq(json_string_value(json_object_get(rp, "aggregated")), "none");
	cr_assert_eq(json_array_size(rows), 3);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 1), "ranks")), "[1]");
	/* phases 1..3 after the set-up phase 0: 100 of 400 ns in MPI, rank 1's phase 3 100 of 2800 */
	json_t *r0 = json_object_get(json_array_get(rows, 0), "mpi"), *r1 = json_object_get(json_array_get(rows, 1), "mpi");
	cr_assert_eq(json_array_size(r0), 4);
	cr_assert_float_eq(json_real_value(json_array_get(r0, 2)), 0.25, 0.01);
	cr_assert_float_eq(json_real_value(json_array_get(r1, 3)), 100.0 / 2800, 0.01);
	json_decref(rp);
	for (int i = 0; i < 3; i++)
		pdi_model_done(&m[i]);
}

Test(rank_phases, alike_ranks_share_a_row_and_the_odd_one_keeps_its_own)
{
	enum { N = 200 };
	struct pdi_model *m = calloc(N, sizeof(*m));
	int ranks[N];

	for (int i = 0; i < N; i++) {
		ranks[i] = i;
		make_task(&m[i], 2, 300, 100, i == 137 ? 1 : -1, 9000, 0);
	}
	json_t *rp = render(ranks, m, N), *rows = json_object_get(rp, "rows");

	cr_assert_str_eq(json_string_value(json_object_get(rp, "aggregated")), "alike");
	cr_assert_eq(json_array_size(rows), 2);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 0), "ranks")), "[0-136,138-199]");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 1), "ranks")), "[137]");
	json_decref(rp);
	for (int i = 0; i < N; i++)
		pdi_model_done(&m[i]);
	free(m);
}

Test(rank_phases, past_the_row_bound_blocks_show_their_most_unusual_member)
{
	enum { N = 1000 };
	struct pdi_model *m = calloc(N, sizeof(*m));
	int ranks[N];

	/* every rank a little different, rank 555 very different in phase 1 */
	for (int i = 0; i < N; i++) {
		ranks[i] = i;
		make_task(&m[i], 4, 300, 100, i == 555 ? 1 : -1, 90000, (unsigned)i);
	}
	json_t *rp = render(ranks, m, N), *rows = json_object_get(rp, "rows"), *row;
	size_t k, found = 0;

	cr_assert_str_eq(json_string_value(json_object_get(rp, "aggregated")), "blocks");
	cr_assert_leq(json_array_size(rows), PDI_RANK_PHASES_MAX_ROWS);
	json_array_foreach(rows, k, row) {
		double v = json_number_value(json_array_get(json_object_get(row, "mpi"), 2)); /* phase 0 is MPI_Init's */

		if (v < 0.01) {
			found++;
			cr_assert(strstr(json_string_value(json_object_get(row, "ranks")), "555") ||
				  strstr(json_string_value(json_object_get(row, "ranks")), "-"));
		}
	}
	cr_assert_eq(found, 1, "the odd rank shows in exactly its block");
	json_decref(rp);
	for (int i = 0; i < N; i++)
		pdi_model_done(&m[i]);
	free(m);
}

Test(rank_phases, no_task_no_phase)
{
	json_t *rp = render(NULL, NULL, 0);

	cr_assert_eq(json_array_size(json_object_get(rp, "rows")), 0);
	json_decref(rp);
}

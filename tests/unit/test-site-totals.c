/* SPDX-License-Identifier: GPL-2.0-only */
/* test-site-totals.c -- per-site calls, bytes and time of a task, from its model. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "model.h"
#include "mpi_funcs.h"
#include "site_totals.h"

static void add(struct pdi_model *m, uint64_t *t, uint32_t site, const char *fn, uint64_t dur, uint64_t bytes)
{
	struct pdi_call c = {.site = site, .fn = (uint16_t)pdi_mpi_func_find(fn), .t_enter = *t + 1000,
			     .t_exit = *t + 1000 + dur, .peer = PDI_NO_PEER, .bytes = bytes};

	cr_assert_eq(pdi_model_add_call(m, &c), 0);
	*t = c.t_exit;
}

Test(site_totals, calls_bytes_and_time_inside_each_site)
{
	struct pdi_site_total v[3] = {0};
	struct pdi_model m;
	uint64_t t = 1000000000;

	pdi_model_init(&m, NULL);
	for (int i = 0; i < 10; i++) {
		add(&m, &t, 0, "MPI_Send", 500, 64);
		add(&m, &t, 1, "MPI_Barrier", 2000, 0);
	}
	pdi_site_totals_add(v, 2, &m); /* site 2 is out of range: nothing goes there */
	pdi_site_totals_add(v, 2, &m); /* a second task of the same step */
	cr_assert_eq(v[0].calls, 20);
	cr_assert_eq(v[0].bytes, 20 * 64);
	cr_assert_eq(v[0].time_ns, 20 * 500);
	cr_assert_eq(v[1].calls, 20);
	cr_assert_eq(v[1].bytes, 0);
	cr_assert_eq(v[1].time_ns, 2 * 9 * 2000, "the task's last call has no outgoing edge");
	cr_assert_eq(v[2].calls, 0);
	pdi_model_done(&m);
}

Test(site_totals, saturates)
{
	struct pdi_site_total v[1] = {{.calls = UINT64_MAX - 1}};
	struct pdi_model m;
	uint64_t t = 1;

	pdi_model_init(&m, NULL);
	add(&m, &t, 0, "MPI_Send", 5, 8);
	add(&m, &t, 0, "MPI_Send", 5, 8);
	pdi_site_totals_add(v, 1, &m);
	cr_assert_eq(v[0].calls, UINT64_MAX);
	pdi_model_done(&m);
}

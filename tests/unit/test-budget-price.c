/* SPDX-License-Identifier: GPL-2.0-only */
/* test-budget-price.c -- what a probed function costs a task at each budget level
 * (daemon/probe/budget_price.c), and the level the budget thins it to: rates and prices as
 * pdimond measured them for the polling benchmark and hpcc here, with and without the switches
 * of the probes that sampled and detached levels make. */
#include <criterion/criterion.h>

#include "budget_price.h"

/* ns of CPU, from pdimond's calibration on this VM (full 2.0 us, entry only 1.4 us) and its
 * workers' CPU per switch in the polling benchmark (about 5 ms) */
static const struct pdi_budget_price poll_fn = {.hit_ns = 2000, .entry_hit_ns = 1400, .shared_ns = 100,
						 .switch_ns = 5e6, .entry_only = true};
static const struct pdi_budget_price send_fn = {.hit_ns = 2000, .entry_hit_ns = 1400, .shared_ns = 100,
						 .switch_ns = 5e6, .entry_only = false};

Test(budget_price, a_level_costs_its_hits_over_its_duty_and_its_switches)
{
	/* MPI_Test at 200,000 calls a second, a core of its own: entry only 1.5 us a call = 30% */
	cr_assert_float_eq(pdi_budget_cost(&poll_fn, 2e5, 1, 1.0, 1.0), 0.30, 1e-9);
	/* sampled 1/8: 3.75% of hits, and two switches of 5 ms a second = 1% */
	cr_assert_float_eq(pdi_budget_cost(&poll_fn, 2e5, 4, 1.0, 1.0), 0.0375 + 0.01, 1e-9);
	/* detached: its re-measuring slice (1/256 of hits) and half a switch a second */
	cr_assert_float_eq(pdi_budget_cost(&poll_fn, 2e5, PDI_BUDGET_DETACHED, 1.0, 1.0),
			   2e5 * 1500e-9 / 256 + 0.0025, 1e-9);
	/* a rank with half a core pays twice as much of its time */
	cr_assert_float_eq(pdi_budget_cost(&poll_fn, 2e5, 4, 1.0, 0.5), 2 * (0.0375 + 0.01), 1e-9);
	/* full and entry-only levels switch nothing */
	cr_assert_float_eq(pdi_budget_cost(&send_fn, 1000, 0, 1.0, 1.0), 1000 * 2100e-9, 1e-12);
}

Test(budget_price, entry_only_only_where_the_model_can_do_without_the_return)
{
	cr_assert_eq(pdi_budget_next_level(&poll_fn, 0, +1), 1u);
	cr_assert_eq(pdi_budget_next_level(&send_fn, 0, +1), 2u);
	cr_assert_eq(pdi_budget_next_level(&send_fn, 2, -1), 0u);
	cr_assert_eq(pdi_budget_switches_per_period(1), 0.0);
	cr_assert_eq(pdi_budget_switches_per_period(6), 2.0);
	cr_assert_eq(pdi_budget_switches_per_period(PDI_BUDGET_DETACHED), 0.5);
}

Test(budget_price, a_hot_function_is_thinned_one_step)
{
	/* at 200,000 calls a second each thinner level costs less: the next one is taken */
	cr_assert_eq(pdi_budget_cheaper_level(&poll_fn, 2e5, 0, 1.0, 1.0), 1u);
	cr_assert_eq(pdi_budget_cheaper_level(&poll_fn, 2e5, 1, 1.0, 1.0), 2u);
	cr_assert_eq(pdi_budget_cheaper_level(&poll_fn, 2e5, 5, 1.0, 1.0), 6u);
}

Test(budget_price, sampling_that_costs_more_than_it_saves_is_skipped)
{
	/* MPI_Send at 4,000 calls a second: full 0.84%; sampled 1/2 would be 0.42% + 1% of switches,
	 * 1/32 0.03% + 1%: dearer than full, so thinning goes to detached (0.25% of switches) */
	double full = pdi_budget_cost(&send_fn, 4000, 0, 1.0, 1.0);

	cr_assert_gt(pdi_budget_cost(&send_fn, 4000, 6, 1.0, 1.0), full);
	cr_assert_eq(pdi_budget_cheaper_level(&send_fn, 4000, 0, 1.0, 1.0), (unsigned)PDI_BUDGET_DETACHED);
	cr_assert_lt(pdi_budget_cost(&send_fn, 4000, PDI_BUDGET_DETACHED, 1.0, 1.0), full);
	/* at 20,000 calls a second (4.2% full), 1/2 (2.1% + 1%) costs less than full: taken first */
	cr_assert_eq(pdi_budget_cheaper_level(&send_fn, 20000, 0, 1.0, 1.0), 2u);
	/* with switches taken as free (the budget before it counted them), every step is cheaper */
	struct pdi_budget_price free_switch = send_fn;

	free_switch.switch_ns = 0;
	cr_assert_eq(pdi_budget_cheaper_level(&free_switch, 4000, 0, 1.0, 1.0), 2u);
}

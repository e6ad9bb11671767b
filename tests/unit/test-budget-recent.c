/* SPDX-License-Identifier: GPL-2.0-only */
/* test-budget-recent.c -- a function's calls in the overhead budget's last slots, by when they were
 * made (daemon/probe/budget_recent.c): the rate of a burst that began mid-period, undiluted; calls
 * drained late count in their own slot, never more than were made there. */
#include <criterion/criterion.h>

#include "budget_recent.h"

#define SLOT_NS 31250000ull /* a period of 1 s in 32 slots, as the budget cuts it */

static void add(struct pdi_budget_recent *r, uint64_t slot, unsigned calls)
{
	for (unsigned i = 0; i < calls; i++)
		pdi_budget_recent_add(r, slot);
}

Test(budget_recent, a_burst_reads_its_own_rate_two_slots_after_it_began)
{
	struct pdi_budget_recent r = {0};

	/* quiet for 16 slots of the period (the period's average would be 1/9 of the burst's) */
	for (uint64_t s = 1000; s < 1016; s++)
		add(&r, s, 1);
	/* MPI_Test at 128,000 calls a second: 4,000 a slot */
	add(&r, 1016, 4000);
	add(&r, 1017, 4000);
	cr_assert_float_eq(pdi_budget_recent_rate(&r, 1018, 2, SLOT_NS), 128000.0, 1e-6);
	/* one slot into it, the window still holds a quiet slot: half the rate, never more */
	cr_assert_float_eq(pdi_budget_recent_rate(&r, 1017, 2, SLOT_NS), (1 + 4000) * 1e9 / (2 * SLOT_NS), 1e-6);
}

Test(budget_recent, calls_drained_late_count_in_the_slot_they_were_made_in)
{
	struct pdi_budget_recent r = {0};

	add(&r, 50, 10);
	add(&r, 51, 10);
	add(&r, 52, 5);   /* slot 52 read at 53 before all of its calls were drained */
	cr_assert_float_eq(pdi_budget_recent_rate(&r, 53, 2, SLOT_NS), 15 * 1e9 / (2 * SLOT_NS), 1e-6);
	add(&r, 53, 10);
	add(&r, 52, 5);   /* drained now: counted in slot 52, not in 53 */
	cr_assert_float_eq(pdi_budget_recent_rate(&r, 54, 2, SLOT_NS), 20 * 1e9 / (2 * SLOT_NS), 1e-6);
	/* a call of a slot whose bucket a later slot took is dropped, not counted in the later one */
	add(&r, 54, 1);
	add(&r, 50, 100);
	cr_assert_float_eq(pdi_budget_recent_rate(&r, 55, 2, SLOT_NS), 11 * 1e9 / (2 * SLOT_NS), 1e-6);
}

Test(budget_recent, slots_without_calls_read_as_none)
{
	struct pdi_budget_recent r = {0};

	add(&r, 7, 1000);
	/* four slots later its bucket is stale, not a burst */
	cr_assert_float_eq(pdi_budget_recent_rate(&r, 12, 2, SLOT_NS), 0.0, 1e-9);
	cr_assert_float_eq(pdi_budget_recent_rate(&r, 1, 2, SLOT_NS), 0.0, 1e-9); /* before two slots */
	cr_assert_float_eq(pdi_budget_recent_rate(&r, 9, PDI_BUDGET_RECENT_SLOTS, SLOT_NS), 0.0, 1e-9);
}

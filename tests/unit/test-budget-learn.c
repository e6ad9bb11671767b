/* SPDX-License-Identifier: GPL-2.0-only */
/* test-budget-learn.c -- the overhead budget's levels learned per program
 * (daemon/probe/budget_learn.c): a step's tasks raise its program's levels to the most degraded
 * any of them held, the next step replaces them, the table keeps at most its size (the least
 * recently used program goes), an unknown program (0) has none, and bad sizes are refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "budget_learn.h"

#define NF 4

/* programs, as pdi_program_hash() names them */
static const uint64_t a = 10, b = 11, c = 12;

Test(budget_learn, a_steps_tasks_raise_the_next_step_replaces)
{
	struct pdi_budget_learned *l;
	const uint8_t t1[NF] = {0, 3, 0, 0}, t2[NF] = {0, 2, 7, 0}, next[NF] = {0, 0, 4, 0};
	const uint8_t *got;

	cr_assert_eq(pdi_budget_learned_new(8, NF, &l), 0);
	cr_assert_null(pdi_budget_learned_find(l, a));
	cr_assert_eq(pdi_budget_learned_note(l, a, 42, t1), 0);
	cr_assert_eq(pdi_budget_learned_note(l, a, 42, t2), 0);
	got = pdi_budget_learned_find(l, a);
	cr_assert_not_null(got);
	cr_assert_eq(memcmp(got, (uint8_t[NF]){0, 3, 7, 0}, NF), 0, "the most degraded of the step's tasks");
	cr_assert_eq(pdi_budget_learned_note(l, a, 43, next), 0);
	cr_assert_eq(memcmp(pdi_budget_learned_find(l, a), next, NF), 0, "the program's latest run");
	cr_assert_null(pdi_budget_learned_find(l, b));
	pdi_budget_learned_free(l);
}

Test(budget_learn, bounded_least_recent_goes_and_full_probes_take_no_room)
{
	struct pdi_budget_learned *l;
	const uint8_t some[NF] = {1, 0, 0, 0}, none[NF] = {0};

	cr_assert_eq(pdi_budget_learned_new(2, NF, &l), 0);
	cr_assert_eq(pdi_budget_learned_note(l, c, 1, none), 0);
	cr_assert_eq(pdi_budget_learned_count(l), 0, "a program that needed nothing takes no room");
	cr_assert_eq(pdi_budget_learned_note(l, a, 1, some), 0);
	cr_assert_eq(pdi_budget_learned_note(l, b, 2, some), 0);
	cr_assert_not_null(pdi_budget_learned_find(l, a)); /* a is used: b is the least recent */
	cr_assert_eq(pdi_budget_learned_note(l, c, 3, some), 0);
	cr_assert_eq(pdi_budget_learned_count(l), 2);
	cr_assert_not_null(pdi_budget_learned_find(l, a));
	cr_assert_null(pdi_budget_learned_find(l, b));
	cr_assert_not_null(pdi_budget_learned_find(l, c));
	cr_assert_null(pdi_budget_learned_find(l, 0), "an unknown program has no levels");
	pdi_budget_learned_free(l);
}

Test(budget_learn, sizes)
{
	struct pdi_budget_learned *l = NULL;

	cr_assert_eq(pdi_budget_learned_new(0, NF, &l), -EINVAL);
	cr_assert_eq(pdi_budget_learned_new(4, 0, &l), -EINVAL);
	cr_assert_null(l, "untouched on failure");
	cr_assert_null(pdi_budget_learned_find(NULL, a));
}

static int collect(void *ctx, uint64_t program, uint64_t used, const uint8_t *levels)
{
	uint64_t *got = ctx;

	(void)used;
	got[got[0]++ + 1] = program * 100 + levels[1];
	return 0;
}

Test(budget_learn, kept_levels_put_back_and_changes_given_once)
{
	struct pdi_budget_learned *l;
	const uint8_t kept[NF] = {0, 4, 0, 0}, now[NF] = {0, 6, 0, 0}, none[NF] = {0};
	uint64_t got[8] = {0};

	cr_assert_eq(pdi_budget_learned_new(2, NF, &l), 0);
	/* as the store lists them, least recent first: the bound keeps the most recent */
	cr_assert_eq(pdi_budget_learned_put(l, a, 10, kept), 0);
	cr_assert_eq(pdi_budget_learned_put(l, b, 11, kept), 0);
	cr_assert_eq(pdi_budget_learned_put(l, c, 12, kept), 0);
	cr_assert_eq(pdi_budget_learned_put(l, 7, 13, none), 0, "nothing degraded takes no room");
	cr_assert_eq(pdi_budget_learned_count(l), 2);
	cr_assert_null(pdi_budget_learned_find(l, a));
	cr_assert_eq(memcmp(pdi_budget_learned_find(l, b), kept, NF), 0);
	cr_assert_eq(pdi_budget_learned_changed(l, collect, got), 0);
	cr_assert_eq(got[0], 0, "what the store gave back is not written again");
	/* the next step of c: noted, given once; a later note after the clock the store had */
	cr_assert_eq(pdi_budget_learned_note(l, c, 5, now), 0);
	cr_assert_eq(pdi_budget_learned_changed(l, collect, got), 0);
	cr_assert_eq(got[0], 1);
	cr_assert_eq(got[1], c * 100 + 6);
	cr_assert_eq(pdi_budget_learned_changed(l, collect, got), 0);
	cr_assert_eq(got[0], 1, "once");
	pdi_budget_learned_free(l);
}

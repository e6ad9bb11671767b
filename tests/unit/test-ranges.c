/* SPDX-License-Identifier: GPL-2.0-only */
/* test-ranges.c -- rank sets printed as ranges. */
#include <criterion/criterion.h>
#include <string.h>

#include "ranges.h"

static const char *fmt(const int *v, size_t n)
{
	static char buf[256];

	pdi_ranges_format(v, n, buf, sizeof(buf));
	return buf;
}

Test(ranges, empty_and_single)
{
	cr_assert_str_eq(fmt(NULL, 0), "[]");
	cr_assert_str_eq(fmt((int[]){7}, 1), "[7]");
}

Test(ranges, runs_singles_unsorted_and_duplicates)
{
	cr_assert_str_eq(fmt((int[]){0, 1, 2, 3, 5, 7, 8, 9}, 8), "[0-3,5,7-9]");
	cr_assert_str_eq(fmt((int[]){9, 3, 8, 1, 2, 7, 0, 5}, 8), "[0-3,5,7-9]");
	cr_assert_str_eq(fmt((int[]){4, 4, 5, 5, 10}, 5), "[4-5,10]");
	cr_assert_str_eq(fmt((int[]){-1, 0, 1}, 3), "[-1-1]");
}

Test(ranges, truncates_but_reports_the_full_length)
{
	char small[6];
	int v[] = {0, 2, 4, 6, 8};
	size_t need = pdi_ranges_format(v, 5, small, sizeof(small));

	cr_assert_eq(need, strlen("[0,2,4,6,8]"));
	cr_assert_str_eq(small, "[0,2,");
}

Test(ranges, a_hundred_thousand_ranks)
{
	static int v[100000];
	char buf[64];

	for (int i = 0; i < 100000; i++)
		v[i] = i == 4242 ? 0 : i; /* one hole at 4242 */
	pdi_ranges_format(v, 100000, buf, sizeof(buf));
	cr_assert_str_eq(buf, "[0-4241,4243-99999]");
}

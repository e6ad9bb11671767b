/* SPDX-License-Identifier: GPL-2.0-only */
/* test-trend-runs.c -- which stored runs trends fit, and the one-line refusals. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "trend_runs.h"

/* calls per task of the growing site: 10 (n - 1); of the other: 5 */
static struct pdi_trend_site_total sites[4][2];

static struct pdi_trend_run run(int i, const char *exe, const char *build, uint32_t tasks, uint64_t size)
{
	sites[i][0] = (struct pdi_trend_site_total){.name = "MPI_Send@g.c:5", .calls = 10ull * (tasks - 1) * tasks,
						    .bytes = 80ull * (tasks - 1) * tasks, .time_ns = 1000ull * tasks};
	sites[i][1] = (struct pdi_trend_site_total){.name = "MPI_Barrier@g.c:9", .calls = 5ull * tasks,
						    .time_ns = 500ull * tasks};
	return (struct pdi_trend_run){.step = "s", .executable = exe, .build = build, .verdict = "completed",
				      .ended = 100 + i, .input_size = size, .tasks = tasks, .counted = tasks,
				      .sites = sites[i], .nsites = 2};
}

static int refused(const struct pdi_trend_run *v, size_t n, const char *program, char *err)
{
	struct pdi_trend_set *s = (struct pdi_trend_set *)0x1;
	int r = pdi_trend_set_build(program, "local store", v, n, &s, err, 256);

	cr_assert_lt(r, 0);
	cr_assert_eq(s, (struct pdi_trend_set *)0x1, "untouched");
	cr_assert_neq(err[0], 0);
	cr_assert_null(strchr(err, '\n'), "one line: %s", err);
	return r;
}

Test(trend_runs, three_task_counts_rank_the_growing_site_first)
{
	struct pdi_trend_run v[] = {run(0, "/b/grow", "build-id:aa", 2, 0), run(1, "/b/grow", "build-id:aa", 4, 0),
				    run(2, "/b/grow", "build-id:aa", 8, 0)};
	struct pdi_trend_set *s;
	char err[256];

	cr_assert_eq(pdi_trend_set_build("grow", "local store", v, 3, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s->doc.nreports, 1);
	cr_assert_str_eq(s->doc.reports[0].feature, "tasks");
	cr_assert_str_eq(s->doc.executable, "/b/grow");
	cr_assert_str_eq(s->doc.build, "build-id:aa");
	cr_assert_eq(s->trends[0].n, 5);
	cr_assert_str_eq(s->names[s->trends[0].v[0].site], "MPI_Send@g.c:5");
	cr_assert_eq(s->trends[0].v[1].metric, PDI_TREND_CALLS);
	cr_assert_float_eq(s->trends[0].v[1].fit.c, 1.0, 1e-6);
	cr_assert_float_eq(s->trends[0].v[1].fit.b, 10.0, 1e-6);
	cr_assert(s->trends[0].v[1].flagged);
	cr_assert_eq(s->nnotes, 0);
	pdi_trend_set_free(s);
}

Test(trend_runs, input_sizes_at_one_task_count_are_a_second_feature)
{
	struct pdi_trend_run v[] = {run(0, "/b/grow", "x", 2, 100), run(1, "/b/grow", "x", 4, 100),
				    run(2, "/b/grow", "x", 4, 200), run(3, "/b/grow", "x", 4, 400)};
	struct pdi_trend_set *s;
	char err[256];

	cr_assert_eq(pdi_trend_set_build("/b/grow", "site store", v, 4, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s->doc.nreports, 2);
	cr_assert_str_eq(s->reports[0].feature, "tasks");
	cr_assert_eq(s->reports[0].held, 100);
	cr_assert_eq(s->inputs[0].nruns, 2);
	cr_assert_str_eq(s->reports[1].feature, "input_size");
	cr_assert_eq(s->reports[1].held, 4);
	cr_assert_eq(s->inputs[1].nruns, 3);
	pdi_trend_set_free(s);
}

Test(trend_runs, a_rebuild_and_unfinished_runs_are_left_out_with_a_note)
{
	struct pdi_trend_run v[] = {run(0, "/b/grow", "old", 2, 0), run(1, "/b/grow", "new", 4, 0),
				    run(2, "/b/grow", "new", 8, 0), run(3, "/b/grow", "new", 2, 0)};
	struct pdi_trend_set *s;
	char err[256];

	v[2].verdict = "hang";
	v[3].tasks = v[3].counted = 4;
	cr_assert_eq(refused(v, 4, "grow", err), -EINVAL);
	cr_assert_not_null(strstr(err, "2 usable runs of /b/grow all ran at 4 tasks"), "%s", err);
	v[3].tasks = v[3].counted = 2;
	v[2].verdict = "completed";
	cr_assert_eq(pdi_trend_set_build("grow", "local store", v, 4, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s->nnotes, 1);
	cr_assert_str_eq(s->notes[0], "1 run of an earlier build of /b/grow left out: it was rebuilt since");
	cr_assert_eq(s->inputs[0].nruns, 3);
	pdi_trend_set_free(s);
}

Test(trend_runs, refusals_say_what_to_do)
{
	struct pdi_trend_run v[] = {run(0, "/b/grow", "x", 4, 0), run(1, "/c/grow", "y", 8, 0),
				    run(2, "/b/grow", "x", 4, 0)};
	char err[256];

	cr_assert_eq(refused(v, 1, "grow", err), -EINVAL);
	cr_assert_not_null(strstr(err, "/b/grow has 1 stored run; trends need runs at 2 or more"), "%s", err);
	cr_assert_eq(refused(v, 3, "nothing", err), -ENOENT);
	cr_assert_not_null(strstr(err, "no stored run of nothing"), "%s", err);
	cr_assert_eq(refused(v, 3, "grow", err), -ENOTUNIQ);
	cr_assert_not_null(strstr(err, "name one by its path"), "%s", err);
	cr_assert_eq(refused((struct pdi_trend_run[]){v[0], v[2]}, 2, "/b/grow", err), -EINVAL);
	cr_assert_not_null(strstr(err, "all ran at 4 tasks"), "%s", err);
}

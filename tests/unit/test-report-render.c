/* SPDX-License-Identifier: GPL-2.0-only */
/* test-report-render.c -- a report job's result is set whole or not at all: every allocation
 * of the rendering made to fail in turn (the link wraps malloc, calloc, realloc and strdup),
 * and each time the outputs are left as they were, never pointing at freed memory (the bug
 * pdimon's review found in report.c). Run under ASan too: a leak or a use after free fails. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "mpi_funcs.h"
#include "report.h"

/* ---- allocation failures on demand ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

static long fail_at = -1, allocations;

static bool fails(void)
{
	return fail_at >= 0 && allocations++ == fail_at;
}

void *__wrap_malloc(size_t n)
{
	return fails() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fails() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fails() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = __wrap_malloc(n);

	return d ? memcpy(d, s, n) : NULL;
}

/* ---- a small hung step to render ---- */

static const char *const fns[] = {"MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Barrier"};

struct step {
	struct pdi_site sites[4];
	struct pdi_model models[3];
	struct pdi_view_task tasks[3];
	struct pdi_view view;
	struct pdi_analysis a;
};

static void make_step(struct step *s)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 4; i++)
		s->sites[i] = (struct pdi_site){.fn = (uint16_t)pdi_mpi_func_find(fns[i]), .name = (char *)fns[i],
						.caller = (char *)"main", .file = (char *)"ring.c", .line = 39 + i};
	for (int t = 0; t < 3; t++) {
		uint64_t now = 0;

		pdi_model_init(&s->models[t], NULL);
		for (int it = 0; it < 10; it++)
			for (int i = 0; i < 4; i++) {
				struct pdi_call c = {.site = (uint32_t)i, .fn = s->sites[i].fn, .peer = PDI_NO_PEER,
						     .t_enter = now += 1000};

				c.t_exit = now += 500;
				cr_assert_eq(pdi_model_add_call(&s->models[t], &c), 0);
			}
		s->tasks[t] = (struct pdi_view_task){.rank = t, .pid = 100 + t, .model = &s->models[t], .running = t != 2,
						     .progress = 10 - (uint64_t)(t == 2)};
		s->tasks[t].where = (struct pdi_where){.kind = t == 2 ? PDI_WHERE_COMPUTING : PDI_WHERE_BLOCKED,
						       .site = t == 2 ? 2 : 3};
		strcpy(s->tasks[t].where.text, t == 2 ? "after MPI_Waitall" : "MPI_Barrier");
	}
	s->view = (struct pdi_view){.name = (char *)"7.0", .job_id = 7, .sites = s->sites, .nsites = 4, .tasks = s->tasks,
				    .ntasks = 3, .nodes = 1, .nodes_answered = 1, .running = true};
	cr_assert_eq(pdi_analysis_build(&s->view, NULL, &s->a), 0);
}

static void step_done(struct step *s)
{
	pdi_analysis_done(&s->a);
	for (int t = 0; t < 3; t++)
		pdi_model_done(&s->models[t]);
}

/* Render WHAT in FORMAT once with each of its allocations failing in turn. */
static void each_failure(enum pdi_report_what what, const char *format)
{
	static char sentinel_text[] = "untouched", sentinel_summary[] = "untouched too";
	struct pdi_report_result res = {0};
	long total, failed = 0;
	struct step s;

	make_step(&s);
	/* how many allocations a rendering makes */
	allocations = 0;
	fail_at = 1L << 40;
	cr_assert_eq(pdi_report_render(&s.a, what, format, &res), 0);
	total = allocations;
	fail_at = -1;
	pdi_report_result_done(&res);
	for (long n = 0; n < total; n++) {
		int r;

		res = (struct pdi_report_result){.text = sentinel_text, .summary = sentinel_summary};
		allocations = 0;
		fail_at = n;
		r = pdi_report_render(&s.a, what, format, &res);
		fail_at = -1;
		if (r == 0) {
			/* that allocation had a fallback (a rank list printed "?"): whole all the same */
			cr_expect_neq(res.text, sentinel_text);
			cr_expect(what == PDI_REPORT ? res.summary != sentinel_summary : res.summary == NULL);
			pdi_report_result_done(&res);
			continue;
		}
		failed++;
		cr_assert_eq(r, -ENOMEM);
		cr_assert_eq(res.text, sentinel_text, "allocation %ld failed: the text output was touched", n);
		cr_assert_eq(res.summary, sentinel_summary, "allocation %ld failed: the summary output was touched", n);
	}
	cr_expect_gt(failed, 0, "none of %ld allocations failed the rendering (%ld)", total, failed);
	step_done(&s);
}

Test(report_render, a_report_is_set_whole_or_not_at_all)
{
	each_failure(PDI_REPORT, "json");
}

Test(report_render, an_analysis_in_text_is_set_whole_or_not_at_all)
{
	each_failure(PDI_ANALYSIS, "text");
}

Test(report_render, an_analysis_in_dot_is_set_whole_or_not_at_all)
{
	each_failure(PDI_ANALYSIS, "dot");
}

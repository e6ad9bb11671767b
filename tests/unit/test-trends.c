/* SPDX-License-Identifier: GPL-2.0-only */
/* test-trends.c -- ti-trend-prof's fits, ranking and flagging, and their rendering. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trends.h"

static struct pdi_trend_fit fit(const double *x, const double *y, size_t n)
{
	struct pdi_trend_fit f;

	cr_assert_eq(pdi_trend_fit(x, y, n, &f), 0);
	return f;
}

Test(trends, a_line_is_linear_with_exponent_one)
{
	double x[] = {2, 4, 8}, y[] = {10 + 3 * 2, 10 + 3 * 4, 10 + 3 * 8};
	struct pdi_trend_fit f = fit(x, y, 3);

	cr_assert_eq(f.model, PDI_TREND_LINEAR);
	cr_assert_float_eq(f.c, 1.0, 1e-9);
	cr_assert_float_eq(f.b, 3.0, 1e-9);
	cr_assert_float_eq(f.a, 10.0, 1e-9);
	cr_assert_float_eq(f.r2, 1.0, 1e-9);
}

Test(trends, a_square_law_is_a_power_law)
{
	double x[] = {4, 8, 16, 32}, y[4];
	struct pdi_trend_fit f;

	for (int i = 0; i < 4; i++)
		y[i] = 41 * x[i] * x[i] - 416; /* ti-trend-prof's Table 1, first row */
	f = fit(x, y, 4);
	cr_assert_eq(f.model, PDI_TREND_POWER);
	cr_assert_float_eq(f.c, 2.0, 1e-4);
	cr_assert_float_eq(f.b, 41.0, 1e-2);
	cr_assert_float_eq(f.a, -416.0, 1.0);
	cr_assert(f.r2 > 0.999999);
	cr_assert(f.lin_r2 < f.r2);
}

Test(trends, large_input_sizes_fit_as_well_as_small_task_counts)
{
	double x[] = {32768, 262144, 2097152}, y[3];
	struct pdi_trend_fit f;

	for (int i = 0; i < 3; i++)
		y[i] = 5 + 2e-3 * pow(x[i], 1.5);
	f = fit(x, y, 3);
	cr_assert_eq(f.model, PDI_TREND_POWER);
	cr_assert_float_eq(f.c, 1.5, 1e-3);
}

Test(trends, a_constant_is_flat_even_with_noise)
{
	double x[] = {2, 4, 8, 2, 4, 8}, y[] = {1000, 1001, 999, 1000.5, 1000, 1002};
	struct pdi_trend_fit f = fit(x, y, 6);

	cr_assert_eq(f.model, PDI_TREND_FLAT);
	cr_assert_eq(f.c, 0);
	cr_assert_eq(f.b, 0);
	cr_assert_float_eq(f.a, 1000.4166, 1e-3);
}

Test(trends, two_sizes_fit_a_line_only)
{
	double x[] = {2, 4}, y[] = {1, 5};
	struct pdi_trend_fit f = fit(x, y, 2);

	cr_assert_eq(f.model, PDI_TREND_LINEAR);
	cr_assert(!f.pow_ok);
	cr_assert_float_eq(f.b, 2.0, 1e-12);
}

Test(trends, refuses_a_single_size_and_bad_sizes)
{
	struct pdi_trend_fit f = {.a = 42};
	double one[] = {4, 4, 4}, bad[] = {2, 0, 8}, nan_x[] = {2, NAN, 8}, y[] = {1, 2, 3};

	cr_assert_eq(pdi_trend_fit(one, y, 3, &f), -EINVAL);
	cr_assert_eq(pdi_trend_fit(bad, y, 3, &f), -EINVAL);
	cr_assert_eq(pdi_trend_fit(nan_x, y, 3, &f), -EINVAL);
	cr_assert_eq(pdi_trend_fit(one, y, 1, &f), -EINVAL);
	cr_assert_eq(f.a, 42, "untouched on failure");
}

/* Three sites at 2, 4 and 8 tasks: a flat barrier, a send per peer (n - 1 per task) and a
 * reduction whose bytes grow as n^2. */
#define NRUNS 3
static const double sizes[NRUNS] = {2, 4, 8};
static const char *const names[] = {"MPI_Barrier@a.c:10", "MPI_Send@a.c:20", "MPI_Allreduce@a.c:30"};

static void fill(double *v)
{
	for (int k = 0; k < NRUNS; k++) {
		double n = sizes[k];
		double *b = &v[(0 * NRUNS + k) * PDI_TREND_NMETRICS];
		double *s = &v[(1 * NRUNS + k) * PDI_TREND_NMETRICS];
		double *r = &v[(2 * NRUNS + k) * PDI_TREND_NMETRICS];

		b[PDI_TREND_CALLS] = 100;
		b[PDI_TREND_TIME] = 1e6 * n * n; /* waits grow with oversubscription: never flagged */
		s[PDI_TREND_CALLS] = 100 * (n - 1);
		s[PDI_TREND_BYTES] = 800 * (n - 1);
		s[PDI_TREND_TIME] = 5e5 * n;
		r[PDI_TREND_CALLS] = 100;
		r[PDI_TREND_BYTES] = 8 * n * n + 64;
		r[PDI_TREND_TIME] = 2e5 * n;
	}
}

Test(trends, ranks_by_exponent_then_coefficient_and_flags_the_fast_growers)
{
	double v[3 * NRUNS * PDI_TREND_NMETRICS] = {0};
	struct pdi_trend_input in = {.nruns = NRUNS, .x = sizes, .nsites = 3, .sites = names, .values = v};
	struct pdi_trends t;

	fill(v);
	cr_assert_eq(pdi_trends_compute(&in, &t), 0);
	cr_assert_eq(t.n, 8, "the barrier's bytes are zero throughout: left out");
	/* counts first: allreduce bytes n^2, then the send's bytes (coefficient 800) and calls
	 * (100), then the flat calls; time after all counts */
	cr_assert_eq(t.v[0].site, 2);
	cr_assert_eq(t.v[0].metric, PDI_TREND_BYTES);
	cr_assert_float_eq(t.v[0].fit.c, 2.0, 1e-3);
	cr_assert_eq(t.v[0].fit.model, PDI_TREND_POWER);
	cr_assert_eq(t.v[1].site, 1);
	cr_assert_eq(t.v[1].metric, PDI_TREND_BYTES);
	cr_assert_eq(t.v[2].site, 1);
	cr_assert_eq(t.v[2].metric, PDI_TREND_CALLS);
	cr_assert_float_eq(t.v[2].fit.c, 1.0, 1e-9);
	cr_assert_float_eq(t.v[2].fit.b, 100.0, 1e-6);
	cr_assert_eq(t.v[3].fit.model, PDI_TREND_FLAT);
	cr_assert_eq(t.v[4].fit.model, PDI_TREND_FLAT);
	cr_assert_eq(t.v[5].site, 0);
	cr_assert_eq(t.v[5].metric, PDI_TREND_TIME);
	for (size_t i = 5; i < t.n; i++)
		cr_assert_eq(t.v[i].metric, PDI_TREND_TIME);
	/* the median calls exponent is 0 (two flat, one linear): the send's calls stand out; the
	 * median bytes exponent is (1 + 2) / 2: the allreduce's n^2 stands out; time never flags */
	cr_assert_float_eq(t.median_exponent[PDI_TREND_CALLS], 0.0, 1e-12);
	cr_assert_eq(t.nflagged, 2);
	cr_assert(t.v[0].flagged);
	cr_assert(t.v[2].flagged);
	for (size_t i = 0; i < t.n; i++)
		cr_assert(!t.v[i].flagged || i == 0 || i == 2);
	pdi_trends_done(&t);
	cr_assert_null(t.v);
}

Test(trends, nothing_grows_nothing_flags)
{
	double v[3 * NRUNS * PDI_TREND_NMETRICS] = {0};
	struct pdi_trend_input in = {.nruns = NRUNS, .x = sizes, .nsites = 3, .sites = names, .values = v};
	struct pdi_trends t;

	for (int s = 0; s < 3; s++)
		for (int k = 0; k < NRUNS; k++) {
			v[(s * NRUNS + k) * PDI_TREND_NMETRICS + PDI_TREND_CALLS] = 50 * (s + 1) + (k == 1);
			v[(s * NRUNS + k) * PDI_TREND_NMETRICS + PDI_TREND_BYTES] = 4096;
			v[(s * NRUNS + k) * PDI_TREND_NMETRICS + PDI_TREND_TIME] = 1e5 * sizes[k] * sizes[k];
		}
	cr_assert_eq(pdi_trends_compute(&in, &t), 0);
	cr_assert_eq(t.nflagged, 0);
	pdi_trends_done(&t);
}

Test(trends, a_site_seen_only_at_larger_sizes_grows_from_nothing)
{
	double v[1 * NRUNS * PDI_TREND_NMETRICS] = {0};
	struct pdi_trend_input in = {.nruns = NRUNS, .x = sizes, .nsites = 1, .sites = names, .values = v};
	struct pdi_trends t;

	v[(0 * NRUNS + 1) * PDI_TREND_NMETRICS + PDI_TREND_CALLS] = 10;
	v[(0 * NRUNS + 2) * PDI_TREND_NMETRICS + PDI_TREND_CALLS] = 30;
	cr_assert_eq(pdi_trends_compute(&in, &t), 0);
	cr_assert_eq(t.n, 1);
	cr_assert(t.v[0].growth > 1e9);
	pdi_trends_done(&t);
}

Test(trends, refuses_runs_at_one_size)
{
	double x[] = {4, 4}, v[2 * PDI_TREND_NMETRICS] = {1, 1, 1, 1, 1, 1};
	struct pdi_trend_input in = {.nruns = 2, .x = x, .nsites = 1, .sites = names, .values = v};
	struct pdi_trends t = {.n = 7};

	cr_assert_eq(pdi_trends_compute(&in, &t), -EINVAL);
	cr_assert_eq(t.n, 7);
}

Test(trends, renders_json_text_and_svg)
{
	double v[3 * NRUNS * PDI_TREND_NMETRICS] = {0};
	const char *evil[] = {"MPI_Barrier@<a&b>.c:10", names[1], names[2]};
	struct pdi_trend_input in = {.nruns = NRUNS, .x = sizes, .nsites = 3, .sites = evil, .values = v};
	struct pdi_trends t;
	struct pdi_trend_report rep = {.feature = "tasks", .held = 0, .in = &in, .trends = &t};
	const char *notes[] = {"1 run of another build left out"};
	struct pdi_trend_doc d = {.program = "a.out", .executable = "/x/a.out", .build = "abcd", .source = "local store",
				  .reports = &rep, .nreports = 1, .notes = notes, .nnotes = 1};
	char *json, *text, *svg;

	fill(v);
	cr_assert_eq(pdi_trends_compute(&in, &t), 0);
	json = pdi_trends_render_json(&d);
	text = pdi_trends_render_text(&d);
	svg = pdi_trends_render_svg(&d);
	cr_assert_not_null(json);
	cr_assert_not_null(text);
	cr_assert_not_null(svg);
	cr_assert_not_null(strstr(json, "\"program\":\"a.out\""), "%s", json);
	cr_assert_not_null(strstr(json, "\"runs\":3"));
	cr_assert_not_null(strstr(json, "\"sizes\":[2,4,8]"));
	cr_assert_not_null(strstr(json, "\"sites\":[{\"rank\":1,\"site\":\"MPI_Allreduce@a.c:30\",\"metric\":\"bytes\""));
	cr_assert_not_null(strstr(json, "\"input_size\":null"));
	cr_assert_not_null(strstr(text, "100n - 100"), "%s", text);
	cr_assert_not_null(strstr(text, "! MPI_Send@a.c:20: calls per task grows as n^1.00 while the median site's grows as n^0.00"), "%s", text);
	cr_assert_not_null(strstr(text, "note: 1 run of another build left out"));
	cr_assert_not_null(strstr(svg, "&lt;a&amp;b&gt;"));
	cr_assert_null(strstr(svg, "<a&b>"));
	cr_assert_not_null(strstr(svg, "</svg>"));
	free(json);
	free(text);
	free(svg);
	pdi_trends_done(&t);
}

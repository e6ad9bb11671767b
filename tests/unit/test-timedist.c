/* SPDX-License-Identifier: GPL-2.0-only */
/* test-timedist.c -- Welford Gaussian and the bounded, online-merged histogram. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "timedist.h"

/* Deterministic pseudo-random durations: a few hundred ns to a few ms, nanosecond-scale
 * magnitudes as the model sees them. */
static uint64_t lcg_state;

static double next_value(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return 1e9 + (double)(lcg_state >> 40) * 0.37; /* around 1 s, spread over ~6 ms */
}

static void two_pass(const double *v, size_t n, double *mean, double *stddev)
{
	double s = 0, ss = 0;

	for (size_t i = 0; i < n; i++)
		s += v[i];
	*mean = s / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*stddev = sqrt(ss / (double)n);
}

static void assert_hist_sane(const struct pdi_hist *h)
{
	cr_assert_leq(h->n, PDI_HIST_BUCKETS);
	for (unsigned i = 0; i < h->n; i++)
		cr_assert_gt(h->count[i], 0u, "bucket %u is empty", i);
	for (unsigned i = 0; i + 1 < h->n; i++)
		cr_assert_lt(h->mean[i], h->mean[i + 1], "buckets %u and %u out of order: %g %g", i, i + 1,
			     (double)h->mean[i], (double)h->mean[i + 1]);
}

Test(timedist, gauss_empty_and_single)
{
	struct pdi_gauss g = {0};

	cr_assert_eq(pdi_gauss_stddev(&g), 0.0);
	pdi_gauss_add(&g, 123.0);
	cr_assert_eq(g.n, 1);
	cr_assert_eq(g.mean, 123.0);
	cr_assert_eq(pdi_gauss_stddev(&g), 0.0);
}

Test(timedist, gauss_textbook_values)
{
	/* population stddev of 2,4,4,4,5,5,7,9 is exactly 2, mean 5 */
	static const double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
	struct pdi_gauss g = {0};

	for (unsigned i = 0; i < 8; i++)
		pdi_gauss_add(&g, v[i]);
	cr_assert_eq(g.n, 8);
	cr_assert_float_eq(g.mean, 5.0, 1e-12);
	cr_assert_float_eq(g.m2, 32.0, 1e-12);
	cr_assert_float_eq(pdi_gauss_stddev(&g), 2.0, 1e-12);
}

Test(timedist, gauss_matches_two_pass)
{
	enum { N = 500 };
	double v[N], mean, sd;
	struct pdi_gauss g = {0};

	lcg_state = 1;
	for (unsigned i = 0; i < N; i++) {
		v[i] = next_value();
		pdi_gauss_add(&g, v[i]);
	}
	two_pass(v, N, &mean, &sd);
	cr_assert_eq(g.n, N);
	cr_assert(sd > 1e5, "test data should have a real spread, got %g", sd);
	cr_assert_float_eq(g.mean, mean, mean * 1e-13);
	cr_assert_float_eq(pdi_gauss_stddev(&g), sd, sd * 1e-9);
}

Test(timedist, gauss_constant_values_have_zero_stddev)
{
	struct pdi_gauss g = {0};

	for (unsigned i = 0; i < 300; i++)
		pdi_gauss_add(&g, 987654321.0);
	cr_assert_eq(g.mean, 987654321.0);
	cr_assert_eq(g.m2, 0.0);
	cr_assert_eq(pdi_gauss_stddev(&g), 0.0);
}

Test(timedist, gauss_merge_equals_adding_all)
{
	enum { N = 400 };
	double v[N];
	struct pdi_gauss all = {0}, a = {0}, b = {0}, c = {0};

	lcg_state = 42;
	for (unsigned i = 0; i < N; i++) {
		v[i] = next_value();
		pdi_gauss_add(&all, v[i]);
		/* uneven parts */
		pdi_gauss_add(i < 37 ? &a : i < 300 ? &b : &c, v[i]);
	}
	pdi_gauss_merge(&a, &b);
	pdi_gauss_merge(&a, &c);
	cr_assert_eq(a.n, all.n);
	cr_assert_float_eq(a.mean, all.mean, all.mean * 1e-13);
	cr_assert_float_eq(a.m2, all.m2, all.m2 * 1e-9);
	cr_assert_float_eq(pdi_gauss_stddev(&a), pdi_gauss_stddev(&all), pdi_gauss_stddev(&all) * 1e-9);
}

Test(timedist, gauss_merge_with_empty)
{
	struct pdi_gauss g = {0}, empty = {0}, into = {0};

	pdi_gauss_add(&g, 10);
	pdi_gauss_add(&g, 20);
	pdi_gauss_add(&g, 60);

	/* empty into something: unchanged */
	pdi_gauss_merge(&g, &empty);
	cr_assert_eq(g.n, 3);
	cr_assert_float_eq(g.mean, 30.0, 1e-12);
	cr_assert_float_eq(g.m2, 1400.0, 1e-9); /* 400 + 100 + 900 */

	/* something into empty: a copy */
	pdi_gauss_merge(&into, &g);
	cr_assert_eq(into.n, 3);
	cr_assert_eq(into.mean, g.mean);
	cr_assert_eq(into.m2, g.m2);
}

Test(timedist, hist_equal_values_share_a_bucket)
{
	struct pdi_hist h = {0};

	for (unsigned i = 0; i < 100; i++)
		pdi_hist_add(&h, 42.0);
	cr_assert_eq(h.n, 1);
	cr_assert_eq(h.mean[0], 42.0f);
	cr_assert_eq(h.count[0], 100u);

	pdi_hist_add(&h, 1.5);
	pdi_hist_add(&h, 42.0);
	pdi_hist_add(&h, 1.5);
	cr_assert_eq(h.n, 2);
	cr_assert_eq(h.mean[0], 1.5f);
	cr_assert_eq(h.count[0], 2u);
	cr_assert_eq(h.mean[1], 42.0f);
	cr_assert_eq(h.count[1], 101u);
	cr_assert_eq(pdi_hist_total(&h), 103u);
}

Test(timedist, hist_distinct_values_sorted_until_full)
{
	static const double v[] = {500, 100, 700, 0, 300, 600, 200, 400};
	struct pdi_hist h = {0};

	for (unsigned i = 0; i < 8; i++)
		pdi_hist_add(&h, v[i]);
	cr_assert_eq(h.n, PDI_HIST_BUCKETS);
	for (unsigned i = 0; i < 8; i++) {
		cr_assert_eq(h.mean[i], (float)(100 * i));
		cr_assert_eq(h.count[i], 1u);
	}
}

Test(timedist, hist_merges_the_two_closest_at_the_end)
{
	struct pdi_hist h = {0};

	for (unsigned i = 0; i < 7; i++)
		pdi_hist_add(&h, 100.0 * i); /* 0 .. 600 */
	for (unsigned i = 0; i < 3; i++)
		pdi_hist_add(&h, 700.0);
	cr_assert_eq(h.n, 8);
	pdi_hist_add(&h, 705.0); /* gap 5 to 700, 100 elsewhere */
	cr_assert_eq(h.n, 8);
	for (unsigned i = 0; i < 7; i++) {
		cr_assert_eq(h.mean[i], (float)(100 * i));
		cr_assert_eq(h.count[i], 1u);
	}
	cr_assert_eq(h.mean[7], 701.25f, "weighted mean (3 * 700 + 705) / 4, got %g", (double)h.mean[7]);
	cr_assert_eq(h.count[7], 4u);
	cr_assert_eq(pdi_hist_total(&h), 11u);
}

Test(timedist, hist_merges_the_two_closest_in_the_middle)
{
	struct pdi_hist h = {0};

	pdi_hist_add(&h, 0);
	pdi_hist_add(&h, 100);
	pdi_hist_add(&h, 200);
	pdi_hist_add(&h, 300);
	for (unsigned i = 0; i < 3; i++)
		pdi_hist_add(&h, 301);
	pdi_hist_add(&h, 500);
	pdi_hist_add(&h, 600);
	pdi_hist_add(&h, 700);
	cr_assert_eq(h.n, 8);
	/* the ninth bucket is far from everything; 300 and 301 are the closest pair */
	pdi_hist_add(&h, 1000);
	assert_hist_sane(&h);
	cr_assert_eq(h.n, 8);
	{
		static const float mean[] = {0, 100, 200, 300.75f, 500, 600, 700, 1000};
		static const uint32_t count[] = {1, 1, 1, 4, 1, 1, 1, 1};

		for (unsigned i = 0; i < 8; i++) {
			cr_assert_eq(h.mean[i], mean[i], "bucket %u: mean %g, want %g", i, (double)h.mean[i],
				     (double)mean[i]);
			cr_assert_eq(h.count[i], count[i], "bucket %u: count %u, want %u", i, h.count[i], count[i]);
		}
	}
	cr_assert_eq(pdi_hist_total(&h), 11u);
}

Test(timedist, hist_bounded_sorted_and_total_preserved)
{
	struct pdi_hist h = {0};

	lcg_state = 7;
	for (unsigned i = 0; i < 5000; i++) {
		pdi_hist_add(&h, next_value());
		assert_hist_sane(&h);
		cr_assert_eq(pdi_hist_total(&h), i + 1);
	}
	cr_assert_eq(h.n, PDI_HIST_BUCKETS);
}

Test(timedist, hist_bucket_means_stay_within_range)
{
	struct pdi_hist h = {0};
	double lo = INFINITY, hi = -INFINITY, sum = 0, wsum = 0;

	lcg_state = 99;
	for (unsigned i = 0; i < 1000; i++) {
		double x = next_value();

		lo = fmin(lo, x);
		hi = fmax(hi, x);
		sum += x;
		pdi_hist_add(&h, x);
	}
	/* merging replaces two buckets by their weighted mean: the overall mean is kept (up
	 * to float rounding of the bucket means) and no bucket leaves the data's range */
	for (unsigned i = 0; i < h.n; i++) {
		cr_assert_geq(h.mean[i], (float)lo);
		cr_assert_leq(h.mean[i], (float)hi);
		wsum += (double)h.mean[i] * h.count[i];
	}
	cr_assert_float_eq(wsum / 1000, sum / 1000, 1e9 * 1e-6);
}

Test(timedist, hist_merge_preserves_totals)
{
	struct pdi_hist a = {0}, b = {0};

	lcg_state = 3;
	for (unsigned i = 0; i < 300; i++)
		pdi_hist_add(&a, next_value());
	for (unsigned i = 0; i < 200; i++)
		pdi_hist_add(&b, next_value() + 5e6);
	pdi_hist_merge(&a, &b);
	assert_hist_sane(&a);
	cr_assert_eq(pdi_hist_total(&a), 500u);
	cr_assert_eq(pdi_hist_total(&b), 200u, "the source is left alone");
}

Test(timedist, hist_merge_small_is_exact)
{
	struct pdi_hist a = {0}, b = {0}, empty = {0};

	pdi_hist_add(&a, 1);
	pdi_hist_add(&a, 2);
	pdi_hist_add(&b, 2);
	pdi_hist_add(&b, 3);
	pdi_hist_add(&b, 3);
	pdi_hist_merge(&a, &b);
	cr_assert_eq(a.n, 3);
	cr_assert_eq(a.mean[0], 1.0f);
	cr_assert_eq(a.count[0], 1u);
	cr_assert_eq(a.mean[1], 2.0f);
	cr_assert_eq(a.count[1], 2u);
	cr_assert_eq(a.mean[2], 3.0f);
	cr_assert_eq(a.count[2], 2u);

	/* into an empty histogram: a copy */
	pdi_hist_merge(&empty, &a);
	cr_assert_eq(empty.n, a.n);
	for (unsigned i = 0; i < a.n; i++) {
		cr_assert_eq(empty.mean[i], a.mean[i]);
		cr_assert_eq(empty.count[i], a.count[i]);
	}
}

Test(timedist, hist_merge_of_full_histograms_merges_closest)
{
	struct pdi_hist a = {0}, b = {0};

	/* a: 0,100,...,700; b: the same shifted by 1 -> each pair (100k, 100k+1) is 1 apart */
	for (unsigned i = 0; i < 8; i++) {
		pdi_hist_add(&a, 100.0 * i);
		pdi_hist_add(&b, 100.0 * i + 1);
	}
	pdi_hist_merge(&a, &b);
	assert_hist_sane(&a);
	cr_assert_eq(a.n, 8);
	cr_assert_eq(pdi_hist_total(&a), 16u);
	for (unsigned i = 0; i < 8; i++) {
		cr_assert_eq(a.mean[i], (float)(100 * i) + 0.5f, "bucket %u: %g", i, (double)a.mean[i]);
		cr_assert_eq(a.count[i], 2u);
	}
}

/* Adding a value to a full histogram takes a path of its own (one pass, for speed): it must leave
 * the buckets exactly as inserting the value, then merging the closest pair, does. Merging in a
 * histogram of that one value takes the general path. Values with many repeats and equal gaps
 * (ties) as well as spread ones. */
Test(timedist, hist_add_to_full_is_insert_then_merge)
{
	for (unsigned kind = 0; kind < 3; kind++) {
		struct pdi_hist fast = {0}, ref = {0};

		lcg_state = 11 + kind;
		for (unsigned i = 0; i < 20000; i++) {
			double x = next_value();
			struct pdi_hist one = {.n = 1, .count = {1}};

			if (kind == 1)
				x = (double)((uint64_t)x % 16); /* repeats, and equal gaps everywhere */
			else if (kind == 2)
				x = (double)((uint64_t)x % 1000) * ((uint64_t)x % 3 ? 1 : 1e6); /* clusters */
			one.mean[0] = (float)x;
			pdi_hist_add(&fast, x);
			pdi_hist_merge(&ref, &one);
			cr_assert_eq(fast.n, ref.n, "value %u", i);
			cr_assert_eq(memcmp(fast.mean, ref.mean, sizeof(fast.mean[0]) * fast.n), 0, "value %u: means differ", i);
			cr_assert_eq(memcmp(fast.count, ref.count, sizeof(fast.count[0]) * fast.n), 0, "value %u", i);
		}
	}
}

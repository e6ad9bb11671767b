/* SPDX-License-Identifier: GPL-2.0-only */
/* robust.c -- medians and robust spreads (see robust.h). */
#include <math.h>
#include <stdlib.h>

#include "robust.h"

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

double pdi_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmp_weighted(const void *x, const void *y)
{
	return cmp_double(&((const struct pdi_weighted *)x)->v, &((const struct pdi_weighted *)y)->v);
}

/* V sorted by value; the weights' sum. */
static uint64_t sort_weighted(struct pdi_weighted *v, size_t n)
{
	uint64_t total = 0;

	qsort(v, n, sizeof(*v), cmp_weighted);
	for (size_t i = 0; i < n; i++)
		total += v[i].weight;
	return total;
}

double pdi_weighted_median(struct pdi_weighted *v, size_t n)
{
	uint64_t total = sort_weighted(v, n), below = 0;

	for (size_t i = 0; i < n; i++) {
		below += v[i].weight;
		if (2 * below > total)
			return v[i].v;
		if (2 * below == total && below) /* between the two middle values of an even count */
			return i + 1 < n ? (v[i].v + v[i + 1].v) / 2 : v[i].v;
	}
	return 0;
}

double pdi_weighted_quantile(struct pdi_weighted *v, size_t n, double q)
{
	uint64_t total = sort_weighted(v, n), below = 0;

	for (size_t i = 0; i < n; i++) {
		below += v[i].weight;
		if (v[i].weight && (double)below >= q * (double)total)
			return v[i].v;
	}
	return 0;
}

double pdi_robust_sd(double *v, size_t n, double median, double floor)
{
	for (size_t i = 0; i < n; i++)
		v[i] = fabs(v[i] - median);
	return fmax(1.4826 * pdi_median(v, n), floor);
}

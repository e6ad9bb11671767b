/* SPDX-License-Identifier: GPL-2.0-only */
/* robust.h -- medians and robust spreads: what the analysis calls a step's normal variation
 * (a few odd phases or tasks must not move it, as they would a mean and a standard deviation). */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The median of V[0..N) (V is sorted in place); 0 when N is 0. */
double pdi_median(double *v, size_t n);

/* A value that stands for WEIGHT of them (a class of identical tasks). */
struct pdi_weighted {
	double v;
	uint32_t weight;
};

/* The median of V[0..N), each value counted its weight's times (V is sorted in place); 0 when
 * the weights add up to 0. */
double pdi_weighted_median(struct pdi_weighted *v, size_t n);

/* The value below which the share Q (0..1) of V[0..N)'s weight lies, each value counted its
 * weight's times (V is sorted in place): the lowest value whose weight, with that of the values
 * below it, reaches Q of the whole. 0 when the weights add up to 0. */
double pdi_weighted_quantile(struct pdi_weighted *v, size_t n, double q);

/* 1.4826 times the median absolute deviation of V[0..N) from MEDIAN, at least FLOOR: a
 * standard deviation that a minority of outliers does not inflate. V is overwritten. */
double pdi_robust_sd(double *v, size_t n, double median, double floor);

/* SPDX-License-Identifier: GPL-2.0-only */
/* timedist.h -- the two time distributions AutomaDeD keeps per SMM edge (sec. 3.1):
 * a Gaussian from a running mean/variance, and a histogram with a bounded number of
 * variable-width buckets, merged online. */
#pragma once

#include <stdint.h>

/* Welford's running mean and sum of squared deviations: exact merge, no catastrophic
 * cancellation for nanosecond-scale values. */
struct pdi_gauss {
	uint64_t n;
	double mean;
	double m2;
};

void pdi_gauss_add(struct pdi_gauss *g, double x);
void pdi_gauss_merge(struct pdi_gauss *into, const struct pdi_gauss *from);
double pdi_gauss_stddev(const struct pdi_gauss *g); /* population; 0 for n < 2 */

#define PDI_HIST_BUCKETS 8

/* Buckets sorted by mean. A new value gets a bucket of its own; past the bound, the two
 * buckets with the closest means are merged (adjacent, since the buckets are sorted). */
struct pdi_hist {
	float mean[PDI_HIST_BUCKETS + 1]; /* one spare: a new value is inserted, then merged */
	uint32_t count[PDI_HIST_BUCKETS + 1];
	uint8_t n;
};

void pdi_hist_add(struct pdi_hist *h, double x);
void pdi_hist_merge(struct pdi_hist *into, const struct pdi_hist *from);
uint64_t pdi_hist_total(const struct pdi_hist *h);

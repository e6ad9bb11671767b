/* SPDX-License-Identifier: GPL-2.0-only */
/* timedist.c -- Gaussian and online-merged histogram time distributions. */
#include <math.h>
#include <string.h>

#include "timedist.h"

void pdi_gauss_add(struct pdi_gauss *g, double x)
{
	double d = x - g->mean;

	g->n++;
	g->mean += d / (double)g->n;
	g->m2 += d * (x - g->mean);
}

void pdi_gauss_merge(struct pdi_gauss *into, const struct pdi_gauss *from)
{
	uint64_t n = into->n + from->n;
	double d = from->mean - into->mean;

	if (!from->n)
		return;
	if (!into->n) {
		*into = *from;
		return;
	}
	into->mean += d * (double)from->n / (double)n;
	into->m2 += from->m2 + d * d * (double)into->n * (double)from->n / (double)n;
	into->n = n;
}

double pdi_gauss_stddev(const struct pdi_gauss *g)
{
	return g->n < 2 ? 0.0 : sqrt(g->m2 / (double)g->n);
}

/* Merge the adjacent pair whose means are closest. */
static void merge_closest(struct pdi_hist *h)
{
	unsigned best = 0;
	float gap = INFINITY;
	uint32_t c;

	for (unsigned i = 0; i + 1 < h->n; i++)
		if (h->mean[i + 1] - h->mean[i] < gap) {
			gap = h->mean[i + 1] - h->mean[i];
			best = i;
		}
	c = h->count[best] + h->count[best + 1];
	h->mean[best] = (float)(((double)h->mean[best] * h->count[best] +
				 (double)h->mean[best + 1] * h->count[best + 1]) /
				c);
	h->count[best] = c;
	memmove(&h->mean[best + 1], &h->mean[best + 2], sizeof(h->mean[0]) * (h->n - best - 2));
	memmove(&h->count[best + 1], &h->count[best + 2], sizeof(h->count[0]) * (h->n - best - 2));
	h->n--;
}

static void insert_bucket(struct pdi_hist *h, float mean, uint32_t count)
{
	unsigned i = 0;

	while (i < h->n && h->mean[i] < mean)
		i++;
	if (i < h->n && h->mean[i] == mean) {
		h->count[i] += count;
		return;
	}
	memmove(&h->mean[i + 1], &h->mean[i], sizeof(h->mean[0]) * (h->n - i));
	memmove(&h->count[i + 1], &h->count[i], sizeof(h->count[0]) * (h->n - i));
	h->mean[i] = mean;
	h->count[i] = count;
	if (++h->n > PDI_HIST_BUCKETS)
		merge_closest(h);
}

void pdi_hist_add(struct pdi_hist *h, double x)
{
	insert_bucket(h, (float)x, 1);
}

void pdi_hist_merge(struct pdi_hist *into, const struct pdi_hist *from)
{
	for (unsigned i = 0; i < from->n; i++)
		insert_bucket(into, from->mean[i], from->count[i]);
}

uint64_t pdi_hist_total(const struct pdi_hist *h)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < h->n; i++)
		t += h->count[i];
	return t;
}

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

/* The mean of buckets (MA, CA) and (MB, CB) merged, as merge_closest makes it. */
static float merged_mean(float ma, uint32_t ca, float mb, uint32_t cb)
{
	return (float)(((double)ma * ca + (double)mb * cb) / (uint32_t)(ca + cb));
}

/* A value into a full histogram, as insert_bucket then merge_closest would put it, bit for bit,
 * in one pass and without moving the buckets twice: this runs for every call pdimond takes in
 * (twice: the edge into the call and the one out of it), and the two memmoves of each step were
 * a quarter of pdimond's CPU per call. The pair merged is the first closest among the n + 1
 * means with V inserted in place (V = the new value at index AT). */
static void add_to_full(struct pdi_hist *h, float v)
{
	unsigned n = h->n, at = 0, best = 0;
	float gap = INFINITY, prev, cur;

	while (at < n && h->mean[at] < v)
		at++;
	if (at < n && h->mean[at] == v) {
		h->count[at]++;
		return;
	}
	/* the n gaps of the n + 1 means, in order */
	prev = h->mean[0];
	for (unsigned j = 0; j < n; j++) {
		cur = j + 1 < at ? h->mean[j + 1] : j + 1 == at ? v : h->mean[j];
		if (j == at)
			prev = v;
		if (cur - prev < gap) {
			gap = cur - prev;
			best = j;
		}
		prev = cur;
	}
	if (best + 1 < at) {
		/* the pair lies before V: merged in place, the buckets up to V move down one */
		h->mean[best] = merged_mean(h->mean[best], h->count[best], h->mean[best + 1], h->count[best + 1]);
		h->count[best] += h->count[best + 1];
		for (unsigned j = best + 1; j + 1 < at; j++) {
			h->mean[j] = h->mean[j + 1];
			h->count[j] = h->count[j + 1];
		}
		h->mean[at - 1] = v;
		h->count[at - 1] = 1;
	} else if (best + 1 == at) {
		h->mean[best] = merged_mean(h->mean[best], h->count[best], v, 1);
		h->count[best]++;
	} else if (best == at) {
		h->mean[at] = merged_mean(v, 1, h->mean[at], h->count[at]);
		h->count[at]++;
	} else {
		/* the pair lies after V: merged in place, the buckets from V on move up one */
		h->mean[best] = merged_mean(h->mean[best - 1], h->count[best - 1], h->mean[best], h->count[best]);
		h->count[best] += h->count[best - 1];
		for (unsigned j = best - 1; j > at; j--) {
			h->mean[j] = h->mean[j - 1];
			h->count[j] = h->count[j - 1];
		}
		h->mean[at] = v;
		h->count[at] = 1;
	}
}

void pdi_hist_add(struct pdi_hist *h, double x)
{
	if (h->n == PDI_HIST_BUCKETS)
		add_to_full(h, (float)x);
	else
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

/* SPDX-License-Identifier: GPL-2.0-only */
/* rate.c -- a step's progress rate against its own, in windows (rate.h). */
#include <math.h>

#include "rate.h"

static unsigned bin_of(double rate)
{
	double b = (log2(rate) - PDI_RATE_LOG2_MIN) * 4;

	if (!(b > 0))
		return 0;
	return b >= PDI_RATE_BINS ? PDI_RATE_BINS - 1 : (unsigned)b;
}

double pdi_rate_median(const struct pdi_rate *r)
{
	uint64_t seen = 0;

	if (!r->normal)
		return 0;
	for (unsigned b = 0; b < PDI_RATE_BINS; b++) {
		seen += r->bins[b];
		if (2 * seen >= r->normal)
			return exp2(PDI_RATE_LOG2_MIN + (b + 0.5) / 4);
	}
	return 0;
}

unsigned pdi_rate_run_needed(const struct pdi_rate *r, const struct pdi_rate_params *p, double rate_per_hour)
{
	double share = (double)(r->low + 1) / (double)(r->low + r->normal + 2);
	double per_hour = 3600 / p->window_s, m;

	/* per_hour * share^m <= rate_per_hour */
	m = ceil(log(rate_per_hour / per_hour) / log(share));
	if (!(m >= 2))
		return 2;
	return m > 1000 ? 1000 : (unsigned)m;
}

void pdi_rate_break(struct pdi_rate *r)
{
	r->acc_s = 0;
	r->acc_calls = 0;
	r->low_run = r->ok_run = 0;
}

bool pdi_rate_add(struct pdi_rate *r, const struct pdi_rate_params *p, double rate_per_hour, double dt_s,
		  uint64_t calls)
{
	double rate, median;

	if (!(dt_s > 0))
		return false;
	r->acc_s += dt_s;
	r->acc_calls += calls;
	if (r->acc_s < p->window_s)
		return false;
	rate = (double)r->acc_calls / r->acc_s;
	r->acc_s = 0;
	r->acc_calls = 0;
	if (rate == 0) {
		/* a quiet window is the hang judge's; it breaks a run */
		r->low_run = r->ok_run = 0;
		return false;
	}
	r->windows++;
	median = pdi_rate_median(r);
	r->ratio = median > 0 ? rate / median : 1;
	if (r->normal < p->min_windows || r->ratio >= 1 / p->factor) {
		/* normal: it teaches what the step's rate is (only while not slow, which would
		 * teach it that slow is normal) */
		if (!r->slow) {
			r->bins[bin_of(rate)]++;
			r->normal++;
		}
		r->low_run = 0;
	} else {
		r->low++;
		r->low_run++;
	}
	if (r->slow) {
		r->ok_run = r->ratio >= 1 / p->recover ? r->ok_run + 1 : 0;
		if (r->ok_run >= 2)
			r->slow = false;
	} else if (r->low_run && r->low_run >= pdi_rate_run_needed(r, p, rate_per_hour)) {
		r->slow = true;
		r->ok_run = 0;
	}
	return true;
}

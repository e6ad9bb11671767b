/* SPDX-License-Identifier: GPL-2.0-only */
/* quiet.c -- the record of a step's healthy quiet episodes and the hang threshold it gives
 * at a false-alarm rate (quiet.h; doc/design/hang-detection.md). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "quiet.h"
#include "wire.h"

#define RECORD_VERSION 1

const struct pdi_quiet_params pdi_quiet_params_default = {
	.rate_per_hour = 1e-4, /* one false alarm per 10,000 step-hours */
	.resolution_s = 1.0,
	.prior_scale_s = 1.25,
	.longest_factor = 1.5,
};

/* Keep TOP sorted, longest first, at most PDI_QUIET_TOP. */
static void top_insert(struct pdi_quiet_record *r, double x)
{
	uint32_t i = r->ntop < PDI_QUIET_TOP ? r->ntop : PDI_QUIET_TOP - 1;

	if (r->ntop == PDI_QUIET_TOP && x <= r->top[PDI_QUIET_TOP - 1])
		return;
	while (i > 0 && r->top[i - 1] < x) {
		r->top[i] = r->top[i - 1];
		i--;
	}
	r->top[i] = (float)x;
	if (r->ntop < PDI_QUIET_TOP)
		r->ntop++;
}

void pdi_quiet_record_add(struct pdi_quiet_record *r, double episode_s)
{
	if (!(episode_s > 0) || !isfinite(episode_s))
		return;
	r->episodes++;
	top_insert(r, episode_s);
}

void pdi_quiet_record_merge(struct pdi_quiet_record *into, const struct pdi_quiet_record *from)
{
	if (isfinite(from->observed_s) && from->observed_s > 0)
		into->observed_s += from->observed_s;
	into->episodes += from->episodes;
	for (uint32_t i = 0; i < from->ntop && i < PDI_QUIET_TOP; i++)
		top_insert(into, from->top[i]);
}

double pdi_quiet_record_longest(const struct pdi_quiet_record *r)
{
	return r && r->ntop ? r->top[0] : 0;
}

static uint64_t double_bits(double x)
{
	uint64_t u;

	memcpy(&u, &x, sizeof(u));
	return u;
}

static double bits_double(uint64_t u)
{
	double x;

	memcpy(&x, &u, sizeof(x));
	return x;
}

int pdi_quiet_record_encode(const struct pdi_quiet_record *r, struct pdi_wire_writer *w)
{
	pdi_wire_put_u32(w, RECORD_VERSION);
	pdi_wire_put_u64(w, double_bits(r->observed_s));
	pdi_wire_put_u64(w, r->episodes);
	pdi_wire_put_u32(w, r->ntop);
	for (uint32_t i = 0; i < r->ntop; i++)
		pdi_wire_put_u64(w, double_bits(r->top[i]));
	return w->err;
}

int pdi_quiet_record_decode(const void *p, size_t len, struct pdi_quiet_record *ret)
{
	struct pdi_quiet_record q = {0};
	struct pdi_wire_reader r;

	pdi_wire_reader_init(&r, p, len);
	if (pdi_wire_get_u32(&r) != RECORD_VERSION)
		return -EBADMSG;
	q.observed_s = bits_double(pdi_wire_get_u64(&r));
	q.episodes = pdi_wire_get_u64(&r);
	q.ntop = pdi_wire_get_u32(&r);
	if (r.err || q.ntop > PDI_QUIET_TOP || !isfinite(q.observed_s) || q.observed_s < 0 || q.episodes < q.ntop)
		return -EBADMSG;
	for (uint32_t i = 0; i < q.ntop; i++) {
		double x = bits_double(pdi_wire_get_u64(&r));

		/* longest first, every one a positive length */
		if (!isfinite(x) || x <= 0 || (i && x > q.top[i - 1]))
			return -EBADMSG;
		q.top[i] = (float)x;
	}
	if (pdi_wire_reader_finish(&r) < 0)
		return -EBADMSG;
	*ret = q;
	return 0;
}

/* P(chi2 with 2M degrees of freedom <= X) = 1 - e^(-x/2) sum_{j<M} (x/2)^j / j! */
static double chi2_cdf_even(unsigned m, double x)
{
	double h = x / 2, term = 1, sum = 1;

	for (unsigned j = 1; j < m; j++) {
		term *= h / j;
		sum += term;
	}
	return 1 - exp(-h) * sum;
}

/* The standard normal's P-quantile (Acklam's rational approximation, |error| < 1.2e-9). */
static double normal_quantile(double p)
{
	static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
				   1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
	static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
				   6.680131188771972e+01, -1.328068155288572e+01};
	static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
				   -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
	static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
				   3.754408661907416e+00};
	double q, r;

	if (p < 0.02425) {
		q = sqrt(-2 * log(p));
		return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		       ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
	}
	if (p > 1 - 0.02425)
		return -normal_quantile(1 - p);
	q = p - 0.5;
	r = q * q;
	return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
	       (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double pdi_chi2_quantile_even(unsigned half_dof, double p)
{
	double lo = 0, hi = 2.0 * half_dof + 10;

	if (half_dof == 0 || !(p > 0) || !(p < 1))
		return p <= 0 ? 0 : INFINITY;
	if (half_dof > 50) {
		/* Wilson-Hilferty: within 0.1% at these degrees of freedom, and no sum to overflow */
		double nu = 2.0 * half_dof, k = 2 / (9 * nu), x = 1 - k + normal_quantile(p) * sqrt(k);

		return nu * x * x * x;
	}
	while (chi2_cdf_even(half_dof, hi) < p)
		hi *= 2;
	for (int i = 0; i < 100; i++) {
		double mid = (lo + hi) / 2;

		if (chi2_cdf_even(half_dof, mid) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* The 95% upper bound on the scale of exponential excesses whose K mean is MEAN. */
static double scale_upper(double mean, unsigned k)
{
	return k ? mean * 2 * k / pdi_chi2_quantile_even(k, 0.05) : 0;
}

/* How many of the longest episodes form the tail: all of them (at most PDI_QUIET_TAIL), unless
 * a gap separates a cluster of the longest from the rest by more than one tail could: the
 * spacings of exponential order statistics, each times its rank, are exponential with the
 * tail's scale (Renyi), so a normalised gap beyond scale * ln(n / 5%) is another mode (a
 * checkpoint's waits above the scheduling noise), and the tail is the cluster above it. */
static unsigned tail_size(const struct pdi_quiet_record *r, double prior)
{
	unsigned n = r->ntop < PDI_QUIET_TAIL ? r->ntop : PDI_QUIET_TAIL, cut = n;
	double limit = log((double)n / 0.05);

	for (unsigned i = 0; i + 1 < n; i++) {
		double excess = 0, scale;

		for (unsigned j = 0; j < i; j++)
			excess += r->top[j] - r->top[i];
		scale = i ? scale_upper(excess / i, i) : 0;
		if (scale < prior)
			scale = prior;
		if ((i + 1) * (double)(r->top[i] - r->top[i + 1]) > scale * limit)
			cut = i + 1;
	}
	return cut;
}

void pdi_quiet_threshold(const struct pdi_quiet_record *r, const struct pdi_quiet_params *p,
			 struct pdi_quiet_threshold *ret)
{
	static const struct pdi_quiet_record none;
	struct pdi_quiet_threshold t = {.base_s = p->resolution_s};
	double hours, excess = 0, scale_u, q;
	unsigned n;

	if (!r)
		r = &none;
	/* the tail: the N longest, u the shortest of them (or the resolution when none), the
	 * k = N - 1 others its excesses */
	n = tail_size(r, p->prior_scale_s);
	if (n) {
		t.base_s = r->top[n - 1];
		t.k = n - 1;
	}
	if (t.base_s < p->resolution_s)
		t.base_s = p->resolution_s;
	for (unsigned i = 0; i < t.k; i++)
		excess += r->top[i] - t.base_s;
	/* 95% upper bounds: on the rate of episodes reaching u (Poisson: N events in the time
	 * seen), and on their mean excess (exponential: 2k * mean / scale is chi-square, 2k dof) */
	hours = (r->observed_s > p->resolution_s ? r->observed_s : p->resolution_s) / 3600;
	t.rate_u = pdi_chi2_quantile_even(n + 1, 0.95) / (2 * hours);
	scale_u = t.k ? scale_upper(excess / t.k, t.k) : 0;
	t.prior = !(scale_u > p->prior_scale_s);
	t.scale_s = t.prior ? p->prior_scale_s : scale_u;
	q = t.base_s;
	if (t.rate_u > p->rate_per_hour)
		q += t.scale_s * log(t.rate_u / p->rate_per_hour);
	if (q < p->longest_factor * pdi_quiet_record_longest(r))
		q = p->longest_factor * pdi_quiet_record_longest(r);
	t.quiet_s = q;
	*ret = t;
}

double pdi_quiet_p(const struct pdi_quiet_threshold *t, double quiet_s)
{
	if (!(quiet_s > t->base_s) || !(t->scale_s > 0))
		return 1;
	return exp(-(quiet_s - t->base_s) / t->scale_s);
}

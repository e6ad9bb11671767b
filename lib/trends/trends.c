/* SPDX-License-Identifier: GPL-2.0-only */
/* trends.c -- fitting a + bx and a + bx^c to per-site series across runs, ranking and flagging
 * (ti-trend-prof sec. 4-5). The numerics are GSL's: gsl_fit_linear for the line,
 * gsl_multifit_nlinear (trust region, Levenberg-Marquardt steps) for the power law.
 *
 * The power law is fitted on scaled data, x / max x and y / max |y|, so that an input size of a
 * million and counts of billions condition the problem no worse than task counts of a few. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "trends.h"

const char *const pdi_trend_metric_names[PDI_TREND_NMETRICS] = {"calls", "bytes", "time"};
const char *const pdi_trend_model_names[] = {"flat", "linear", "power"};

#define POWER_MAX_ITER 200
#define POWER_GAIN 0.5       /* the power law must leave at most this share of the line's error */
#define POWER_NOT_LINEAR 0.05 /* and its exponent must differ from 1 by more than this */

static double sse_of(const double *x, const double *y, size_t n, double a, double b, double c)
{
	double s = 0;

	for (size_t i = 0; i < n; i++) {
		double e = y[i] - (a + b * pow(x[i], c));

		s += e * e;
	}
	return s;
}

static double r2_of(double sse, double sst)
{
	if (sst <= 0)
		return sse <= 0 ? 1.0 : 0.0;
	return 1.0 - sse / sst;
}

double pdi_trend_eval(const struct pdi_trend_fit *f, double x)
{
	return f->a + f->b * pow(x, f->c);
}

/* ---- the power law ---- */

struct power_data {
	const double *x, *y; /* scaled */
	size_t n;
};

static int power_f(const gsl_vector *p, void *arg, gsl_vector *f)
{
	const struct power_data *d = arg;
	double a = gsl_vector_get(p, 0), b = gsl_vector_get(p, 1), c = gsl_vector_get(p, 2);

	for (size_t i = 0; i < d->n; i++)
		gsl_vector_set(f, i, a + b * pow(d->x[i], c) - d->y[i]);
	return GSL_SUCCESS;
}

static int power_df(const gsl_vector *p, void *arg, gsl_matrix *J)
{
	const struct power_data *d = arg;
	double b = gsl_vector_get(p, 1), c = gsl_vector_get(p, 2);

	for (size_t i = 0; i < d->n; i++) {
		double xc = pow(d->x[i], c);

		gsl_matrix_set(J, i, 0, 1.0);
		gsl_matrix_set(J, i, 1, xc);
		gsl_matrix_set(J, i, 2, b * xc * log(d->x[i]));
	}
	return GSL_SUCCESS;
}

/* a + b x^c0 by least squares for a fixed c0: the starting point of a nonlinear fit. */
static void power_start(const struct power_data *d, double c0, double *p, double *xc)
{
	double cov00, cov01, cov11, sumsq;

	for (size_t i = 0; i < d->n; i++)
		xc[i] = pow(d->x[i], c0);
	if (gsl_fit_linear(xc, 1, d->y, 1, d->n, &p[0], &p[1], &cov00, &cov01, &cov11, &sumsq) != GSL_SUCCESS)
		p[0] = p[1] = 0;
	p[2] = c0;
}

/* One nonlinear fit from START into P (scaled); its error, or INFINITY when it failed. */
static double power_from(gsl_multifit_nlinear_workspace *w, gsl_multifit_nlinear_fdf *fdf,
			 const struct power_data *d, const double *start, double *p)
{
	double init[3] = {start[0], start[1], start[2]};
	gsl_vector_view v = gsl_vector_view_array(init, 3);
	const gsl_vector *pos;
	int info;

	if (gsl_multifit_nlinear_init(&v.vector, fdf, w) != GSL_SUCCESS)
		return INFINITY;
	if (gsl_multifit_nlinear_driver(POWER_MAX_ITER, 1e-10, 1e-10, 0.0, NULL, NULL, &info, w) != GSL_SUCCESS &&
	    gsl_multifit_nlinear_niter(w) == 0)
		return INFINITY;
	pos = gsl_multifit_nlinear_position(w);
	for (int k = 0; k < 3; k++)
		p[k] = gsl_vector_get(pos, (size_t)k);
	if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]) || fabs(p[2]) > PDI_TREND_MAX_EXPONENT)
		return INFINITY;
	return sse_of(d->x, d->y, d->n, p[0], p[1], p[2]);
}

/* The power law's best fit over several starting exponents, unscaled into F. */
static int fit_power(const double *x, const double *y, size_t n, double xmax, double ymax, struct pdi_trend_fit *f)
{
	static const double starts[] = {1.0, 2.0, 0.5, 3.0, -1.0};
	double *xs = malloc(3 * n * sizeof(*xs)), best = INFINITY, bp[3] = {0}, p[3], s[3];
	gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w;
	gsl_multifit_nlinear_fdf fdf;
	struct power_data d;

	if (!xs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		xs[i] = x[i] / xmax;
		xs[n + i] = y[i] / ymax;
	}
	d = (struct power_data){.x = xs, .y = xs + n, .n = n};
	w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &params, n, 3);
	if (!w) {
		free(xs);
		return -ENOMEM;
	}
	fdf = (gsl_multifit_nlinear_fdf){.f = power_f, .df = power_df, .n = n, .p = 3, .params = &d};
	for (size_t k = 0; k < sizeof(starts) / sizeof(starts[0]); k++) {
		double e;

		power_start(&d, starts[k], s, xs + 2 * n);
		e = power_from(w, &fdf, &d, s, p);
		if (e < best) {
			best = e;
			memcpy(bp, p, sizeof(bp));
		}
	}
	gsl_multifit_nlinear_free(w);
	free(xs);
	if (!isfinite(best))
		return 0;
	f->pow_ok = true;
	f->pow_a = bp[0] * ymax;
	f->pow_b = bp[1] * ymax / pow(xmax, bp[2]);
	f->pow_c = bp[2];
	return 0;
}

/* ---- choosing ---- */

static void choose(const double *x, const double *y, size_t n, double xmin, double xmax, struct pdi_trend_fit *f)
{
	double mean = 0, sst = 0, sse_lin, sse_pow = INFINITY, lo, hi;

	for (size_t i = 0; i < n; i++)
		mean += y[i] / (double)n;
	for (size_t i = 0; i < n; i++)
		sst += (y[i] - mean) * (y[i] - mean);
	sse_lin = sse_of(x, y, n, f->lin_a, f->lin_b, 1.0);
	f->lin_r2 = r2_of(sse_lin, sst);
	if (f->pow_ok) {
		sse_pow = sse_of(x, y, n, f->pow_a, f->pow_b, f->pow_c);
		f->pow_r2 = r2_of(sse_pow, sst);
	}
	f->model = PDI_TREND_LINEAR;
	f->a = f->lin_a;
	f->b = f->lin_b;
	f->c = 1.0;
	f->r2 = f->lin_r2;
	if (f->pow_ok && sse_pow <= POWER_GAIN * sse_lin && fabs(f->pow_c - 1.0) > POWER_NOT_LINEAR) {
		f->model = PDI_TREND_POWER;
		f->a = f->pow_a;
		f->b = f->pow_b;
		f->c = f->pow_c;
		f->r2 = f->pow_r2;
	}
	lo = pdi_trend_eval(f, xmin);
	hi = pdi_trend_eval(f, xmax);
	if (fabs(hi - lo) <= PDI_TREND_FLAT_SPREAD * fabs(mean) || (mean == 0 && hi == lo)) {
		f->model = PDI_TREND_FLAT;
		f->a = mean;
		f->b = 0;
		f->c = 0;
		f->r2 = r2_of(sst, sst);
	}
}

int pdi_trend_fit(const double *x, const double *y, size_t n, struct pdi_trend_fit *ret)
{
	struct pdi_trend_fit f = {.pow_a = NAN, .pow_b = NAN, .pow_c = NAN, .pow_r2 = NAN};
	double xmin = INFINITY, xmax = 0, ymax = 0, cov00, cov01, cov11, sumsq;
	size_t distinct = 0;
	int r;

	gsl_set_error_handler_off(); /* GSL aborts the process on errors otherwise */
	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		if (!isfinite(x[i]) || x[i] <= 0 || !isfinite(y[i]))
			return -EINVAL;
		for (size_t k = 0; k < i && !seen; k++)
			seen = x[k] == x[i];
		distinct += !seen;
		xmin = fmin(xmin, x[i]);
		xmax = fmax(xmax, x[i]);
		ymax = fmax(ymax, fabs(y[i]));
	}
	if (distinct < 2)
		return -EINVAL;
	if (gsl_fit_linear(x, 1, y, 1, n, &f.lin_a, &f.lin_b, &cov00, &cov01, &cov11, &sumsq) != GSL_SUCCESS)
		return -EINVAL;
	/* three parameters need three sizes; an all-zero series has nothing to fit */
	if (distinct >= 3 && ymax > 0 && (r = fit_power(x, y, n, xmax, ymax, &f)) < 0)
		return r;
	choose(x, y, n, xmin, xmax, &f);
	*ret = f;
	return 0;
}

/* ---- ranking ---- */

/* Growing first, then flat, then shrinking. */
static int direction(const struct pdi_trend_entry *e)
{
	if (e->fit.model == PDI_TREND_FLAT)
		return 1;
	return e->growth > 1.0 ? 0 : 2;
}

/* Exponents equal to two decimals tie: the coefficient decides, as in the paper's table. */
static long exponent_key(const struct pdi_trend_entry *e)
{
	return lround(e->fit.c * 100);
}

static int by_rank(const void *pa, const void *pb, void *names)
{
	const struct pdi_trend_entry *a = pa, *b = pb;
	const char *const *rank_names = names;
	bool ta = a->metric == PDI_TREND_TIME, tb = b->metric == PDI_TREND_TIME;
	int da = direction(a), db = direction(b), c;

	if (ta != tb)
		return ta ? 1 : -1;
	if (da != db)
		return da < db ? -1 : 1;
	if (exponent_key(a) != exponent_key(b))
		return exponent_key(a) > exponent_key(b) ? -1 : 1;
	if (a->fit.b != b->fit.b)
		return a->fit.b > b->fit.b ? -1 : 1;
	if ((c = strcmp(rank_names[a->site], rank_names[b->site])) != 0)
		return c;
	return (int)a->metric - (int)b->metric;
}

static int by_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return a < b ? -1 : a > b;
}

/* The median exponent of each metric's series: what "the rest" do. */
static int medians(struct pdi_trends *t)
{
	double *v = malloc((t->n ? t->n : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (int m = 0; m < PDI_TREND_NMETRICS; m++) {
		size_t k = 0;

		for (size_t i = 0; i < t->n; i++)
			if (t->v[i].metric == (enum pdi_trend_metric)m)
				v[k++] = t->v[i].fit.c;
		qsort(v, k, sizeof(*v), by_double);
		t->median_exponent[m] = !k ? 0 : k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	}
	free(v);
	return 0;
}

static void flag(struct pdi_trends *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct pdi_trend_entry *e = &t->v[i];

		e->flagged = e->metric != PDI_TREND_TIME && e->fit.model != PDI_TREND_FLAT &&
			     e->growth >= PDI_TREND_FLAG_GROWTH && e->fit.r2 >= PDI_TREND_FLAG_R2 &&
			     e->fit.c >= t->median_exponent[e->metric] + PDI_TREND_FLAG_MARGIN;
		t->nflagged += e->flagged;
	}
}

static double growth_of(const struct pdi_trend_fit *f, double xmin, double xmax)
{
	double lo = pdi_trend_eval(f, xmin), hi = pdi_trend_eval(f, xmax);

	if (f->model == PDI_TREND_FLAT)
		return 1.0;
	if (lo > 1e-9 * fabs(hi)) /* below that, rounding of a fit through zero */
		return hi / lo;
	return hi > lo ? INFINITY : hi < lo ? 0.0 : 1.0; /* from nothing to something */
}

/* Fit one series into T's next entry; an all-zero series is left out. */
static int add_series(struct pdi_trends *t, const struct pdi_trend_input *in, uint32_t site, int metric, double *y)
{
	struct pdi_trend_entry *e = &t->v[t->n];
	bool any = false;
	int r;

	for (size_t k = 0; k < in->nruns; k++) {
		y[k] = in->values[((size_t)site * in->nruns + k) * PDI_TREND_NMETRICS + (size_t)metric];
		any = any || y[k] != 0;
	}
	if (!any)
		return 0;
	*e = (struct pdi_trend_entry){.site = site, .metric = (enum pdi_trend_metric)metric};
	if ((r = pdi_trend_fit(in->x, y, in->nruns, &e->fit)) < 0)
		return r;
	e->growth = growth_of(&e->fit, t->xmin, t->xmax);
	t->n++;
	return 0;
}

int pdi_trends_compute(const struct pdi_trend_input *in, struct pdi_trends *ret)
{
	struct pdi_trends t = {.xmin = INFINITY};
	size_t distinct = 0;
	double *y;
	int r = 0;

	for (size_t k = 0; k < in->nruns; k++) {
		bool seen = false;

		if (!isfinite(in->x[k]) || in->x[k] <= 0)
			return -EINVAL;
		for (size_t j = 0; j < k && !seen; j++)
			seen = in->x[j] == in->x[k];
		distinct += !seen;
		t.xmin = fmin(t.xmin, in->x[k]);
		t.xmax = fmax(t.xmax, in->x[k]);
	}
	if (distinct < 2)
		return -EINVAL;
	t.v = calloc(in->nsites * PDI_TREND_NMETRICS + 1, sizeof(*t.v));
	y = malloc(in->nruns * sizeof(*y));
	if (!t.v || !y) {
		free(y);
		free(t.v);
		return -ENOMEM;
	}
	for (uint32_t s = 0; s < in->nsites && r >= 0; s++)
		for (int m = 0; m < PDI_TREND_NMETRICS && r >= 0; m++)
			r = add_series(&t, in, s, m, y);
	free(y);
	if (r >= 0)
		r = medians(&t);
	if (r < 0) {
		pdi_trends_done(&t);
		return r;
	}
	flag(&t);
	qsort_r(t.v, t.n, sizeof(*t.v), by_rank, (void *)in->sites);
	*ret = t;
	return 0;
}

void pdi_trends_done(struct pdi_trends *t)
{
	free(t->v);
	*t = (struct pdi_trends){0};
}

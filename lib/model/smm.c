/* SPDX-License-Identifier: GPL-2.0-only */
/* smm.c -- comparing and clustering semi-Markov models (AutomaDeD sec. 3.2-3.4).
 *
 * Two choices the paper leaves open:
 * - Units. L2 between densities and the alpha factor both depend on the time unit. Times
 *   are expressed in units of the smaller of the two means, which makes D scale-free (a
 *   transition of 10 us that doubles weighs like one of 10 s that doubles) while a mean that
 *   grows fifty-fold still weighs fifty-fold, as the paper's alpha does.
 * - Degenerate spreads. A transition seen once, or with identical times, has no width; its
 *   density gets a floor of 5% of the mean, about the jitter of a timed call. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "smm.h"

#define ABSENT 10.0        /* D of a state or transition present in one model only (3.2) */
#define SIGMA_FLOOR 0.05   /* in units of the mean */
#define NU_FLOOR 0.25      /* the least noise nu assumes: D of one sigma's shift is about 1.6 */
#define GRID 96            /* points of the numeric L2 of histogram densities */

int pdi_smm_build(const struct pdi_phase *p, struct pdi_smm *ret)
{
	struct pdi_smm m = {.phase = p, .nstates = p->nstates};
	uint32_t *fill;

	m.out_total = calloc(p->nstates + 1, sizeof(*m.out_total));
	m.first = calloc(p->nstates + 1, sizeof(*m.first));
	m.edges = calloc(p->nedges + 1, sizeof(*m.edges));
	fill = calloc(p->nstates + 1, sizeof(*fill));
	if (!m.out_total || !m.first || !m.edges || !fill) {
		free(fill);
		pdi_smm_done(&m);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->nedges; i++)
		m.first[p->edges[i].from + 1]++;
	for (uint32_t s = 0; s < p->nstates; s++)
		m.first[s + 1] += m.first[s];
	for (uint32_t i = 0; i < p->nedges; i++) {
		const struct pdi_edge *e = &p->edges[i];
		struct pdi_smm_edge *x = &m.edges[m.first[e->from] + fill[e->from]++];

		*x = (struct pdi_smm_edge){.to = e->to, .count = e->time.n, .time = &e->time, .hist = &e->hist};
		m.out_total[e->from] += e->time.n;
	}
	free(fill);
	*ret = m;
	return 0;
}

void pdi_smm_done(struct pdi_smm *m)
{
	free(m->out_total);
	free(m->first);
	free(m->edges);
	*m = (struct pdi_smm){0};
}

/* The edge of M from state S to the state with key TO_KEY, or NULL. */
static const struct pdi_smm_edge *find_edge(const struct pdi_smm *m, uint32_t s, uint64_t to_key)
{
	uint32_t to = pdi_phase_state(m->phase, to_key);

	if (to == PDI_U64MAP_NONE)
		return NULL;
	for (uint32_t i = m->first[s]; i < m->first[s + 1]; i++)
		if (m->edges[i].to == to)
			return &m->edges[i];
	return NULL;
}

static double gauss_l2_sq(double ma, double sa, double mb, double sb)
{
	double v = sa * sa + sb * sb, d = ma - mb;

	return 1.0 / (2.0 * sa * sqrt(M_PI)) + 1.0 / (2.0 * sb * sqrt(M_PI)) -
	       2.0 * exp(-d * d / (2.0 * v)) / sqrt(2.0 * M_PI * v);
}

static double hist_mean(const struct pdi_hist *h)
{
	double sum = 0, n = 0;

	for (unsigned i = 0; i < h->n; i++) {
		sum += (double)h->mean[i] * h->count[i];
		n += h->count[i];
	}
	return n > 0 ? sum / n : 0;
}

/* The histogram as a density (sec. 3.1): bucket counts joined by straight lines, and the
 * halves of Gaussians beyond the first and last bucket. Unnormalized; X in units of SCALE.
 * Sampled at GRID points from LO by STEP into Y, in one walk along the buckets: the L2 of
 * two histograms is computed for every transition of every pair of phases compared. */
static void hist_sample(const struct pdi_hist *h, double scale, double tail, double lo, double step, double *y)
{
	double first = h->mean[0] / scale, last = h->mean[h->n - 1] / scale;
	unsigned i = 0;

	for (int k = 0; k < GRID; k++) {
		double x = lo + k * step, a, b;

		if (x <= first || x >= last) {
			double edge = x <= first ? first : last;
			uint32_t count = x <= first ? h->count[0] : h->count[h->n - 1];

			y[k] = count * exp(-(x - edge) * (x - edge) / (2 * tail * tail));
			continue;
		}
		while (i + 2 < h->n && x > h->mean[i + 1] / scale)
			i++;
		a = h->mean[i] / scale;
		b = h->mean[i + 1] / scale;
		y[k] = b > a ? h->count[i] + (h->count[i + 1] - (double)h->count[i]) * (x - a) / (b - a) : h->count[i + 1];
	}
}

static double hist_tail(const struct pdi_hist *h, double scale)
{
	double w = h->n > 1 ? (h->mean[h->n - 1] - h->mean[0]) / scale / (h->n - 1) : 0;

	return w > SIGMA_FLOOR ? w : SIGMA_FLOOR;
}

static double hist_l2(const struct pdi_hist *a, const struct pdi_hist *b, double scale)
{
	double ta = hist_tail(a, scale), tb = hist_tail(b, scale), t = ta > tb ? ta : tb;
	double lo = fmin(a->mean[0], b->mean[0]) / scale - 4 * t;
	double hi = fmax(a->mean[a->n - 1], b->mean[b->n - 1]) / scale + 4 * t;
	double step = (hi - lo) / (GRID - 1), ya[GRID], yb[GRID], ia = 0, ib = 0, l2 = 0;

	hist_sample(a, scale, ta, lo, step, ya);
	hist_sample(b, scale, tb, lo, step, yb);
	for (int i = 0; i < GRID; i++) {
		double w = (i == 0 || i == GRID - 1) ? 0.5 : 1.0;

		ia += w * ya[i] * step;
		ib += w * yb[i] * step;
	}
	if (ia <= 0 || ib <= 0)
		return 0;
	for (int i = 0; i < GRID; i++) {
		double w = (i == 0 || i == GRID - 1) ? 0.5 : 1.0, d = ya[i] / ia - yb[i] / ib;
		l2 += w * d * d * step;
	}
	return sqrt(l2);
}

double pdi_time_diff(const struct pdi_gauss *ga, const struct pdi_hist *ha, const struct pdi_gauss *gb,
		     const struct pdi_hist *hb, enum pdi_timedist dist)
{
	bool hist = dist == PDI_TIME_HIST && ha && hb && ha->n > 1 && hb->n > 1;
	double ma = hist ? hist_mean(ha) : ga->mean, mb = hist ? hist_mean(hb) : gb->mean;
	double scale = fmin(ma, mb) > 0 ? fmin(ma, mb) : fmax(ma, mb), l2, d;

	if (scale <= 0)
		return 0; /* both instantaneous */
	d = (ma - mb) / scale;
	if (hist)
		l2 = hist_l2(ha, hb, scale);
	else
		l2 = sqrt(fmax(0.0, gauss_l2_sq(ma / scale, fmax(pdi_gauss_stddev(ga) / scale, SIGMA_FLOOR), mb / scale,
						fmax(pdi_gauss_stddev(gb) / scale, SIGMA_FLOOR))));
	/* alpha (3.2), with the means in units of the smaller one */
	return l2 * (1.0 + d * d / ((ma + mb) / (2 * scale)));
}

/* L2 between the next-state distributions of state SA of A and SB of B. */
static double state_diff(const struct pdi_smm *a, uint32_t sa, const struct pdi_smm *b, uint32_t sb)
{
	double ta = (double)a->out_total[sa], tb = (double)b->out_total[sb], sum = 0;

	for (uint32_t i = a->first[sa]; i < a->first[sa + 1]; i++) {
		const struct pdi_smm_edge *e = &a->edges[i];
		const struct pdi_smm_edge *f = find_edge(b, sb, a->phase->states[e->to].key);
		double pa = ta > 0 ? e->count / ta : 0, pb = f && tb > 0 ? f->count / tb : 0;

		sum += (pa - pb) * (pa - pb);
	}
	for (uint32_t i = b->first[sb]; i < b->first[sb + 1]; i++) {
		const struct pdi_smm_edge *f = &b->edges[i];
		double pb = tb > 0 ? f->count / tb : 0;

		if (!find_edge(a, sa, b->phase->states[f->to].key))
			sum += pb * pb;
	}
	return sqrt(sum);
}

static uint64_t transition_key(uint64_t from, uint64_t to)
{
	uint64_t h = from * 0x9E3779B97F4A7C15ull;

	h ^= to + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static double nu_of(const struct pdi_nu *nu, uint64_t from, uint64_t to)
{
	uint32_t i;

	if (!nu)
		return 1.0;
	i = pdi_u64map_get(&nu->idx, transition_key(from, to));
	/* a transition that never varied among the samples: any change is news, but no more
	 * news than NU_FLOOR makes it, or the jitter of a call whose times overlap from phase to
	 * phase (its D near 0) would outweigh a real change elsewhere */
	return i == PDI_U64MAP_NONE || nu->rms[i] <= 1e-9 ? 1.0 : fmax(nu->rms[i], NU_FLOOR);
}

double pdi_smm_diff_each(const struct pdi_smm *a, const struct pdi_smm *b, const struct pdi_nu *nu,
			 enum pdi_timedist dist, void (*each)(void *ctx, uint64_t from, uint64_t to, double d),
			 void *ctx)
{
	const struct pdi_phase *pa = a->phase, *pb = b->phase;
	double diff = 0;

	for (uint32_t s = 0; s < pa->nstates; s++) {
		uint64_t key = pa->states[s].key;
		uint32_t t = pdi_phase_state(pb, key);

		diff += t == PDI_U64MAP_NONE ? ABSENT : state_diff(a, s, b, t);
		for (uint32_t i = a->first[s]; i < a->first[s + 1]; i++) {
			const struct pdi_smm_edge *e = &a->edges[i];
			uint64_t to = pa->states[e->to].key;
			const struct pdi_smm_edge *f = t == PDI_U64MAP_NONE ? NULL : find_edge(b, t, to);
			double d = f ? pdi_time_diff(e->time, e->hist, f->time, f->hist, dist) : ABSENT;

			d /= nu_of(nu, key, to);
			diff += d;
			if (each)
				each(ctx, key, to, d);
		}
	}
	for (uint32_t s = 0; s < pb->nstates; s++) {
		uint64_t key = pb->states[s].key;
		uint32_t t = pdi_phase_state(pa, key);

		if (t == PDI_U64MAP_NONE)
			diff += ABSENT;
		for (uint32_t i = b->first[s]; i < b->first[s + 1]; i++) {
			uint64_t to = pb->states[b->edges[i].to].key;
			double d;

			if (t != PDI_U64MAP_NONE && find_edge(a, t, to))
				continue; /* counted above */
			d = ABSENT / nu_of(nu, key, to);
			diff += d;
			if (each)
				each(ctx, key, to, d);
		}
	}
	return diff;
}

struct worst {
	uint64_t from, to;
	double chi;
};

static void consider(void *ctx, uint64_t from, uint64_t to, double chi)
{
	struct worst *w = ctx;

	if (chi > w->chi)
		*w = (struct worst){from, to, chi};
}

double pdi_smm_diff(const struct pdi_smm *a, const struct pdi_smm *b, const struct pdi_nu *nu,
		    enum pdi_timedist dist, uint64_t ret_worst[2], double *ret_chi)
{
	struct worst w = {0, 0, -1};
	double diff = pdi_smm_diff_each(a, b, nu, dist, consider, &w);

	if (ret_worst) {
		ret_worst[0] = w.from;
		ret_worst[1] = w.to;
	}
	if (ret_chi)
		*ret_chi = w.chi < 0 ? 0 : w.chi;
	return diff;
}

int pdi_nu_train(struct pdi_nu *nu, const struct pdi_smm *const *samples, size_t n, enum pdi_timedist dist)
{
	double *cnt = NULL;
	int r = 0;

	*nu = (struct pdi_nu){0};
	for (size_t i = 0; i < n && r == 0; i++)
		for (size_t j = i + 1; j < n && r == 0; j++) {
			const struct pdi_smm *a = samples[i], *b = samples[j];

			for (uint32_t s = 0; s < a->nstates && r == 0; s++) {
				uint64_t key = a->phase->states[s].key;
				uint32_t t = pdi_phase_state(b->phase, key);

				for (uint32_t e = a->first[s]; t != PDI_U64MAP_NONE && e < a->first[s + 1]; e++) {
					uint64_t to = a->phase->states[a->edges[e].to].key, k = transition_key(key, to);
					const struct pdi_smm_edge *f = find_edge(b, t, to);
					uint32_t x;
					double d;

					if (!f)
						continue;
					d = pdi_time_diff(a->edges[e].time, a->edges[e].hist, f->time, f->hist, dist);
					x = pdi_u64map_get(&nu->idx, k);
					if (x == PDI_U64MAP_NONE) {
						if (nu->n == nu->cap) {
							uint32_t cap = nu->cap ? nu->cap * 2 : 64;
							double *v = realloc(nu->rms, cap * sizeof(*v));
							double *c = v ? realloc(cnt, cap * sizeof(*c)) : NULL;

							if (v)
								nu->rms = v;
							if (!v || !c) {
								r = -ENOMEM;
								break;
							}
							cnt = c;
							nu->cap = cap;
						}
						if ((r = pdi_u64map_put(&nu->idx, k, nu->n)) < 0)
							break;
						x = nu->n++;
						nu->rms[x] = cnt[x] = 0;
					}
					nu->rms[x] += d * d;
					cnt[x] += 1;
				}
			}
		}
	for (uint32_t x = 0; x < nu->n; x++)
		nu->rms[x] = sqrt(nu->rms[x] / cnt[x]);
	free(cnt);
	if (r < 0)
		pdi_nu_done(nu);
	return r;
}

void pdi_nu_done(struct pdi_nu *nu)
{
	pdi_u64map_free(&nu->idx);
	free(nu->rms);
	*nu = (struct pdi_nu){0};
}

struct mst_edge {
	double w;
	uint32_t a, b;
};

static int cmp_edge(const void *x, const void *y)
{
	double a = ((const struct mst_edge *)x)->w, b = ((const struct mst_edge *)y)->w;

	return (a > b) - (a < b);
}

/* Prim on the full matrix: single linkage merges along the minimum spanning tree. */
static struct mst_edge *mst(const double *diff, size_t n)
{
	struct mst_edge *out = calloc(n ? n : 1, sizeof(*out));
	double *best = malloc((n ? n : 1) * sizeof(*best));
	uint32_t *from = calloc(n ? n : 1, sizeof(*from));
	bool *in = calloc(n ? n : 1, sizeof(*in));
	size_t cur = 0;

	if (!out || !best || !from || !in) {
		free(out);
		out = NULL;
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		best[i] = INFINITY;
	for (size_t k = 0; k + 1 < n; k++) {
		size_t next = 0;
		double nb = INFINITY;

		in[cur] = true;
		for (size_t i = 0; i < n; i++) {
			if (in[i])
				continue;
			if (diff[cur * n + i] < best[i]) {
				best[i] = diff[cur * n + i];
				from[i] = (uint32_t)cur;
			}
			if (best[i] <= nb) {
				nb = best[i];
				next = i;
			}
		}
		out[k] = (struct mst_edge){nb, from[next], (uint32_t)next};
		cur = next;
	}
	qsort(out, n > 1 ? n - 1 : 0, sizeof(*out), cmp_edge);
done:
	free(best);
	free(from);
	free(in);
	return out;
}

static uint32_t find_root(uint32_t *parent, uint32_t x)
{
	while (parent[x] != x)
		x = parent[x] = parent[parent[x]];
	return x;
}

size_t pdi_hac(const double *diff, size_t n, double threshold, uint32_t *ret_cluster)
{
	struct mst_edge *e = mst(diff, n);
	uint32_t *parent = malloc((n ? n : 1) * sizeof(*parent)), *label = malloc((n ? n : 1) * sizeof(*label));
	size_t k = 0;

	if (!e || !parent || !label) {
		/* no memory for the tree: every task its own cluster, which hides nothing */
		for (size_t i = 0; i < n; i++)
			ret_cluster[i] = (uint32_t)i;
		k = n;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		parent[i] = (uint32_t)i;
		label[i] = UINT32_MAX;
	}
	for (size_t i = 0; i + 1 < n && e[i].w <= threshold; i++)
		parent[find_root(parent, e[i].a)] = find_root(parent, e[i].b);
	for (size_t i = 0; i < n; i++) {
		uint32_t root = find_root(parent, (uint32_t)i);

		if (label[root] == UINT32_MAX)
			label[root] = (uint32_t)k++;
		ret_cluster[i] = label[root];
	}
out:
	free(e);
	free(parent);
	free(label);
	return k;
}

double pdi_hac_threshold(const double *diff, size_t n, size_t k)
{
	struct mst_edge *e;
	double t;

	if (n < 2)
		return 0;
	e = mst(diff, n);
	if (!e)
		return 0;
	/* merging the n-k smallest tree edges leaves k clusters */
	if (k >= n)
		t = e[0].w / 2;
	else if (k <= 1)
		t = e[n - 2].w * 1.5 + 1e-9;
	else
		t = (e[n - k - 1].w + e[n - k].w) / 2;
	free(e);
	return t;
}

size_t pdi_hac_heights(const double *diff, size_t n, double *ret)
{
	struct mst_edge *e;

	if (n < 2)
		return 0;
	e = mst(diff, n);
	if (!e)
		return 0;
	for (size_t i = 0; i + 1 < n; i++)
		ret[i] = e[i].w;
	free(e);
	return n - 1;
}

double pdi_nu_weight(const struct pdi_nu *nu, uint64_t from, uint64_t to)
{
	return nu_of(nu, from, to);
}

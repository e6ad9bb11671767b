/* SPDX-License-Identifier: GPL-2.0-only */
/* starved.c -- "not getting CPU": each task's share of the CPU against its peers' (starved.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robust.h"
#include "starved.h"

/* a share below this is taken as this: a task that got no CPU at all is still comparable */
#define SHARE_FLOOR 0.005

struct work {
	const struct pdi_model *const *models;
	const uint32_t *weights;
	size_t n;
	uint32_t np;
	double *log_share;  /* n x np: log of the share of its ready time on a CPU; NAN unknown */
	double *wall, *wait; /* n x np: the phase's length and the time waiting for a CPU (s) */
	struct pdi_weighted *peers; /* n */
	double *scratch;    /* max(n, np) */
};

static uint32_t weight(const struct work *w, size_t t)
{
	return w->weights ? w->weights[t] : 1;
}

/* The kernel's counts of every model in every phase looked at. False when no phase has any. */
static bool read_shares(struct work *w, uint32_t first, uint32_t end)
{
	bool any = false;

	for (size_t t = 0; t < w->n; t++)
		for (uint32_t p = 0; p < w->np; p++) {
			struct pdi_phase_usage u;
			size_t i = t * w->np + p;
			double ready;

			w->log_share[i] = NAN;
			w->wall[i] = w->wait[i] = 0;
			if (p < first || p >= end || p >= w->models[t]->nphases ||
			    !pdi_model_phase_usage(w->models[t], p, &u) || !u.wall_ns)
				continue;
			w->wall[i] = (double)u.wall_ns / 1e9;
			w->wait[i] = (double)u.wait_ns / 1e9;
			ready = (double)(u.cpu_ns + u.wait_ns);
			if (ready < PDI_STARVED_READY * (double)u.wall_ns)
				continue; /* asleep or held most of it: no share to compare */
			w->log_share[i] = log(fmax((double)u.cpu_ns / ready, SHARE_FLOOR));
			any = true;
		}
	return any;
}

/* Model T's peers' median log share in phase P (the other models, and the other tasks of its
 * own class); NAN when it has none. */
static double peers_median(struct work *w, size_t t, uint32_t p)
{
	size_t k = 0;

	for (size_t u = 0; u < w->n; u++) {
		double v = w->log_share[u * w->np + p];
		uint32_t wt = u == t ? weight(w, u) - 1 : weight(w, u);

		if (!isnan(v) && wt)
			w->peers[k++] = (struct pdi_weighted){v, wt};
	}
	return k ? pdi_weighted_median(w->peers, k) : NAN;
}

/* X: how many times less CPU each model got than its peers (log), beyond its own usual; 0
 * where unknown. */
static bool ratios(struct work *w, struct pdi_starved *s)
{
	bool any = false;

	for (size_t i = 0; i < w->n * w->np; i++)
		s->x[i] = NAN;
	for (uint32_t p = s->first; p < s->end; p++)
		for (size_t t = 0; t < w->n; t++) {
			double ls = w->log_share[t * w->np + p], med;

			if (isnan(ls) || isnan(med = peers_median(w, t, p)))
				continue;
			s->x[t * w->np + p] = med - ls;
			any = true;
		}
	/* a task that always gets less (it shares its CPU by placement) is taken at its usual */
	for (size_t t = 0; any && s->end - s->first > 1 && t < w->n; t++) {
		size_t k = 0;
		double usual;

		for (uint32_t p = s->first; p < s->end; p++)
			if (!isnan(s->x[t * w->np + p]))
				w->scratch[k++] = s->x[t * w->np + p];
		usual = fmax(0.0, pdi_median(w->scratch, k));
		for (uint32_t p = s->first; p < s->end; p++)
			s->x[t * w->np + p] -= usual;
	}
	for (size_t i = 0; i < w->n * w->np; i++)
		if (isnan(s->x[i]))
			s->x[i] = 0;
	return any;
}

bool pdi_starved_named(const struct pdi_starved *s, size_t t)
{
	return s->found && (t == s->task || pdi_starved_of(s, t, s->peak) >= PDI_STARVED_ALSO_SHARE * log(s->ratio));
}

/* The peak, its run, the tasks beside it and how far it stands above the step's noise. */
static void find(struct work *w, struct pdi_starved *s)
{
	double peak = 0, join = log(PDI_STARVED_JOIN), median;
	size_t k = 0;

	for (size_t t = 0; t < w->n; t++)
		for (uint32_t p = s->first; p < s->end; p++)
			if (s->x[t * w->np + p] > peak) {
				peak = s->x[t * w->np + p];
				s->task = t;
				s->peak = p;
			}
	if (peak < log(PDI_STARVED_RATIO))
		return;
	s->ratio = exp(peak);
	s->onset = s->last = s->peak;
	while (s->onset > s->first && pdi_starved_of(s, s->task, s->onset - 1) >= join)
		s->onset--;
	while (s->last + 1 < s->end && pdi_starved_of(s, s->task, s->last + 1) >= join)
		s->last++;
	for (uint32_t p = s->onset; p <= s->last; p++) {
		s->run_s += w->wall[s->task * w->np + p];
		s->wait_s += w->wait[s->task * w->np + p];
	}
	if (s->run_s < PDI_STARVED_MIN_S)
		return;
	s->found = true;
	{
		size_t i = s->task * w->np + s->peak;

		s->wait_share = w->wall[i] > 0 ? w->wait[i] / w->wall[i] : 0;
		for (size_t t = 0; t < w->n; t++)
			if (t != s->task && w->wall[t * w->np + s->peak] > 0)
				w->scratch[k++] = w->wait[t * w->np + s->peak] / w->wall[t * w->np + s->peak];
		s->peers_wait_share = pdi_median(w->scratch, k);
	}
	for (size_t t = 0; t < w->n; t++)
		if (!pdi_starved_named(s, t))
			s->next = fmax(s->next, pdi_starved_of(s, t, s->peak));
	/* the noise: the other phases' largest ratios, or with few phases the other tasks' */
	k = 0;
	if (s->end - s->first >= 6) {
		for (uint32_t p = s->first; p < s->end; p++) {
			double top = 0;

			if (p >= s->onset && p <= s->last)
				continue;
			for (size_t t = 0; t < w->n; t++)
				top = fmax(top, pdi_starved_of(s, t, p));
			s->other_phase = fmax(s->other_phase, top);
			w->scratch[k++] = top;
		}
	} else {
		for (size_t t = 0; t < w->n; t++)
			if (t != s->task)
				w->scratch[k++] = fmax(0.0, pdi_starved_of(s, t, s->peak));
	}
	median = pdi_median(w->scratch, k);
	s->z = (peak - median) / pdi_robust_sd(w->scratch, k, median, PDI_STARVED_NOISE_FLOOR);
}

int pdi_starved_find(const struct pdi_model *const *models, const uint32_t *weights, size_t n, uint32_t first,
		     uint32_t end, struct pdi_starved *ret)
{
	struct pdi_starved s = {.n = n, .first = first, .end = end};
	struct work w = {.models = models, .weights = weights, .n = n};
	int r = -ENOMEM;

	for (size_t t = 0; t < n; t++)
		if (models[t]->nphases > w.np)
			w.np = models[t]->nphases;
	if (!n || first >= end || end > w.np)
		return -EINVAL;
	s.nphases = w.np;
	s.x = calloc(n * w.np, sizeof(*s.x));
	w.log_share = malloc(n * w.np * sizeof(*w.log_share));
	w.wall = malloc(n * w.np * sizeof(*w.wall));
	w.wait = malloc(n * w.np * sizeof(*w.wait));
	w.peers = malloc(n * sizeof(*w.peers));
	w.scratch = malloc((n > w.np ? n : w.np) * sizeof(*w.scratch));
	if (!s.x || !w.log_share || !w.wall || !w.wait || !w.peers || !w.scratch)
		goto out;
	if (read_shares(&w, first, end) && (s.has_usage = ratios(&w, &s)))
		find(&w, &s);
	*ret = s;
	s = (struct pdi_starved){0};
	r = 0;
out:
	free(w.log_share);
	free(w.wall);
	free(w.wait);
	free(w.peers);
	free(w.scratch);
	pdi_starved_done(&s);
	return r;
}

void pdi_starved_done(struct pdi_starved *s)
{
	free(s->x);
	*s = (struct pdi_starved){0};
}

double pdi_starved_of(const struct pdi_starved *s, size_t t, uint32_t p)
{
	if (!s->x || t >= s->n || p < s->first || p >= s->end)
		return 0;
	return s->x[t * s->nphases + p];
}

void pdi_starved_text(const struct pdi_starved *s, char *buf, size_t len)
{
	static const char *const parts[] = {NULL, NULL, "half", "a third", "a quarter", "a fifth", "a sixth",
					    "a seventh", "an eighth", "a ninth", "a tenth"};
	long k = s->found ? lround(s->ratio) : 0;
	char share[40];

	if (!s->found) {
		if (len)
			buf[0] = '\0';
		return;
	}
	if (k >= 2 && k <= 10)
		snprintf(share, sizeof(share), "%s", parts[k]);
	else
		snprintf(share, sizeof(share), "1/%.0f", s->ratio);
	snprintf(buf, len, "waiting for a CPU %.0f%% of phase %u (its peers %.0f%%), %s of their share of the CPU, for %.1f s from phase %u",
		 100 * s->wait_share, s->peak, 100 * s->peers_wait_share, share, s->run_s, s->onset);
}

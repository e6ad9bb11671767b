/* SPDX-License-Identifier: GPL-2.0-only */
/* alike.c -- every rank lost CPU alike to a process of the job's own group (alike.h), on the units
 * starved.c read (starved_work.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "alike.h"
#include "starved_work.h"

struct series {
	double *fall;   /* nu: the ranks' median log fall below their usual share; NAN unknown */
	double *known;  /* nu: the same, 0 where unknown (for the sliding sums) */
	double *wall;   /* nu: the unit's length (s), the ranks' mean */
	double *ranks;  /* nu: the ranks' CPU (CPUs) */
	double *others; /* nu: the group's CPU less the ranks' (CPUs); NAN not read on every model */
	double *best;   /* nu: rows' highest means (pdi_starved_rows_max()) */
};

static uint32_t weight(const struct pdi_starved_work *w, size_t t)
{
	return w->weights ? w->weights[t] : 1;
}

/* Unit U's figures over the models of W. The fall is known where the tasks with a share there are
 * half the step's or more; the others where the group was read beside every model's counts. */
static void unit_of(struct pdi_starved_work *w, struct series *s, uint32_t u)
{
	double len = 0, ranks = 0, all = 0, with = 0;
	bool read = true;
	size_t k = 0, g = 0;

	for (size_t t = 0; t < w->n; t++) {
		size_t i = t * w->nu + u;
		uint32_t wt = weight(w, t);

		all += wt;
		if (w->wall[i] <= 0) {
			read = false;
			continue;
		}
		len += w->wall[i] * wt;
		ranks += wt * w->cpu[i] / w->wall[i];
		if (!isnan(w->log_share[i])) {
			w->peers[k++] = (struct pdi_weighted){w->usual[t] - w->log_share[i], wt};
			with += wt;
		}
		if (isnan(w->group[i]))
			read = false;
		else
			w->scratch[g++] = w->group[i] / w->wall[i];
	}
	s->wall[u] = all > 0 ? len / all : 0;
	s->ranks[u] = ranks;
	s->fall[u] = k && 2 * with >= all ? pdi_weighted_median(w->peers, k) : NAN;
	s->known[u] = isnan(s->fall[u]) ? 0 : s->fall[u];
	/* every model's readings carry the same group's count: their median, the ranks' own windows
	 * differ by the readings' microseconds */
	s->others[u] = read && g ? pdi_median(w->scratch, g) - ranks : NAN;
}

/* The runs of units where every rank fell alike, as starved.c's runs: at least PDI_STARVED_JOIN
 * times, once PDI_STARVED_RATIO times, PDI_STARVED_MIN_S or longer; their first and last units into
 * RET_ONSET and RET_LAST (room for nu). Their number. */
static uint32_t runs_of(const struct pdi_starved_work *w, const struct series *s, uint32_t *ret_onset,
			uint32_t *ret_last)
{
	double join = log(PDI_STARVED_JOIN), ratio = log(PDI_STARVED_RATIO);
	uint32_t k = 0;

	for (uint32_t u = 0; u < w->nu;) {
		double len = 0, top = 0;
		uint32_t v = u;

		for (; v < w->nu && !isnan(s->fall[v]) && s->fall[v] >= join; v++) {
			len += s->wall[v];
			top = fmax(top, s->fall[v]);
		}
		if (v > u && top >= ratio && len >= PDI_STARVED_MIN_S) {
			ret_onset[k] = u;
			ret_last[k++] = v - 1;
		}
		u = v > u ? v : u + 1;
	}
	return k;
}

/* V's mean over units [FROM, TO] by length, where known (NAN: less than half of it known). */
static double mean_over(const struct series *s, const double *v, uint32_t from, uint32_t to)
{
	double sum = 0, len = 0, all = 0;

	for (uint32_t u = from; u <= to; u++) {
		all += s->wall[u];
		if (!isnan(v[u])) {
			sum += v[u] * s->wall[u];
			len += s->wall[u];
		}
	}
	return len > 0 && 2 * len >= all ? sum / len : NAN;
}

/* V's median by length over units [FROM, TO) where known (NAN: none). */
static double median_over(struct pdi_starved_work *w, const struct series *s, const double *v, uint32_t from,
			  uint32_t to)
{
	size_t k = 0;

	for (uint32_t u = from; u < to; u++)
		if (!isnan(v[u]) && !isnan(s->others[u]))
			w->byunit[k++] = (struct pdi_weighted){v[u], (uint32_t)fmin(s->wall[u] * 1e4 + 1, 4e9)};
	return k ? pdi_weighted_quantile(w->byunit, k, 0.5) : NAN;
}

/* The robust spread of what the group's others used per unit outside the run (CPUs), at least
 * PDI_ALIKE_NOISE_CPUS. */
static double others_noise(struct pdi_starved_work *w, const struct series *s, uint32_t onset, uint32_t last)
{
	size_t k = 0;

	for (uint32_t u = 0; u < w->nu; u++)
		if ((u < onset || u > last) && !isnan(s->others[u]))
			w->scratch[k++] = s->others[u];
	return pdi_robust_sd(w->scratch, k, k ? pdi_median(w->scratch, k) : 0, PDI_ALIKE_NOISE_CPUS);
}

/* What the ranks and the group's others used before the run (its units before, else after it)
 * and over it; the finding when the others took their part of what the ranks lost. */
static void group_took(struct pdi_starved_work *w, const struct series *s, uint32_t onset, uint32_t last,
		       struct pdi_alike *a)
{
	uint32_t from = 0, to = onset;
	double lost, gain;

	if (isnan(median_over(w, s, s->others, 0, onset))) {
		from = last + 1;
		to = w->nu;
	}
	a->ranks_before = median_over(w, s, s->ranks, from, to);
	a->others_before = median_over(w, s, s->others, from, to);
	a->ranks_during = mean_over(s, s->ranks, onset, last);
	a->others_during = mean_over(s, s->others, onset, last);
	if (isnan(a->ranks_before) || isnan(a->others_before) || isnan(a->others_during))
		return;
	lost = a->ranks_before - a->ranks_during;
	gain = a->others_during - a->others_before;
	a->took = lost > 0 ? gain / lost : 0;
	a->found = lost > 0 && a->took >= PDI_ALIKE_TOOK && gain >= PDI_ALIKE_MIN_CPUS;
	a->group_z = gain / others_noise(w, s, onset, last);
}

/* Run [ONSET, LAST] of units judged into RET: how far the ranks fell over it against the rest of
 * the step, and what the job's group used meanwhile. */
static void judge(struct pdi_starved_work *w, const struct series *s, uint32_t onset, uint32_t last,
		  struct pdi_alike *ret)
{
	struct pdi_alike a = {.read = ret->read, .fell = true, .others_before = NAN, .others_during = NAN};

	a.onset = w->phase[onset];
	a.last = w->phase[last];
	for (uint32_t u = onset; u <= last; u++) {
		a.run_s += s->wall[u];
		a.behind += s->known[u] * s->wall[u];
	}
	a.fall = exp(a.behind / a.run_s);
	for (uint32_t u = 0; u + (last - onset + 1) <= w->nu; u++)
		s->best[u] = -INFINITY;
	pdi_starved_rows_max(s->known, s->wall, w->nu, last - onset + 1, s->best);
	a.z = pdi_starved_rows_z(s->best, w->nu, onset, last, a.behind / a.run_s);
	for (uint32_t p = 0; p < w->np; p++) { /* the most they fell in a phase outside the run */
		double sum = 0;

		for (uint32_t u = w->unit0[p]; u < w->unit0[p + 1]; u++)
			if (u < onset || u > last)
				sum += fmax(0.0, s->known[u]) * s->wall[u];
		a.other_behind = fmax(a.other_behind, sum);
	}
	if (a.read)
		group_took(w, s, onset, last, &a);
	*ret = a;
}

/* Of the runs where every rank fell alike, the one the job's group took its part of, the furthest
 * fallen first; else the furthest fallen. A node busier at other moments of the step makes runs of
 * its own, which may outweigh the hog's (bursts of other sessions' work, interf17: HPCC cpu 1003's
 * deepest run, 6.2 s at 5.6 times less in phases 35-47, came 26 phases after the hog's). */
int pdi_alike_find(struct pdi_starved_work *w, struct pdi_alike *ret)
{
	struct pdi_alike a = {.others_before = NAN, .others_during = NAN}, best = a, found = a;
	double *all = calloc(6 * (size_t)w->nu + 1, sizeof(*all));
	uint32_t *onsets = calloc(2 * (size_t)w->nu + 1, sizeof(*onsets)), k;
	struct series s;

	if (!all || !onsets) {
		free(all);
		free(onsets);
		return -ENOMEM;
	}
	s = (struct series){all, all + w->nu, all + 2 * w->nu, all + 3 * w->nu, all + 4 * w->nu, all + 5 * w->nu};
	for (uint32_t u = 0; u < w->nu; u++) {
		unit_of(w, &s, u);
		a.read |= !isnan(s.others[u]);
	}
	best.read = found.read = a.read;
	k = runs_of(w, &s, onsets, onsets + w->nu);
	for (uint32_t i = 0; i < k; i++) {
		judge(w, &s, onsets[i], onsets[w->nu + i], &a);
		if (a.behind > best.behind)
			best = a;
		if (a.found && a.behind > found.behind)
			found = a;
	}
	free(all);
	free(onsets);
	*ret = found.found ? found : best;
	return 0;
}

/* (what the group's others used is shown from 0: a reading interpolated between counters read a few
 * us apart may fall a hair below) */
void pdi_alike_text(const struct pdi_alike *a, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = '\0';
	if (!a->fell)
		return;
	if (a->found)
		snprintf(buf, len,
			 "a process of the job's own, not one of its ranks, took %.2f CPUs from its ranks, every rank alike, "
			 "from phase %u to %u (%.1f s): the ranks got %.1f times less CPU than usual (%.2f -> %.2f CPUs) "
			 "while the job's group used %.2f CPUs beyond them (%.2f before)",
			 a->others_during - a->others_before, a->onset, a->last, a->run_s, a->fall, a->ranks_before,
			 a->ranks_during, fmax(0.0, a->others_during), fmax(0.0, a->others_before));
	else if (a->read && !isnan(a->others_during))
		snprintf(buf, len,
			 "every rank got %.1f times less CPU than usual from phase %u to %u (%.1f s), but the job's group "
			 "used too little beyond its ranks to be a process of its own taking it (%.2f CPUs, %.2f before): "
			 "the node was busier",
			 a->fall, a->onset, a->last, a->run_s, fmax(0.0, a->others_during), fmax(0.0, a->others_before));
	else
		snprintf(buf, len,
			 "every rank got %.1f times less CPU than usual from phase %u to %u (%.1f s); the job has no "
			 "cgroup of its own to tell a process of its own from a busier node",
			 a->fall, a->onset, a->last, a->run_s);
}

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
	struct pdi_weighted *byphase; /* np */
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

/* The share Q of model T's time (phases weighed by their lengths) before phase END over which V
 * (n x np; NAN unknown) was at most the value returned (0 when none is known). A high Q makes a
 * usual that a stretch of interference covering most of the phases does not move, as it would a
 * median (meep, issue 9: a hog for 6 s covered 24 of its 31 compared phases, the rank's usual
 * became the interference and nothing was found); Q 0.5 is the median by length, what a task got
 * before a phase (below_usual()). */
static double by_length(struct work *w, size_t t, const double *v, double q, uint32_t end)
{
	size_t k = 0;

	for (uint32_t p = 0; p < end; p++) {
		double x = v[t * w->np + p];

		if (!isnan(x) && !isnan(w->log_share[t * w->np + p]))
			w->byphase[k++] = (struct pdi_weighted){x, (uint32_t)fmin(w->wall[t * w->np + p] * 1e4 + 1, 4e9)};
	}
	return k ? pdi_weighted_quantile(w->byphase, k, q) : 0;
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
		double usual = fmax(0.0, by_length(w, t, s->x, PDI_STARVED_USUAL_Q, w->np));

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
	return s->found && t < s->n &&
	       (t == s->task || s->window[t] >= PDI_STARVED_ALSO_SHARE * s->window[s->task]);
}

/* How far model T fell behind over phases [FROM, TO] (log ratio times seconds, where it did). */
static double behind(const struct work *w, const struct pdi_starved *s, size_t t, uint32_t from, uint32_t to)
{
	double sum = 0;

	for (uint32_t p = from; p <= to; p++)
		sum += fmax(0.0, pdi_starved_of(s, t, p)) * w->wall[t * w->np + p];
	return sum;
}

/* The run: the phases in a row where one task got at most 1/PDI_STARVED_JOIN of its peers'
 * share, with one at most 1/PDI_STARVED_RATIO, that it fell furthest behind over (a long
 * interference outweighs a short one that peaked higher). */
static bool best_run(const struct work *w, struct pdi_starved *s)
{
	double join = log(PDI_STARVED_JOIN), best = 0;

	for (size_t t = 0; t < w->n; t++)
		for (uint32_t p = s->first; p < s->end;) {
			uint32_t q = p, top = p;
			double area;

			if (pdi_starved_of(s, t, p) < join) {
				p++;
				continue;
			}
			while (q + 1 < s->end && pdi_starved_of(s, t, q + 1) >= join)
				q++;
			for (uint32_t r = p; r <= q; r++)
				if (pdi_starved_of(s, t, r) > pdi_starved_of(s, t, top))
					top = r;
			area = behind(w, s, t, p, q);
			if (pdi_starved_of(s, t, top) >= log(PDI_STARVED_RATIO) && area > best) {
				best = area;
				s->task = t;
				s->onset = p;
				s->last = q;
				s->peak = top;
			}
			p = q + 1;
		}
	return best > 0;
}

/* Model T's usual log share: its median over the phases looked at (0 when none). */
static double usual_share(struct work *w, const struct pdi_starved *s, size_t t)
{
	const double *ls = &w->log_share[t * w->np];
	size_t k = 0;

	for (uint32_t p = s->first; p < s->end; p++)
		if (!isnan(ls[p]))
			w->scratch[k++] = ls[p];
	return pdi_median(w->scratch, k);
}

/* Whether the finding's task got at most 1/PDI_STARVED_ONSET of its usual share in phase P: of
 * the share it reached over the step (its best tenth), and of the share it got before P (the
 * median, by length: a short phase at a high share there is no usual). The second tells the
 * scheduler settling after a hog arrived (the share falls from what it was just before) from a
 * machine that was busier for everyone earlier on (GROMACS at load 17, issue 9: every rank got 5%
 * of a CPU for the first 8.4 s and 8-10% after the hog; by the step's usual alone, the start
 * moved back over all of them to the set-up, 6 phases early). */
static bool below_usual(struct work *w, const struct pdi_starved *s, uint32_t p)
{
	double step = by_length(w, s->task, w->log_share, 1 - PDI_STARVED_USUAL_Q, w->np);
	double before = by_length(w, s->task, w->log_share, 0.5, p); /* 0 (a share of 1): none known */

	return fmin(step, before) - w->log_share[s->task * w->np + p] >= log(PDI_STARVED_ONSET);
}

/* The run's start, earlier: where the interference begins, the scheduler takes a moment to
 * settle, and the task's peers may get as little as it does (campaign: for 0.5-4 s, every rank
 * near 0% while the victim's CPU was shared), and the phase it began in shows it in part. The
 * phases before the run in which the task got at most 1/PDI_STARVED_ONSET of its own usual
 * share (below_usual), or of its peers' (beyond its usual ratio), belong to it: the second where
 * the phase it began in is a long one, which weighs in its usual (HPCC's 3.4 s set-up, issue 9:
 * 57% of its peers' share there, the hog's last second in it, then 5% for 5 s). */
static void onset_of(struct work *w, struct pdi_starved *s)
{
	const double *ls = &w->log_share[s->task * w->np];

	while (s->onset > s->first && !isnan(ls[s->onset - 1]) &&
	       (below_usual(w, s, s->onset - 1) ||
		pdi_starved_of(s, s->task, s->onset - 1) >= log(PDI_STARVED_ONSET)))
		s->onset--;
}

/* How much more of the CPU than its usual each model got over the run (log, mean of the phases
 * known, each by its length): a rank that spins in its own code takes the CPU its neighbour goes
 * without. By length, since the run's start may have moved back over a phase of milliseconds
 * before the spin (GROMACS, issue 9: 28% of a CPU in 0.06 s, then 98% in 2.5 s; unweighted,
 * the spinner's gain fell under PDI_STARVED_TOOK and its victim was named instead). */
static void gains(struct work *w, struct pdi_starved *s)
{
	for (size_t t = 0; t < w->n; t++) {
		double usual = usual_share(w, s, t), sum = 0, len = 0;

		for (uint32_t p = s->onset; p <= s->last; p++)
			if (!isnan(w->log_share[t * w->np + p])) {
				sum += (w->log_share[t * w->np + p] - usual) * w->wall[t * w->np + p];
				len += w->wall[t * w->np + p];
			}
		s->gain[t] = len > 0 ? sum / len : 0;
	}
}

/* The run, the tasks beside it and how far it stands above the step's noise. */
static void find(struct work *w, struct pdi_starved *s)
{
	double peak, median, next = 0, run_s = 0;
	size_t k = 0, i;

	if (!best_run(w, s))
		return;
	/* the run itself lasts a stall's worth: its start moved back over phases where every rank
	 * got less (onset_of) does not make a blip of 0.1 s a finding (HPCC, issue 9: a phase of
	 * 0.11 s at a quarter of the one ready peer's share, after 4.8 s of a machine busier for all) */
	for (uint32_t p = s->onset; p <= s->last; p++)
		run_s += w->wall[s->task * w->np + p];
	if (run_s < PDI_STARVED_MIN_S)
		return;
	onset_of(w, s);
	peak = pdi_starved_of(s, s->task, s->peak);
	s->ratio = exp(peak);
	for (uint32_t p = s->onset; p <= s->last; p++) {
		s->run_s += w->wall[s->task * w->np + p];
		s->wait_s += w->wait[s->task * w->np + p];
	}
	s->found = true;
	for (size_t t = 0; t < w->n; t++)
		s->window[t] = behind(w, s, t, s->onset, s->last);
	gains(w, s);
	i = s->task * w->np + s->peak;
	s->wait_share = w->wall[i] > 0 ? w->wait[i] / w->wall[i] : 0;
	for (size_t t = 0; t < w->n; t++) {
		if (t != s->task && w->wall[t * w->np + s->peak] > 0)
			w->scratch[k++] = w->wait[t * w->np + s->peak] / w->wall[t * w->np + s->peak];
		if (!pdi_starved_named(s, t))
			next = fmax(next, s->window[t]);
	}
	s->peers_wait_share = pdi_median(w->scratch, k);
	s->task_margin = next > 0 ? s->window[s->task] / next : 1e9;
	for (uint32_t p = s->first; p < s->end; p++)
		for (size_t t = 0; (p < s->onset || p > s->last) && t < w->n; t++)
			s->other_behind = fmax(s->other_behind, behind(w, s, t, p, p));
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
	s.window = calloc(n, sizeof(*s.window));
	s.gain = calloc(n, sizeof(*s.gain));
	w.log_share = malloc(n * w.np * sizeof(*w.log_share));
	w.wall = malloc(n * w.np * sizeof(*w.wall));
	w.wait = malloc(n * w.np * sizeof(*w.wait));
	w.peers = malloc(n * sizeof(*w.peers));
	w.byphase = malloc(w.np * sizeof(*w.byphase));
	w.scratch = malloc((n > w.np ? n : w.np) * sizeof(*w.scratch));
	if (!s.x || !s.window || !s.gain || !w.log_share || !w.wall || !w.wait || !w.peers || !w.byphase || !w.scratch)
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
	free(w.byphase);
	free(w.scratch);
	pdi_starved_done(&s);
	return r;
}

void pdi_starved_done(struct pdi_starved *s)
{
	free(s->x);
	free(s->window);
	free(s->gain);
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
	char share[40], where[80];

	if (!s->found) {
		if (len)
			buf[0] = '\0';
		return;
	}
	if (k >= 2 && k <= 10)
		snprintf(share, sizeof(share), "%s", parts[k]);
	else
		snprintf(share, sizeof(share), "1/%.0f", s->ratio);
	if (s->last > s->onset)
		snprintf(where, sizeof(where), "from phase %u to %u (%.1f s)", s->onset, s->last, s->run_s);
	else
		snprintf(where, sizeof(where), "in phase %u (%.1f s)", s->onset, s->run_s);
	snprintf(buf, len, "waited %.1f s for a CPU %s, %.0f%% of phase %u (its peers %.0f%%): %s of their share of the CPU",
		 s->wait_s, where, 100 * s->wait_share, s->peak, 100 * s->peers_wait_share, share);
}

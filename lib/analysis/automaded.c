/* SPDX-License-Identifier: GPL-2.0-only */
/* automaded.c -- faulty phase, faulty task(s) and transitions (AutomaDeD 4.2-4.4).
 *
 * Costs are kept linear in the number of models where the paper is quadratic in tasks:
 * the caller collapses identical tasks into weighted classes (eqclass.h), and nu for a
 * phase is trained on at most NU_SAMPLES other phases, not on all pairs of all of them. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "automaded.h"
#include "pace.h"
#include "robust.h"

#define NU_SAMPLES 12           /* phases nu is trained on, evenly spread */
#define PERMANENT_RATIO 3.0     /* across-shift over within-side difference (medians) that makes a shift */
#define STEP_MIN_T 6.0          /* Welch's t of a step in a task's computation time that makes a shift */
#define STEP_MIN_RISE 1.15      /* and by how much it must have risen */
#define TEMPORARY_MARGIN 3.0    /* a phase this far above the next is a temporary effect */
#define CLUSTER_JUMP 4.0        /* a merge height this much above the one below separates clusters */
#define MAX_CLUSTERED 4096      /* models beyond which HAC (quadratic) is not run */
#define LOG10_NEVER_SEEN (-20.0) /* a transition the normal phases never took */

/* One sample run's models of one task, compiled. */
struct sample {
	struct pdi_smm *smm; /* np of them, NULL when the run has no model for the task */
	uint32_t np, first, end;
};

struct work {
	const struct pdi_automaded_input *in;
	size_t n;
	uint32_t np, first, end;
	struct pdi_smm *smm;     /* n x np */
	struct pdi_nu *nu;       /* n x np: per phase without samples; with samples only [t * np] */
	struct sample *samples;  /* nsamples x n */
	double *d;               /* n x np x np: Diff(phase p, phase q) of one task, with p's nu */
	double *raw;             /* n x np x np: the same, unweighted and symmetric (q < p unused) */
	double *dev;             /* n x np: deviation of a task's phase */
};

static double weight(const struct pdi_automaded_input *in, size_t t)
{
	return in->weights ? in->weights[t] : 1.0;
}

static const struct pdi_smm *smm_of(const struct work *w, size_t t, uint32_t p)
{
	return &w->smm[t * w->np + p];
}

static const struct pdi_nu *nu_of(const struct work *w, size_t t, uint32_t p)
{
	return &w->nu[t * w->np + (w->in->nsamples ? 0 : p)];
}

static double *d_at(const struct work *w, size_t t, uint32_t p, uint32_t q)
{
	return &w->d[(t * w->np + p) * w->np + q];
}

/* A task's phases P and Q, without nu: a permanent shift is in the noise nu is trained on. */
static double raw_diff(const struct work *w, size_t t, uint32_t p, uint32_t q)
{
	return p < q ? w->raw[(t * w->np + p) * w->np + q] : w->raw[(t * w->np + q) * w->np + p];
}

static void compared_range(uint32_t np, uint32_t *first, uint32_t *end)
{
	/* the prologue (MPI_Init up to the loop) and the epilogue (the loop's rest, then
	 * MPI_Finalize) differ from the loop by construction: compare the loop's phases */
	*first = np >= 5 ? 1 : 0;
	*end = np >= 5 ? np - 1 : np;
}

static int build_smms(const struct pdi_model *m, uint32_t np, struct pdi_smm *out)
{
	for (uint32_t p = 0; p < np; p++) {
		int r = pdi_smm_build(&m->phases[p], &out[p]);
		if (r < 0)
			return r;
	}
	return 0;
}

static int build_samples(struct work *w)
{
	const struct pdi_automaded_input *in = w->in;

	w->samples = calloc(in->nsamples * w->n + 1, sizeof(*w->samples));
	if (!w->samples)
		return -ENOMEM;
	for (size_t r = 0; r < in->nsamples; r++)
		for (size_t t = 0; t < w->n; t++) {
			const struct pdi_model *m = in->samples[r * w->n + t];
			struct sample *s = &w->samples[r * w->n + t];
			int err;

			if (!m || m->nphases < 2)
				continue;
			s->smm = calloc(m->nphases, sizeof(*s->smm));
			if (!s->smm)
				return -ENOMEM;
			s->np = m->nphases;
			compared_range(s->np, &s->first, &s->end);
			if ((err = build_smms(m, s->np, s->smm)) < 0)
				return err;
		}
	return 0;
}

/* The phase of a sample run that corresponds to phase P of the run: the same one when the
 * sample has it among its compared phases, the nearest compared one otherwise. */
static const struct pdi_smm *counterpart(const struct sample *s, uint32_t p)
{
	if (!s->smm)
		return NULL;
	if (p < s->first)
		p = s->first;
	if (p >= s->end)
		p = s->end - 1;
	return &s->smm[p];
}

/* nu (3.3): the noise among normal models of task T. With sample runs, their phases; without,
 * the task's other phases, so that a fault in phase P does not excuse itself. */
static int train_nu(struct work *w, size_t t, uint32_t p)
{
	const struct pdi_smm *pool[NU_SAMPLES];
	size_t n = 0;

	if (w->in->nsamples) {
		size_t total = 0, k = 0;

		for (size_t r = 0; r < w->in->nsamples; r++)
			total += w->samples[r * w->n + t].end - w->samples[r * w->n + t].first;
		for (size_t r = 0; r < w->in->nsamples; r++) {
			const struct sample *s = &w->samples[r * w->n + t];

			for (uint32_t q = s->first; q < s->end; q++, k++)
				if (s->smm && n < NU_SAMPLES && k * NU_SAMPLES / (total ? total : 1) >= n)
					pool[n++] = &s->smm[q];
		}
	} else {
		uint32_t others = w->end - w->first - 1, k = 0;

		for (uint32_t q = w->first; q < w->end; q++) {
			if (q == p)
				continue;
			if (n < NU_SAMPLES && (size_t)k * NU_SAMPLES / (others ? others : 1) >= n)
				pool[n++] = smm_of(w, t, q);
			k++;
		}
	}
	return pdi_nu_train(&w->nu[t * w->np + p], pool, n, w->in->dist);
}

/* Each task's deviation per phase: its mean difference to its other phases, or the sum of
 * squared differences to its counterparts in the sample runs (4.2). */
static void deviations(struct work *w)
{
	const struct pdi_automaded_input *in = w->in;

	for (size_t t = 0; t < w->n; t++)
		for (uint32_t p = w->first; p < w->end; p++) {
			double sum = 0;

			if (in->nsamples) {
				for (size_t r = 0; r < in->nsamples; r++) {
					const struct pdi_smm *c = counterpart(&w->samples[r * w->n + t], p);
					double x = c ? pdi_smm_diff(smm_of(w, t, p), c, nu_of(w, t, p), in->dist, NULL, NULL) : 0;

					sum += x * x;
				}
			} else {
				for (uint32_t q = w->first; q < w->end; q++) {
					if (q == p)
						continue;
					sum += *d_at(w, t, p, q) = pdi_smm_diff(smm_of(w, t, p), smm_of(w, t, q),
										 nu_of(w, t, p), in->dist, NULL, NULL);
					if (p < q)
						w->raw[(t * w->np + p) * w->np + q] =
							(pdi_smm_diff(smm_of(w, t, p), smm_of(w, t, q), NULL, in->dist, NULL, NULL) +
							 pdi_smm_diff(smm_of(w, t, q), smm_of(w, t, p), NULL, in->dist, NULL, NULL)) / 2;
				}
				sum /= w->end - w->first - 1;
			}
			w->dev[t * w->np + p] = sum;
		}
}

/* A phase's score: the tasks' deviations (4.2), each taken above the task's median deviation
 * over the phases. Without that, the noise of thousands of normal tasks would outweigh the
 * one task a fault hit. Not squared, as the paper has it: on a busy node one scheduling
 * hiccup squared outweighs a real stall. */
static void phase_scores(const struct work *w, struct pdi_automaded *a)
{
	uint32_t m = w->end - w->first;
	double sorted[m];

	for (size_t t = 0; t < w->n; t++) {
		const double *dev = &w->dev[t * w->np + w->first];
		double mid;

		memcpy(sorted, dev, m * sizeof(*dev));
		mid = pdi_median(sorted, m);
		for (uint32_t i = 0; i < m; i++) {
			a->phase_score[w->first + i] += weight(w->in, t) * fmax(0.0, dev[i] - mid);
		}
	}
}

static size_t argmax(const double *v, size_t n, double *ret_margin)
{
	size_t best = 0;
	double second = 0;

	for (size_t i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	for (size_t i = 0; i < n; i++)
		if (i != best && v[i] > second)
			second = v[i];
	*ret_margin = second > 0 ? v[best] / second : v[best] > 0 ? 1e9 : 1.0;
	return best;
}

size_t pdi_kmeans2(const double *v, size_t n, uint8_t *high)
{
	double lo = INFINITY, hi = -INFINITY;
	size_t nhigh = 0;

	for (size_t i = 0; i < n; i++) {
		lo = fmin(lo, v[i]);
		hi = fmax(hi, v[i]);
	}
	memset(high, 0, n);
	if (!(hi > lo))
		return 0;
	/* 1-D Lloyd from the extremes: converges in a few rounds, never to an empty cluster */
	for (int round = 0; round < 100; round++) {
		double sl = 0, sh = 0, cut = (lo + hi) / 2;
		size_t nl = 0, changed = 0;

		nhigh = 0;
		for (size_t i = 0; i < n; i++) {
			uint8_t h = v[i] > cut;

			changed += h != high[i];
			high[i] = h;
			if (h) {
				sh += v[i];
				nhigh++;
			} else {
				sl += v[i];
				nl++;
			}
		}
		lo = sl / nl;
		hi = sh / nhigh;
		if (!changed && round)
			break;
	}
	return nhigh;
}

/* Without sample runs: is there a task whose phases shift once, alike before, alike after
 * and unlike across? Returns the best ratio of across to within differences over the tasks
 * (medians: one noisy phase must not make a shift), and the later phase of that task's most
 * different adjacent pair (the paper's pick). */
static double best_shift(const struct work *w, uint32_t *ret_phase)
{
	uint32_t m = w->end - w->first;
	double best = 0, *within, *across;

	*ret_phase = w->first;
	if (m < 4)
		return 0;
	within = malloc(m * m * sizeof(*within));
	across = malloc(m * m * sizeof(*across));
	for (size_t t = 0; within && across && t < w->n; t++)
		for (uint32_t s = w->first + 2; s + 2 <= w->end; s++) {
			double adjacent = -1, ratio, mw;
			size_t nw = 0, na = 0;

			for (uint32_t p = w->first; p < w->end; p++)
				for (uint32_t q = p + 1; q < w->end; q++) {
					if ((p < s) == (q < s))
						within[nw++] = raw_diff(w, t, p, q);
					else
						across[na++] = raw_diff(w, t, p, q);
				}
			mw = pdi_median(within, nw);
			ratio = mw > 0 ? pdi_median(across, na) / mw : 0;
			if (ratio <= best)
				continue;
			best = ratio;
			for (uint32_t p = w->first + 1; p < w->end; p++) {
				double x = raw_diff(w, t, p - 1, p);
				if (x > adjacent) {
					adjacent = x;
					*ret_phase = p;
				}
			}
		}
	free(within);
	free(across);
	return best;
}

/* Task T's computation in phase P: the mean time of its computation transitions. */
static double computation_time(const struct work *w, size_t t, uint32_t p)
{
	const struct pdi_phase *ph = smm_of(w, t, p)->phase;
	double sum = 0, n = 0;

	for (uint32_t e = 0; e < ph->nedges; e++)
		if (pdi_state_is_comp(ph->states[ph->edges[e].from].key)) {
			sum += ph->edges[e].time.mean * (double)ph->edges[e].time.n;
			n += (double)ph->edges[e].time.n;
		}
	return n > 0 ? sum / n : 0;
}

/* A step in one task's computation time: longer from some phase on, and stays so (a thread
 * or process that interferes from then on). Welch's t of the phases after the step against
 * those before, best over the tasks and the steps with two phases or more on each side; a
 * one-phase stall makes the after side spread and scores low. */
static double computation_step(const struct work *w, uint32_t *ret_phase, size_t *ret_task)
{
	uint32_t m = w->end - w->first, best_s = 0;
	double best = 0, x[m], best_m1 = 0, best_sd1 = 0;

	*ret_phase = w->first;
	*ret_task = 0;
	if (m < 4)
		return 0;
	for (size_t t = 0; t < w->n; t++) {
		for (uint32_t i = 0; i < m; i++)
			x[i] = computation_time(w, t, w->first + i);
		for (uint32_t s = 2; s + 2 <= m; s++) {
			double m1 = 0, m2 = 0, v1 = 0, v2 = 0, se, tstat;

			for (uint32_t i = 0; i < m; i++)
				*(i < s ? &m1 : &m2) += x[i];
			m1 /= s;
			m2 /= m - s;
			for (uint32_t i = 0; i < m; i++)
				*(i < s ? &v1 : &v2) += (x[i] - (i < s ? m1 : m2)) * (x[i] - (i < s ? m1 : m2));
			v1 /= s - 1;
			v2 /= m - s - 1;
			/* jitter of a few percent is no step: floor the spread */
			se = sqrt(fmax(v1, 0.0025 * m1 * m1) / s + fmax(v2, 0.0025 * m1 * m1) / (m - s));
			tstat = se > 0 && m1 > 0 && m2 >= STEP_MIN_RISE * m1 ? (m2 - m1) / se : 0;
			if (tstat > best) {
				best = tstat;
				best_s = s;
				best_m1 = m1;
				best_sd1 = sqrt(fmax(v1, 0.0025 * m1 * m1));
				*ret_task = t;
			}
		}
	}
	if (best > 0) {
		/* the interference began inside a phase: that phase is part-way up already, and the
		 * best split falls after it. Walk back over phases clearly above the level before. */
		for (uint32_t i = 0; i < m; i++)
			x[i] = computation_time(w, *ret_task, w->first + i);
		while (best_s > 1 && x[best_s - 1] > best_m1 + 3 * best_sd1)
			best_s--;
		*ret_phase = w->first + best_s;
	}
	return best;
}

/* Phase P's length on task X (s), less the time X waited for a CPU in it when the kernel's
 * counts say: a machine busier than its cores stretches every phase of every task by seconds,
 * and that is no fault of the program's. */
static double busy_length_s(const struct pdi_model *x, uint32_t p)
{
	const struct pdi_phase *ph = &x->phases[p];
	double len = (double)(ph->t_end - ph->t_start) / 1e9;
	struct pdi_phase_usage u;

	if (pdi_model_phase_usage(x, p, &u))
		len -= fmin(len, (double)u.wait_ns / 1e9);
	return len;
}

/* How much longer than usual each compared phase took, on the model where it grew most, beyond
 * the time it waited for a CPU, and no more than its computations took beyond their usual pace
 * (pace.h): a phase that is long by its work, done at the pace it is done elsewhere or seen
 * nowhere else, took its usual time for that work (NWChem's 4 s phase 2 against its 0.2-0.5 s
 * others, issue 9: 1.7-2.0 s longer than usual on every rank, 0.2-1.2 s of it beyond the pace
 * and 1.0-1.8 s in computations of its own), while a stall whose peers' waits went unseen
 * stretches computations that took milliseconds elsewhere by seconds (NWChem spin, issue 9:
 * every rank 2.4-4.7 s beyond its pace). 0, or -ENOMEM. */
static int phase_excess(const struct work *w, struct pdi_automaded *a)
{
	uint32_t m = w->end - w->first;
	double *d = malloc((m + 1) * sizeof(*d)), *len = malloc((m + 1) * sizeof(*len));
	struct pdi_pace pace = {0};
	int r = -ENOMEM;

	if (!d || !len || (r = pdi_pace_of(w->in->models, w->n, w->first, w->end, &pace)) < 0)
		goto out;
	for (size_t t = 0; t < w->n; t++) {
		double med;

		for (uint32_t i = 0; i < m; i++)
			d[i] = len[i] = busy_length_s(w->in->models[t], w->first + i);
		med = pdi_median(d, m);
		for (uint32_t i = 0; i < m; i++)
			a->phase_excess[w->first + i] =
				fmax(a->phase_excess[w->first + i],
				     fmin(len[i] - med, pdi_pace_beyond_s(&pace, t, w->first + i)));
	}
out:
	pdi_pace_done(&pace);
	free(d);
	free(len);
	return r;
}

/* A temporary effect whose scores point at a phase of usual length, while another phase took
 * a stall's worth longer than usual: the scores weigh every transition's change alike, so
 * a reshuffle of microsecond transitions (a loaded machine's noise) can outscore seconds
 * lost in one. The phase that lost the time is the faulty one. So is it for a permanent
 * shift (found by splitting the scores, or as a step in computation time) when one phase
 * lost at least twice the time of any other: one phase far above the rest, not a shift. */
static uint32_t best_phase(const struct work *w, const double *v, double *ret_second)
{
	uint32_t best = w->first;

	*ret_second = 0;
	for (uint32_t p = w->first; p < w->end; p++)
		if (v[p] > v[best])
			best = p;
	for (uint32_t p = w->first; p < w->end; p++)
		if (p != best && v[p] > *ret_second)
			*ret_second = v[p];
	return best;
}

/* One task lost a stall's worth of time against its peers, or one took the CPU a stall's worth
 * longer than any other (lost_time.h, pdi_lost_stall_s()): the first phase of the run it kept
 * losing in is the faulty one, and that task (or the one that took its CPU) the faulty task,
 * whatever the scores say; a run that lasts to the end is a shift (interference from then on). */
static bool by_lost_time(const struct work *w, struct pdi_automaded *a)
{
	const struct pdi_lost *l = &a->lost;

	if (pdi_lost_stall_s(l) < PDI_EXCESS_FLOOR_S)
		return false;
	a->effect = l->last + 1 == w->end && l->last > l->onset + 1 ? PDI_EFFECT_PERMANENT : PDI_EFFECT_TEMPORARY;
	a->stepped = false;
	a->faulty_phase = l->onset;
	a->by_time = a->by_lost = true;
	a->phase_margin = pdi_lost_phase_margin(l);
	return true;
}

/* Nothing lost in the compared phases: a stall in the set-up or the tear-down, which are left
 * out of the comparison (they differ from the loop by nature), still shows as time one task
 * was held by the kernel while its peers were not, or spent in one burst of computation its
 * transition never takes otherwise, as in a step of one phase (lost_time.h). The edge phase
 * where a task lost most so becomes the finding, its phase SMM's nu trained like the others'. */
static int lost_at_the_edges(struct work *w, struct pdi_automaded *a)
{
	const struct pdi_automaded_input *in = w->in;
	uint32_t best = UINT32_MAX;
	int r;

	if (pdi_lost_stall_s(&a->lost) >= PDI_EXCESS_FLOOR_S)
		return 0;
	for (uint32_t p = 0; p < w->np; p++) {
		struct pdi_lost l;

		if (p >= w->first && p < w->end)
			continue;
		if ((r = pdi_lost_time(in->models, in->weights, w->n, p, p + 1, &l)) < 0)
			return r;
		if (pdi_lost_stall_s(&l) >= PDI_EXCESS_FLOOR_S &&
		    (best == UINT32_MAX || pdi_lost_stall_s(&l) > pdi_lost_stall_s(&a->lost))) {
			pdi_lost_done(&a->lost);
			a->lost = l;
			best = p;
		} else {
			pdi_lost_done(&l);
		}
	}
	for (size_t t = 0; best != UINT32_MAX && !in->nsamples && t < w->n; t++)
		if ((r = train_nu(w, t, best)) < 0)
			return r;
	return 0;
}

/* Whether the time the lost time's task lost computing came from its own code, not from a CPU
 * it went without, and is the stronger evidence: it is the task the shares single out, but it
 * lost its time outside their run, in a phase where it got no less than its usual share against
 * its peers, and that loss stands further above the step's noise than its share fell. A rank
 * spinning in its own code computes seconds longer on its own CPU (NWChem at a load of 28, issue
 * 9, spin11: rank 0 spun 4.4 s in phase 7, computing 1.9 s longer than its peers at 1.7 times
 * their share of the CPU, z 29; a blip of 1.1 s at a quarter of their share in phase 17, z 5,
 * was named, "nothing abnormal"). A victim of interference may also compute longer elsewhere by
 * the program's own imbalance, but less clearly than it went without (HPCC cpu and mem, load
 * 11-24: 2.8-3.9 s of HPL's imbalance at z 10-19 against 6-9 s at a fifth of the peers' share,
 * z 29). */
static bool computed_on_its_own_cpu(const struct pdi_automaded *a)
{
	const struct pdi_starved *s = &a->starved;
	const struct pdi_lost *l = &a->lost;

	return l->task == s->task && (l->peak < s->onset || l->peak > s->last) &&
	       pdi_starved_of(s, l->task, l->peak) <= 0 && l->z > s->z;
}

/* Whether S names every task of the step (each fell at least half as far behind as the one that
 * fell furthest): then no task stood apart from its peers, and a run where every rank lost alike to
 * a process of the job's own (alike.h) is the better evidence (interf17, HPCC mem 1012 at a load of
 * 32: the hog took from several ranks, the job's group took 0.35 CPUs beyond its ranks in phases
 * 6-18, while the shares named [0-3] in phase 43). */
static bool names_every_task(const struct pdi_starved *s)
{
	for (size_t t = 0; t < s->n; t++)
		if (!pdi_starved_named(s, t))
			return false;
	return s->n > 1;
}

/* One task got a fraction of its peers' share of the CPU for a stall's worth of time
 * (starved.h): the first phase of the run it fell behind in is the faulty one, and that task the
 * faulty task. A task held by the kernel for a stall's worth comes first (a stop is a stall
 * whatever else shows), and so does another task that lost a stall's worth computing, in the
 * phases the finding's task went without, while it got more CPU than usual or than its peers
 * (starved.h, gain), or that took the CPU the time lost's task waited for, on a CPU a stall's
 * worth longer than any other (lost_time.h, pdi_lost_stall_s()): a rank spinning in its own code
 * takes the CPU of the rank that shares it (campaign: the spin fault's neighbour got a sixth of its
 * peers' share while the spinner got three times its own; HPCC at a load of 10, issue 9, spin13:
 * the neighbour's fall stood 7.3 robust sds above the step's noise, its wait 9.7, the spinner on a
 * CPU 1.7 s longer than any other), but the spinning is the fault. One that computed longer at its usual
 * share was only waited for less than the victim; one that did so in other phases, while a hog
 * took the CPU from the victim, lost its time to something else (NWChem, lead23's cpu seed 90:
 * a bystander 1.6 s in phase 21, at 3.8 times its peers' share during the victim's run in
 * phases 3-13); and so does the finding's own task when it lost its time computing elsewhere,
 * on its own CPU (computed_on_its_own_cpu()). The shares are compared in every phase, the
 * set-up and the tear-down too: a task's peers in the same phase are its yardstick, whatever the
 * phase does, and a short run of a real code may spend half its time in its set-up (meep, HPCC:
 * 3-5 s of 8, where the campaign's interference often began). */
static bool by_starved(const struct work *w, struct pdi_automaded *a)
{
	const struct pdi_starved *s = &a->starved;
	const struct pdi_lost *l = &a->lost;
	bool lost = pdi_lost_stall_s(l) >= PDI_EXCESS_FLOOR_S;
	size_t named = l->taken ? l->taker : l->task; /* the task the time lost names */

	if (!s->found || (lost && l->kind == PDI_LOST_HELD) ||
	    (lost && named != s->task && l->onset <= s->last && l->last >= s->onset &&
	     s->gain[named] >= log(PDI_STARVED_TOOK)) ||
	    (lost && l->kind == PDI_LOST_COMPUTING && computed_on_its_own_cpu(a)) ||
	    (s->alike.found && names_every_task(s)))
		return false;
	a->effect = s->last + 1 >= w->end && s->last > s->onset + 1 ? PDI_EFFECT_PERMANENT : PDI_EFFECT_TEMPORARY;
	a->stepped = false;
	a->faulty_phase = s->onset;
	a->by_time = a->by_starved = true;
	/* by how far it fell behind, as the run was chosen: a phase of milliseconds elsewhere at a
	 * high ratio (the counters' granularity) does not outweigh seconds (NWChem, issue 9: 6.9 s at
	 * a 42nd of the peers' share, margin 0.73 by the peak ratios) */
	a->phase_margin = s->other_behind > 0 ? s->window[s->task] / s->other_behind : 1e9;
	return true;
}

/* Every rank lost CPU alike and a process of the job's own group, not one of its ranks, took it
 * (alike.h): the run's first phase is the faulty one, and no task is named. After one task not
 * getting CPU against its peers (by_starved: a hog that took from one rank names it), and not
 * where a task was held by the kernel for a stall's worth (a stop is a stall, whatever else shows). */
static bool by_group(const struct work *w, struct pdi_automaded *a)
{
	const struct pdi_alike *g = &a->starved.alike;
	const struct pdi_lost *l = &a->lost;

	if (!g->found || (pdi_lost_stall_s(l) >= PDI_EXCESS_FLOOR_S && l->kind == PDI_LOST_HELD))
		return false;
	a->effect = g->last + 1 >= w->end && g->last > g->onset + 1 ? PDI_EFFECT_PERMANENT : PDI_EFFECT_TEMPORARY;
	a->stepped = false;
	a->faulty_phase = g->onset;
	a->by_time = a->by_group = true;
	/* how far every rank fell over the run against the most they fell in one phase elsewhere */
	a->phase_margin = g->other_behind > 0 ? g->behind / g->other_behind : 1e9;
	return true;
}

/* Else the phase's length: a stall inside MPI lengthens the phase for all. */
static void prefer_lost_time(const struct work *w, struct pdi_automaded *a)
{
	double second, *v = a->phase_excess;
	uint32_t best;

	if (by_starved(w, a) || by_group(w, a) || by_lost_time(w, a))
		return;
	best = best_phase(w, v, &second);
	if (best == a->faulty_phase || v[best] < PDI_EXCESS_FLOOR_S ||
	    (a->effect == PDI_EFFECT_TEMPORARY && v[a->faulty_phase] >= PDI_EXCESS_FLOOR_S / 2) ||
	    (a->effect == PDI_EFFECT_PERMANENT && v[best] < 2 * second))
		return;
	a->effect = PDI_EFFECT_TEMPORARY;
	a->stepped = false; /* a lasting shift would lose time in every phase after it, not in one */
	a->faulty_phase = best;
	a->by_time = true;
	a->phase_margin = second > 0 ? v[best] / second : 1e9;
}

/* The faulty phase, temporary or permanent (4.2). */
static void faulty_phase(struct work *w, struct pdi_automaded *a)
{
	uint32_t m = w->end - w->first, shift, step;
	uint8_t high[m];

	a->effect = PDI_EFFECT_TEMPORARY;
	a->faulty_phase = w->first + (uint32_t)argmax(a->phase_score + w->first, m, &a->phase_margin);
	if (w->in->nsamples) {
		size_t nhigh = pdi_kmeans2(a->phase_score + w->first, m, high);
		uint32_t p0 = m;

		for (uint32_t i = 0; i < m && p0 == m; i++)
			if (high[i])
				p0 = i;
		/* a permanent shift: every phase from the first high one on is high */
		if (nhigh >= 2 && p0 + nhigh == m) {
			a->effect = PDI_EFFECT_PERMANENT;
			a->faulty_phase = w->first + p0;
		}
		return;
	}
	a->split_ratio = best_shift(w, &shift);
	a->step_t = computation_step(w, &step, &a->step_task);
	/* one phase far above the rest is a temporary effect, whatever follows it */
	if (a->step_t >= STEP_MIN_T && a->phase_margin < TEMPORARY_MARGIN) {
		a->effect = PDI_EFFECT_PERMANENT;
		a->faulty_phase = step;
		a->stepped = true;
	} else if (a->split_ratio >= PERMANENT_RATIO && a->split_ratio > a->phase_margin) {
		a->effect = PDI_EFFECT_PERMANENT;
		a->faulty_phase = shift;
	}
}

/* How much each task changed in the faulty phase; for a permanent shift, across it. */
static void task_scores(const struct work *w, struct pdi_automaded *a)
{
	uint32_t fp = a->faulty_phase;

	for (size_t t = 0; t < w->n; t++) {
		double sum = 0;
		size_t k = 0;

		if (a->effect == PDI_EFFECT_TEMPORARY) {
			a->task_score[t] = w->dev[t * w->np + fp];
			continue;
		}
		for (uint32_t p = w->first; p < w->end; p++)
			for (uint32_t q = w->first; q < w->end; q++) {
				if (w->in->nsamples ? !(p == q && p >= fp) : !(p < fp && q >= fp))
					continue;
				sum += w->in->nsamples ? w->dev[t * w->np + p] : raw_diff(w, t, p, q);
				k++;
			}
		a->task_score[t] = k ? sum / k : 0;
	}
	a->faulty_task = argmax(a->task_score, w->n, &a->task_margin);
}

static int diff_matrix(const struct work *w, uint32_t phase, const struct sample *row, double *out)
{
	for (size_t t = 0; t < w->n; t++) {
		out[t * w->n + t] = 0;
		for (size_t u = t + 1; u < w->n; u++) {
			const struct pdi_smm *a = row ? counterpart(&row[t], phase) : smm_of(w, t, phase);
			const struct pdi_smm *b = row ? counterpart(&row[u], phase) : smm_of(w, u, phase);
			double x;

			if (!a || !b)
				return -ENOENT;
			x = (pdi_smm_diff(a, b, NULL, w->in->dist, NULL, NULL) +
			     pdi_smm_diff(b, a, NULL, w->in->dist, NULL, NULL)) / 2;
			out[t * w->n + u] = out[u * w->n + t] = x;
		}
	}
	return 0;
}

/* The threshold from a normal phase's merge heights: just below the first big jump (the
 * gap between natural clusters), or above them all when there is none (one cluster). */
static double trained_threshold(const double *diff, size_t n)
{
	double *h = malloc(n * sizeof(*h)), t;
	size_t k = h ? pdi_hac_heights(diff, n, h) : 0;

	if (!k) {
		free(h);
		return 0;
	}
	t = h[k - 1] * 1.5 + 1e-9;
	for (size_t i = 0; i + 1 < k; i++)
		if (h[i + 1] > CLUSTER_JUMP * fmax(h[i], 1e-6)) {
			t = sqrt(fmax(h[i], 1e-6) * h[i + 1]);
			break;
		}
	free(h);
	return t;
}

/* HAC of the faulty phase's models (4.3), trained on a normal phase: a sample run's, or the
 * first compared phase (the next one when the first is the faulty one). */
static int cluster_tasks(const struct work *w, struct pdi_automaded *a)
{
	uint32_t train = a->faulty_phase == w->first && w->end - w->first > 1 ? w->first + 1 : w->first;
	double *m;
	int r;

	a->cluster = calloc(w->n, sizeof(*a->cluster));
	if (!a->cluster)
		return -ENOMEM;
	if (w->n > MAX_CLUSTERED || w->n < 2) {
		a->nclusters = 1; /* too many to cluster, or one: the faulty task alone speaks */
		return 0;
	}
	m = malloc(w->n * w->n * sizeof(*m));
	if (!m)
		return -ENOMEM;
	r = w->in->nsamples ? diff_matrix(w, a->faulty_phase, w->samples, m) : -ENOENT;
	if (r < 0)
		r = diff_matrix(w, train, NULL, m);
	if (r == 0) {
		a->threshold = trained_threshold(m, w->n);
		r = diff_matrix(w, a->faulty_phase, NULL, m);
	}
	if (r == 0) {
		a->nclusters = pdi_hac(m, w->n, a->threshold, a->cluster);
		a->faulty_cluster = a->cluster[a->faulty_task];
	}
	free(m);
	return r;
}

struct accumulate {
	struct pdi_transition_score *v;
	size_t n, cap;
	struct pdi_u64map idx;
	size_t task;
	int err;
};

static uint64_t pair_key(uint64_t from, uint64_t to)
{
	return from * 0x9E3779B97F4A7C15ull ^ (to + 0x632BE59BD9B4E019ull);
}

static struct pdi_transition_score *accumulate_at(struct accumulate *a, uint64_t from, uint64_t to)
{
	uint32_t i = pdi_u64map_get(&a->idx, pair_key(from, to));

	if (i != PDI_U64MAP_NONE)
		return &a->v[i];
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct pdi_transition_score *v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		a->v = v;
		a->cap = cap;
	}
	if (pdi_u64map_put(&a->idx, pair_key(from, to), (uint32_t)a->n) < 0)
		return NULL;
	a->v[a->n] = (struct pdi_transition_score){from, to, 0, a->task, 0};
	return &a->v[a->n++];
}

static void add_contribution(void *ctx, uint64_t from, uint64_t to, double d)
{
	struct accumulate *a = ctx;
	struct pdi_transition_score *s = accumulate_at(a, from, to);

	if (!s)
		a->err = -ENOMEM;
	else
		s->score += d;
}

static void accumulate_done(struct accumulate *a)
{
	free(a->v);
	pdi_u64map_free(&a->idx);
}

static int cmp_score_desc(const void *x, const void *y)
{
	double a = ((const struct pdi_transition_score *)x)->score, b = ((const struct pdi_transition_score *)y)->score;

	return (a < b) - (a > b);
}

static int cmp_score_asc(const void *x, const void *y)
{
	return -cmp_score_desc(x, y);
}

/* Is phase Q of the run normal behaviour to compare the faulty phase with? */
static bool normal_phase(const struct work *w, const struct pdi_automaded *a, uint32_t q)
{
	if (q < w->first || q >= w->end || q == a->faulty_phase)
		return false;
	return a->effect != PDI_EFFECT_PERMANENT || q < a->faulty_phase;
}

/* What task T's faulty phase is compared with: its counterparts in the sample runs, or its
 * normal phases. OUT has room for max(nsamples, np). */
static size_t normal_models(const struct work *w, const struct pdi_automaded *a, size_t t, const struct pdi_smm **out)
{
	size_t n = 0;

	if (w->in->nsamples) {
		for (size_t s = 0; s < w->in->nsamples; s++)
			if ((out[n] = counterpart(&w->samples[s * w->n + t], a->faulty_phase)))
				n++;
		return n;
	}
	for (uint32_t q = w->first; q < w->end; q++)
		if (normal_phase(w, a, q))
			out[n++] = smm_of(w, t, q);
	return n;
}

static bool normal_times(const struct pdi_smm *const *normal, size_t n, uint64_t from, uint64_t to,
			 struct pdi_gauss *g, struct pdi_hist *h);

/* The time task T computed in the faulty phase beyond what its normal models computed for
 * the same transitions (their mean, times the transitions it made): seconds a fault added. */
static double excess_computation(const struct work *w, const struct pdi_automaded *a, size_t t,
				 const struct pdi_smm *const *normal, size_t nnormal)
{
	const struct pdi_phase *ph = smm_of(w, t, a->faulty_phase)->phase;
	double excess = 0;

	for (uint32_t e = 0; e < ph->nedges; e++) {
		const struct pdi_edge *x = &ph->edges[e];
		uint64_t from = ph->states[x->from].key, to = ph->states[x->to].key;
		struct pdi_gauss g;
		struct pdi_hist h;
		double usual;

		if (!pdi_state_is_comp(from))
			continue;
		usual = normal_times(normal, nnormal, from, to, &g, &h) ? g.mean : 0;
		excess += fmax(0.0, x->time.mean - usual) * (double)x->time.n;
	}
	return excess;
}

/* The faulty task by its computation only, in time added. A task that stalls makes every
 * task that waits for it spend longer inside MPI, and a wait of 1 ms that grows to 1 s is a
 * bigger relative change than the stalled computation itself: the victims would outscore the
 * culprit. And relative changes favour the smallest computations, which a scheduling
 * hiccup multiplies. Time spent computing grows only in the task the fault hit (or where
 * interference ran). Keeps the scores of all transitions when no task's computation grew. */
static int computation_scores(const struct work *w, struct pdi_automaded *a)
{
	const struct pdi_smm **normal = malloc((w->in->nsamples + w->np) * sizeof(*normal));
	double *score = calloc(w->n, sizeof(*score)), margin;
	size_t best;

	if (!normal || !score) {
		free(normal);
		free(score);
		return -ENOMEM;
	}
	for (size_t t = 0; t < w->n; t++)
		score[t] = excess_computation(w, a, t, normal, normal_models(w, a, t, normal));
	best = argmax(score, w->n, &margin);
	/* a step in one task's computation names that task: the others only wait for it */
	if (a->stepped && best != a->step_task && score[a->step_task] > 0) {
		margin = score[a->step_task] / score[best];
		best = a->step_task;
	}
	if (score[best] > 0) {
		memcpy(a->task_score, score, w->n * sizeof(*score));
		a->faulty_task = best;
		a->task_margin = margin;
	}
	free(normal);
	free(score);
	return 0;
}

/* The faulty task when time lost picked the phase: the task that lost it (each task scored by
 * what it lost over the run), or the one task of the step that took the CPU it waited for
 * (lost_time.h, taken: by how much more of its ready time it was on a CPU than any other). */
static void lost_scores(struct pdi_automaded *a)
{
	const struct pdi_lost *l = &a->lost;

	for (size_t t = 0; t < l->n; t++) {
		a->task_score[t] = 0;
		for (uint32_t p = l->onset; p <= l->last; p++)
			a->task_score[t] += pdi_lost_of(l, t, p, NULL);
	}
	if (l->taken) {
		a->faulty_task = l->taker;
		a->task_margin = l->next_share > 0 ? l->taker_share / l->next_share : 1e9;
		return;
	}
	a->faulty_task = l->task;
	a->task_margin = l->next_task_s > 0 ? l->peak_s / l->next_task_s : 1e9;
}

/* The faulty task when its share of the CPU picked the phase: the task that fell behind (each
 * task scored by how far it fell behind over the run), or the one task of the step that took the
 * CPU it went without (each scored by how much more of the CPU it got: starved.h, taken). */
static void starved_scores(struct pdi_automaded *a)
{
	const struct pdi_starved *s = &a->starved;

	if (s->taken) { /* by how much longer it was on a CPU than any other */
		for (size_t t = 0; t < s->n; t++)
			a->task_score[t] = fmax(0.0, s->gain[t]);
		a->faulty_task = s->taker;
		a->task_margin = s->next_cpu_s > 0 ? s->taker_cpu_s / s->next_cpu_s : 1e9;
		return;
	}
	for (size_t t = 0; t < s->n; t++) {
		a->task_score[t] = 0;
		for (uint32_t p = s->onset; p <= s->last; p++)
			a->task_score[t] += fmax(0.0, pdi_starved_of(s, t, p));
	}
	a->faulty_task = s->task;
	a->task_margin = s->task_margin;
}

/* Where the time one task lost against its peers picked the faulty phase and task (by_lost), the
 * transition it lost that time in (lost_time.h, at_*), as A's first characteristic transition, with
 * its own score among the N of V (0 when it made no difference to the models); false otherwise. */
static bool lost_first(struct pdi_automaded *a, const struct pdi_transition_score *v, size_t n)
{
	const struct pdi_lost *l = &a->lost;
	struct pdi_transition_score at = {l->at_from, l->at_to, 0, l->at_task, l->at_s};

	if (!a->by_lost || !l->has_at || l->at_task != a->faulty_task || l->at_phase != a->faulty_phase)
		return false;
	for (size_t k = 0; k < n; k++)
		if (v[k].from == at.from && v[k].to == at.to)
			at.score = v[k].score;
	a->top[0] = at;
	a->ntop = 1;
	return true;
}

/* The transitions that make the faulty task's faulty phase differ from normal (4.3), after the
 * one it lost its time in (lost_first()), which is not repeated. */
static int characteristic(const struct work *w, struct pdi_automaded *a)
{
	size_t t = a->faulty_task;
	const struct pdi_smm *fp = smm_of(w, t, a->faulty_phase);
	const struct pdi_nu *nu = nu_of(w, t, a->faulty_phase);
	struct accumulate acc = {.task = t};
	const struct pdi_smm **normal = malloc((w->in->nsamples + w->np) * sizeof(*normal));
	size_t n;
	int r;

	if (!normal)
		return -ENOMEM;
	n = normal_models(w, a, t, normal);
	for (size_t k = 0; k < n; k++)
		(void)pdi_smm_diff_each(fp, normal[k], nu, w->in->dist, add_contribution, &acc);
	free(normal);
	if ((r = acc.err) == 0) {
		bool lost = lost_first(a, acc.v, acc.n);

		if (acc.n)
			qsort(acc.v, acc.n, sizeof(*acc.v), cmp_score_desc);
		a->ntop = lost ? 1 : 0;
		for (size_t k = 0; k < acc.n && a->ntop < PDI_TOP_TRANSITIONS; k++)
			if (!lost || acc.v[k].from != a->top[0].from || acc.v[k].to != a->top[0].to)
				a->top[a->ntop++] = acc.v[k];
	}
	accumulate_done(&acc);
	return r;
}

/* log10 of the two-sided tail of N(mean, sd) beyond X, without underflow. */
static double log10_gauss_tail(double x, double mean, double sd)
{
	double z = fabs(x - mean) / sd / M_SQRT2;

	if (z < 20)
		return log10(fmax(erfc(z), 1e-300));
	/* erfc(z) ~ exp(-z^2) / (z sqrt(pi)) */
	return (-z * z - log(z * sqrt(M_PI))) / M_LN10;
}

/* The normal time distribution of transition FROM -> TO of task T: its times in the normal
 * models, merged. False when it never occurred there. */
static bool normal_times(const struct pdi_smm *const *normal, size_t n, uint64_t from, uint64_t to,
			 struct pdi_gauss *g, struct pdi_hist *h)
{
	bool seen = false;

	*g = (struct pdi_gauss){0};
	*h = (struct pdi_hist){0};
	for (size_t k = 0; k < n; k++) {
		const struct pdi_edge *x = pdi_phase_edge(normal[k]->phase, from, to);

		if (!x)
			continue;
		pdi_gauss_merge(g, &x->time);
		pdi_hist_merge(h, &x->hist);
		seen = true;
	}
	return seen;
}

/* 4.4, temporary effects: how probable the faulty phase's transition times are under their
 * normal distributions; k-means on -log10 p separates the unusual ones. */
static int unusual_transitions(const struct work *w, struct pdi_automaded *a)
{
	struct accumulate acc = {0};
	const struct pdi_smm **normal = malloc((w->in->nsamples + w->np) * sizeof(*normal));
	double *v = NULL;
	uint8_t *high = NULL;
	int r = -ENOMEM;

	for (size_t t = 0; normal && t < w->n; t++) {
		const struct pdi_phase *ph = smm_of(w, t, a->faulty_phase)->phase;
		size_t nnormal = normal_models(w, a, t, normal);

		acc.task = t;
		for (uint32_t e = 0; e < ph->nedges; e++) {
			const struct pdi_edge *x = &ph->edges[e];
			uint64_t from = ph->states[x->from].key, to = ph->states[x->to].key;
			struct pdi_transition_score *s;
			struct pdi_gauss g;
			struct pdi_hist h;
			double lp = LOG10_NEVER_SEEN;

			if (normal_times(normal, nnormal, from, to, &g, &h)) {
				double sd = fmax(pdi_gauss_stddev(&g), 0.05 * g.mean);

				/* the Gaussian for either distribution: the histogram's buckets are
				 * averages, and its tail cannot tell one outlier from ten */
				lp = 0;
				for (unsigned b = 0; sd > 0 && b < x->hist.n; b++)
					lp = fmin(lp, log10_gauss_tail(x->hist.mean[b], g.mean, sd));
			}
			/* one entry per (task, transition): keyed apart by task */
			s = accumulate_at(&acc, from ^ ((uint64_t)t << 40), to);
			if (!s)
				goto out;
			*s = (struct pdi_transition_score){from, to, lp, t, 0};
		}
	}
	v = malloc((acc.n + 1) * sizeof(*v));
	high = malloc(acc.n + 1);
	if (!normal || !v || !high)
		goto out;
	for (size_t i = 0; i < acc.n; i++)
		v[i] = -acc.v[i].score;
	if (pdi_kmeans2(v, acc.n, high) > 0) {
		size_t k = 0;

		for (size_t i = 0; i < acc.n; i++)
			if (high[i])
				acc.v[k++] = acc.v[i];
		qsort(acc.v, k, sizeof(*acc.v), cmp_score_asc);
		a->nunusual = k < PDI_TOP_TRANSITIONS ? k : PDI_TOP_TRANSITIONS;
		memcpy(a->unusual, acc.v, a->nunusual * sizeof(*acc.v));
	}
	r = 0;
out:
	free(normal);
	free(v);
	free(high);
	accumulate_done(&acc);
	return r;
}

/* (ts, theta) ordered after (ts2, theta2) by the relation of 4.4: earlier and, adjusted
 * for the head start, more variable. */
static bool theta_better(double ts, double theta, double ts2, double theta2)
{
	if (ts < ts2)
		return theta * (1 + ts2 - ts) > theta2;
	if (ts2 < ts)
		return theta2 * (1 + ts - ts2) < theta;
	return theta > theta2;
}

/* 4.4, permanent effects: the largest increase of theta = stddev * nu-bar between adjacent
 * phases, nu-bar = 1/nu with sample runs, the stddev itself without. */
static void theta_change(const struct work *w, struct pdi_automaded *a)
{
	double best_ts = 0, best_theta = 0;

	for (size_t t = 0; t < w->n; t++)
		for (uint32_t p = w->first + 1; p < w->end; p++) {
			const struct pdi_phase *cur = smm_of(w, t, p)->phase, *prev = smm_of(w, t, p - 1)->phase;
			double ts = cur->t_start / 1e9;

			for (uint32_t e = 0; e < cur->nedges; e++) {
				uint64_t from = cur->states[cur->edges[e].from].key, to = cur->states[cur->edges[e].to].key;
				const struct pdi_edge *before = pdi_phase_edge(prev, from, to);
				double sd = pdi_gauss_stddev(&cur->edges[e].time) / 1e9, theta;
				double sd0 = before ? pdi_gauss_stddev(&before->time) / 1e9 : 0;

				if (w->in->nsamples) {
					double nu = pdi_nu_weight(nu_of(w, t, p), from, to);
					theta = (sd - sd0) / nu;
				} else {
					theta = sd * sd - sd0 * sd0;
				}
				if (theta > 0 && (!a->has_change || theta_better(ts, theta, best_ts, best_theta))) {
					a->has_change = true;
					a->change = (struct pdi_transition_score){from, to, theta, t, 0};
					a->change_phase = p;
					best_ts = ts;
					best_theta = theta;
				}
			}
		}
}

static void work_done(struct work *w)
{
	for (size_t i = 0; w->smm && i < w->n * w->np; i++)
		pdi_smm_done(&w->smm[i]);
	for (size_t i = 0; w->nu && i < w->n * w->np; i++)
		pdi_nu_done(&w->nu[i]);
	for (size_t i = 0; w->samples && i < w->in->nsamples * w->n; i++) {
		for (uint32_t p = 0; w->samples[i].smm && p < w->samples[i].np; p++)
			pdi_smm_done(&w->samples[i].smm[p]);
		free(w->samples[i].smm);
	}
	free(w->smm);
	free(w->nu);
	free(w->samples);
	free(w->d);
	free(w->raw);
	free(w->dev);
}

/* A step of one phase has nothing to compare it with: only a task held by the kernel for a
 * stall's worth of time while its peers were not (lost_time.h) singles it out. */
static int one_phase(const struct pdi_automaded_input *in, struct pdi_automaded *ret, const char **why)
{
	struct pdi_automaded a = {.nphases = 1, .end_phase = 1, .nclusters = 1, .effect = PDI_EFFECT_TEMPORARY};
	int r = pdi_lost_time(in->models, in->weights, in->n, 0, 1, &a.lost);

	if (r < 0)
		return r;
	if (pdi_lost_stall_s(&a.lost) < PDI_EXCESS_FLOOR_S) {
		pdi_lost_done(&a.lost);
		if (why)
			*why = "one phase only, and no task was held by the kernel for long: nothing to compare";
		return -EINVAL;
	}
	a.phase_score = calloc(1, sizeof(*a.phase_score));
	a.phase_excess = calloc(1, sizeof(*a.phase_excess));
	a.task_score = calloc(in->n, sizeof(*a.task_score));
	a.cluster = calloc(in->n, sizeof(*a.cluster));
	if (!a.phase_score || !a.phase_excess || !a.task_score || !a.cluster) {
		pdi_automaded_done(&a);
		return -ENOMEM;
	}
	a.by_time = a.by_lost = true;
	a.phase_margin = 1e9;
	lost_scores(&a);
	(void)lost_first(&a, NULL, 0); /* nothing to compare: the transition the time went in alone */
	*ret = a;
	return 0;
}

int pdi_automaded_run(const struct pdi_automaded_input *in, struct pdi_automaded *ret, const char **why)
{
	struct pdi_automaded a = {0};
	struct work w = {.in = in, .n = in->n, .np = UINT32_MAX};
	int r = -ENOMEM;

	for (size_t t = 0; t < in->n; t++)
		if (in->models[t]->nphases < w.np)
			w.np = in->models[t]->nphases;
	if (in->n && w.np == 1)
		return one_phase(in, ret, why);
	if (!in->n || w.np < 2) {
		if (why)
			*why = !in->n ? "no task made an MPI call" : "fewer than two phases to compare";
		return -EINVAL;
	}
	compared_range(w.np, &w.first, &w.end);
	a.nphases = w.np;
	a.first_phase = w.first;
	a.end_phase = w.end;
	a.nsamples = in->nsamples;
	w.smm = calloc(w.n * w.np, sizeof(*w.smm));
	w.nu = calloc(w.n * w.np, sizeof(*w.nu));
	w.d = calloc(in->nsamples ? 1 : w.n * w.np * w.np, sizeof(*w.d));
	w.raw = calloc(in->nsamples ? 1 : w.n * w.np * w.np, sizeof(*w.raw));
	w.dev = calloc(w.n * w.np, sizeof(*w.dev));
	a.phase_score = calloc(w.np, sizeof(*a.phase_score));
	a.task_score = calloc(w.n, sizeof(*a.task_score));
	a.phase_excess = calloc(w.np, sizeof(*a.phase_excess));
	if (!w.smm || !w.nu || !w.d || !w.raw || !w.dev || !a.phase_score || !a.task_score || !a.phase_excess)
		goto out;
	for (size_t t = 0; t < w.n; t++)
		if ((r = build_smms(in->models[t], w.np, &w.smm[t * w.np])) < 0)
			goto out;
	if (in->nsamples && (r = build_samples(&w)) < 0)
		goto out;
	for (size_t t = 0; t < w.n; t++)
		for (uint32_t p = in->nsamples ? 0 : w.first; p < (in->nsamples ? 1 : w.end); p++)
			if ((r = train_nu(&w, t, p)) < 0)
				goto out;
	deviations(&w);
	phase_scores(&w, &a);
	if ((r = phase_excess(&w, &a)) < 0 ||
	    (r = pdi_lost_time(in->models, in->weights, w.n, w.first, w.end, &a.lost)) < 0 ||
	    (r = lost_at_the_edges(&w, &a)) < 0 ||
	    (r = pdi_starved_find(in->models, in->weights, w.n, 0, w.np, &a.starved)) < 0)
		goto out;
	faulty_phase(&w, &a);
	prefer_lost_time(&w, &a);
	task_scores(&w, &a);
	if (a.by_starved)
		starved_scores(&a);
	else if (a.by_group)
		a.task_margin = 1e9; /* no task is named: the job's group took it from every rank */
	else if (a.by_lost)
		lost_scores(&a);
	else if ((r = computation_scores(&w, &a)) < 0)
		goto out;
	if ((r = cluster_tasks(&w, &a)) < 0 || (r = characteristic(&w, &a)) < 0)
		goto out;
	if (a.effect == PDI_EFFECT_PERMANENT)
		theta_change(&w, &a);
	else if ((r = unusual_transitions(&w, &a)) < 0)
		goto out;
	*ret = a;
	a = (struct pdi_automaded){0};
	r = 0;
out:
	work_done(&w);
	pdi_automaded_done(&a);
	return r;
}

void pdi_automaded_done(struct pdi_automaded *a)
{
	free(a->phase_score);
	free(a->phase_excess);
	pdi_lost_done(&a->lost);
	pdi_starved_done(&a->starved);
	free(a->task_score);
	free(a->cluster);
	*a = (struct pdi_automaded){0};
}

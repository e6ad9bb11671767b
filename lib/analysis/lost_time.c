/* SPDX-License-Identifier: GPL-2.0-only */
/* lost_time.c -- the time one task lost against its peers, phase by phase (see lost_time.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lost_time.h"
#include "pace.h"
#include "robust.h"
#include "starved.h"

/* a signal that is no loss: the time a task spent inside MPI calls */
#define SIGNAL_IN_MPI (PDI_LOST_WAITING + 1)
/* one phase: the longest single stretch of computation beyond its transition's usual */
#define SIGNAL_BURST (PDI_LOST_WAITING + 2)
/* computation beyond its states' usual pace, and in states seen in no other phase (pace.h) */
#define SIGNAL_PACED (PDI_LOST_WAITING + 3)
/* the time of one transition (struct work's from, to): where the time went (lost_at()) */
#define SIGNAL_TRANSITION (PDI_LOST_WAITING + 4)

const char *const pdi_lost_kind_names[] = {
	[PDI_LOST_NONE] = "none", [PDI_LOST_COMPUTING] = "computing", [PDI_LOST_HELD] = "held",
	[PDI_LOST_WAITING] = "waiting"};

/* The time P's edges out of computation states (COMP) or out of calls (!COMP) took (s): the
 * computation between calls, or the calls' durations. */
static double phase_time_s(const struct pdi_phase *p, bool comp)
{
	double sum = 0;

	for (uint32_t e = 0; e < p->nedges; e++)
		if (pdi_state_is_comp(p->states[p->edges[e].from].key) == comp)
			sum += p->edges[e].time.mean * (double)p->edges[e].time.n;
	return sum / 1e9;
}

double pdi_phase_computation_s(const struct pdi_phase *p)
{
	return phase_time_s(p, true);
}

/* The longest single stretch of computation in P beyond the task's usual after the same call
 * (s): the computation after a call site (to whichever call comes next) made at least
 * PDI_LOST_BURST_VISITS times, one visit of which lasted seconds where the others took
 * milliseconds (a rank spinning in its own code). Only a visit of a stall's worth is looked at;
 * the histogram keeps the longest visit alone in its last bucket unless others came close. */
static double burst_s(const struct pdi_phase *p)
{
	double burst = 0;

	for (uint32_t e = 0; e < p->nedges; e++) {
		const struct pdi_edge *x = &p->edges[e];
		const struct pdi_hist *h = &x->hist;
		uint64_t from = p->states[x->from].key, n = 0;
		double longest, sum = 0;

		if (!pdi_state_is_comp(from) || !h->n || h->count[h->n - 1] != 1 ||
		    h->mean[h->n - 1] < PDI_EXCESS_FLOOR_S * 1e9)
			continue;
		longest = h->mean[h->n - 1];
		/* every stretch after the same call */
		for (uint32_t k = 0; k < p->nedges; k++) {
			const struct pdi_edge *y = &p->edges[k];
			uint64_t key = p->states[y->from].key;

			if (pdi_state_is_comp(key) && pdi_state_prev_site(key) == pdi_state_prev_site(from)) {
				n += y->time.n;
				sum += y->time.mean * (double)y->time.n;
			}
		}
		if (n >= PDI_LOST_BURST_VISITS)
			burst = fmax(burst, (longest - fmax((sum - longest) / (double)(n - 1), 0.0)) / 1e9);
	}
	return burst;
}

/* Signal S of model M in phase P (s), NAN when unknown; not SIGNAL_PACED (fill()). */
static double signal_of(const struct pdi_model *m, uint32_t p, int s)
{
	const struct pdi_phase *ph = &m->phases[p];
	struct pdi_phase_usage u;

	/* a stretch between two seen calls may be calls no probe saw where the probes were blind
	 * (a function detached, or sampled to less than a call seen a second) at least as long in
	 * the phase: NWChem's fault-free runs at a load of 19 had "bursts" of 1.4 and 2.3 s in their
	 * 85 s tear-down, blind for seconds; an HPCC spin of 3.2 s in its set-up, which its blind
	 * marks overlapped for its last second, was a burst */
	if (s == SIGNAL_BURST) {
		double burst = burst_s(ph);

		return burst > 0 && (double)pdi_unobserved_blind_ns(&m->unobserved, ph->t_start, ph->t_end) >= burst * 1e9
			       ? NAN
			       : burst;
	}
	if (s == PDI_LOST_COMPUTING || s == SIGNAL_IN_MPI)
		return phase_time_s(ph, s == PDI_LOST_COMPUTING);
	if (!pdi_model_phase_usage(m, p, &u))
		return NAN;
	return (double)(s == PDI_LOST_HELD ? u.held_ns : u.wait_ns) / 1e9;
}

struct work {
	const struct pdi_model *const *models;
	const uint32_t *weights;
	size_t n;
	uint32_t np, first, end;
	double *x;                 /* n x np: one signal, then its excess over the peers */
	double *in_mpi;            /* n x np: the excess of time inside MPI calls */
	struct pdi_weighted *peers; /* n */
	double *own;               /* np */
	double *raw;               /* n x np: the excess of time computing, all of it */
	double *waited;            /* n x np: the excess of time waiting for a CPU, before netting */
	double *culprit;           /* n x np: what a model lost that its peers may have waited for
				      (note_culprits()) */
	struct pdi_pace pace;      /* the computation beyond its usual pace (pace.h) */
	uint64_t from, to;         /* SIGNAL_TRANSITION's state keys */
};

/* X becomes each model's excess over its peers' weighted median in the same phase, beyond its
 * own usual excess (a steady imbalance is the program's, not a fault). False when no phase has
 * two models that know the signal. */
static bool excess(struct work *w)
{
	bool any = false;

	for (uint32_t p = w->first; p < w->end; p++) {
		size_t k = 0;
		double med;

		for (size_t t = 0; t < w->n; t++)
			if (!isnan(w->x[t * w->np + p]))
				w->peers[k++] = (struct pdi_weighted){w->x[t * w->np + p], w->weights ? w->weights[t] : 1};
		if (k < 2 && !(k == 1 && w->peers[0].weight > 1)) {
			for (size_t t = 0; t < w->n; t++)
				w->x[t * w->np + p] = NAN;
			continue;
		}
		any = true;
		if (k > 3) {
			med = pdi_weighted_median(w->peers, k);
			for (size_t t = 0; t < w->n; t++)
				w->x[t * w->np + p] -= med;
			continue;
		}
		/* few tasks: each against the others alone (with two, the median of both would
		 * split a stall between the stalled task and its peer) */
		for (size_t t = 0, i = 0; t < w->n; t++) {
			double *x = &w->x[t * w->np + p], others[3];
			size_t m = 0;

			if (isnan(*x))
				continue;
			for (size_t j = 0; j < k; j++) /* the peers' values, as they were */
				if (j != i)
					others[m++] = w->peers[j].v;
			i++;
			*x = m ? *x - pdi_median(others, m) : NAN;
		}
	}
	for (size_t t = 0; any && w->end - w->first > 1 && t < w->n; t++) {
		size_t k = 0;
		double usual;

		for (uint32_t p = w->first; p < w->end; p++)
			if (!isnan(w->x[t * w->np + p]))
				w->own[k++] = w->x[t * w->np + p];
		usual = fmax(0.0, pdi_median(w->own, k));
		for (uint32_t p = w->first; p < w->end; p++)
			w->x[t * w->np + p] -= usual;
	}
	return any;
}

/* The run of phases around the peak where the same task kept losing: its first and last. */
static void run_of(struct pdi_lost *l, double median)
{
	double join = fmax(PDI_LOST_RUN_SHARE * l->peak_s, median + PDI_LOST_RUN_Z * l->noise_s);

	l->onset = l->last = l->peak;
	while (l->onset > l->first && pdi_lost_of(l, l->task, l->onset - 1, NULL) >= join)
		l->onset--;
	while (l->last + 1 < l->end && pdi_lost_of(l, l->task, l->last + 1, NULL) >= join)
		l->last++;
}

/* The largest loss of kind KIND (any: PDI_LOST_NONE) of at least AT_LEAST seconds as L's peak.
 * False when there is none. */
static bool peak_of(struct pdi_lost *l, enum pdi_lost_kind kind, double at_least)
{
	for (size_t t = 0; t < l->n; t++)
		for (uint32_t p = l->first; p < l->end; p++) {
			double x = l->by_task[t * l->nphases + p];

			if (x > l->peak_s && x >= at_least &&
			    (kind == PDI_LOST_NONE || l->kinds[t * l->nphases + p] == kind)) {
				l->peak_s = x;
				l->task = t;
				l->peak = p;
				l->kind = l->kinds[t * l->nphases + p];
			}
		}
	return l->peak_s > 0;
}

/* The most any task was held in phase P (the time lost of any kind: L->phase_s). */
static double held_in_phase(const struct pdi_lost *l, uint32_t p)
{
	double most = 0;

	for (size_t t = 0; t < l->n; t++)
		if (l->kinds[t * l->nphases + p] == PDI_LOST_HELD)
			most = fmax(most, l->by_task[t * l->nphases + p]);
	return most;
}

/* What L's task lost over its run, what the next task lost in the peak phase, and the most any
 * task lost in a phase outside the run (the most it was held there, when HELD). */
static void run_figures(struct pdi_lost *l, bool held)
{
	l->total_s = l->next_task_s = l->other_phase_s = 0;
	for (uint32_t p = l->first; p < l->end; p++)
		if (p >= l->onset && p <= l->last)
			l->total_s += pdi_lost_of(l, l->task, p, NULL);
		else
			l->other_phase_s = fmax(l->other_phase_s, held ? held_in_phase(l, p) : l->phase_s[p]);
	for (size_t t = 0; t < l->n; t++)
		if (t != l->task)
			l->next_task_s = fmax(l->next_task_s, pdi_lost_of(l, t, l->peak, NULL));
}

/* The peak, the phases' noise, the run, and what stands next to them. A task held by the kernel
 * for a stall's worth is the peak whatever computed longer elsewhere, and stands against the
 * time held elsewhere: no healthy task is held for seconds, while a loaded machine stretches a
 * program's own imbalance by seconds (NWChem at a load of 37, spin11: rank 2 stopped 3.0 s and
 * held 2.6 s beyond its peers in phase 8, while rank 1 computed 2.8 s longer than its peers in an
 * 11 s phase later, as one rank did in each of the run's four longest phases; the verdict took
 * the latter and found nothing abnormal). */
static void find(struct pdi_lost *l, double *scratch)
{
	size_t k = 0;
	double median;
	bool held = peak_of(l, PDI_LOST_HELD, PDI_EXCESS_FLOOR_S);

	l->found = held || peak_of(l, PDI_LOST_NONE, 0);
	if (!l->found)
		return;
	if (l->end - l->first >= PDI_LOST_MIN_PHASES) {
		for (uint32_t p = l->first; p < l->end; p++)
			if (p != l->peak)
				scratch[k++] = l->phase_s[p];
	} else {
		for (size_t t = 0; t < l->n; t++)
			if (t != l->task)
				scratch[k++] = l->by_task[t * l->nphases + l->peak];
	}
	median = pdi_median(scratch, k);
	l->noise_s = pdi_robust_sd(scratch, k, median, PDI_LOST_NOISE_FLOOR_S);
	l->z = (l->peak_s - median) / l->noise_s;
	run_of(l, median);
	run_figures(l, held);
}

/* Model M's share of the time it was ready on a CPU over phases [FROM, TO]; NAN when the kernel's
 * counts miss a phase or it was ready less than PDI_LOST_READY of the time (asleep in MPI, it
 * competed for no CPU). How long it was on a CPU (s) goes into RET_CPU_S whenever the counts are
 * there, ready or not: taker_of() compares the taker's time on a CPU with every other task's. */
static double ready_share(const struct pdi_model *m, uint32_t from, uint32_t to, double *ret_cpu_s)
{
	uint64_t cpu = 0, wait = 0, wall = 0;
	struct pdi_phase_usage u;

	for (uint32_t p = from; p <= to; p++) {
		if (!pdi_model_phase_usage(m, p, &u))
			return NAN;
		cpu += u.cpu_ns;
		wait += u.wait_ns;
		wall += u.wall_ns;
	}
	*ret_cpu_s = (double)cpu / 1e9;
	if (!wall || (double)(cpu + wait) < PDI_LOST_READY * (double)wall)
		return NAN;
	return (double)cpu / (double)(cpu + wait);
}

/* The most one of N models was on a CPU beyond every other in phase P (s), that model into
 * RET_TOP; NAN when a model lacks the kernel's counts there. */
static double cpu_lead_s(const struct pdi_model *const *models, size_t n, uint32_t p, size_t *ret_top)
{
	double top = -1, next = 0; /* the two longest times on a CPU in phase P (s) */
	struct pdi_phase_usage u;
	size_t who = 0;

	for (size_t t = 0; t < n; t++) {
		double cpu;

		if (!pdi_model_phase_usage(models[t], p, &u))
			return NAN;
		cpu = (double)u.cpu_ns / 1e9;
		next = fmax(next, fmin(top, cpu));
		if (cpu > top) {
			top = cpu;
			who = t;
		}
	}
	*ret_top = who;
	return top - next;
}

/* L's taker's lead over the run (its time on a CPU beyond any other task's) against the same lead
 * in the other phases: the most of it (other_lead_s), and, where there are PDI_LOST_MIN_PHASES
 * phases, how far it stands above their median in their robust sds, into L's z when more. Its
 * peers' loss is a part of the spin only (pdi_lost_stall_s()): GROMACS at a load of 15 (issue 9,
 * spin13), the neighbour's 0.26 s of waiting stood 5.2 sds above the other phases, the spinner's
 * lead of 1.65 s on a CPU, in a phase of 4.2 s, against leads of 0.01-0.03 s elsewhere. SCRATCH:
 * one double per phase. */
static void lead_against_phases(struct pdi_lost *l, const struct pdi_model *const *models, double *scratch)
{
	double median;
	size_t k = 0, top;

	for (uint32_t p = l->first; p < l->end; p++) {
		double lead = cpu_lead_s(models, l->n, p, &top);

		if (!isnan(lead) && (p < l->onset || p > l->last)) {
			scratch[k++] = lead;
			l->other_lead_s = fmax(l->other_lead_s, lead);
		}
	}
	if (!k || l->end - l->first < PDI_LOST_MIN_PHASES)
		return;
	median = pdi_median(scratch, k);
	l->z = fmax(l->z, (l->taker_cpu_s - l->next_cpu_s - median) /
				  pdi_robust_sd(scratch, k, median, PDI_LOST_NOISE_FLOOR_S));
}

/* How model TAKER and the others shared the CPU over phases [FROM, TO] (ready_share()). */
struct taking {
	double share, cpu_s;      /* its share of the time it was ready, and its time on a CPU (s) */
	double others, next_cpu_s; /* the most any other ready task had of the share (0: none), and any
				      other task of the time */
};

/* Whether model TAKER, a single task, took the CPU over phases [FROM, TO] of L's models by its
 * share against every other ready task's (pdi_starved_took_cpu()); how, into RET (always). */
static bool took_over(const struct pdi_lost *l, const struct pdi_model *const *models, const uint32_t *weights,
		      size_t taker, uint32_t from, uint32_t to, struct taking *ret)
{
	struct taking k = {0};

	k.share = ready_share(models[taker], from, to, &k.cpu_s);
	for (size_t t = 0; t < l->n; t++) {
		double cpu_s = 0, share = t == taker ? NAN : ready_share(models[t], from, to, &cpu_s);

		if (!isnan(share))
			k.others = fmax(k.others, share);
		if (t != taker)
			k.next_cpu_s = fmax(k.next_cpu_s, cpu_s);
	}
	*ret = k;
	return pdi_starved_took_cpu(k.share, k.others) && (!weights || weights[taker] == 1);
}

/* L's finding names TAKER as the task that took the CPU, as K says. */
static void take(struct pdi_lost *l, const struct pdi_model *const *models, size_t taker, const struct taking *k,
		 double *scratch)
{
	l->taken = true;
	l->taker = taker;
	l->taker_share = k->share;
	l->next_share = k->others;
	l->taker_cpu_s = k->cpu_s;
	l->next_cpu_s = k->next_cpu_s;
	lead_against_phases(l, models, scratch);
}

/* Whether the CPU the finding's task waited for was taken by one task of the step with a CPU to
 * itself (starved.h), on a CPU at least as long as the finding's task lost: a rank spinning in
 * its own code, where the ranks waiting for it in MPI poll (GROMACS at a load of 5, issue 9: the
 * spinner on a CPU 97% of its ready time over the 4.9 s phase, its peers 15-43%, and the one
 * beside it on a CPU 4.1 s behind, which lost 1.3 s waiting beyond its peers and was named). The
 * starved finding asks the same of its run; it did not find this one, the loss is a third of the
 * peers' share only against the one beside the spinner. */
static void taker_of(struct pdi_lost *l, const struct pdi_model *const *models, const uint32_t *weights,
		     double *scratch)
{
	double top = NAN, cpu_s;
	size_t taker = 0;
	struct taking k;

	if (!l->found || l->kind != PDI_LOST_WAITING)
		return;
	for (size_t t = 0; t < l->n; t++) {
		double share = t == l->task ? NAN : ready_share(models[t], l->onset, l->last, &cpu_s);

		if (!isnan(share) && (isnan(top) || share > top)) {
			top = share;
			taker = t;
		}
	}
	if (!isnan(top) && took_over(l, models, weights, taker, l->onset, l->last, &k) && k.cpu_s >= l->total_s)
		take(l, models, taker, &k, scratch);
}

/* Where no task lost a stall's worth (pdi_lost_stall_s()), one task that was on a CPU a stall's
 * worth longer than every other over a phase, or a run of phases where it kept a good part of
 * that lead, and took the CPU by its share (pdi_starved_took_cpu()), is the finding: a rank
 * spinning in its own code, whose peers waited for it in calls no probe saw (the budget sampled
 * them) and so lost nothing the call timings show, nor waited longer for a CPU than it did (NWChem
 * at a load of 10, issue 9, spin14: rank 0 on a CPU 2.83 s in a phase of 4.75 s, 60% of the time
 * it was ready, its peers 0.43-0.61 s and 13% at most; it lost 0.51 s computing, under rank 2's
 * 0.53 s in a phase of its own, and no finding was in the spin's phase). No healthy task does
 * that in a compared phase (the kept campaigns, 187 runs without a spin: a lead of 0.40 s at most
 * where the CPU was taken by the share, 0.25 s in fault-free runs); a set-up or tear-down where
 * one rank works alone is not compared. Only with PDI_LOST_MIN_PHASES
 * phases: the lead must stand above the other phases' (lead_against_phases()). SCRATCH: one
 * double per phase. */
static void spun_alone(struct pdi_lost *l, const struct pdi_model *const *models, const uint32_t *weights,
		       double *scratch)
{
	double best = 0, lead;
	size_t taker = 0, top;
	uint32_t peak = l->first, onset, last;
	struct taking k;

	if (pdi_lost_stall_s(l) >= PDI_EXCESS_FLOOR_S || l->end - l->first < PDI_LOST_MIN_PHASES)
		return;
	for (uint32_t p = l->first; p < l->end; p++)
		if ((lead = cpu_lead_s(models, l->n, p, &top)) > best) {
			best = lead;
			taker = top;
			peak = p;
		}
	onset = last = peak;
	while (onset > l->first && (lead = cpu_lead_s(models, l->n, onset - 1, &top)) >= PDI_LOST_RUN_SHARE * best &&
	       top == taker)
		onset--;
	while (last + 1 < l->end && (lead = cpu_lead_s(models, l->n, last + 1, &top)) >= PDI_LOST_RUN_SHARE * best &&
	       top == taker)
		last++;
	if (best <= 0 || !took_over(l, models, weights, taker, onset, last, &k) ||
	    k.cpu_s - k.next_cpu_s < PDI_EXCESS_FLOOR_S)
		return;
	l->found = true;
	l->task = taker;
	l->kind = PDI_LOST_COMPUTING;
	l->peak = peak;
	l->onset = onset;
	l->last = last;
	l->peak_s = pdi_lost_of(l, taker, peak, NULL);
	l->z = 0;
	run_figures(l, false);
	take(l, models, taker, &k, scratch);
}

/* The time W's transition took in phase P of model M (s): 0 where the phase never took it. */
static double transition_s(const struct work *w, const struct pdi_model *m, uint32_t p)
{
	const struct pdi_edge *e = pdi_phase_edge(&m->phases[p], w->from, w->to);

	return e ? e->time.mean * (double)e->time.n / 1e9 : 0;
}

/* W's X: signal S of every model in every phase looked at, NAN elsewhere. */
static void fill(struct work *w, int s)
{
	for (size_t t = 0; t < w->n; t++)
		for (uint32_t p = 0; p < w->np; p++)
			w->x[t * w->np + p] = p < w->first || p >= w->end || p >= w->models[t]->nphases ? NAN
					      : s == SIGNAL_PACED      ? pdi_pace_with_unpaced_s(&w->pace, t, p)
					      : s == SIGNAL_TRANSITION ? transition_s(w, w->models[t], p)
								       : signal_of(w->models[t], p, s);
}

/* How much later the cut that begins phase Q was placed on model T than on its peers (s; negative:
 * earlier), by the kernel's readings that bound the phases' counts (pdi_model_phase_usage()); NAN
 * when a reading is missing. SCRATCH: one double per model. */
static double cut_late_s(const struct work *w, size_t t, uint32_t q, double *scratch)
{
	size_t k = 0;

	if (q >= w->models[t]->nphases || !w->models[t]->phases[q].usage.at_ns)
		return NAN;
	for (size_t u = 0; u < w->n; u++)
		if (u != t && q < w->models[u]->nphases && w->models[u]->phases[q].usage.at_ns)
			scratch[k++] = (double)w->models[u]->phases[q].usage.at_ns;
	return k ? ((double)w->models[t]->phases[q].usage.at_ns - pdi_median(scratch, k)) / 1e9 : NAN;
}

/* W's X net of what a model gave back in the phase beside, across a cut placed on it later (or
 * earlier) than on its peers, up to that shift: its counts then run over a longer stretch than
 * theirs in one phase and a shorter one in the next, and on a node loaded beyond its cores every
 * task waits for a CPU most of the time, so the shift alone looks like a loss (NWChem, issue 9,
 * spin14: rank 1's cut 0.9 s late, 0.85 s "lost" waiting in phase 26 and 0.8 s less than its
 * peers in phase 27, at a load of 17; it outweighed the spin's 1.0 s in phase 6 by the phase
 * margin). Time computing (CAP: W's waited) is netted no further than the model waited for a CPU
 * beyond its peers in the phase: a rank spinning in its own code makes no call to be cut at, so
 * where its peers' waits went unseen the time past their cut is its spin, on a CPU; what moved
 * across a cut on a loaded node is mostly a wait for one (NWChem spin 962, issue 9, load 20: rank
 * 2 "computed" 1.27 s beyond its peers in phase 38, 1.16 s of it waiting for a CPU beyond
 * theirs, and 0.91 s less than they did in phase 39 after its cut fell late; it held the spin's
 * 1.43 s in phase 5 to a phase margin of 1.12). CAP NULL: no limit. */
static void net_of_moved_cuts(struct work *w, const double *cap)
{
	memcpy(w->raw, w->x, w->n * w->np * sizeof(*w->raw));
	for (size_t t = 0; t < w->n; t++)
		for (uint32_t p = w->first; p < w->end; p++) {
			size_t i = t * w->np + p;
			double *x = &w->x[i], was = *x, later, earlier;

			if (isnan(*x) || *x <= 0)
				continue;
			later = p + 1 < w->end ? cut_late_s(w, t, p + 1, w->own) : NAN;
			earlier = p > w->first ? -cut_late_s(w, t, p, w->own) : NAN;
			if (later > 0 && w->raw[i + 1] < 0)
				*x += fmax(-later, w->raw[i + 1]);
			if (earlier > 0 && w->raw[i - 1] < 0)
				*x += fmax(-earlier, w->raw[i - 1]);
			if (cap)
				*x = fmax(*x, was - (isnan(cap[i]) ? 0.0 : fmax(0.0, cap[i])));
		}
}

/* W's X: each model's excess of signal S over its peers (excess()). Time computing counts no
 * more than the excess of computation beyond its usual pace (computations seen in no other
 * phase in full: their peers' in the same phase are the yardstick then): a rank that does more
 * of its usual work at its usual pace while its peers wait loses nothing (HPL's panel, pace.h);
 * a rank whose same work took longer (spinning, stopped, a hog on its CPU) loses that. The
 * lesser of the two: the pace of a code whose calls wrap work of every size (NWChem's one-sided
 * operations) varies more than its totals do, and that noise is no loss either. False when no
 * phase has two models that know the signal. */
static bool excess_of(struct work *w, int s)
{
	size_t all = w->n * w->np;

	if (s == PDI_LOST_COMPUTING) { /* the cap of its netting: net_of_moved_cuts() */
		fill(w, PDI_LOST_WAITING);
		if (!excess(w))
			for (size_t i = 0; i < all; i++)
				w->x[i] = NAN;
		memcpy(w->waited, w->x, all * sizeof(*w->waited));
	}
	fill(w, s);
	if (!excess(w))
		return false;
	if (s == PDI_LOST_HELD || s == PDI_LOST_WAITING || s == PDI_LOST_COMPUTING)
		net_of_moved_cuts(w, s == PDI_LOST_COMPUTING ? w->waited : NULL);
	if (s != PDI_LOST_COMPUTING)
		return true;
	memcpy(w->raw, w->x, all * sizeof(*w->raw));
	fill(w, SIGNAL_PACED);
	(void)excess(w); /* the same phases and models know it */
	for (size_t i = 0; i < all; i++)
		w->x[i] = fmin(w->raw[i], w->x[i]);
	return true;
}

/* Where L's finding lost its time (lost_time.h, at_*): each transition of the named task in the
 * run's first phase, taken against the same transition of its peers as the phase's loss was
 * (excess()). A transition can lose no more than it took, so one that took no longer than the best
 * so far, or than the floor, is not looked at: the few that took seconds in a phase of seconds. */
static void lost_at(struct pdi_lost *l, struct work *w)
{
	size_t t = l->taken ? l->taker : l->task;
	uint32_t p = l->onset;
	enum pdi_lost_kind kind;
	double lost = pdi_lost_of(l, t, p, &kind), best;
	const struct pdi_phase *ph;
	bool comp;

	if (!l->found || p >= w->models[t]->nphases)
		return;
	/* a taker spun in its own code; what it lost otherwise is the kind it lost at the onset */
	comp = kind == PDI_LOST_COMPUTING || t != l->task;
	best = fmax(PDI_LOST_NOISE_FLOOR_S, PDI_LOST_AT_SHARE * lost);
	ph = &w->models[t]->phases[p];
	for (uint32_t e = 0; e < ph->nedges; e++) {
		const struct pdi_edge *x = &ph->edges[e];
		double at;

		w->from = ph->states[x->from].key;
		w->to = ph->states[x->to].key;
		if ((comp && !pdi_state_is_comp(w->from)) || x->time.mean * (double)x->time.n / 1e9 <= best)
			continue;
		fill(w, SIGNAL_TRANSITION);
		if (!excess(w) || !((at = w->x[t * w->np + p]) > best))
			continue;
		best = l->at_s = at;
		l->has_at = true;
		l->at_task = t;
		l->at_phase = p;
		l->at_from = w->from;
		l->at_to = w->to;
	}
}

/* W's culprits from W's X, signal S's excess over the peers (computing, or held) before any of it
 * is discounted: the time a model computed longer than its peers, or was held longer than them
 * beyond its longer time inside MPI (held in its own code: asleep, stopped between its calls).
 * A task held inside an MPI call is no culprit by it (it was in MPI as long as it was held: a
 * victim sleeping in MPI while it waits, or a task stopped there, which its time held names).
 * Taken from every model's figures, whichever kind each ends up recorded as: in
 * Monitor.transient_stall_phase on main at a load of 31 (issue 9) rank 1 slept 3 s before its
 * Barrier, which the kernel's counts made more time held than its call timings made time
 * computing (the load stretched its peer's computation), and a culprit read from the recorded
 * kinds vanished for the pass over the waits: rank 0's wait for a CPU while it polled in the
 * Barrier counted as its own loss: 1.12-1.61 s in five loaded runs, and once past 2.5 s, where
 * 3 s / 1.2 says "no task stands apart" and nothing abnormal. */
static void note_culprits(struct work *w, int s)
{
	for (size_t i = 0; i < w->n * w->np; i++) {
		double x = s == PDI_LOST_COMPUTING ? w->x[i] : w->x[i] - fmax(0.0, w->in_mpi[i]);

		if (x > w->culprit[i]) /* NAN: no figure */
			w->culprit[i] = x;
	}
}

/* The most any model but T lost in phase P that T may have waited for (s; note_culprits()). */
static double culprit_s(const struct work *w, size_t t, uint32_t p)
{
	double most = 0;

	for (size_t u = 0; u < w->n; u++)
		if (u != t)
			most = fmax(most, w->culprit[u * w->np + p]);
	return most;
}

int pdi_lost_time(const struct pdi_model *const *models, const uint32_t *weights, size_t n, uint32_t first,
		  uint32_t end, struct pdi_lost *ret)
{
	struct pdi_lost l = {.n = n, .first = first, .end = end};
	struct work w = {.models = models, .weights = weights, .n = n, .first = first, .end = end};
	int r = -ENOMEM;

	for (size_t t = 0; t < n; t++)
		if (models[t]->nphases > l.nphases)
			l.nphases = models[t]->nphases;
	if (!n || first >= end || end > l.nphases)
		return -EINVAL;
	w.np = l.nphases;
	l.phase_s = calloc(w.np, sizeof(*l.phase_s));
	l.by_task = calloc(n * w.np, sizeof(*l.by_task));
	l.kinds = calloc(n * w.np, sizeof(*l.kinds));
	w.x = malloc(n * w.np * sizeof(*w.x));
	w.in_mpi = malloc(n * w.np * sizeof(*w.in_mpi));
	w.peers = malloc(n * sizeof(*w.peers));
	w.own = malloc((w.np > n ? w.np : n) * sizeof(*w.own));
	w.raw = malloc(n * w.np * sizeof(*w.raw));
	w.waited = malloc(n * w.np * sizeof(*w.waited));
	w.culprit = calloc(n * w.np, sizeof(*w.culprit));
	/* the pace is read for time computing, which one phase does not look at (below): the set-up
	 * and tear-down are each looked at alone (automaded.c lost_at_the_edges) */
	if (!l.phase_s || !l.by_task || !l.kinds || !w.x || !w.in_mpi || !w.peers || !w.own || !w.raw || !w.waited ||
	    !w.culprit || (end - first > 1 && pdi_pace_of(models, n, first, end, &w.pace) < 0))
		goto out;
	if (!excess_of(&w, SIGNAL_IN_MPI))
		memset(w.in_mpi, 0, n * w.np * sizeof(*w.in_mpi));
	else
		memcpy(w.in_mpi, w.x, n * w.np * sizeof(*w.in_mpi));
	/* one phase: no usual phase to compare with: the time held tells, and a burst of computation
	 * its transition never takes otherwise */
	for (int s = end - first > 1 ? PDI_LOST_COMPUTING : PDI_LOST_HELD;
	     s <= (end - first > 1 ? PDI_LOST_WAITING : SIGNAL_BURST); s++) {
		if (end - first == 1 && (s == PDI_LOST_WAITING || s == SIGNAL_IN_MPI))
			continue;
		if (!excess_of(&w, s))
			continue;
		l.has_usage |= s == PDI_LOST_HELD || s == PDI_LOST_WAITING;
		/* the culprits of a pass are noted before its victims are discounted: a task's own
		 * figure must not shrink its peer's culprit earlier in the same pass */
		if (end - first > 1 && (s == PDI_LOST_COMPUTING || s == PDI_LOST_HELD))
			note_culprits(&w, s);
		for (size_t i = 0; i < n * w.np; i++) {
			double x = w.x[i];

			/* held or waiting while in MPI longer than its peers: a victim waiting for the
			 * culprit (some MPI libraries sleep or yield while they wait), not a culprit; as
			 * long as a culprit computed or was held longer outside MPI, when that was looked
			 * at (more than one phase): a task held inside an MPI call while no other did was
			 * stopped there (meep, issue 9: held 2.7 s inside its MPI_Waitsome, its peers
			 * 0.05-0.09 s, none computing longer) */
			if (s != PDI_LOST_COMPUTING && !isnan(w.in_mpi[i]))
				x -= end - first > 1 ? fmin(fmax(0.0, w.in_mpi[i]), culprit_s(&w, i / w.np, i % w.np))
						     : fmax(0.0, w.in_mpi[i]);
			if (!isnan(x) && x > l.by_task[i]) {
				l.by_task[i] = x;
				l.kinds[i] = (uint8_t)(s == SIGNAL_BURST ? PDI_LOST_COMPUTING : s);
			}
		}
	}
	for (size_t t = 0; t < n; t++)
		for (uint32_t p = first; p < end; p++)
			l.phase_s[p] = fmax(l.phase_s[p], l.by_task[t * w.np + p]);
	find(&l, w.x);
	taker_of(&l, models, weights, w.x);
	spun_alone(&l, models, weights, w.x);
	lost_at(&l, &w);
	*ret = l;
	l = (struct pdi_lost){0};
	r = 0;
out:
	free(w.x);
	free(w.in_mpi);
	free(w.peers);
	free(w.own);
	free(w.raw);
	free(w.waited);
	free(w.culprit);
	pdi_pace_done(&w.pace);
	pdi_lost_done(&l);
	return r;
}

void pdi_lost_done(struct pdi_lost *l)
{
	free(l->phase_s);
	free(l->by_task);
	free(l->kinds);
	*l = (struct pdi_lost){0};
}

/* a task kept its usual share of the CPU at this much of it, and a wait for a CPU covers a loss
 * at this much of it (the counts of a phase of seconds on a loaded machine vary by a few
 * percent) */
#define CPU_SHARE_KEPT 0.9

/* Model M's share of the CPU over its phases but SKIP (time on a CPU over wall time), or a
 * negative number when the kernel's counts say nothing. */
static double usual_cpu_share(const struct pdi_model *m, uint32_t skip)
{
	uint64_t cpu = 0, wall = 0;
	struct pdi_phase_usage u;

	for (uint32_t p = 0; p < m->nphases; p++)
		if (p != skip && pdi_model_phase_usage(m, p, &u)) {
			cpu += u.cpu_ns;
			wall += u.wall_ns;
		}
	return wall ? (double)cpu / (double)wall : -1;
}

bool pdi_lost_cpu_taken(const struct pdi_lost *l, size_t u, const struct pdi_model *c, const struct pdi_model *mu)
{
	struct pdi_phase_usage uc, uu;
	enum pdi_lost_kind kind;
	double lost = pdi_lost_of(l, u, l->peak, &kind), usual_c, usual_u;

	if (!l->found || u == l->task || l->kind != PDI_LOST_COMPUTING ||
	    (kind != PDI_LOST_COMPUTING && kind != PDI_LOST_WAITING) ||
	    !pdi_model_phase_usage(c, l->peak, &uc) || !pdi_model_phase_usage(mu, l->peak, &uu) || !uc.wall_ns ||
	    !uu.wall_ns)
		return false;
	usual_c = usual_cpu_share(c, l->peak);
	usual_u = usual_cpu_share(mu, l->peak);
	return usual_c >= 0 && usual_u >= 0 && (double)uc.cpu_ns / (double)uc.wall_ns >= CPU_SHARE_KEPT * usual_c &&
	       (double)uu.cpu_ns / (double)uu.wall_ns < usual_u &&
	       (double)uu.wait_ns - (double)uc.wait_ns >= CPU_SHARE_KEPT * lost * 1e9;
}

double pdi_lost_of(const struct pdi_lost *l, size_t t, uint32_t p, enum pdi_lost_kind *ret_kind)
{
	if (t >= l->n || p < l->first || p >= l->end) {
		if (ret_kind)
			*ret_kind = PDI_LOST_NONE;
		return 0;
	}
	if (ret_kind)
		*ret_kind = (enum pdi_lost_kind)l->kinds[t * l->nphases + p];
	return l->by_task[t * l->nphases + p];
}

bool pdi_lost_kernel_alone(const struct pdi_lost *l, const struct pdi_model *const *models, size_t n)
{
	struct pdi_phase_usage mine, other;
	uint64_t held = 0;
	size_t top;

	if (!l->found || l->task >= n || n < 2 || !pdi_model_phase_usage(models[l->task], l->peak, &mine))
		return false;
	for (size_t t = 0; t < n; t++) {
		if (t == l->task)
			continue;
		if (!pdi_model_phase_usage(models[t], l->peak, &other))
			return false;
		held = other.held_ns > held ? other.held_ns : held;
	}
	return mine.held_ns >= held + (uint64_t)(PDI_EXCESS_FLOOR_S * 1e9) ||
	       (cpu_lead_s(models, n, l->peak, &top) >= PDI_EXCESS_FLOOR_S && top == l->task);
}

double pdi_lost_stall_s(const struct pdi_lost *l)
{
	if (!l->found)
		return 0;
	return l->taken ? fmax(l->total_s, l->taker_cpu_s - l->next_cpu_s) : l->total_s;
}

double pdi_lost_phase_margin(const struct pdi_lost *l)
{
	double lost = l->other_phase_s > 0 ? l->peak_s / l->other_phase_s : 1e9;

	if (!l->taken)
		return lost;
	return fmax(lost, l->other_lead_s > 0 ? (l->taker_cpu_s - l->next_cpu_s) / l->other_lead_s : 1e9);
}

void pdi_lost_taken_text(const struct pdi_lost *l, char *buf, size_t len)
{
	char where[80];

	if (!l->found || !l->taken) {
		if (len)
			buf[0] = '\0';
		return;
	}
	if (l->last > l->onset)
		snprintf(where, sizeof(where), "phases %u to %u", l->onset, l->last);
	else
		snprintf(where, sizeof(where), "phase %u", l->onset);
	if (l->taker == l->task) /* spun_alone(): no other task's loss was seen */
		snprintf(buf, len,
			 "on a CPU %.2f s over %s, %.0f%% of the time it was ready, the others %.2f s and %.0f%% at most: "
			 "it took the CPU while they waited for one",
			 l->taker_cpu_s, where, 100 * l->taker_share, l->next_cpu_s, 100 * l->next_share);
	else
		snprintf(buf, len,
			 "on a CPU %.2f s over %s, %.0f%% of the time it was ready, the others %.2f s and %.0f%% at most: "
			 "it took the CPU they waited for (one of them %.1f s longer than its peers)",
			 l->taker_cpu_s, where, 100 * l->taker_share, l->next_cpu_s, 100 * l->next_share, l->total_s);
}

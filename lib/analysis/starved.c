/* SPDX-License-Identifier: GPL-2.0-only */
/* starved.c -- "not getting CPU": each task's share of the CPU against its peers' (starved.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "robust.h"
#include "starved.h"
#include "starved_work.h"

static uint32_t weight(const struct pdi_starved_work *w, size_t t)
{
	return w->weights ? w->weights[t] : 1;
}

/* Whether U comes after the last of R[0..K) (a reading of the same moment twice is one). */
static bool later(const struct pdi_usage *r, size_t k, const struct pdi_usage *u)
{
	return !k || (u->at_ns > r[k - 1].at_ns && pdi_usage_after(&r[k - 1], u));
}

/* Model M's readings in time order into W->readings: each phase's first, the log's through the
 * step and the latest. Their number. */
static size_t readings_of(struct pdi_starved_work *w, const struct pdi_model *m)
{
	const struct pdi_usage_log *l = &m->usage_log;
	size_t k = 0, i = 0;

	for (uint32_t p = 0; p <= m->nphases; p++) {
		const struct pdi_usage *u = p < m->nphases ? &m->phases[p].usage : &m->usage_now;

		if (!u->at_ns)
			continue;
		for (; i < l->n && l->v[i].at_ns < u->at_ns; i++)
			if (later(w->readings, k, &l->v[i]))
				w->readings[k++] = l->v[i];
		if (later(w->readings, k, u))
			w->readings[k++] = *u;
	}
	return k;
}

/* How many slots phase P is compared in: as many as the readings inside it allow on every model
 * with its counts (each slot ends at or after one of them), each PDI_STARVED_SLOT_S or longer, at
 * most PDI_STARVED_SLOTS. 1 where a model was not read inside it (an older model, a phase
 * shorter than the log's gap). */
static uint32_t slots_of(const struct pdi_starved_work *w, uint32_t p)
{
	uint32_t slots = PDI_STARVED_SLOTS;
	bool read = false;

	for (size_t t = 0; t < w->n; t++) {
		const struct pdi_model *m = w->models[t];
		const struct pdi_usage_log *l = &m->usage_log;
		struct pdi_phase_usage u;
		uint64_t a, b;
		uint32_t inside = 0;

		if (p >= m->nphases || !pdi_model_phase_usage(m, p, &u))
			continue;
		a = m->phases[p].usage.at_ns;
		b = a + u.wall_ns;
		for (uint32_t i = 0; i < l->n; i++)
			inside += l->v[i].at_ns > a && l->v[i].at_ns < b;
		slots = (uint32_t)fmin(slots, fmin(inside + 1, fmax(1, floor((double)u.wall_ns / 1e9 / PDI_STARVED_SLOT_S))));
		read = true;
	}
	return read ? slots : 1;
}

/* The units: each phase in [FIRST, END) cut in slots_of() slots, each task's slot a share of its
 * own phase (phases line up across tasks, their times nearly). -ENOMEM. */
static int units_of(struct pdi_starved_work *w, uint32_t first, uint32_t end)
{
	uint32_t nu = 0;

	if (!(w->unit0 = malloc((w->np + 1) * sizeof(*w->unit0))))
		return -ENOMEM;
	for (uint32_t p = 0; p < w->np; p++) {
		w->unit0[p] = nu;
		nu += p >= first && p < end ? slots_of(w, p) : 0;
	}
	w->unit0[w->np] = w->nu = nu;
	if (!(w->phase = malloc(nu * sizeof(*w->phase))))
		return -ENOMEM;
	for (uint32_t p = 0; p < w->np; p++)
		for (uint32_t u = w->unit0[p]; u < w->unit0[p + 1]; u++)
			w->phase[u] = p;
	return 0;
}

/* Model T's share in each of phase P's units, from its readings R[0..K). */
static bool read_phase(struct pdi_starved_work *w, size_t t, uint32_t p, const struct pdi_usage *r, size_t k)
{
	const struct pdi_model *m = w->models[t];
	uint32_t slots = w->unit0[p + 1] - w->unit0[p];
	struct pdi_phase_usage pu;
	bool any = false;
	uint64_t a;

	if (p >= m->nphases || !pdi_model_phase_usage(m, p, &pu) || !k)
		return false;
	a = m->phases[p].usage.at_ns;
	for (uint32_t j = 0; j < slots; j++) {
		struct pdi_usage x = pdi_usage_at(r, k, a + pu.wall_ns * j / slots);
		struct pdi_usage y = pdi_usage_at(r, k, a + pu.wall_ns * (j + 1) / slots);
		size_t i = t * w->nu + w->unit0[p] + j;
		double ready = (double)(y.cpu_ns - x.cpu_ns) + (double)(y.wait_ns - x.wait_ns);

		w->wall[i] = (double)(y.at_ns - x.at_ns) / 1e9;
		w->wait[i] = (double)(y.wait_ns - x.wait_ns) / 1e9;
		w->cpu[i] = (double)(y.cpu_ns - x.cpu_ns) / 1e9;
		if (x.group_ns && y.group_ns >= x.group_ns)
			w->group[i] = (double)(y.group_ns - x.group_ns) / 1e9;
		if (y.at_ns <= x.at_ns || ready < PDI_STARVED_READY * (double)(y.at_ns - x.at_ns))
			continue; /* asleep or held most of it: no share to compare */
		w->log_share[i] = log(fmax((double)(y.cpu_ns - x.cpu_ns) / ready, SHARE_FLOOR));
		any = true;
	}
	return any;
}

/* The kernel's counts of every model in every unit looked at. False when no unit has any. */
static bool read_shares(struct pdi_starved_work *w)
{
	bool any = false;

	for (size_t i = 0; i < w->n * w->nu; i++) {
		w->log_share[i] = w->group[i] = NAN;
		w->wall[i] = w->wait[i] = w->cpu[i] = 0;
	}
	for (size_t t = 0; t < w->n; t++) {
		size_t k = readings_of(w, w->models[t]);

		for (uint32_t p = 0; p < w->np; p++)
			if (w->unit0[p + 1] > w->unit0[p])
				any |= read_phase(w, t, p, w->readings, k);
	}
	return any;
}

/* Model T's peers' median log share in unit U (the other models, and the other tasks of its
 * own class), each less LESS[model] where LESS is given; NAN when it has none. */
static double peers_median(struct pdi_starved_work *w, size_t t, uint32_t u, const double *less)
{
	size_t k = 0;

	for (size_t o = 0; o < w->n; o++) {
		double v = w->log_share[o * w->nu + u] - (less ? less[o] : 0);
		uint32_t wt = o == t ? weight(w, o) - 1 : weight(w, o);

		if (!isnan(v) && wt)
			w->peers[k++] = (struct pdi_weighted){v, wt};
	}
	return k ? pdi_weighted_median(w->peers, k) : NAN;
}

/* The share Q of model T's time (units weighed by their lengths) before unit END over which V
 * (n x nu; NAN unknown) was at most the value returned (0 when none is known). A high Q makes a
 * usual that a stretch of interference covering most of the phases does not move, as it would a
 * median (meep, issue 9: a hog for 6 s covered 24 of its 31 compared phases, the rank's usual
 * became the interference and nothing was found); Q 0.5 is the median by length, what a task got
 * before a unit (below_usual()). */
double pdi_starved_by_length(struct pdi_starved_work *w, size_t t, const double *v, double q, uint32_t end)
{
	size_t k = 0;

	for (uint32_t u = 0; u < end; u++) {
		double x = v[t * w->nu + u];

		if (!isnan(x) && !isnan(w->log_share[t * w->nu + u]))
			w->byunit[k++] = (struct pdi_weighted){x, (uint32_t)fmin(w->wall[t * w->nu + u] * 1e4 + 1, 4e9)};
	}
	return k ? pdi_weighted_quantile(w->byunit, k, q) : 0;
}

/* The log share model T reached over the step: at least this its best tenth of the time
 * (PDI_STARVED_USUAL_Q, units by length), its usual where interference covered most of it. */
static double usual_of(struct pdi_starved_work *w, size_t t)
{
	return pdi_starved_by_length(w, t, w->log_share, 1 - PDI_STARVED_USUAL_Q, w->nu);
}

/* Model T's log ratio in unit U (0 unknown). */
static double x_of(const struct pdi_starved_work *w, size_t t, uint32_t u)
{
	return w->x[t * w->nu + u];
}

/* W->x: how many times less CPU each model got than its peers (log), beyond its own usual; 0
 * where unknown. S->x: the same per phase, its units' by their lengths. */
static bool ratios(struct pdi_starved_work *w, struct pdi_starved *s)
{
	bool any = false;

	for (size_t i = 0; i < w->n * w->nu; i++)
		w->x[i] = NAN;
	for (uint32_t u = 0; u < w->nu; u++)
		for (size_t t = 0; t < w->n; t++) {
			double ls = w->log_share[t * w->nu + u], med;

			if (isnan(ls) || isnan(med = peers_median(w, t, u, NULL)))
				continue;
			w->x[t * w->nu + u] = med - ls;
			any = true;
		}
	/* a task that always gets less (it shares its CPU by placement) is taken at its usual */
	for (size_t t = 0; any && s->end - s->first > 1 && t < w->n; t++) {
		double usual = fmax(0.0, pdi_starved_by_length(w, t, w->x, PDI_STARVED_USUAL_Q, w->nu));

		for (uint32_t u = 0; u < w->nu; u++)
			w->x[t * w->nu + u] -= usual;
	}
	for (size_t i = 0; i < w->n * w->nu; i++)
		if (isnan(w->x[i]))
			w->x[i] = 0;
	for (size_t t = 0; t < w->n; t++)
		for (uint32_t p = s->first; p < s->end; p++) {
			double sum = 0, len = 0;

			for (uint32_t u = w->unit0[p]; u < w->unit0[p + 1]; u++) {
				sum += x_of(w, t, u) * w->wall[t * w->nu + u];
				len += w->wall[t * w->nu + u];
			}
			s->x[t * s->nphases + p] = len > 0 ? sum / len : 0;
		}
	return any;
}

bool pdi_starved_named(const struct pdi_starved *s, size_t t)
{
	if (s->taken)
		return t == s->taker;
	return s->found && t < s->n &&
	       (t == s->task || s->window[t] >= PDI_STARVED_ALSO_SHARE * s->window[s->task]);
}

size_t pdi_starved_hit(const struct pdi_starved *s, size_t *ret)
{
	size_t k = 0;

	if (!s->found || s->taken)
		return 0;
	ret[k++] = s->task; /* the furthest behind, by the finding's choice */
	for (size_t t = 0; t < s->n; t++) {
		size_t i;

		if (t == s->task || !pdi_starved_named(s, t))
			continue;
		/* the others after it, by how far behind they fell */
		for (i = k++; i > 1 && s->window[ret[i - 1]] < s->window[t]; i--)
			ret[i] = ret[i - 1];
		ret[i] = t;
	}
	return k;
}

/* Whether model T and its peers all got at most 1/PDI_STARVED_JOIN of their own usual shares in
 * unit U: the machine, or the scheduler settling as a hog arrives, took from every task alike,
 * and T's share against its peers there says nothing of a CPU it shares (usage13, meep mem 910:
 * the victim at a fifth of its peers' share for 2 s, every rank at 0.03 of a CPU for 0.2 s, then
 * the victim alone again; the row ended at the dip and its later piece was named, five phases
 * late). */
static bool fell_alike(struct pdi_starved_work *w, size_t t, uint32_t u)
{
	double fall = log(PDI_STARVED_JOIN), ls = w->log_share[t * w->nu + u];

	return !isnan(ls) && w->usual[t] - ls >= fall && -peers_median(w, t, u, w->usual) >= fall;
}

/* How far model T fell behind over units [FROM, TO] (log ratio times seconds, where it did). */
static double behind(const struct pdi_starved_work *w, size_t t, uint32_t from, uint32_t to)
{
	double sum = 0;

	for (uint32_t u = from; u <= to; u++)
		sum += fmax(0.0, x_of(w, t, u)) * w->wall[t * w->nu + u];
	return sum;
}

/* Whether phase P of M was read with the next one: its readings bound less than half its time, or
 * none. pdimond reads the counts as it takes in a phase's first call, a batch of the ring buffer
 * at a time, so a phase that began in the same batch as the next has no share of its own (meep,
 * issue 9: phases of 0.05 s between phases of 0.95 s, read within microseconds of the next).
 * That says nothing of the task's share there. */
static bool read_with_next(const struct pdi_model *m, uint32_t p)
{
	struct pdi_phase_usage u;
	uint64_t end;

	if (p >= m->nphases)
		return false;
	end = p + 1 < m->nphases ? m->phases[p + 1].t_start : m->phases[p].t_end;
	if (end <= m->phases[p].t_start)
		return false;
	return !pdi_model_phase_usage(m, p, &u) || 2 * u.wall_ns < end - m->phases[p].t_start;
}

/* The run (units, into RUN): the units in a row where one task got at most 1/PDI_STARVED_JOIN
 * of its peers' share, with one at most 1/PDI_STARVED_RATIO, that it fell furthest behind over (a
 * long interference outweighs a short one that peaked higher). A phase read with the next one
 * (read_with_next()) does not end the row: before, meep's interference of 6 s was cut in three
 * there and its last 2 s named, four phases late (cpu seed 400, issue 9, phase12); nor does a unit
 * where every task fell alike (fell_alike()). */
struct run {
	uint32_t onset, last, peak;
};

static bool best_run(struct pdi_starved_work *w, struct pdi_starved *s, struct run *ret)
{
	double join = log(PDI_STARVED_JOIN), best = 0;

	for (size_t t = 0; t < w->n; t++)
		for (uint32_t u = 0; u < w->nu;) {
			uint32_t q = u, top = u;
			double area;

			if (x_of(w, t, u) < join) {
				u++;
				continue;
			}
			for (uint32_t r = q + 1; r < w->nu; r++) {
				if (x_of(w, t, r) >= join)
					q = r;
				else if (!fell_alike(w, t, r) &&
					 (!isnan(w->log_share[t * w->nu + r]) || !read_with_next(w->models[t], w->phase[r])))
					break;
			}
			for (uint32_t r = u; r <= q; r++)
				if (x_of(w, t, r) > x_of(w, t, top))
					top = r;
			area = behind(w, t, u, q);
			if (x_of(w, t, top) >= log(PDI_STARVED_RATIO) && area > best) {
				best = area;
				s->task = t;
				*ret = (struct run){.onset = u, .last = q, .peak = top};
			}
			u = q + 1;
		}
	return best > 0;
}

/* Model T's median log share over the units looked at (0 when none); not its usual share
 * (w->usual: the best tenth, usual_of()). */
static double median_share(struct pdi_starved_work *w, size_t t)
{
	const double *ls = &w->log_share[t * w->nu];
	size_t k = 0;

	for (uint32_t u = 0; u < w->nu; u++)
		if (!isnan(ls[u]))
			w->scratch[k++] = ls[u];
	return pdi_median(w->scratch, k);
}

/* Whether the finding's task got at most 1/PDI_STARVED_ONSET of its usual share in unit U: of
 * the share it reached over the step (its best tenth), and of the share it got before U (the
 * median, by length: a short phase at a high share there is no usual). The second tells the
 * scheduler settling after a hog arrived (the share falls from what it was just before) from a
 * machine that was busier for everyone earlier on (GROMACS at load 17, issue 9: every rank got 5%
 * of a CPU for the first 8.4 s and 8-10% after the hog; by the step's usual alone, the start
 * moved back over all of them to the set-up, 6 phases early). */
static bool below_usual(struct pdi_starved_work *w, const struct pdi_starved *s, uint32_t u)
{
	double before = pdi_starved_by_length(w, s->task, w->log_share, 0.5, u); /* 0 (a share of 1): none known */

	return fmin(w->usual[s->task], before) - w->log_share[s->task * w->nu + u] >= log(PDI_STARVED_ONSET);
}

/* The run's start, earlier: where the interference begins, the scheduler takes a moment to
 * settle, and the task's peers may get as little as it does (campaign: for 0.5-4 s, every rank
 * near 0% while the victim's CPU was shared), and the unit it began in shows it in part. The
 * units before the run in which the task got at most 1/PDI_STARVED_ONSET of its own usual
 * share (below_usual), or of its peers' (beyond its usual ratio), belong to it: the second where
 * the phase it began in is a long one, which weighs in its usual (HPCC's 3.4 s set-up, issue 9:
 * 57% of its peers' share there, the hog's last second in it, then 5% for 5 s). */
static void onset_of(struct pdi_starved_work *w, struct pdi_starved *s, struct run *run)
{
	const double *ls = &w->log_share[s->task * w->nu];

	while (run->onset > 0 && !isnan(ls[run->onset - 1]) &&
	       (below_usual(w, s, run->onset - 1) || x_of(w, s->task, run->onset - 1) >= log(PDI_STARVED_ONSET)))
		run->onset--;
}

/* Whether the finding's task got at most 1/PDI_STARVED_JOIN of its own usual share (over the step
 * and before unit U) in the last PDI_STARVED_EDGE_S of the phase before U's, U the first unit of its
 * phase: an interference that began there, 20-180 ms before that phase's end, moves the phase's
 * share by a tenth or so, within the phases' spread, and the run was found from the next phase
 * (issue 9, phase12: five of the eight misses of seeds 400-501; usage13, meep cpu 911: 0.18 s
 * before the end of a 0.94 s phase, the victim at 0.107 of a CPU over it against 0.12 usually,
 * then every rank at 0.035 as the scheduler settled). Only where the readings around the window's
 * start are no further apart than it (pdimond's timer, every 50 ms; the kept models of an earlier
 * pdimond hold readings 0.25 s apart, a window of them is no finer than the slots). */
static bool fell_at_the_end(struct pdi_starved_work *w, const struct pdi_starved *s, uint32_t u)
{
	const struct pdi_model *m = w->models[s->task];
	uint64_t edge = (uint64_t)(PDI_STARVED_EDGE_S * 1e9), a, b;
	uint32_t p = w->phase[u];
	struct pdi_usage x, y;
	double ready, usual;
	size_t k, i = 0;

	if (!u || w->unit0[p] != u || p >= m->nphases || m->phases[p].usage.at_ns <= edge)
		return false;
	b = m->phases[p].usage.at_ns;
	a = b - edge;
	k = readings_of(w, m);
	while (i < k && w->readings[i].at_ns <= a)
		i++;
	if (!i || i == k || w->readings[i].at_ns - w->readings[i - 1].at_ns > edge)
		return false;
	x = pdi_usage_at(w->readings, k, a);
	y = pdi_usage_at(w->readings, k, b);
	ready = (double)(y.cpu_ns - x.cpu_ns) + (double)(y.wait_ns - x.wait_ns);
	if (ready < PDI_STARVED_READY * (double)edge)
		return false;
	usual = fmin(w->usual[s->task], pdi_starved_by_length(w, s->task, w->log_share, 0.5, u));
	return usual - log(fmax((double)(y.cpu_ns - x.cpu_ns) / ready, SHARE_FLOOR)) >= log(PDI_STARVED_JOIN);
}

/* How much more of the CPU each model got over the run (log, mean of the units known, each by
 * its length) than its median share, or than its peers beyond its usual ratio to them, whichever
 * is more: a rank that spins in its own code takes the CPU its neighbour goes without. By length,
 * since the run's start may have moved back over a phase of milliseconds before the spin
 * (GROMACS, issue 9: 28% of a CPU in 0.06 s, then 98% in 2.5 s; unweighted, the spinner's gain
 * fell under PDI_STARVED_TOOK and its victim was named instead). Against its peers too, since on
 * a machine loaded beyond its cores no rank gets much more than its usual share: HPCC at a load
 * of 15 (issue 9, spin11), a rank spinning 4.6 s kept its usual 14% of a CPU while its peers,
 * waiting for it, fell to 3-7%: 1.8 times their share, and the analysis named the neighbour it
 * starved. */
static void gains(struct pdi_starved_work *w, struct pdi_starved *s, const struct run *run)
{
	for (size_t t = 0; t < w->n; t++) {
		double median = median_share(w, t), sum = 0, above = 0, len = 0;

		for (uint32_t u = run->onset; u <= run->last; u++)
			if (!isnan(w->log_share[t * w->nu + u])) {
				sum += (w->log_share[t * w->nu + u] - median) * w->wall[t * w->nu + u];
				above -= x_of(w, t, u) * w->wall[t * w->nu + u];
				len += w->wall[t * w->nu + u];
			}
		s->gain[t] = len > 0 ? fmax(sum, above) / len : 0;
	}
}

/* The most any model fell behind in one phase outside the run's phases. */
static double other_behind(const struct pdi_starved_work *w, const struct pdi_starved *s)
{
	double most = 0;

	for (uint32_t p = s->first; p < s->end; p++)
		for (size_t t = 0; (p < s->onset || p > s->last) && w->unit0[p + 1] > w->unit0[p] && t < w->n; t++)
			most = fmax(most, behind(w, t, w->unit0[p], w->unit0[p + 1] - 1));
	return most;
}

/* Model T's share of its ready time on a CPU over the run's units (by their lengths); NAN when
 * it was ready in none (asleep in MPI: it competed for no CPU). */
static double run_share(const struct pdi_starved_work *w, size_t t, const struct run *run)
{
	double sum = 0, len = 0;

	for (uint32_t u = run->onset; u <= run->last; u++)
		if (!isnan(w->log_share[t * w->nu + u])) {
			sum += exp(w->log_share[t * w->nu + u]) * w->wall[t * w->nu + u];
			len += w->wall[t * w->nu + u];
		}
	return len > 0 ? sum / len : NAN;
}

/* Whether model TOP took the CPU by its share over the run (pdi_starved_took_cpu()): it had a
 * CPU to itself while every other ready task got at most 1/PDI_STARVED_OWN_OVER of its share, or
 * it got PDI_STARVED_TOOK_OVER times every other's share on a loaded node. At a low load the
 * waiting ranks busy-poll, so the spinner is on a CPU only 1.5-2.3 times as long as they are (GROMACS, meep, HPCC, issue 9, lead
 * at load 5: 4.71 s against 2.07 s), but it hardly ever waits for one (3-26% of its time, its
 * peers 50-95%); a process from outside the step leaves no rank of it that (the highest share
 * over the run in the same campaign's GROMACS and HPCC CPU interference: 35-37%), and on a node
 * with a core per rank every task but the victim has a CPU to itself, none alone. */
static bool took_by_share(const struct pdi_starved_work *w, size_t top, const struct run *run)
{
	double others = 0;

	for (size_t t = 0; t < w->n; t++) {
		double other = t == top ? NAN : run_share(w, t, run);

		if (!isnan(other))
			others = fmax(others, other);
	}
	return pdi_starved_took_cpu(run_share(w, top, run), others);
}

/* The second arm is the loaded one: on a node with several ready tasks per core no rank has a
 * CPU to itself, but a rank spinning in its own code still keeps what it gets while its peers,
 * polling in MPI for it, yield theirs (Open MPI yields while it polls on an oversubscribed node).
 * A process from outside the step lowers the share of the ranks beside it and raises none of the
 * step's to twice every other's (the kept campaigns' CPU and memory interference runs, re-analysed
 * with this arm, spin13: no verdict changed). HPCC at loads of 10-20 (issue 9, spin13): spinners
 * on a CPU 18%, 30% and 72% of the time they were ready, every other ready rank at most 7.6%, 11%
 * and 26% (2.4-2.8 times less), and the neighbour they took it from was named; GROMACS and NWChem
 * spinners at loads of 10-16: 50% and 60% against 12-13%. */
bool pdi_starved_took_cpu(double share, double others)
{
	return !isnan(share) && ((share >= PDI_STARVED_OWN_CPU && others * PDI_STARVED_OWN_OVER <= share) ||
				 (others > 0 && others * PDI_STARVED_TOOK_OVER <= share));
}

/* Whether one task of the step took the CPU the finding's task went without (starved.h: taken):
 * a rank spinning in its own code keeps the CPU while its peers, waiting for it in MPI, yield
 * theirs (Open MPI yields while it polls on an oversubscribed node) or wait behind it. Such a
 * rank is on a CPU several times as long as any peer over the run, or has a CPU to itself at a
 * low load, where they poll without yielding, or twice every other's share of it on a loaded node
 * (took_by_share()); a process interfering from outside the step takes the CPU from the ranks
 * beside it without any rank of the step gaining
 * (HPCC at a load of 13, issue 9, spin11: the spinner 0.70 s on a CPU in a 3.5 s phase, its
 * peers 0.07-0.17 s, and ranks 0 and 3 were named as not getting CPU). */
static void taker_of(const struct pdi_starved_work *w, struct pdi_starved *s, const struct run *run)
{
	double *cpu = w->scratch, next = 0; /* each model's time on a CPU over the run's phases (s) */
	size_t top = 0;

	for (size_t t = 0; t < w->n; t++) {
		struct pdi_phase_usage u;

		cpu[t] = 0;
		for (uint32_t p = s->onset; p <= s->last; p++) {
			if (!pdi_model_phase_usage(w->models[t], p, &u))
				return; /* a task not known there may have had the CPU */
			cpu[t] += (double)u.cpu_ns / 1e9;
		}
	}
	/* only the model on a CPU longest can be PDI_STARVED_RATIO times as long as every other */
	for (size_t t = 1; t < w->n; t++)
		if (cpu[t] > cpu[top])
			top = t;
	for (size_t t = 0; t < w->n; t++)
		if (t != top)
			next = fmax(next, cpu[t]);
	if (cpu[top] > 0 && (cpu[top] >= PDI_STARVED_RATIO * next || took_by_share(w, top, run)) &&
	    !pdi_starved_named(s, top) && weight(w, top) == 1 && s->gain[top] >= log(PDI_STARVED_TOOK)) {
		s->taken = true;
		s->taker = top;
		s->taker_cpu_s = cpu[top];
		s->next_cpu_s = next;
	}
}

/* Model T's mean log ratio over units [FROM, TO], by their lengths (-INFINITY: no length). */
static double mean_x(const struct pdi_starved_work *w, size_t t, uint32_t from, uint32_t to)
{
	double sum = 0, len = 0;

	for (uint32_t u = from; u <= to; u++) {
		sum += x_of(w, t, u) * w->wall[t * w->nu + u];
		len += w->wall[t * w->nu + u];
	}
	return len > 0 ? sum / len : -INFINITY;
}

/* The run's strength as a whole: the task's mean log ratio over it above the highest mean any
 * task reached over as many units in a row elsewhere, in robust sds (0 with fewer than
 * PDI_STARVED_NOISE_UNITS such rows). A long interference is judged as long as it was, not only
 * by its sharpest slot against the sharpest slot anywhere else: NWChem's slots are noisy, one
 * task's now and then at a third to a sixth of its peers' share, and a hog pinned with one rank
 * for 6 s (interf14, cpu seeds 930 and 931: the rank at a tenth of its peers' share for 6 s)
 * stood 7.3 robust sds above them by its peak, under the verdict's 8. */
static double run_z(struct pdi_starved_work *w, const struct pdi_starved *s, const struct run *run)
{
	uint32_t k = run->last - run->onset + 1;

	if (w->nu < k + PDI_STARVED_NOISE_UNITS)
		return 0;
	for (uint32_t u = 0; u + k <= w->nu; u++)
		w->scratch[u] = -INFINITY;
	for (size_t t = 0; t < w->n; t++) /* each row's highest mean */
		pdi_starved_rows_max(&w->x[t * w->nu], &w->wall[t * w->nu], w->nu, k, w->scratch);
	return pdi_starved_rows_z(w->scratch, w->nu, run->onset, run->last, mean_x(w, s->task, run->onset, run->last));
}

void pdi_starved_rows_max(const double *x, const double *wall, uint32_t nu, uint32_t k, double *best)
{
	double sum = 0, len = 0;

	for (uint32_t u = 0; u < nu; u++) { /* a sliding sum */
		sum += x[u] * wall[u];
		len += wall[u];
		if (u >= k) {
			sum -= x[u - k] * wall[u - k];
			len -= wall[u - k];
		}
		if (u + 1 >= k && len > 0)
			best[u + 1 - k] = fmax(best[u + 1 - k], sum / len);
	}
}

double pdi_starved_rows_z(double *best, uint32_t nu, uint32_t onset, uint32_t last, double mean)
{
	uint32_t k = last - onset + 1, rows;
	double median;
	size_t m = 0;

	if (nu < k + PDI_STARVED_NOISE_UNITS)
		return 0;
	rows = nu - k + 1;
	for (uint32_t u = 0; u < rows; u++) /* the rows outside the run (m <= u: in place) */
		if ((u + k <= onset || u > last) && isfinite(best[u]))
			best[m++] = best[u];
	if (m < PDI_STARVED_NOISE_UNITS)
		return 0;
	median = pdi_median(best, m);
	return (mean - median) / pdi_robust_sd(best, m, median, PDI_STARVED_NOISE_FLOOR);
}

/* The run, the tasks beside it and how far it stands above the step's noise. */
static void find(struct pdi_starved_work *w, struct pdi_starved *s)
{
	double peak, median, next = 0, run_s = 0;
	struct run run = {0};
	size_t k = 0, i;

	if (!best_run(w, s, &run))
		return;
	/* the run itself lasts a stall's worth: its start moved back over units where every rank
	 * got less (onset_of) does not make a blip of 0.1 s a finding (HPCC, issue 9: a phase of
	 * 0.11 s at a quarter of the one ready peer's share, after 4.8 s of a machine busier for all) */
	for (uint32_t u = run.onset; u <= run.last; u++)
		run_s += w->wall[s->task * w->nu + u];
	if (run_s < PDI_STARVED_MIN_S)
		return;
	onset_of(w, s, &run);
	if (fell_at_the_end(w, s, run.onset))
		run.onset--;
	peak = x_of(w, s->task, run.peak);
	s->ratio = exp(peak);
	for (uint32_t u = run.onset; u <= run.last; u++) {
		s->run_s += w->wall[s->task * w->nu + u];
		s->wait_s += w->wait[s->task * w->nu + u];
	}
	s->onset = w->phase[run.onset];
	s->last = w->phase[run.last];
	s->peak = w->phase[run.peak];
	s->found = true;
	for (size_t t = 0; t < w->n; t++)
		s->window[t] = behind(w, t, run.onset, run.last);
	gains(w, s, &run);
	i = s->task * w->nu + run.peak;
	s->wait_share = w->wall[i] > 0 ? w->wait[i] / w->wall[i] : 0;
	for (size_t t = 0; t < w->n; t++) {
		if (t != s->task && w->wall[t * w->nu + run.peak] > 0)
			w->scratch[k++] = w->wait[t * w->nu + run.peak] / w->wall[t * w->nu + run.peak];
		if (!pdi_starved_named(s, t))
			next = fmax(next, s->window[t]);
	}
	s->peers_wait_share = pdi_median(w->scratch, k);
	s->task_margin = next > 0 ? s->window[s->task] / next : 1e9;
	s->other_behind = other_behind(w, s);
	/* the noise: the other units' largest ratios, or with few units the other tasks' */
	k = 0;
	if (w->nu >= PDI_STARVED_NOISE_UNITS) {
		for (uint32_t u = 0; u < w->nu; u++) {
			double top = 0;

			if (u >= run.onset && u <= run.last)
				continue;
			for (size_t t = 0; t < w->n; t++)
				top = fmax(top, x_of(w, t, u));
			s->other_phase = fmax(s->other_phase, top);
			w->scratch[k++] = top;
		}
	} else {
		for (size_t t = 0; t < w->n; t++)
			if (t != s->task)
				w->scratch[k++] = fmax(0.0, x_of(w, t, run.peak));
	}
	median = pdi_median(w->scratch, k);
	s->z = (peak - median) / pdi_robust_sd(w->scratch, k, median, PDI_STARVED_NOISE_FLOOR);
	s->z = fmax(s->z, run_z(w, s, &run));
	taker_of(w, s, &run);
}

int pdi_starved_find(const struct pdi_model *const *models, const uint32_t *weights, size_t n, uint32_t first,
		     uint32_t end, struct pdi_starved *ret)
{
	struct pdi_starved s = {.n = n, .first = first, .end = end};
	struct pdi_starved_work w = {.models = models, .weights = weights, .n = n};
	size_t most = 0;
	int r = -ENOMEM;

	for (size_t t = 0; t < n; t++) {
		if (models[t]->nphases > w.np)
			w.np = models[t]->nphases;
		if (models[t]->nphases + models[t]->usage_log.n > most)
			most = models[t]->nphases + models[t]->usage_log.n;
	}
	if (!n || first >= end || end > w.np)
		return -EINVAL;
	s.nphases = w.np;
	s.x = calloc(n * w.np, sizeof(*s.x));
	s.window = calloc(n, sizeof(*s.window));
	s.gain = calloc(n, sizeof(*s.gain));
	if (!s.x || !s.window || !s.gain || units_of(&w, first, end) < 0)
		goto out;
	w.log_share = malloc(n * w.nu * sizeof(*w.log_share));
	w.wall = malloc(n * w.nu * sizeof(*w.wall));
	w.wait = malloc(n * w.nu * sizeof(*w.wait));
	w.x = malloc(n * w.nu * sizeof(*w.x));
	w.cpu = malloc(n * w.nu * sizeof(*w.cpu));
	w.group = malloc(n * w.nu * sizeof(*w.group));
	w.readings = malloc((most + 1) * sizeof(*w.readings));
	w.peers = malloc(n * sizeof(*w.peers));
	w.byunit = malloc(w.nu * sizeof(*w.byunit));
	w.scratch = malloc((n > w.nu ? n : w.nu) * sizeof(*w.scratch));
	w.usual = malloc(n * sizeof(*w.usual));
	if (!w.log_share || !w.wall || !w.wait || !w.x || !w.cpu || !w.group || !w.readings || !w.peers || !w.byunit ||
	    !w.scratch || !w.usual)
		goto out;
	if (read_shares(&w) && (s.has_usage = ratios(&w, &s))) {
		for (size_t t = 0; t < n; t++)
			w.usual[t] = usual_of(&w, t);
		find(&w, &s);
		if ((r = pdi_alike_find(&w, &s.alike)) < 0)
			goto out;
	}
	*ret = s;
	s = (struct pdi_starved){0};
	r = 0;
out:
	free(w.phase);
	free(w.unit0);
	free(w.log_share);
	free(w.wall);
	free(w.wait);
	free(w.x);
	free(w.cpu);
	free(w.group);
	free(w.readings);
	free(w.peers);
	free(w.byunit);
	free(w.scratch);
	free(w.usual);
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
	if (s->taken) {
		if (s->last > s->onset)
			snprintf(where, sizeof(where), "phases %u to %u", s->onset, s->last);
		else
			snprintf(where, sizeof(where), "phase %u", s->onset);
		snprintf(buf, len, "on a CPU %.2f s over %s, its peers %.2f s at most: it took the CPU they waited for",
			 s->taker_cpu_s, where, s->next_cpu_s);
		return;
	}
	if (s->last > s->onset)
		snprintf(where, sizeof(where), "from phase %u to %u (%.1f s)", s->onset, s->last, s->run_s);
	else
		snprintf(where, sizeof(where), "in phase %u (%.1f s)", s->onset, s->run_s);
	if (k >= 2 && k <= 10)
		snprintf(share, sizeof(share), "%s", parts[k]);
	else
		snprintf(share, sizeof(share), "1/%.0f", s->ratio);
	snprintf(buf, len,
		 "waited %.1f s for a CPU %s, at worst %.0f%% of the time in phase %u (its peers %.0f%%): %s of their "
		 "share of the CPU",
		 s->wait_s, where, 100 * s->wait_share, s->peak, 100 * s->peers_wait_share, share);
}

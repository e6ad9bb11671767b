/* SPDX-License-Identifier: GPL-2.0-only */
/* health.c -- the judge of a live step: ok, slow or hung, from its tasks' progress, their
 * states' durations and its own record (health.h; doc/design/hang-detection.md). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "health.h"
#include "wire.h"

const char *const pdi_health_names[] = {"ok", "slow", "hung"};
const char *const pdi_motion_names[] = {"waiting", "computing", "idle", "stopped", "traced", "starting", "finished"};

const struct pdi_health_params pdi_health_params_default = {
	.quiet = {.rate_per_hour = 1e-4, .resolution_s = 1.0, .prior_scale_s = 1.25, .longest_factor = 1.5},
	.novel_prior_scale_s = 2.5,
	.rate = {.window_s = 5, .factor = 4, .recover = 2, .min_windows = 12},
	.floor_s = 0,
	.state_min_visits = 3,
	.stall_factor = 5,
};

/* Whether state KEY of a phase is the one asked for. */
static bool state_matches(uint64_t key, uint64_t want)
{
	if (pdi_state_is_comp(want) && pdi_state_site(want) == PDI_SITE_MAX)
		return pdi_state_is_comp(key) && pdi_state_prev_site(key) == pdi_state_prev_site(want);
	return key == want;
}

void pdi_state_durations_of(const struct pdi_model *const *models, unsigned n, uint64_t key,
			    struct pdi_state_durations *ret)
{
	struct pdi_gauss g = {0};
	double longest = 0;

	for (unsigned i = 0; i < n && i < PDI_HEALTH_POOL; i++) {
		const struct pdi_model *m = models[i];

		for (uint32_t ph = 0; m && ph < m->nphases; ph++) {
			const struct pdi_phase *p = &m->phases[ph];

			for (uint32_t e = 0; e < p->nedges; e++) {
				const struct pdi_edge *edge = &p->edges[e];

				if (!state_matches(p->states[edge->from].key, key))
					continue;
				pdi_gauss_merge(&g, &edge->time);
				for (unsigned b = 0; b < edge->hist.n; b++)
					if (edge->hist.mean[b] > longest)
						longest = edge->hist.mean[b];
			}
		}
	}
	if (g.mean > longest)
		longest = g.mean;
	*ret = (struct pdi_state_durations){.n = g.n, .mean_s = g.mean / 1e9, .sd_s = pdi_gauss_stddev(&g) / 1e9,
					    .longest_s = longest / 1e9};
}

void pdi_health_init(struct pdi_health_judge *h, const struct pdi_health_params *p)
{
	*h = (struct pdi_health_judge){.params = *p};
}

void pdi_health_record_merge(struct pdi_health_record *into, const struct pdi_health_record *from)
{
	for (unsigned k = 0; k < PDI_QUIET_KINDS; k++)
		pdi_quiet_record_merge(&into->kind[k], &from->kind[k]);
}

int pdi_health_record_encode(const struct pdi_health_record *r, struct pdi_wire_writer *w)
{
	for (unsigned k = 0; k < PDI_QUIET_KINDS; k++) {
		struct pdi_wire_writer one = {0};

		if (pdi_quiet_record_encode(&r->kind[k], &one) == 0)
			pdi_wire_put_bytes(w, one.buf, (uint32_t)one.len);
		else
			w->err = one.err;
		pdi_wire_writer_done(&one);
	}
	return w->err;
}

int pdi_health_record_decode(const void *p, size_t len, struct pdi_health_record *ret)
{
	struct pdi_health_record h;
	struct pdi_wire_reader r;

	pdi_wire_reader_init(&r, p, len);
	for (unsigned k = 0; k < PDI_QUIET_KINDS; k++) {
		uint32_t n;
		const uint8_t *b = pdi_wire_get_bytes(&r, &n);

		if (!b || pdi_quiet_record_decode(b, n, &h.kind[k]) < 0)
			return -EBADMSG;
	}
	if (pdi_wire_reader_finish(&r) < 0)
		return -EBADMSG;
	*ret = h;
	return 0;
}

void pdi_health_set_history(struct pdi_health_judge *h, const struct pdi_health_record *history)
{
	h->history = history ? *history : (struct pdi_health_record){0};
}

void pdi_health_record(const struct pdi_health_judge *h, struct pdi_health_record *ret)
{
	*ret = h->history;
	pdi_health_record_merge(ret, &h->run);
}

double pdi_state_horizon(const struct pdi_state_durations *d, double observed_s, const struct pdi_health_params *p)
{
	double scale, hours, visits_per_hour, horizon;

	if ((double)d->n < p->state_min_visits || !(d->mean_s >= 0) || !isfinite(d->mean_s))
		return 0;
	/* the state's own spread, at least a tenth of its mean, widened while it has few visits */
	scale = d->sd_s > 0.1 * d->mean_s ? d->sd_s : 0.1 * d->mean_s;
	scale *= 1 + 2 / sqrt((double)d->n);
	/* how often it is visited, at a 95% upper bound: every visit is a chance to be long */
	hours = (observed_s > p->quiet.resolution_s ? observed_s : p->quiet.resolution_s) / 3600;
	visits_per_hour = pdi_chi2_quantile_even(d->n > 1000000 ? 1000000 : (unsigned)d->n + 1, 0.95) / (2 * hours);
	horizon = d->mean_s;
	if (visits_per_hour > p->quiet.rate_per_hour)
		horizon += scale * log(visits_per_hour / p->quiet.rate_per_hour);
	if (horizon < p->quiet.longest_factor * d->longest_s)
		horizon = p->quiet.longest_factor * d->longest_s;
	return horizon;
}

/* How much a task that does this looks like the one the others wait for: a stopped task
 * most, then one asleep outside MPI, one computing, one in a debugger, one waiting in MPI. */
static int suspicion(enum pdi_motion m)
{
	switch (m) {
	case PDI_MOTION_STOPPED: return 5;
	case PDI_MOTION_IDLE: return 4;
	case PDI_MOTION_COMPUTING: return 3;
	case PDI_MOTION_STARTING: return 2;
	case PDI_MOTION_TRACED: return 1;
	default: return 0;
	}
}

/* The index of the task most behind: the most suspicious (above), the longest idle among
 * those; -1 when every task has finished. */
static int critical_task(const struct pdi_health_task *tasks, unsigned n)
{
	int best = -1;

	for (unsigned i = 0; i < n; i++) {
		const struct pdi_health_task *t = &tasks[i];

		if (t->motion == PDI_MOTION_FINISHED)
			continue;
		if (best < 0 || suspicion(t->motion) > suspicion(tasks[best].motion) ||
		    (suspicion(t->motion) == suspicion(tasks[best].motion) && t->idle_s > tasks[best].idle_s))
			best = (int)i;
	}
	return best;
}

static double clean(double x)
{
	return isfinite(x) && x > 0 ? x : 0;
}

/* The quiet Q of TASKS (PAUSED seconds of it not counted) judged with H's record and
 * parameters into V: its kind, the threshold, p, the task most behind, and whether a task's
 * state explains it. H is not changed. */
static enum pdi_quiet_kind judge_quiet(const struct pdi_health_judge *h, const struct pdi_health_task *tasks,
				       unsigned n, double q, double paused, struct pdi_health_verdict *v,
				       bool *ret_explained)
{
	const struct pdi_health_params *p = &h->params;
	enum pdi_quiet_kind kind = PDI_QUIET_SETTLED;
	struct pdi_health_record all;
	struct pdi_quiet_threshold thr;
	struct pdi_quiet_params qp;
	double q_eff = q > paused ? q - paused : 0;

	*ret_explained = false;
	pdi_health_record(h, &all);
	/* per task, how long its state may still legitimately last: one outside MPI never seen
	 * to end, or known to last this long, makes the quiet open */
	for (unsigned i = 0; i < n; i++) {
		const struct pdi_health_task *t = &tasks[i];
		double horizon, idle = clean(t->idle_s) - paused;

		if (t->motion != PDI_MOTION_WAITING && t->motion != PDI_MOTION_COMPUTING && t->motion != PDI_MOTION_IDLE)
			continue;
		/* a task whose state is known to last this long explains the quiet */
		horizon = pdi_state_horizon(&t->state, all.kind[0].observed_s, p);
		if (idle < horizon)
			*ret_explained = true;
		if (t->motion != PDI_MOTION_WAITING && ((double)t->state.n < p->state_min_visits || idle < horizon))
			kind = PDI_QUIET_OPEN;
	}
	/* two kinds of quiet, each held to half the rate, with their own records and priors */
	qp = p->quiet;
	qp.rate_per_hour /= PDI_QUIET_KINDS;
	if (kind == PDI_QUIET_OPEN)
		qp.prior_scale_s = p->novel_prior_scale_s;
	pdi_quiet_threshold(&all.kind[kind], &qp, &thr);
	v->threshold_s = thr.quiet_s > p->floor_s ? thr.quiet_s : p->floor_s;
	v->quiet_s = q_eff;
	v->p = pdi_quiet_p(&thr, q_eff);
	v->critical = critical_task(tasks, n);
	return kind;
}

void pdi_health_judge_tasks(const struct pdi_health_judge *h, const struct pdi_health_task *tasks, unsigned n,
			    struct pdi_health_verdict *ret)
{
	struct pdi_health_verdict v = {.health = PDI_HEALTH_OK, .critical = -1, .unjudged_task = -1, .p = 1};
	double q = INFINITY;
	bool explained;

	for (unsigned i = 0; i < n; i++)
		if (tasks[i].motion != PDI_MOTION_FINISHED && clean(tasks[i].idle_s) < q)
			q = clean(tasks[i].idle_s);
	if (isfinite(q)) {
		(void)judge_quiet(h, tasks, n, q, 0, &v, &explained);
		if (v.quiet_s >= v.threshold_s && !explained)
			v.health = PDI_HEALTH_HUNG;
	}
	*ret = v;
}

/* The episode of quiet that was going on ended (some task made progress): its length, at
 * most what was seen of it, joins the healthy record unless a stopped or traced task or a
 * stall of the daemon made it. */
static void episode_ended(struct pdi_health_judge *h, double seen_s, double length_s)
{
	length_s -= h->paused_s;
	/* one seen at a tick to last the resolution at least: shorter ones are the busy step's
	 * ordinary gaps, made long only by the tick's own length */
	if (!h->episode_tainted && seen_s - h->paused_s >= h->params.quiet.resolution_s)
		pdi_quiet_record_add(&h->run.kind[h->episode_kind], length_s);
	h->paused_s = 0;
	h->episode_tainted = false;
}

void pdi_health_tick(struct pdi_health_judge *h, const struct pdi_health_input *in, struct pdi_health_verdict *ret)
{
	const struct pdi_health_params *p = &h->params;
	struct pdi_health_verdict v = {.health = h->announced, .since_s = h->announced_since_s, .critical = -1,
				       .unjudged_task = -1, .p = 1};
	unsigned active = 0, stopped = 0, traced = 0, starting = 0, blind = 0;
	double q = INFINITY, dt = 0, starting_idle = 0;
	uint64_t progress = 0;
	bool first = h->last_now_s == 0, stalled = false, explained;

	if (!first) {
		dt = in->now_s - h->last_now_s;
		/* the daemon did not run (or the clock it was given went back): not counted */
		stalled = !(dt >= 0) || dt > p->stall_factor * p->quiet.resolution_s;
		if (!(dt >= 0))
			dt = 0;
	}
	h->last_now_s = in->now_s;
	if (in->progress >= h->last_progress && !first)
		progress = in->progress - h->last_progress;
	h->last_progress = in->progress;

	for (unsigned i = 0; i < in->ntasks; i++) {
		const struct pdi_health_task *t = &in->tasks[i];
		double idle = clean(t->idle_s);

		if (t->motion == PDI_MOTION_FINISHED)
			continue;
		active++;
		if (idle < q)
			q = idle;
		if (t->motion == PDI_MOTION_STOPPED)
			stopped++;
		if (t->motion == PDI_MOTION_TRACED) {
			traced++;
			if (v.unjudged_task < 0)
				v.unjudged_task = (int)i;
		}
		if (t->blind && t->motion != PDI_MOTION_FINISHED) {
			blind++;
			if (v.unjudged_task < 0)
				v.unjudged_task = (int)i;
		}
		if (t->motion == PDI_MOTION_STARTING) {
			starting++;
			if (idle > starting_idle)
				starting_idle = idle;
		}
	}
	if (!active) {
		/* nothing left to wait for here: what ran has finished */
		h->last_quiet_s = 0;
		h->paused_s = 0;
		h->episode_tainted = false;
		v.health = PDI_HEALTH_OK;
		v.since_s = in->now_s;
		*ret = v;
		return;
	}

	/* progress since the last tick ends the quiet episode that was going on */
	if (!first && (progress > 0 || q + 0.25 * p->quiet.resolution_s < h->last_quiet_s + dt))
		episode_ended(h, h->last_quiet_s, h->last_quiet_s + dt - q);
	if (stalled) {
		h->paused_s += dt;
		v.unjudged |= PDI_UNJUDGED_STALLED;
		pdi_rate_break(&h->rate);
	}
	h->last_quiet_s = q;
	if (stopped || traced || blind)
		h->episode_tainted = true;
	h->episode_kind = judge_quiet(h, in->tasks, in->ntasks, q, h->paused_s, &v, &explained);

	if (traced)
		v.unjudged |= PDI_UNJUDGED_TRACED;
	if (blind)
		v.unjudged |= PDI_UNJUDGED_BLIND;
	if (stopped == active)
		v.unjudged |= PDI_UNJUDGED_SUSPENDED;
	if (starting && starting_idle >= v.threshold_s) {
		v.unjudged |= PDI_UNJUDGED_STARTING;
		if (v.unjudged_task < 0)
			for (unsigned i = 0; i < in->ntasks && v.unjudged_task < 0; i++)
				if (in->tasks[i].motion == PDI_MOTION_STARTING)
					v.unjudged_task = (int)i;
	}
	v.unjudged_new = v.unjudged & ~h->said & ~(unsigned)PDI_UNJUDGED_STALLED;
	h->said |= v.unjudged_new;
	if (traced || blind || stopped == active || starting || stalled) {
		/* not judged: the announced verdict stands (a debugger, a suspension, a start or
		 * unseen calls prove nothing either way) */
		if (starting || traced || blind)
			pdi_rate_break(&h->rate);
		*ret = v;
		return;
	}
	for (unsigned k = 0; k < PDI_QUIET_KINDS && h->announced != PDI_HEALTH_HUNG; k++)
		h->run.kind[k].observed_s += dt;

	(void)pdi_rate_add(&h->rate, &p->rate, p->quiet.rate_per_hour, dt, progress);
	v.rate_ratio = h->rate.ratio;

	if (v.quiet_s >= v.threshold_s && !explained)
		v.health = PDI_HEALTH_HUNG;
	else if (h->rate.slow && v.quiet_s < v.threshold_s)
		v.health = PDI_HEALTH_SLOW;
	else
		v.health = PDI_HEALTH_OK;
	if (v.health == h->announced)
		v.since_s = h->announced_since_s;
	else if (v.health == PDI_HEALTH_HUNG)
		v.since_s = in->now_s - q;
	else if (v.health == PDI_HEALTH_SLOW)
		v.since_s = in->now_s - p->rate.window_s * h->rate.low_run;
	else
		v.since_s = in->now_s;
	*ret = v;
}

bool pdi_health_news(const struct pdi_health_judge *h, const struct pdi_health_verdict *v)
{
	return v->health != h->announced;
}

void pdi_health_commit(struct pdi_health_judge *h, const struct pdi_health_verdict *v)
{
	h->announced = v->health;
	h->announced_since_s = v->since_s;
}

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

/* The index of the task most behind: the longest idle outside MPI, else the longest idle. */
static int critical_task(const struct pdi_health_input *in)
{
	int best = -1, best_waiting = -1;

	for (unsigned i = 0; i < in->ntasks; i++) {
		const struct pdi_health_task *t = &in->tasks[i];

		if (t->motion == PDI_MOTION_FINISHED)
			continue;
		if (t->motion == PDI_MOTION_WAITING) {
			if (best_waiting < 0 || t->idle_s > in->tasks[best_waiting].idle_s)
				best_waiting = (int)i;
		} else if (best < 0 || t->idle_s > in->tasks[best].idle_s) {
			best = (int)i;
		}
	}
	return best >= 0 ? best : best_waiting;
}

static double clean(double x)
{
	return isfinite(x) && x > 0 ? x : 0;
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
	double q = INFINITY, dt = 0, q_eff, starting_idle = 0;
	uint64_t progress = 0;
	struct pdi_health_record all;
	struct pdi_quiet_threshold thr;
	struct pdi_quiet_params qp;
	enum pdi_quiet_kind kind;
	bool first = h->last_now_s == 0, stalled = false, explained = false;

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
	q_eff = q > h->paused_s ? q - h->paused_s : 0;

	/* per task outside MPI, how long its state may still legitimately last: one never seen
	 * to end, or known to last this long, makes the quiet open */
	kind = PDI_QUIET_SETTLED;
	pdi_health_record(h, &all);
	for (unsigned i = 0; i < in->ntasks; i++) {
		const struct pdi_health_task *t = &in->tasks[i];
		double horizon, idle = clean(t->idle_s) - h->paused_s;

		if (t->motion != PDI_MOTION_WAITING && t->motion != PDI_MOTION_COMPUTING && t->motion != PDI_MOTION_IDLE)
			continue;
		/* a task whose state is known to last this long explains the quiet */
		horizon = pdi_state_horizon(&t->state, all.kind[0].observed_s, p);
		if (idle < horizon)
			explained = true;
		if (t->motion != PDI_MOTION_WAITING && ((double)t->state.n < p->state_min_visits || idle < horizon))
			kind = PDI_QUIET_OPEN;
	}
	h->episode_kind = kind;
	qp = p->quiet;
	qp.rate_per_hour /= PDI_QUIET_KINDS;
	if (kind == PDI_QUIET_OPEN)
		qp.prior_scale_s = p->novel_prior_scale_s;
	pdi_quiet_threshold(&all.kind[kind], &qp, &thr);
	v.threshold_s = thr.quiet_s > p->floor_s ? thr.quiet_s : p->floor_s;
	v.quiet_s = q_eff;
	v.p = pdi_quiet_p(&thr, q_eff);
	v.critical = critical_task(in);

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

	if (q_eff >= v.threshold_s && !explained)
		v.health = PDI_HEALTH_HUNG;
	else if (h->rate.slow && q_eff < v.threshold_s)
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

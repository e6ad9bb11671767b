/* SPDX-License-Identifier: GPL-2.0-only */
/* step_health.c -- the live steps judged once a second, and what pdimond does when one of
 * them hangs, slows down or moves again (step_health.h); what it keeps of each is its state
 * (health_state.h), which its ways out (actions, notify, history, metrics) report back to. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actions.h"
#include "budget.h"
#include "daemon.h"
#include "hang.h"
#include "health_state.h"
#include "history.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "mpi_funcs.h"
#include "notify.h"
#include "progress.h"
#include "ranges.h"
#include "report.h"
#include "stack_look.h"
#include "step_health.h"

#define NS 1000000000ull
/* durations pooled for at most this many distinct states a tick; others go unexplained */
#define MAX_KEYS 8
/* a hang waits this long at most for the stacks of still tasks its thinned probes show
 * computing (a walk gives up after PDI_STACK_WALK_TIMEOUT_MS) before it is told without them */
#define LOOK_WAIT_NS (3 * NS)

static void clock_text(time_t t, char *buf, size_t len);
static enum pdi_on_hang on_hang_of(const struct pdi_daemon *d, const struct pdi_step *s);
static bool notify_of(const struct pdi_daemon *d, const struct pdi_step *s);
static void history_loaded(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_health_record *history,
			   const struct pdi_health_saved *own, unsigned runs);

/* The judge's parameters from the daemon's settings. */
static struct pdi_health_params params_of(const struct pdi_config *c)
{
	struct pdi_health_params p = pdi_health_params_default;

	p.quiet.rate_per_hour = c->hang_false_alarm_rate;
	p.floor_s = c->hang_timeout_ms / 1000.0;
	return p;
}

static struct pdi_step_health *health_of(struct pdi_daemon *d, struct pdi_step *s)
{
	struct pdi_health_params p;
	bool rerun = false;

	/* a step that ended and runs again under its name (pdimon run --step NAME) is a new
	 * run: judged afresh, its earlier run now part of its program's history */
	if (s->health && s->health->saved_end) {
		pdi_step_health_free(s->health);
		s->health = NULL;
		rerun = true;
	}
	if (s->health)
		return s->health;
	s->health = calloc(1, sizeof(*s->health));
	if (!s->health)
		return NULL;
	p = params_of(&d->cfg);
	pdi_health_init(&s->health->judge, &p);
	s->health->rerun = rerun;
	pdi_hang_history_load(d, s, history_loaded);
	return s->health;
}

/* Room for N tasks in H's arrays; the progress array keeps what it knew. */
static int reserve(struct pdi_step_health *h, unsigned n)
{
	if (n > h->nprogress) {
		struct pdi_task_progress *p = realloc(h->progress, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		memset(p + h->nprogress, 0, (n - h->nprogress) * sizeof(*p));
		h->progress = p;
		h->nprogress = n;
	}
	if (n > h->cap) {
		struct pdi_health_task *in = realloc(h->in, n * sizeof(*in));
		uint64_t *keys = in ? realloc(h->keys, n * sizeof(*keys)) : NULL;
		const struct pdi_model **models = keys ? realloc(h->models, n * sizeof(*models)) : NULL;
		unsigned *index = models ? realloc(h->index, n * sizeof(*index)) : NULL;

		if (in)
			h->in = in;
		if (keys)
			h->keys = keys;
		if (models)
			h->models = models;
		if (!index)
			return -ENOMEM;
		h->index = index;
		h->cap = n;
	}
	return 0;
}

/* The store's answer for S (a pdi_hang_loaded_fn, history.h): S is judged from then on, and
 * what a pdimond before this one announced of it stands. */
static void history_loaded(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_health_record *history,
			   const struct pdi_health_saved *own, unsigned runs)
{
	struct pdi_step_health *h = s->health;

	if (!h || h->ready)
		return;
	h->ready = true;
	pdi_health_set_history(&h->judge, history);
	if (runs)
		log_debug("Step %s: hang thresholds from %u earlier run%s of %s", s->name, runs, runs == 1 ? "" : "s",
			  s->executable);
	if (!own || h->rerun)
		return;
	/* a pdimond before this one judged it: what it announced stands (no second alarm) */
	h->judge.run = own->run;
	h->judge.announced = own->health;
	h->since = own->health == PDI_HEALTH_OK ? 0 : own->since;
	h->judge.announced_since_s = d->hang.clock_s - difftime(time(NULL), h->since);
	h->first_hung = own->first_hung;
	h->cancelled = own->cancelled;
	if (own->health != PDI_HEALTH_OK) {
		char at[16];

		clock_text(h->since, at, sizeof(at));
		log_info("Step %s: looked %s since %s before pdimond restarted; not announced again", s->name,
			 pdi_health_names[own->health], at);
		pdi_step_health_log_action(h, "restored", "looked %s since %s before pdimond restarted", pdi_health_names[own->health], at);
		if (own->health == PDI_HEALTH_HUNG && on_hang_of(d, s) == PDI_ON_HANG_CANCEL && !h->cancelled)
			h->cancel_at_ns = pdi_now_ns() + (uint64_t)d->cfg.on_hang_grace_s * NS;
	}
}

/* The MPI function task I of this tick's input waits in by its stack (stack_look.h), "" when
 * its probes placed it. */
static const char *stack_fn(const struct pdi_step *s, const struct pdi_step_health *h, unsigned i)
{
	const struct pdi_task_progress *p = &h->progress[h->index[i]];

	return h->in[i].motion == PDI_MOTION_WAITING && h->keys[i] == UINT64_MAX &&
			       pdi_task_progress_in_call_by_stack(p, s->tasks[h->index[i]]->model.calls)
		       ? p->look_fn
		       : "";
}

/* Where task I of this tick's input is, in words: "computing after MPI_Waitall@solver.c:212". */
static void doing(const struct pdi_step *s, const struct pdi_step_health *h, unsigned i, char *buf, size_t len)
{
	const struct pdi_health_task *t = &h->in[i];
	uint64_t key = h->keys[i];
	const char *site = "?";
	char stacked[96];

	if (key != UINT64_MAX) {
		uint32_t x = pdi_state_is_comp(key) ? pdi_state_prev_site(key) : pdi_state_site(key);

		if (x < s->nsites && s->sites[x].name)
			site = s->sites[x].name;
	}
	if (stack_fn(s, h, i)[0]) {
		snprintf(stacked, sizeof(stacked), "%s (on its stack)", stack_fn(s, h, i));
		site = stacked;
	}
	switch (t->motion) {
	case PDI_MOTION_WAITING: snprintf(buf, len, "waiting in %s", site); break;
	case PDI_MOTION_COMPUTING: snprintf(buf, len, "computing after %s", site); break;
	case PDI_MOTION_IDLE: snprintf(buf, len, "sleeping (no CPU, no I/O) after %s", site); break;
	case PDI_MOTION_STOPPED: snprintf(buf, len, "stopped by a signal %s %s", key != UINT64_MAX && !pdi_state_is_comp(key) ? "in" : "after", site); break;
	default: snprintf(buf, len, "%s", pdi_motion_names[t->motion]); break;
	}
}

/* The local diagnosis of this tick's input: the task most behind and what it does, then
 * where the others wait, by place. */
static void local_diagnosis(const struct pdi_daemon *d, const struct pdi_step *s, const struct pdi_step_health *h,
			    unsigned n, int critical, char *buf, size_t len)
{
	int *ranks = malloc((n + 1) * sizeof(*ranks)); /* a task count: on the heap, not the stack */
	char what[700], set[256];
	size_t used = 0;
	bool all_waiting = true, *done = calloc(n + 1, sizeof(*done));

	buf[0] = '\0';
	if (!done || !ranks) {
		free(done);
		free(ranks);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		all_waiting &= h->in[i].motion == PDI_MOTION_WAITING || h->in[i].motion == PDI_MOTION_FINISHED;
	if (critical >= 0 && !all_waiting) {
		doing(s, h, (unsigned)critical, what, sizeof(what));
		used += (size_t)snprintf(buf, len, "least progressed [%d] on %s, %s", h->in[critical].rank,
					 d->cfg.node_name ? d->cfg.node_name : "this node", what);
		done[critical] = true;
	}
	/* the others, grouped by where they are */
	for (unsigned i = 0; i < n && used < len; i++) {
		unsigned k = 0;

		if (done[i] || h->in[i].motion == PDI_MOTION_FINISHED)
			continue;
		for (unsigned j = i; j < n; j++)
			if (!done[j] && h->keys[j] == h->keys[i] && h->in[j].motion == h->in[i].motion &&
			    !strcmp(stack_fn(s, h, j), stack_fn(s, h, i))) {
				ranks[k++] = h->in[j].rank;
				done[j] = true;
			}
		doing(s, h, i, what, sizeof(what));
		pdi_ranges_format(ranks, k, set, sizeof(set));
		if (used == 0 && all_waiting)
			used += (size_t)snprintf(buf + used, len - used, "no task outside MPI: %s %s", set, what);
		else if (k == n - 1 && critical >= 0 && !all_waiting && h->in[i].motion == PDI_MOTION_WAITING)
			used += (size_t)snprintf(buf + used, len - used, "; the others wait in %s", what + strlen("waiting in "));
		else
			used += (size_t)snprintf(buf + used, len - used, "; %s %s", set, what);
	}
	free(done);
	free(ranks);
}

/* "14:03:44" for a time of day. */
static void clock_text(time_t t, char *buf, size_t len)
{
	struct tm tm;

	strftime(buf, len, "%H:%M:%S", localtime_r(&t, &tm));
}

/* p as the line prints it: "p < 1e-6", or "p = 0.03". */
static void p_text(double p, char *buf, size_t len)
{
	int k = p > 0 ? (int)floor(-log10(p)) : 300;

	if (k >= 2)
		snprintf(buf, len, "p < 1e-%d", k > 300 ? 300 : k);
	else
		snprintf(buf, len, "p = %.2g", p);
}

/* The one line of an episode's change, without "pdimon: ". */
static void episode_line(const struct pdi_daemon *d, const struct pdi_step *s, const struct pdi_step_health *h,
			 const struct pdi_health_verdict *v, time_t since, const char *diagnosis, char *buf, size_t len)
{
	char at[16], p[32];

	clock_text(since, at, sizeof(at));
	if (v->health == PDI_HEALTH_HUNG) {
		p_text(v->p, p, sizeof(p));
		snprintf(buf, len, "step %s looks hung since %s (no progress for %.0f s; %s)%s%s", s->name, at, v->quiet_s, p,
			 diagnosis[0] ? ": " : "", diagnosis);
	} else if (v->health == PDI_HEALTH_SLOW) {
		snprintf(buf, len, "step %s looks slow since %s (progress at %.2gx its usual rate)%s%s", s->name, at,
			 v->rate_ratio, diagnosis[0] ? ": " : "", diagnosis);
	} else {
		char was[16];

		clock_text(h->since, was, sizeof(was));
		snprintf(buf, len, "step %s makes progress again (it looked %s from %s, for %.0f s)", s->name,
			 pdi_health_names[h->judge.announced], was, difftime(time(NULL), h->since));
	}
	(void)d;
}

static enum pdi_on_hang on_hang_of(const struct pdi_daemon *d, const struct pdi_step *s)
{
	return s->on_hang != PDI_ON_HANG_DEFAULT ? (enum pdi_on_hang)s->on_hang : (enum pdi_on_hang)d->cfg.on_hang;
}

static bool notify_of(const struct pdi_daemon *d, const struct pdi_step *s)
{
	return d->cfg.notify_user && !s->quiet;
}

/* StepHealthChanged: the step's health as its report has it, and the line. */
static void emit_signal(struct pdi_daemon *d, struct pdi_step *s, const char *line)
{
	struct pdi_json j;
	char *json;

	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_kv_str(&j, "step", s->name);
	pdi_json_kv_str(&j, "line", line);
	pdi_step_health_json(s, &j);
	pdi_json_obj_end(&j);
	json = pdi_json_steal(&j);
	if (json)
		d->up->emit_step_health_changed(d, s, pdi_health_names[pdi_step_health_of(s, NULL)], json);
	free(json);
}

/* The verdict V of step S is told, once: a log line, the signal, the user's output, the
 * site's action. DIAGNOSIS: where the tasks are, in words. */
static void announce(struct pdi_daemon *d, struct pdi_step *s, struct pdi_step_health *h,
		     const struct pdi_health_verdict *v, uint64_t now_ns, const char *diagnosis)
{
	time_t now = time(NULL), since = now - (time_t)llround(v->health == PDI_HEALTH_OK ? 0 : v->quiet_s);
	char line[sizeof(h->line)];

	if (v->health == PDI_HEALTH_SLOW)
		since = now - (time_t)llround(d->hang.clock_s - v->since_s);
	episode_line(d, s, h, v, since, diagnosis, line, sizeof(line));
	if (v->health == PDI_HEALTH_OK)
		log_info("Step %s", line + 5);
	else
		log_warning("Step %s", line + 5);
	pdi_hang_metrics_alarm(d, v->health, v->health == PDI_HEALTH_OK ? 0 : (double)now - (double)since);
	snprintf(h->line, sizeof(h->line), "%s", line);
	pdi_step_health_log_action(h, v->health == PDI_HEALTH_OK ? "resumed" : "announced", "%s", line);
	pdi_health_commit(&h->judge, v);
	h->since = v->health == PDI_HEALTH_OK ? 0 : since;
	if (v->health == PDI_HEALTH_HUNG && !h->first_hung)
		h->first_hung = since;
	emit_signal(d, s, line);
	if (notify_of(d, s))
		pdi_hang_notify_user(d, s, line, NULL);
	if (v->health == PDI_HEALTH_HUNG) {
		enum pdi_on_hang wanted = on_hang_of(d, s);

		if (wanted == PDI_ON_HANG_COMMAND)
			pdi_hang_run_command(d, s, line);
		if (wanted == PDI_ON_HANG_CANCEL && !h->cancel_at_ns) {
			h->cancel_at_ns = now_ns + (uint64_t)d->cfg.on_hang_grace_s * NS;
			pdi_step_health_log_action(h, "cancel", "the step will be cancelled in %u s if it does not move", d->cfg.on_hang_grace_s);
		}
	} else {
		h->cancel_at_ns = 0;
	}
	pdi_hang_history_save(d, s);
}

/* Each reason a step could not be judged, once per step. */
static void say_unjudged(struct pdi_daemon *d, struct pdi_step *s, struct pdi_step_health *h,
			 const struct pdi_health_verdict *v)
{
	static const struct { unsigned bit; const char *why; } reasons[] = {
		{PDI_UNJUDGED_TRACED, "a debugger holds rank %d: the step is not judged while it does"},
		{PDI_UNJUDGED_SUSPENDED, "every task is stopped (suspended): the step is not judged while they are"},
		{PDI_UNJUDGED_STARTING, "rank %d has made no MPI call yet: the step is judged once every task has"},
		{PDI_UNJUDGED_BLIND, "the overhead budget detached probes of rank %d: the step is not judged while its calls go unseen"},
	};
	int rank = v->unjudged_task >= 0 ? h->in[v->unjudged_task].rank : -1;
	char why[200];

	for (unsigned i = 0; i < ELEMENTSOF(reasons); i++) {
		if (!(v->unjudged_new & reasons[i].bit))
			continue;
		snprintf(why, sizeof(why), reasons[i].why, rank);
		log_info("Step %s: %s", s->name, why);
		pdi_step_health_log_action(h, "unjudged", "%s", why);
	}
	(void)d;
}

/* The step's running tasks at NOW_NS as the judge's input; the calls that were progress. */
static unsigned sample(struct pdi_daemon *d, struct pdi_step *s, struct pdi_step_health *h, uint64_t now_ns)
{
	struct pdi_state_durations cache[MAX_KEYS];
	uint64_t cached[MAX_KEYS];
	unsigned n = 0, ncached = 0;

	for (unsigned i = 0; i < s->ntasks; i++) {
		struct pdi_task *t = s->tasks[i];

		if (t->state != PDI_TASK_RUNNING)
			continue;
		h->calls += pdi_task_progress_sample(d, t, &h->progress[i], now_ns, &h->in[n], &h->keys[n]);
		/* a call it makes goes unseen: only a polling one (Test, Iprobe) is no progress anyway */
		for (unsigned fn = 0; t->budget && fn < pdi_mpi_nfuncs && !h->in[n].blind; fn++)
			h->in[n].blind = t->budget->fn[fn].level == PDI_BUDGET_DETACHED && !pdi_fn_polls(fn);
		h->index[n] = i;
		h->models[n++] = &t->model;
	}
	/* the durations of the states of the tasks that have been still a while */
	for (unsigned i = 0; i < n; i++) {
		unsigned k = 0;

		if (h->keys[i] == UINT64_MAX || h->in[i].idle_s < 1)
			continue;
		while (k < ncached && cached[k] != h->keys[i])
			k++;
		if (k == ncached) {
			if (ncached == MAX_KEYS)
				continue;
			/* the task's own model first, then its step's others */
			const struct pdi_model *first = h->models[0];

			h->models[0] = h->models[i];
			h->models[i] = first;
			pdi_state_durations_of(h->models, n, h->keys[i], &cache[k]);
			h->models[i] = h->models[0];
			h->models[0] = first;
			cached[ncached++] = h->keys[i];
		}
		h->in[i].state = cache[k];
	}
	return n;
}

/* Whether a hang suspected from this node's N tasks is to be judged on the whole step's view
 * before it is told: a step of several nodes (the others' tasks may be moving, or be the ones
 * stuck), or one whose every task waits in MPI (PDI's progress dependence tells which of them
 * the others wait for; this node's own signals cannot). */
static bool needs_step_view(const struct pdi_step *s, const struct pdi_step_health *h, unsigned n)
{
	if (s->nnodes > 1)
		return true;
	for (unsigned i = 0; i < n; i++)
		if (h->in[i].motion != PDI_MOTION_WAITING && h->in[i].motion != PDI_MOTION_FINISHED)
			return false;
	return true;
}

/* A suspected hang under judgement: which step (by name: it may be gone when the answer comes). */
struct suspicion {
	char *name;
	time_t started;
};

static void suspicion_free(struct suspicion *c)
{
	free(c->name);
	free(c);
}

/* The answer of the step's view (on the loop): the hang told with what the analysis found, or,
 * for a step of several nodes, not confirmed (a task elsewhere moved, or is in a state known
 * to last this long) and suspected again only once the quiet could have reached the whole
 * step's threshold. */
static void suspicion_judged(struct pdi_daemon *d, void *ctx, struct pdi_report_result *res)
{
	struct suspicion *c = ctx;
	struct pdi_step *s = pdi_registry_find_step(&d->reg, c->name);
	struct pdi_step_health *h = s && s->started == c->started ? s->health : NULL;
	struct pdi_health_verdict v;

	/* gone, run again, or pdimond is stopping */
	if (!h || !h->confirming || res->status == -ECANCELED)
		return suspicion_free(c);
	h->confirming = false;
	/* moved meanwhile, ended, or told already */
	if (!pdi_step_running(s) || h->last.health != PDI_HEALTH_HUNG || !pdi_health_news(&h->judge, &h->last))
		return suspicion_free(c);
	v = h->last;
	if (res->status < 0) {
		/* no view at all: what this node sees is all there is */
		log_warning_limited(0, "Step %s: a suspected hang could not be judged on the step's view (%s): told as this node sees it",
				    s->name, res->why);
		announce(d, s, h, &v, pdi_now_ns(), h->suspected);
		return suspicion_free(c);
	}
	/* on one node, this node's judge knows more than the view (polling, I/O): the view only
	 * names whom the others wait for */
	if (s->nnodes <= 1) {
		announce(d, s, h, &v, pdi_now_ns(), res->text && res->text[0] ? res->text : h->suspected);
		return suspicion_free(c);
	}
	if (res->health.health != PDI_HEALTH_HUNG) {
		double more = res->health.threshold_s - res->health.quiet_s;

		h->recheck_quiet_s = h->last.quiet_s + (more > 2 ? more : 2);
		log_info("Step %s: its tasks here have been quiet for %.0f s, but the step is not hung (quiet for %.0f s "
			 "over all of its tasks, hung after %.0f s)", s->name, h->last.quiet_s, res->health.quiet_s,
			 res->health.threshold_s);
		return suspicion_free(c);
	}
	/* the whole step's quiet: as long as its longest-moving task allows */
	v.quiet_s = res->health.quiet_s;
	v.p = res->health.p;
	v.since_s = d->hang.clock_s - v.quiet_s;
	announce(d, s, h, &v, pdi_now_ns(), res->text && res->text[0] ? res->text : h->suspected);
	suspicion_free(c);
}

/* A hang suspected on this node's tasks (V; DIAGNOSIS: what they do), to be judged on the
 * step's view first. */
static void suspect(struct pdi_daemon *d, struct pdi_step *s, struct pdi_step_health *h,
		    const struct pdi_health_verdict *v, const char *diagnosis)
{
	struct suspicion *c;
	int r = -ENOMEM;

	if (h->confirming || v->quiet_s < h->recheck_quiet_s)
		return;
	c = calloc(1, sizeof(*c));
	if (c && (c->name = strdup(s->name))) {
		c->started = s->started;
		r = pdi_report_start_health(d, s, &h->judge, suspicion_judged, c);
	}
	if (r < 0) {
		/* tried again next tick */
		log_warning_errno_limited(0, r, "Step %s: cannot judge a suspected hang on the step's view now: %m", s->name);
		if (c)
			suspicion_free(c);
		return;
	}
	h->confirming = true;
	snprintf(h->suspected, sizeof(h->suspected), "%s", diagnosis);
}

/* Whether this node judges S: a step of one node, or the first of its nodes. */
static bool judges(const struct pdi_daemon *d, const struct pdi_step *s)
{
	return s->nnodes <= 1 || (d->cfg.node_name && s->nodes && !strcmp(s->nodes[0], d->cfg.node_name));
}

/* The step cancelled, once its user was told (pdi_hang_then_fn). */
static void cancel_now(struct pdi_daemon *d, struct pdi_step *s)
{
	if (s->health && s->health->judge.announced == PDI_HEALTH_HUNG)
		pdi_hang_cancel(d, s, s->health->line);
}

/* The grace of a hung step with on-hang=cancel is over: its user is told first (the step's
 * output goes with it), then it is cancelled. */
static void cancel(struct pdi_daemon *d, struct pdi_step *s, struct pdi_step_health *h)
{
	char line[sizeof(h->line)], at[16];

	/* when pdimond cancelled it: its report may be made before scancel returns */
	h->cancelled = time(NULL);
	clock_text(h->since, at, sizeof(at));
	snprintf(line, sizeof(line), "step %s is being cancelled: it looked hung since %s (on-hang=cancel, after %u s of grace)",
		 s->name, at, d->cfg.on_hang_grace_s);
	if (notify_of(d, s))
		pdi_hang_notify_user(d, s, line, cancel_now);
	else
		cancel_now(d, s);
}

/* Whether a hang is to wait for the stacks of still tasks its thinned probes show computing (a
 * task waiting in a call they did not see begin is not the one the others wait for), up to
 * LOOK_WAIT_NS after they were asked for. */
static bool stacks_pending(const struct pdi_step *s, const struct pdi_step_health *h, unsigned n, uint64_t now_ns)
{
	for (unsigned i = 0; i < n; i++) {
		const struct pdi_task_progress *p = &h->progress[h->index[i]];

		if (pdi_task_progress_look_pending(p, s->tasks[h->index[i]]->model.calls) &&
		    (!p->look_ns || now_ns - p->look_ns < LOOK_WAIT_NS))
			return true;
	}
	return false;
}

static void tick_step(struct pdi_daemon *d, struct pdi_step *s, uint64_t now_ns)
{
	struct pdi_step_health *h = health_of(d, s);
	struct pdi_health_verdict v;
	struct pdi_health_input in;
	char diagnosis[500];
	double quiet_before;
	unsigned n;

	if (!h || !h->ready || reserve(h, s->ntasks + 1) < 0)
		return;
	n = sample(d, s, h, now_ns);
	pdi_hang_stack_look(d, s, h->progress, s->ntasks);
	in = (struct pdi_health_input){.now_s = d->hang.clock_s, .progress = h->calls, .tasks = h->in, .ntasks = n};
	pdi_health_tick(&h->judge, &in, &v);
	quiet_before = h->last.quiet_s;
	h->last = v;
	if (v.unjudged_new)
		say_unjudged(d, s, h, &v);
	if (pdi_health_news(&h->judge, &v) && !(v.health == PDI_HEALTH_HUNG && stacks_pending(s, h, n, now_ns))) {
		diagnosis[0] = '\0';
		if (v.health != PDI_HEALTH_OK)
			local_diagnosis(d, s, h, n, v.critical, diagnosis, sizeof(diagnosis));
		if (v.health == PDI_HEALTH_HUNG && needs_step_view(s, h, n))
			suspect(d, s, h, &v, diagnosis);
		else
			announce(d, s, h, &v, now_ns, diagnosis);
	}
	/* progress: a quiet that comes later is a new suspicion */
	if (v.quiet_s < quiet_before)
		h->recheck_quiet_s = 0;
	if (h->cancel_at_ns && now_ns >= h->cancel_at_ns) {
		h->cancel_at_ns = 0;
		if (h->judge.announced == PDI_HEALTH_HUNG)
			cancel(d, s, h);
	}
}

void pdi_hang_tick(struct pdi_daemon *d)
{
	uint64_t now_ns = pdi_now_ns();

	if (d->hang.last_ns && now_ns - d->hang.last_ns < NS)
		return;
	d->hang.last_ns = now_ns;
	d->hang.clock_s = (double)now_ns / 1e9;
	for (unsigned i = 0; i < d->reg.nsteps; i++) {
		struct pdi_step *s = d->reg.steps[i];

		if (pdi_step_running(s) && s->ntasks && judges(d, s))
			tick_step(d, s, now_ns);
		else if (s->health && !s->health->saved_end && !pdi_step_running(s)) {
			/* its run's record joins the program's history */
			s->health->saved_end = true;
			pdi_hang_history_save(d, s);
			d->evict_due = true; /* it may leave memory now (pdi_step_health_settled) */
		}
	}
	pdi_hang_metrics_tick(d, now_ns);
}

uint64_t pdi_hang_blocked_after_ns(const struct pdi_daemon *d, const struct pdi_step *s)
{
	const struct pdi_step_health *h = s->health;
	struct pdi_quiet_threshold t;

	if (d->cfg.hang_timeout_ms)
		return (uint64_t)d->cfg.hang_timeout_ms * 1000000;
	if (h && h->judge.announced == PDI_HEALTH_HUNG)
		return 0;
	if (h && h->last.threshold_s > 0)
		return (uint64_t)(h->last.threshold_s * 1e9);
	/* not judged here (another node judges it, or not yet): a step with no history */
	pdi_quiet_threshold(NULL, &pdi_quiet_params_default, &t);
	return (uint64_t)(t.quiet_s * 1e9);
}


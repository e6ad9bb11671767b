/* SPDX-License-Identifier: GPL-2.0-only */
/* test-health.c -- the hang and slowdown judge (lib/health/health.h, quiet.h, rate.h) on a table of
 * synthetic progress traces whose verdicts are known: healthy steps (busy, with legitimately
 * long waits, with and without history), hangs of each kind (a rank spinning, a deadlock, a
 * rank stopped, a rank stuck in I/O), a slowdown, and the bad inputs (a debugger, a suspended
 * step, tasks exiting one by one, a daemon that stalls, clocks that go back, a restart in the
 * middle of a hang). Every trace is ticked once a second, as pdimond does. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health.h"
#include "wire.h"

#define MAXT 16

/* One tick's world, as a trace describes it at time T (seconds since the step began). */
struct world {
	struct pdi_health_task tasks[MAXT];
	unsigned n;
	uint64_t progress;
};

typedef void (*trace_fn)(double t, struct world *w);

static uint64_t lcg;

static double jitter(void) /* 0..1 */
{
	lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(lcg >> 11) / 9007199254740992.0;
}

/* Tasks of a busy SPMD loop: calls every few ms, each task just made progress. */
static void busy(struct world *w, unsigned n, double t, double calls_per_s)
{
	w->n = n;
	for (unsigned i = 0; i < n; i++)
		w->tasks[i] = (struct pdi_health_task){
			.rank = (int)i,
			.motion = i % 2 ? PDI_MOTION_WAITING : PDI_MOTION_COMPUTING,
			.idle_s = 0.001 + 0.01 * jitter(),
			.state = {.n = (uint64_t)(t * 100) + 1, .mean_s = 0.005, .sd_s = 0.002, .longest_s = 0.03},
		};
	w->progress = (uint64_t)(t * calls_per_s);
}

/* Rank STUCK is in MOTION since T0 with no progress; the others wait in a collective since
 * just after. */
static void stuck(struct world *w, unsigned n, double t, double t0, unsigned stuck, enum pdi_motion motion)
{
	busy(w, n, t0, 400);
	for (unsigned i = 0; i < n; i++) {
		w->tasks[i].motion = i == stuck ? motion : PDI_MOTION_WAITING;
		w->tasks[i].idle_s = t - t0 - (i == stuck ? 0 : 0.01 * i);
		/* a short state: seen many times, never long */
		w->tasks[i].state = (struct pdi_state_durations){.n = 5000, .mean_s = 0.004, .sd_s = 0.002, .longest_s = 0.05};
	}
}

/* ---- the traces ---- */

static void healthy_busy(double t, struct world *w)
{
	busy(w, 4, t, 400);
}

/* Every 120 s rank 0 does 15 s of compute (or I/O without counters) while the others wait. */
static void long_wait_15(double t, struct world *w)
{
	double phase = fmod(t, 120), start = t - phase + 60;

	if (phase >= 60 && phase < 75) {
		stuck(w, 4, t, start, 0, PDI_MOTION_COMPUTING);
		w->progress = (uint64_t)(start * 400);
		w->tasks[0].state = (struct pdi_state_durations){0}; /* never seen to end before */
	} else {
		busy(w, 4, t, 400);
	}
}

/* A long barrier before a checkpoint: 30 s every 300 s, a state that ends within 25-32 s. */
static void checkpoint_30(double t, struct world *w)
{
	double phase = fmod(t, 300), start = t - phase + 200, len = 25 + 7 * fmod(floor(t / 300) * 0.618, 1);

	if (phase >= 200 && phase < 200 + len) {
		stuck(w, 4, t, start, 1, PDI_MOTION_IDLE);
		w->progress = (uint64_t)(start * 400);
		w->tasks[1].state = (struct pdi_state_durations){.n = (uint64_t)(t / 300), .mean_s = 28.5, .sd_s = 2,
								 .longest_s = 32};
	} else {
		busy(w, 4, t, 400);
	}
}

static void spin_at_60(double t, struct world *w)
{
	if (t < 60)
		busy(w, 4, t, 400);
	else
		stuck(w, 4, t, 60, 2, PDI_MOTION_COMPUTING);
}

static void deadlock_at_60(double t, struct world *w)
{
	if (t < 60)
		busy(w, 4, t, 400);
	else
		stuck(w, 4, t, 60, 3, PDI_MOTION_WAITING);
}

static void stopped_at_60(double t, struct world *w)
{
	if (t < 60)
		busy(w, 4, t, 400);
	else
		stuck(w, 4, t, 60, 1, PDI_MOTION_STOPPED);
}

/* A rank in a read that never returns: sleeping outside MPI, no I/O progress. */
static void io_stuck_at_60(double t, struct world *w)
{
	if (t < 60)
		busy(w, 4, t, 400);
	else
		stuck(w, 4, t, 60, 0, PDI_MOTION_IDLE);
}

/* The checkpointing program hangs (a rank spins) in its short compute state after 20 min. */
static void checkpoint_then_spin(double t, struct world *w)
{
	if (t < 1250)
		checkpoint_30(t, w);
	else
		stuck(w, 4, t, 1250, 2, PDI_MOTION_COMPUTING);
}

static void traced_at_60(double t, struct world *w)
{
	if (t < 60)
		busy(w, 4, t, 400);
	else
		stuck(w, 4, t, 60, 2, PDI_MOTION_TRACED);
}

static void suspended_at_60(double t, struct world *w)
{
	busy(w, 4, t < 60 ? t : 60, 400);
	for (unsigned i = 0; t >= 60 && i < w->n; i++) {
		w->tasks[i].motion = PDI_MOTION_STOPPED;
		w->tasks[i].idle_s = t - 60;
	}
}

/* Ranks leave one by one from t = 60: the finished ones are in or past MPI_Finalize, the
 * others keep working; the last one works alone for a while. */
static void exiting_one_by_one(double t, struct world *w)
{
	busy(w, 4, t, 400);
	for (unsigned i = 0; i < w->n; i++)
		if (t >= 60 + 20.0 * i) {
			w->tasks[i].motion = PDI_MOTION_FINISHED;
			w->tasks[i].idle_s = t - (60 + 20.0 * i);
		}
	if (t >= 60 + 20.0 * 3 + 10)
		w->n = 3; /* rank 3 has exited; the others are gone as well, bar their processes */
}

/* 10x slower from t = 300 to t = 600, then back. */
static void slowdown(double t, struct world *w)
{
	double calls = t < 300 ? t * 400 : t < 600 ? 300 * 400 + (t - 300) * 40 : 300 * 400 + 300 * 40 + (t - 600) * 400;

	busy(w, 4, t, 400);
	w->progress = (uint64_t)calls;
}

/* The first call of a task comes late (it reads its input for 50 s); then a busy loop. */
static void late_starter(double t, struct world *w)
{
	busy(w, 4, t, 400);
	if (t < 50) {
		w->tasks[3].motion = PDI_MOTION_STARTING;
		w->tasks[3].idle_s = t;
		for (unsigned i = 0; i < 3; i++) {
			w->tasks[i].motion = PDI_MOTION_WAITING;
			w->tasks[i].idle_s = t;
		}
	}
}

/* Hangs at 60, a debugger releases nothing, progress resumes by itself at 200. */
static void hang_then_resume(double t, struct world *w)
{
	if (t < 60 || t >= 200)
		busy(w, 4, t, 400);
	else
		stuck(w, 4, t, 60, 2, PDI_MOTION_COMPUTING);
}

/* ---- running a trace ---- */

struct outcome {
	double first_hung, first_slow; /* seconds since the step began; -1 never */
	unsigned hung_news, slow_news, ok_news;
	int critical_rank;             /* at the first hung */
	unsigned said;                 /* unjudged reasons said */
	unsigned said_twice;
	double last_threshold;
};

/* Tick TRACE every STEP_S from 0 to DURATION (the clock starting at CLOCK0, as a monotonic
 * clock does), committing every news item as a one-node step does. */
static struct outcome run_full(trace_fn trace, double from, double duration, const struct pdi_health_record *history,
			       struct pdi_health_judge *h, double clock0, double step_s)
{
	struct outcome o = {.first_hung = -1, .first_slow = -1, .critical_rank = -1};
	struct world w;

	lcg = 42;
	if (history)
		pdi_health_set_history(h, history);
	for (double t = from; t <= duration; t += step_s) {
		struct pdi_health_input in;
		struct pdi_health_verdict v;

		memset(&w, 0, sizeof(w));
		trace(t, &w);
		in = (struct pdi_health_input){.now_s = clock0 + t, .progress = w.progress, .tasks = w.tasks, .ntasks = w.n};
		pdi_health_tick(h, &in, &v);
		o.said_twice |= v.unjudged_new & o.said;
		o.said |= v.unjudged_new;
		o.last_threshold = v.threshold_s;
		if (getenv("TRACE_DEBUG") && fmod(t, 50) == 0)
			fprintf(stderr, "t=%.0f health=%d quiet=%.1f thr=%.1f open=%lu/%.1f settled=%lu/%.1f\n", t, v.health,
				v.quiet_s, v.threshold_s, (unsigned long)h->run.kind[1].episodes,
				pdi_quiet_record_longest(&h->run.kind[1]), (unsigned long)h->run.kind[0].episodes,
				pdi_quiet_record_longest(&h->run.kind[0]));
		if (!pdi_health_news(h, &v))
			continue;
		if (v.health == PDI_HEALTH_HUNG) {
			o.hung_news++;
			if (o.first_hung < 0) {
				o.first_hung = t;
				o.critical_rank = v.critical >= 0 ? w.tasks[v.critical].rank : -1;
			}
		} else if (v.health == PDI_HEALTH_SLOW) {
			o.slow_news++;
			if (o.first_slow < 0)
				o.first_slow = t;
		} else {
			o.ok_news++;
		}
		pdi_health_commit(h, &v);
	}
	return o;
}

static struct outcome run(trace_fn trace, double duration, const struct pdi_health_record *history)
{
	struct pdi_health_judge h;

	pdi_health_init(&h, &pdi_health_params_default);
	return run_full(trace, 0, duration, history, &h, 1000, 1);
}

/* The record a run of TRACE leaves (its program's history for the next run). */
static struct pdi_health_record learn(trace_fn trace, double duration)
{
	struct pdi_health_judge h;
	struct pdi_health_record r;

	pdi_health_init(&h, &pdi_health_params_default);
	(void)run_full(trace, 0, duration, NULL, &h, 5000, 1);
	pdi_health_record(&h, &r);
	return r;
}

/* ---- the table: healthy traces never hang ---- */

struct healthy_case {
	const char *name;
	trace_fn trace;
	double duration;
	bool with_history; /* a previous run of the same trace as the program's history */
};

static const struct healthy_case healthy_cases[] = {
	{"busy loop, two hours", healthy_busy, 7200, false},
	{"a 15 s wait every 2 min, first run", long_wait_15, 3600, false},
	{"a 15 s wait every 2 min, with history", long_wait_15, 3600, true},
	{"a 25-32 s checkpoint barrier every 5 min, first run", checkpoint_30, 3600, false},
	{"a 25-32 s checkpoint barrier every 5 min, with history", checkpoint_30, 3600, true},
	{"ranks exiting one by one", exiting_one_by_one, 300, false},
	{"a rank reading its input for 50 s before its first call", late_starter, 600, false},
};

Test(health, healthy_traces_never_hang)
{
	for (size_t i = 0; i < sizeof(healthy_cases) / sizeof(healthy_cases[0]); i++) {
		const struct healthy_case *c = &healthy_cases[i];
		struct pdi_health_record hist;
		struct outcome o;

		if (c->with_history)
			hist = learn(c->trace, c->duration);
		o = run(c->trace, c->duration, c->with_history ? &hist : NULL);
		cr_expect_eq(o.hung_news, 0, "%s: judged hung at %.0f s", c->name, o.first_hung);
		cr_expect_eq(o.slow_news, 0, "%s: judged slow at %.0f s", c->name, o.first_slow);
	}
}

/* ---- the table: hangs are found in time, naming the stuck rank ---- */

struct hang_case {
	const char *name;
	trace_fn trace;
	double hang_at, within; /* the alarm comes after hang_at, at most within seconds later */
	int rank;               /* the critical task named; -1: any */
	bool with_history;
};

static const struct hang_case hang_cases[] = {
	{"a rank spinning outside MPI", spin_at_60, 60, 30, 2, false},
	{"a real deadlock", deadlock_at_60, 60, 30, -1, false},
	{"a rank stopped", stopped_at_60, 60, 30, 1, false},
	{"a rank stuck in I/O", io_stuck_at_60, 60, 30, 0, false},
	/* the longest normal wait is 32 s: 3x that */
	{"a rank spinning in a program with 30 s waits", checkpoint_then_spin, 1250, 96, 2, true},
};

Test(health, hangs_are_found_in_time)
{
	for (size_t i = 0; i < sizeof(hang_cases) / sizeof(hang_cases[0]); i++) {
		const struct hang_case *c = &hang_cases[i];
		struct pdi_health_record hist;
		struct outcome o;

		if (c->with_history)
			hist = learn(checkpoint_30, 3600);
		o = run(c->trace, c->hang_at + 600, c->with_history ? &hist : NULL);
		cr_expect_eq(o.hung_news, 1, "%s: %u hung alarms", c->name, o.hung_news);
		cr_expect(o.first_hung > c->hang_at && o.first_hung <= c->hang_at + c->within,
			  "%s: hung at %.0f s, the hang began at %.0f s", c->name, o.first_hung, c->hang_at);
		if (c->rank >= 0)
			cr_expect_eq(o.critical_rank, c->rank, "%s: named rank %d", c->name, o.critical_rank);
		cr_expect_eq(o.ok_news, 0, "%s: said it resumed", c->name);
	}
}

/* ---- bad input and faults ---- */

Test(health, debugger_is_said_once_and_never_hung)
{
	struct outcome o = run(traced_at_60, 1800, NULL);

	cr_expect_eq(o.hung_news, 0);
	cr_expect(o.said & PDI_UNJUDGED_TRACED);
	cr_expect_eq(o.said_twice, 0);
}

/* The overhead budget detached a task's probes: its calls go unseen, its quiet is no proof. */
static void blind_at_60(double t, struct world *w)
{
	if (t < 60)
		busy(w, 4, t, 400);
	else
		stuck(w, 4, t, 60, 2, PDI_MOTION_COMPUTING);
	w->tasks[2].blind = t >= 55;
}

Test(health, unseen_calls_are_said_once_and_never_hung)
{
	struct outcome o = run(blind_at_60, 1800, NULL);

	cr_expect_eq(o.hung_news, 0);
	cr_expect(o.said & PDI_UNJUDGED_BLIND);
	cr_expect_eq(o.said_twice, 0);
}

Test(health, suspended_step_is_said_once_and_never_hung)
{
	struct outcome o = run(suspended_at_60, 1800, NULL);

	cr_expect_eq(o.hung_news, 0);
	cr_expect(o.said & PDI_UNJUDGED_SUSPENDED);
	cr_expect_eq(o.said_twice, 0);
}

Test(health, hang_then_resume_is_one_episode)
{
	struct outcome o = run(hang_then_resume, 600, NULL);

	cr_expect_eq(o.hung_news, 1);
	cr_expect_eq(o.ok_news, 1, "resumed said %u times", o.ok_news);
}

Test(health, slowdown_is_slow_then_ok)
{
	struct outcome o = run(slowdown, 900, NULL);

	cr_expect_eq(o.hung_news, 0);
	cr_expect_eq(o.slow_news, 1);
	cr_expect(o.first_slow > 300 && o.first_slow <= 300 + 60, "slow at %.0f s", o.first_slow);
	cr_expect_eq(o.ok_news, 1);
}

/* The daemon did not run for 60 s (a stopped daemon, a paused VM): that time is no evidence. */
Test(health, daemon_stall_is_not_quiet)
{
	struct pdi_health_judge h;
	struct world w;
	struct pdi_health_verdict v;
	double t;

	pdi_health_init(&h, &pdi_health_params_default);
	lcg = 1;
	for (t = 0; t < 60; t++) {
		busy(&w, 4, t, 400);
		pdi_health_tick(&h, &(struct pdi_health_input){.now_s = 100 + t, .progress = w.progress, .tasks = w.tasks,
							       .ntasks = w.n},
				&v);
	}
	/* next tick 60 s later: every task looks idle for 60 s, as nothing was drained */
	stuck(&w, 4, 120, 60, 0, PDI_MOTION_COMPUTING);
	pdi_health_tick(&h, &(struct pdi_health_input){.now_s = 100 + 120, .progress = w.progress, .tasks = w.tasks,
						       .ntasks = w.n},
			&v);
	cr_expect(v.unjudged & PDI_UNJUDGED_STALLED);
	cr_expect_neq(v.health, PDI_HEALTH_HUNG);
	/* and the ticks after it count the quiet from the stall's end */
	stuck(&w, 4, 125, 60, 0, PDI_MOTION_COMPUTING);
	pdi_health_tick(&h, &(struct pdi_health_input){.now_s = 100 + 121, .progress = w.progress, .tasks = w.tasks,
						       .ntasks = w.n},
			&v);
	cr_expect_lt(v.quiet_s, 10, "quiet %.1f s counted through the stall", v.quiet_s);
	cr_expect_neq(v.health, PDI_HEALTH_HUNG);
}

/* A clock that goes back (bad input: a monotonic clock never does) is no quiet. */
Test(health, clock_going_back_is_harmless)
{
	struct pdi_health_judge h;
	struct world w;
	struct pdi_health_verdict v;

	pdi_health_init(&h, &pdi_health_params_default);
	lcg = 2;
	for (int i = 0; i < 200; i++) {
		double now = i % 7 == 6 ? 50 - i : 1000 + i;

		busy(&w, 4, i, 400);
		pdi_health_tick(&h, &(struct pdi_health_input){.now_s = now, .progress = w.progress, .tasks = w.tasks,
							       .ntasks = w.n},
				&v);
		cr_assert_neq(v.health, PDI_HEALTH_HUNG);
		cr_assert(isfinite(v.threshold_s) && v.threshold_s > 0);
	}
}

/* A daemon restarted in the middle of an announced hang restores what it announced: no
 * second alarm; progress is then said once. */
Test(health, restart_mid_episode_does_not_repeat)
{
	struct pdi_health_judge before, after;
	struct pdi_health_record rec;
	struct outcome o;

	pdi_health_init(&before, &pdi_health_params_default);
	o = run_full(hang_then_resume, 0, 150, NULL, &before, 1000, 1);
	cr_assert_eq(o.hung_news, 1);
	/* what the store keeps: the record and the announced verdict */
	pdi_health_init(&after, &pdi_health_params_default);
	pdi_health_record(&before, &rec);
	pdi_health_set_history(&after, &rec);
	after.announced = before.announced;
	after.announced_since_s = before.announced_since_s;
	o = run_full(hang_then_resume, 151, 300, NULL, &after, 1000, 1);
	cr_expect_eq(o.hung_news, 0);
	cr_expect_eq(o.ok_news, 1);
}

/* ---- the pieces ---- */

Test(health, state_horizon_grows_with_the_state)
{
	const struct pdi_health_params *p = &pdi_health_params_default;
	struct pdi_state_durations short_state = {.n = 100000, .mean_s = 0.01, .sd_s = 0.002, .longest_s = 0.05};
	struct pdi_state_durations long_state = {.n = 12, .mean_s = 28, .sd_s = 2, .longest_s = 32};
	struct pdi_state_durations unknown = {.n = 2, .mean_s = 28, .sd_s = 2, .longest_s = 32};

	cr_expect_lt(pdi_state_horizon(&short_state, 3600, p), 1);
	cr_expect_gt(pdi_state_horizon(&long_state, 3600, p), 48);
	cr_expect_lt(pdi_state_horizon(&long_state, 3600, p), 96);
	cr_expect_eq(pdi_state_horizon(&unknown, 3600, p), 0);
}

Test(quiet, chi2_quantiles)
{
	/* tables: chi2(2) 95% 5.991, chi2(2) 5% 0.1026, chi2(10) 95% 18.307, chi2(40) 5% 26.509 */
	cr_expect_float_eq(pdi_chi2_quantile_even(1, 0.95), 5.9915, 1e-3);
	cr_expect_float_eq(pdi_chi2_quantile_even(1, 0.05), 0.10259, 1e-4);
	cr_expect_float_eq(pdi_chi2_quantile_even(5, 0.95), 18.307, 1e-2);
	cr_expect_float_eq(pdi_chi2_quantile_even(20, 0.05), 26.509, 1e-2);
}

Test(quiet, threshold_without_history_follows_the_prior)
{
	struct pdi_quiet_threshold t10, t3600;
	struct pdi_quiet_record r = {.observed_s = 10};

	pdi_quiet_threshold(&r, &pdi_quiet_params_default, &t10);
	r.observed_s = 3600;
	pdi_quiet_threshold(&r, &pdi_quiet_params_default, &t3600);
	cr_expect(t10.prior && t3600.prior);
	/* a first run is judged late at first, sooner as it shows it never goes quiet */
	cr_expect_gt(t10.quiet_s, t3600.quiet_s);
	cr_expect(t10.quiet_s > 20 && t10.quiet_s < 32, "%.1f s", t10.quiet_s);
	cr_expect(t3600.quiet_s > 12 && t3600.quiet_s < 25, "%.1f s", t3600.quiet_s);
	pdi_quiet_threshold(NULL, &pdi_quiet_params_default, &t10);
	cr_expect(isfinite(t10.quiet_s) && t10.quiet_s > 20);
}

Test(quiet, threshold_follows_long_episodes_and_the_rate)
{
	struct pdi_quiet_record r = {.observed_s = 3600};
	struct pdi_quiet_params strict = pdi_quiet_params_default, lax = pdi_quiet_params_default;
	struct pdi_quiet_threshold ts, tl;

	for (int i = 0; i < 12; i++)
		pdi_quiet_record_add(&r, 25 + i % 7);
	strict.rate_per_hour = 1e-6;
	lax.rate_per_hour = 1e-2;
	pdi_quiet_threshold(&r, &strict, &ts);
	pdi_quiet_threshold(&r, &lax, &tl);
	cr_expect_gt(tl.quiet_s, 31 * 1.5 - 1e-3);
	cr_expect_gt(ts.quiet_s, tl.quiet_s);
	/* the bound: at the threshold the fitted rate of healthy episodes that long is the rate */
	cr_expect_float_eq(ts.rate_u * pdi_quiet_p(&ts, ts.quiet_s), fmin(strict.rate_per_hour, ts.rate_u), 1e-9);
}

Test(quiet, record_keeps_the_longest_and_round_trips)
{
	struct pdi_quiet_record r = {0}, back, other = {.observed_s = 7};
	struct pdi_wire_writer w = {0};

	for (int i = 1; i <= 100; i++)
		pdi_quiet_record_add(&r, (double)((i * 37) % 101));
	pdi_quiet_record_add(&r, NAN);
	pdi_quiet_record_add(&r, -3);
	r.observed_s = 1234.5;
	cr_expect_eq(r.episodes, 100);
	cr_expect_eq(r.ntop, PDI_QUIET_TOP);
	cr_expect_eq(r.top[0], 100);
	for (unsigned i = 1; i < r.ntop; i++)
		cr_expect_geq(r.top[i - 1], r.top[i]);
	cr_assert_eq(pdi_quiet_record_encode(&r, &w), 0);
	cr_assert_eq(pdi_quiet_record_decode(w.buf, w.len, &back), 0);
	cr_expect_eq(memcmp(&r, &back, sizeof(r)), 0);
	/* truncated, or bytes from nowhere: refused, untouched */
	cr_expect_eq(pdi_quiet_record_decode(w.buf, w.len - 1, &other), -EBADMSG);
	w.buf[20] ^= 0x80; /* observed_s's sign */
	cr_expect_eq(pdi_quiet_record_decode(w.buf, w.len, &other), -EBADMSG);
	cr_expect_eq(other.observed_s, 7);
	pdi_quiet_record_merge(&other, &r);
	cr_expect_eq(other.observed_s, 1241.5);
	cr_expect_eq(other.top[0], 100);
	pdi_wire_writer_done(&w);
}

Test(health, record_by_kind_round_trips)
{
	struct pdi_health_record r = learn(checkpoint_30, 1200), back, untouched = {0};
	struct pdi_wire_writer w = {0};

	cr_assert_gt(r.kind[PDI_QUIET_OPEN].episodes, 0);
	cr_assert_eq(pdi_health_record_encode(&r, &w), 0);
	cr_assert_eq(pdi_health_record_decode(w.buf, w.len, &back), 0);
	cr_expect_eq(memcmp(&r, &back, sizeof(r)), 0);
	cr_expect_eq(pdi_health_record_decode(w.buf, w.len / 2, &untouched), -EBADMSG);
	cr_expect_eq(untouched.kind[0].ntop, 0);
	pdi_wire_writer_done(&w);
}

/* A step of two nodes: its first node's tasks all wait 25 s for a worker on the other node.
 * The first node alone suspects a hang; the tasks of both nodes confirm it only when the
 * worker is not computing something it never did before. */
Test(health, hang_confirmed_across_nodes)
{
	struct pdi_health_judge h;
	struct pdi_health_verdict local, all;
	struct world w;

	pdi_health_init(&h, &pdi_health_params_default);
	(void)run_full(healthy_busy, 0, 300, NULL, &h, 1000, 1);
	stuck(&w, 4, 325, 300, 3, PDI_MOTION_WAITING); /* ranks 0-2 here wait, rank 3 elsewhere */
	pdi_health_judge_tasks(&h, w.tasks, 3, &local);
	cr_expect_eq(local.health, PDI_HEALTH_HUNG, "the first node alone: quiet %.0f s, hung at %.0f s", local.quiet_s,
		     local.threshold_s);
	/* the worker computes something it never did before */
	w.tasks[3].motion = PDI_MOTION_COMPUTING;
	w.tasks[3].state = (struct pdi_state_durations){0};
	pdi_health_judge_tasks(&h, w.tasks, 4, &all);
	cr_expect_eq(all.health, PDI_HEALTH_OK, "quiet %.0f s, hung at %.0f s", all.quiet_s, all.threshold_s);
	/* the worker is stopped */
	w.tasks[3].motion = PDI_MOTION_STOPPED;
	pdi_health_judge_tasks(&h, w.tasks, 4, &all);
	cr_expect_eq(all.health, PDI_HEALTH_HUNG);
	cr_expect_eq(all.critical, 3);
	/* the worker made progress a moment ago */
	w.tasks[3].motion = PDI_MOTION_COMPUTING;
	w.tasks[3].idle_s = 0.5;
	pdi_health_judge_tasks(&h, w.tasks, 4, &all);
	cr_expect_eq(all.health, PDI_HEALTH_OK);
}

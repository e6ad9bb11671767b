/* SPDX-License-Identifier: GPL-2.0-only */
/* show.c -- what pdimon status, steps and show print: JSON, text or Graphviz DOT. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "daemon.h"
#include "worker.h"
#include "site_store.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "mpi_funcs.h"
#include "callchain.h"
#include "objcache.h"
#include "show.h"
#include "sites.h"
#include "health_state.h"
#include "step_group.h"
#include "tracer.h"
#include "view_local.h"

#ifndef PDI_VERSION
#define PDI_VERSION "0"
#endif


static size_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (size_t)sysconf(_SC_PAGESIZE);
}

static const char *task_state(const struct pdi_task *t)
{
	return t->state == PDI_TASK_RUNNING ? "running" : "ended";
}

static const char *step_state(const struct pdi_step *s)
{
	return pdi_step_running(s) ? "running" : "ended";
}

static uint64_t task_lost(struct pdi_daemon *d, const struct pdi_task *t)
{
	return t->state == PDI_TASK_RUNNING ? pdi_tracer_lost(d->tracer, t->pid) : t->lost;
}

/* The loop and what it hands off: the longest wake-up, the workers and the store's lane. */
static void status_loop(struct pdi_json *j, struct pdi_daemon *d)
{
	struct pdi_workers_stats w = {0}, st = {0};

	if (d->workers)
		pdi_workers_stats(d->workers, &w);
	if (d->store_lane)
		pdi_workers_stats(d->store_lane, &st);
	pdi_json_kv_double(j, "loop_max_wakeup_ms", (double)d->loop_max_ns / 1e6);
	pdi_json_key(j, "workers");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "threads", w.threads);
	pdi_json_kv_uint(j, "busy", w.busy);
	pdi_json_kv_uint(j, "queued", w.queued);
	pdi_json_kv_uint(j, "completed", w.completed);
	pdi_json_kv_uint(j, "store_queued", st.queued + st.busy);
	pdi_json_obj_end(j);
}

char *pdi_show_status(struct pdi_daemon *d, bool json)
{
	uint64_t lost = 0, model_bytes = 0;
	unsigned running_steps = 0, running_tasks = 0;
	double uptime = (double)(pdi_now_ns() - d->started_ns) / 1e9;
	struct pdi_objcache_stats oc;
	struct pdi_json j;
	char *text = NULL;

	pdi_objcache_stats(d->objs, &oc);
	for (unsigned i = 0; i < d->reg.ntasks; i++) {
		struct pdi_task *t = d->reg.tasks[i];
		lost += task_lost(d, t);
		model_bytes += t->model.bytes;
		running_tasks += t->state == PDI_TASK_RUNNING;
	}
	for (unsigned i = 0; i < d->reg.nsteps; i++)
		running_steps += !strcmp(step_state(d->reg.steps[i]), "running");
	if (!json) {
		char site[768];
		struct pdi_hang_numbers h;

		pdi_site_store_status_line(d, site, sizeof(site));
		pdi_hang_numbers(d, &h);
		if (asprintf(&text,
			     "pdimond %s, up %.0f s\n"
			     "steps:       %u (%u running)\n"
			     "tasks:       %u (%u running)\n"
			     "events:      %" PRIu64 " (%.0f/s), %" PRIu64 " lost\n"
			     "memory:      %zu KiB resident, %" PRIu64 " KiB in models\n"
			     "objects:     %zu open (%" PRIu64 " MiB of files), %" PRIu64 " closed to stay within limits\n"
			     "health:      %u ok, %u slow, %u hung; %" PRIu64 " hung and %" PRIu64 " slow announced\n%s",
			     PDI_VERSION, uptime, d->reg.nsteps, running_steps, d->reg.ntasks, running_tasks,
			     d->events, d->events_per_s, lost, rss_bytes() / 1024, model_bytes / 1024, oc.objects,
			     oc.bytes >> 20, oc.evicted, h.by_health[0], h.by_health[1], h.by_health[2],
			     h.alarms[PDI_HEALTH_HUNG], h.alarms[PDI_HEALTH_SLOW], site) < 0)
			return NULL;
		return text;
	}
	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_kv_str(&j, "version", PDI_VERSION);
	pdi_json_kv_double(&j, "uptime_s", uptime);
	pdi_json_kv_uint(&j, "steps", d->reg.nsteps);
	pdi_json_kv_uint(&j, "steps_running", running_steps);
	pdi_json_kv_uint(&j, "tasks", d->reg.ntasks);
	pdi_json_kv_uint(&j, "tasks_running", running_tasks);
	pdi_json_kv_uint(&j, "events", d->events);
	pdi_json_kv_double(&j, "events_per_s", d->events_per_s);
	pdi_json_kv_uint(&j, "events_lost", lost);
	pdi_json_kv_uint(&j, "memory_rss_bytes", rss_bytes());
	pdi_json_kv_uint(&j, "memory_model_bytes", model_bytes);
	pdi_json_kv_uint(&j, "objects_open", oc.objects);
	pdi_json_kv_uint(&j, "objects_bytes", oc.bytes);
	pdi_json_kv_uint(&j, "objects_evicted", oc.evicted);
	pdi_hang_status_json(d, &j);
	pdi_json_kv_int(&j, "pid", getpid());
	status_loop(&j, d);
	pdi_site_store_status(d, &j);
	pdi_json_obj_end(&j);
	return pdi_json_steal(&j);
}

static void step_row(struct pdi_json *j, bool json, const struct pdi_step_row *r)
{
	if (!json) {
		char when[32];
		struct tm tm;

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&r->started, &tm));
		pdi_json_printf(j, "%-24s %-8s %-6s %8u %6u %7u %s", r->name, r->state, r->health ? r->health : "-", r->uid,
				r->ntasks, r->running, when);
		if (r->health_since) {
			strftime(when, sizeof(when), "%H:%M:%S", localtime_r(&r->health_since, &tm));
			pdi_json_printf(j, "  (%s since %s)", r->health, when);
		}
		pdi_json_printf(j, "\n");
		return;
	}
	pdi_json_obj_begin(j);
	pdi_json_kv_str(j, "step", r->name);
	pdi_json_kv_str(j, "state", r->state);
	pdi_json_kv_uint(j, "uid", r->uid);
	pdi_json_kv_uint(j, "job_id", r->job_id);
	pdi_json_kv_uint(j, "step_id", r->step_id);
	pdi_json_kv_uint(j, "tasks", r->ntasks);
	pdi_json_kv_uint(j, "tasks_running", r->running);
	pdi_json_kv_int(j, "started", r->started);
	pdi_json_key(j, "ended");
	if (r->ended)
		pdi_json_int(j, r->ended);
	else
		pdi_json_null(j);
	if (r->health)
		pdi_json_kv_str(j, "health", r->health);
	if (r->health && r->health_since)
		pdi_json_kv_int(j, "health_since", r->health_since);
	pdi_json_obj_end(j);
}

char *pdi_show_steps(struct pdi_daemon *d, bool json, uid_t owner, const struct pdi_step_row *more,
		     size_t nmore)
{
	struct pdi_json j;

	pdi_json_init(&j);
	if (json)
		pdi_json_arr_begin(&j);
	else
		pdi_json_printf(&j, "%-24s %-8s %-6s %8s %6s %7s %s\n", "STEP", "STATE", "HEALTH", "UID", "TASKS", "RUNNING",
				"STARTED");
	for (unsigned i = 0; i < d->reg.nsteps; i++) {
		const struct pdi_step *s = d->reg.steps[i];
		struct pdi_step_row r = {.name = s->name, .state = step_state(s), .uid = s->uid, .job_id = s->job_id,
					 .step_id = s->step_id, .ntasks = s->ntasks,
					 .running = pdi_step_running_tasks(s), .started = s->started, .ended = s->ended};
		enum pdi_health health = pdi_step_health_of(s, &r.health_since);

		r.health = pdi_health_names[health];

		if (owner == (uid_t)-1 || s->uid == owner)
			step_row(&j, json, &r);
	}
	for (size_t i = 0; i < nmore; i++)
		if (owner == (uid_t)-1 || more[i].uid == owner)
			step_row(&j, json, &more[i]);
	if (json)
		pdi_json_arr_end(&j);
	return pdi_json_steal(&j);
}

/* Where the task is now (view_local.c's one definition): inside an MPI call, with the ranks
 * it waits for (its peer argument, or the peers of the requests it completes), or computing
 * after one; and what the node's kernel says it is doing. */
static void json_current(struct pdi_daemon *d, struct pdi_json *j, struct pdi_task *t)
{
	const struct pdi_step *s = t->step;
	struct pdi_where w;
	bool inside;

	pdi_task_locate(d, t, &w);
	inside = t->state == PDI_TASK_RUNNING && (w.kind == PDI_WHERE_IN_MPI || w.kind == PDI_WHERE_BLOCKED);
	pdi_json_key(j, "current");
	pdi_json_obj_begin(j);
	if (inside) {
		pdi_json_kv_str(j, "in_mpi", w.site >= 0 ? pdi_mpi_funcs[s->sites[w.site].fn].name : w.text);
		if (w.site >= 0)
			pdi_json_kv_str(j, "site", s->sites[w.site].name);
		pdi_json_key(j, "peers");
		pdi_json_arr_begin(j);
		for (unsigned i = 0; i < w.npeers; i++)
			pdi_json_int(j, w.peers[i]);
		pdi_json_arr_end(j);
		pdi_json_kv_int(j, "tid", w.tid);
		pdi_json_kv_uint(j, "for_ns", w.for_ns);
	} else if (t->model.started) {
		pdi_json_kv_str(j, "computing_after", pdi_site_name(s->sites, s->nsites, t->model.last_site));
		pdi_json_kv_uint(j, "for_ns", w.kind == PDI_WHERE_COMPUTING ? w.for_ns : 0);
	}
	if (t->ended_in) {
		pdi_json_kv_str(j, "ended_in_mpi", t->ended_in);
	}
	pdi_json_kv_str(j, "activity", pdi_activity_names[w.act.kind]);
	pdi_json_obj_end(j);
}

static void json_sites(struct pdi_json *j, const struct pdi_step *s)
{
	pdi_json_key(j, "sites");
	pdi_json_arr_begin(j);
	for (uint32_t i = 0; i < s->nsites; i++) {
		const struct pdi_site *x = &s->sites[i];

		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "name", x->name);
		pdi_json_kv_str(j, "function", pdi_mpi_funcs[x->fn].name);
		pdi_json_kv_str(j, "caller", x->caller);
		pdi_json_kv_str(j, "file", x->file);
		pdi_json_kv_int(j, "line", x->line);
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
}

/* Phase INDEX's share of the kernel's counts, when both its readings were taken. */
static void json_phase_usage(struct pdi_json *j, const struct pdi_model *m, uint32_t index)
{
	struct pdi_phase_usage u;

	if (!pdi_model_phase_usage(m, index, &u))
		return;
	pdi_json_key(j, "usage");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "wall_ns", u.wall_ns);
	pdi_json_kv_uint(j, "cpu_ns", u.cpu_ns);
	pdi_json_kv_uint(j, "wait_ns", u.wait_ns);
	pdi_json_kv_uint(j, "held_ns", u.held_ns);
	pdi_json_obj_end(j);
}

static void json_phase(struct pdi_json *j, const struct pdi_step *s, const struct pdi_model *m, const struct pdi_phase *p,
		       unsigned index)
{
	char from[1100], to[1100];

	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "index", index);
	pdi_json_kv_uint(j, "duration_ns", p->t_end - p->t_start);
	pdi_json_kv_uint(j, "t_start_ns", p->t_start); /* CLOCK_MONOTONIC, as the BPF timestamps */
	pdi_json_kv_uint(j, "t_end_ns", p->t_end);
	pdi_json_kv_int(j, "wall_start_ns", pdi_phase_wall_ns(m, p->t_start)); /* since the epoch */
	pdi_json_kv_int(j, "wall_end_ns", pdi_phase_wall_ns(m, p->t_end));
	pdi_json_kv_uint(j, "first_collective", p->first_collective);
	json_phase_usage(j, m, index);
	pdi_json_key(j, "states");
	pdi_json_arr_begin(j);
	for (uint32_t i = 0; i < p->nstates; i++) {
		pdi_state_name(s->sites, s->nsites, p->states[i].key, from, sizeof(from));
		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "name", from);
		pdi_json_kv_str(j, "kind", pdi_state_is_comp(p->states[i].key) ? "computation" : "communication");
		pdi_json_kv_uint(j, "visits", p->states[i].visits);
		if (!pdi_state_is_comp(p->states[i].key)) {
			pdi_json_kv_uint(j, "bytes", p->states[i].bytes);
		}
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
	pdi_json_key(j, "transitions");
	pdi_json_arr_begin(j);
	for (uint32_t i = 0; i < p->nedges; i++) {
		const struct pdi_edge *e = &p->edges[i];

		pdi_state_name(s->sites, s->nsites, p->states[e->from].key, from, sizeof(from));
		pdi_state_name(s->sites, s->nsites, p->states[e->to].key, to, sizeof(to));
		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "from", from);
		pdi_json_kv_str(j, "to", to);
		pdi_json_kv_uint(j, "count", e->time.n);
		pdi_json_kv_double(j, "mean_ns", e->time.mean);
		pdi_json_kv_double(j, "stddev_ns", pdi_gauss_stddev(&e->time));
		pdi_json_key(j, "histogram");
		pdi_json_arr_begin(j);
		for (unsigned b = 0; b < e->hist.n; b++) {
			pdi_json_arr_begin(j);
			pdi_json_double(j, e->hist.mean[b]);
			pdi_json_uint(j, e->hist.count[b]);
			pdi_json_arr_end(j);
		}
		pdi_json_arr_end(j);
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
}

/* How the task's call sites were found past MPI bindings and libraries (callchain.h). */
static void json_call_sites(struct pdi_json *j, const struct pdi_task *t)
{
	struct pdi_chain_stats st;

	pdi_chains_stats(t, &st);
	pdi_json_key(j, "call_sites");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "hopped_ranges", st.ranges);
	pdi_json_kv_uint(j, "hops", st.hops);
	pdi_json_kv_uint(j, "hops_refused", st.refused);
	pdi_json_kv_uint(j, "stacks_read", st.frames);
	pdi_json_kv_uint(j, "unresolved", st.unresolved);
	pdi_json_obj_end(j);
}

/* The overhead budget's view of a running task: its probes' estimated cost and the levels of
 * the functions it degraded (budget.h). */
static void json_budget(struct pdi_daemon *d, struct pdi_json *j, const struct pdi_task *t)
{
	const struct pdi_budget_task *b = t->budget;
	char buf[32];

	pdi_json_key(j, "budget");
	if (!b) {
		pdi_json_null(j);
		return;
	}
	pdi_json_obj_begin(j);
	pdi_json_kv_double(j, "max_overhead_pct", d->cfg.max_overhead_pct);
	pdi_json_kv_double(j, "cost_pct", b->cost * 100);
	pdi_json_kv_double(j, "cpu_share", b->cpu_share); /* its hits cost it 1/cpu_share more */
	pdi_json_key(j, "degraded");
	pdi_json_arr_begin(j);
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		if (b->fn[fn].level) {
			pdi_json_obj_begin(j);
			pdi_json_kv_str(j, "function", pdi_mpi_funcs[fn].name);
			pdi_json_kv_str(j, "level", pdi_budget_level_name(b->fn[fn].level, buf, sizeof(buf)));
			/* the level is its step's on this node; what this task's own cost needs */
			pdi_json_kv_str(j, "needs", pdi_budget_level_name(b->fn[fn].need, buf, sizeof(buf)));
			pdi_json_kv_double(j, "rate_per_s", b->fn[fn].rate);
			/* the level earlier runs of its program left, not changed since (budget_learn.h) */
			pdi_json_kv_bool(j, "from_earlier_runs", b->fn[fn].learned);
			pdi_json_obj_end(j);
		}
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
}

static void json_task(struct pdi_daemon *d, struct pdi_json *j, struct pdi_task *t)
{
	const struct pdi_model *m = &t->model;
	uint64_t lost = task_lost(d, t);

	pdi_json_obj_begin(j);
	pdi_json_kv_int(j, "rank", t->rank);
	pdi_json_kv_int(j, "pid", t->pid);
	pdi_json_kv_str(j, "state", task_state(t));
	pdi_json_kv_str(j, "mpi_library", t->att.object);
	pdi_json_kv_uint(j, "calls", m->calls);
	pdi_json_kv_uint(j, "events_lost", lost);
	pdi_json_kv_bool(j, "incomplete", pdi_model_incomplete(m, lost));
	pdi_json_key(j, "dropped");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "states", m->dropped_states);
	pdi_json_kv_uint(j, "transitions", m->dropped_edges);
	pdi_json_kv_uint(j, "requests", m->dropped_requests);
	pdi_json_kv_uint(j, "sites", t->dropped_sites);
	pdi_json_kv_uint(j, "phase_cuts", m->folded_phase_cuts);
	pdi_json_obj_end(j);
	pdi_json_kv_uint(j, "phases_merged", m->merged_phases); /* to fit max_task_memory or max_phases */
	/* how its automatic phases are cut, and the instant that chose it (wall-clock-phases.md) */
	pdi_json_kv_str(j, "phases_cut_on", m->saw_pcontrol ? "pcontrol" : m->slots ? "wall_clock" : "collectives");
	pdi_json_kv_int(j, "wall_clock_from_ns", m->cfg.auto_slots_from_ns);
	json_call_sites(j, t);
	pdi_json_kv_uint(j, "model_bytes", m->bytes);
	json_budget(d, j, t);
	pdi_unobserved_json(&m->unobserved, j, pdi_mpi_func_name);
	json_current(d, j, t);
	pdi_json_key(j, "phases");
	pdi_json_arr_begin(j);
	for (uint32_t i = 0; i < m->nphases; i++)
		json_phase(j, t->step, m, &m->phases[i], i);
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
}

static char *step_json(struct pdi_daemon *d, const struct pdi_step *s)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_kv_str(&j, "step", s->name);
	pdi_json_kv_str(&j, "state", step_state(s));
	pdi_json_kv_uint(&j, "uid", s->uid);
	pdi_json_kv_str(&j, "phases_from", s->ntasks && s->tasks[0]->model.saw_pcontrol ? "pcontrol" : "auto");
	pdi_json_kv_str(&j, "cgroup", pdi_step_group_path(s)); /* its own, whose CPU is read: "" none */
	pdi_json_key(&j, "tasks");
	pdi_json_arr_begin(&j);
	for (unsigned i = 0; i < s->ntasks; i++)
		json_task(d, &j, s->tasks[i]);
	pdi_json_arr_end(&j);
	json_sites(&j, s);
	pdi_step_health_json(s, &j);
	pdi_json_obj_end(&j);
	return pdi_json_steal(&j);
}

static const char *human_ns(double ns, char *buf, size_t len)
{
	if (ns >= 1e9)
		snprintf(buf, len, "%.2fs", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, len, "%.2fms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else
		snprintf(buf, len, "%.0fns", ns);
	return buf;
}

/* One line: where the task is now, or where it was when it ended. */
static void text_current(struct pdi_daemon *d, struct pdi_json *j, struct pdi_task *t)
{
	struct pdi_where w;
	char dur[32];

	pdi_task_locate(d, t, &w);
	if (t->state == PDI_TASK_RUNNING && (w.kind == PDI_WHERE_IN_MPI || w.kind == PDI_WHERE_BLOCKED))
		pdi_json_printf(j, "  now: inside %s for %s\n", w.text, human_ns((double)w.for_ns, dur, sizeof(dur)));
	else if (t->state == PDI_TASK_RUNNING && w.kind == PDI_WHERE_COMPUTING)
		pdi_json_printf(j, "  now: computing %s for %s\n", w.text, human_ns((double)w.for_ns, dur, sizeof(dur)));
	else if (t->ended_in)
		pdi_json_printf(j, "  ended inside %s\n", t->ended_in);
}

/* Its health, when it is not ok, and what was done about it. */
static void text_health(struct pdi_json *j, const struct pdi_step *s)
{
	time_t since;
	enum pdi_health h = pdi_step_health_of(s, &since);
	char when[32];
	struct tm tm;

	if (h == PDI_HEALTH_OK)
		return;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&since, &tm));
	pdi_json_printf(j, "health: %s since %s\n", pdi_health_names[h], when);
}

static char *step_text(struct pdi_daemon *d, const struct pdi_step *s)
{
	char from[1100], to[1100], mean[32], sd[32];
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_printf(&j, "step %s: %s, %u tasks\n", s->name, step_state(s), s->ntasks);
	text_health(&j, s);
	for (unsigned i = 0; i < s->ntasks; i++) {
		struct pdi_task *t = s->tasks[i];
		uint64_t lost = task_lost(d, t);

		pdi_json_printf(&j, "\nrank %d (pid %d, %s): %" PRIu64 " calls, %u phases%s", t->rank, (int)t->pid, task_state(t),
		    t->model.calls, t->model.nphases, lost ? "" : "\n");
		if (lost)
			pdi_json_printf(&j, ", %" PRIu64 " events lost: model incomplete\n", lost);
		for (uint32_t k = 0; k < t->model.unobserved.n; k++) {
			const struct pdi_unobserved *u = &t->model.unobserved.v[k];
			char share[32] = "";

			if (u->level == PDI_UNOBS_SAMPLED)
				snprintf(share, sizeof(share), " 1/%u", 1u << u->duty_log2);
			pdi_json_printf(&j, "  overhead budget: %s %s%s from +%.3f s%s", u->fn == PDI_UNOBSERVED_ALL ? "all functions" : pdi_mpi_func_name(u->fn),
					pdi_unobserved_level_name(u->level), share, (double)(u->t_start - d->started_ns) / 1e9,
					u->t_end ? "" : " (still)");
			if (u->t_end)
				pdi_json_printf(&j, " to +%.3f s", (double)(u->t_end - d->started_ns) / 1e9);
			if (u->rate)
				pdi_json_printf(&j, ": %u calls/s would cost %.1f%% of its time", u->rate, (double)u->cost_ppm / 1e4);
			else if (u->from_earlier_runs)
				pdi_json_printf(&j, ": %s", PDI_UNOBSERVED_EARLIER_RUNS);
			pdi_json_printf(&j, "\n");
		}
		text_current(d, &j, t);
		for (uint32_t k = 0; k < t->model.nphases; k++) {
			const struct pdi_phase *p = &t->model.phases[k];

			pdi_json_printf(&j, "  phase %u (%s)\n", k, human_ns((double)(p->t_end - p->t_start), mean, sizeof(mean)));
			for (uint32_t e = 0; e < p->nedges; e++) {
				const struct pdi_edge *x = &p->edges[e];

				pdi_state_name(s->sites, s->nsites, p->states[x->from].key, from, sizeof(from));
				pdi_state_name(s->sites, s->nsites, p->states[x->to].key, to, sizeof(to));
				pdi_json_printf(&j, "    %-40s => %-40s x%-6" PRIu64 " %s ± %s\n", from, to, x->time.n,
				    human_ns(x->time.mean, mean, sizeof(mean)),
				    human_ns(pdi_gauss_stddev(&x->time), sd, sizeof(sd)));
			}
		}
	}
	return pdi_json_steal(&j);
}

static char *step_dot(const struct pdi_step *s)
{
	char from[1100], mean[32];
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_printf(&j, "digraph \"");
	pdi_dot_escaped(&j, s->name);
	pdi_json_printf(&j, "\" {\n  node [shape=box, fontsize=10];\n");
	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct pdi_task *t = s->tasks[i];

		for (uint32_t k = 0; k < t->model.nphases; k++) {
			const struct pdi_phase *p = &t->model.phases[k];

			pdi_json_printf(&j, "  subgraph \"cluster_r%d_p%u\" {\n    label=\"rank %d, phase %u\";\n", t->rank, k, t->rank, k);
			for (uint32_t n = 0; n < p->nstates; n++) {
				pdi_state_name(s->sites, s->nsites, p->states[n].key, from, sizeof(from));
				pdi_json_printf(&j, "    \"r%d_p%u_s%u\" [label=\"", t->rank, k, n);
				pdi_dot_escaped(&j, from);
				pdi_json_printf(&j, "\"%s];\n", pdi_state_is_comp(p->states[n].key) ? ", style=dashed" : "");
			}
			for (uint32_t e = 0; e < p->nedges; e++) {
				const struct pdi_edge *x = &p->edges[e];
				pdi_json_printf(&j, "    \"r%d_p%u_s%u\" -> \"r%d_p%u_s%u\" [label=\"%" PRIu64 " / %s\"];\n", t->rank, k,
				    x->from, t->rank, k, x->to, x->time.n, human_ns(x->time.mean, mean, sizeof(mean)));
			}
			pdi_json_printf(&j, "  }\n");
		}
	}
	pdi_json_printf(&j, "}\n");
	return pdi_json_steal(&j);
}

char *pdi_show_step(struct pdi_daemon *d, const struct pdi_step *s, const char *format)
{
	if (!strcmp(format, "json"))
		return step_json(d, s);
	if (!strcmp(format, "dot"))
		return step_dot(s);
	return step_text(d, s);
}

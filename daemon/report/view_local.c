/* SPDX-License-Identifier: GPL-2.0-only */
/* view_local.c -- this daemon's view of one of its steps (view_local.h): its tasks and where
 * each one is now (or was when it ended). The live call stacks of the blocked ones are taken
 * the way STAT does, off the loop, on a copy of this view (snapshot.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "ingest.h"
#include "log.h"
#include "mpi_funcs.h"
#include "site_warm.h"
#include "sites.h"
#include "task_activity.h"
#include "tracer.h"
#include "view_local.h"

/* Since when task T has been polling in MPI without progress (the hang judge's), 0: not. */
static uint64_t polling_since(const struct pdi_daemon *d, const struct pdi_task *t)
{
	for (unsigned i = 0; i < t->step->ntasks; i++)
		if (t->step->tasks[i] == t)
			return d->up->hang_polling_since(t->step, i);
	return 0;
}

/* A task that has polled (Test, Iprobe) without progress past what the step makes plausible
 * is blocked, as if in one call: PDI and the verdict take it so, at the site it polls at. */
static void blocked_polling(struct pdi_daemon *d, struct pdi_task *t, uint64_t now, unsigned fn, struct pdi_where *w)
{
	uint64_t since = pdi_fn_polls(fn) ? polling_since(d, t) : 0;

	uint64_t after = d->up->hang_blocked_after_ns(d, t->step);

	/* between two polls a task computes for microseconds: one that computes longer than a
	 * wait would be blocked has left the loop (it spins in its own code) */
	if (!since || now <= since || now - since < after || (w->kind == PDI_WHERE_COMPUTING && w->for_ns >= after))
		return;
	w->kind = PDI_WHERE_BLOCKED;
	w->for_ns = now - since;
	if (!strncmp(w->text, "after ", 6))
		memmove(w->text, w->text + 6, strlen(w->text + 6) + 1);
	snprintf(w->text + strlen(w->text), sizeof(w->text) - strlen(w->text), " (polling)");
}

void pdi_task_locate(struct pdi_daemon *d, struct pdi_task *t, struct pdi_where *w)
{
	struct pdi_step *s = t->step;
	struct pdi_inflight f;
	pid_t tid;
	uint32_t site;
	uint64_t now = pdi_now_ns();

	*w = (struct pdi_where){.site = -1};
	if (t->state == PDI_TASK_RUNNING && pdi_tracer_inflight(d->tracer, t->pid, &t->att, &f, &tid, 1) == 1) {
		unsigned fn = PDI_COOKIE_FN(f.cookie);
		/* inside MPI for a moment is what MPI programs do; past what the step's own history
		 * makes plausible it is a hang suspect (the hang judge's) */
		w->for_ns = now > f.t_enter ? now - f.t_enter : 0;
		w->kind = w->for_ns >= d->up->hang_blocked_after_ns(d, s) ? PDI_WHERE_BLOCKED : PDI_WHERE_IN_MPI;
		w->callsite = f.callsite;
		w->tid = tid;
		if (pdi_site_warm_inflight(d, t, &f, tid, &site) == 0) {
			snprintf(w->text, sizeof(w->text), "%s", s->sites[site].name);
			w->site = site;
		} else {
			snprintf(w->text, sizeof(w->text), "%s", fn < pdi_mpi_nfuncs ? pdi_mpi_funcs[fn].name : "?");
		}
		w->npeers = pdi_task_peers(t, &f, w->peers, ELEMENTSOF(w->peers));
		pdi_task_activity_read(t, tid, now, &w->act);
		if (w->kind == PDI_WHERE_IN_MPI)
			blocked_polling(d, t, now, fn, w);
	} else if (t->ended_in) {
		w->kind = PDI_WHERE_BLOCKED;
		w->site = t->ended_site;
		snprintf(w->text, sizeof(w->text), "%s", t->ended_in);
		memcpy(w->peers, t->ended_peers, sizeof(w->peers));
		w->npeers = t->nended_peers;
	} else if (!t->model.started) {
		w->kind = PDI_WHERE_NO_MPI;
	} else if (pdi_mpi_funcs[t->model.last_fn].cls == PDI_FC_FINALIZE) {
		w->kind = PDI_WHERE_FINISHED;
	} else {
		w->kind = PDI_WHERE_COMPUTING;
		w->site = t->model.last_site;
		snprintf(w->text, sizeof(w->text), "after %s", s->sites[t->model.last_site].name);
		if (t->state == PDI_TASK_RUNNING && now > t->model.last_exit)
			w->for_ns = now - t->model.last_exit;
		if (t->state == PDI_TASK_RUNNING) {
			pdi_task_activity_read(t, t->pid, now, &w->act);
			blocked_polling(d, t, now, t->model.last_fn, w); /* between two polls */
		}
	}
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

/* A task ready but waiting for a CPU most of the time is starved by interference only when
 * its peers are not: on a node busier than its cores, every rank of the step waits alike, and
 * the one that spins or is stopped must not be called a victim of interference for it. */
static void peers_starve_alike(struct pdi_view *v)
{
	int *waits = malloc((v->ntasks + 1) * sizeof(*waits)), median; /* a task count: not on the stack */
	size_t n = 0;

	if (!waits)
		return; /* a starved task stays called starved */
	for (unsigned i = 0; i < v->ntasks; i++)
		if (v->tasks[i].running && v->tasks[i].where.act.wait_pct >= 0)
			waits[n++] = v->tasks[i].where.act.wait_pct;
	if (n < 2) {
		free(waits);
		return;
	}
	qsort(waits, n, sizeof(*waits), cmp_int);
	median = waits[n / 2];
	free(waits);
	for (unsigned i = 0; i < v->ntasks; i++) {
		struct pdi_task_activity *a = &v->tasks[i].where.act;

		if (a->kind == PDI_ACT_STARVED && 2 * a->wait_pct < 3 * median)
			a->kind = PDI_ACT_RUNNING;
	}
}

void pdi_view_mark_hung(const struct pdi_daemon *d, const struct pdi_step *s, struct pdi_view *v)
{
	time_t since, now = time(NULL);

	if (v->running && d->up->step_health_of(s, &since) == PDI_HEALTH_HUNG && since) {
		v->hung = true;
		v->hung_for_ns = now > since ? (uint64_t)(now - since) * 1000000000ull : 0;
	}
}

int pdi_view_local(struct pdi_daemon *d, struct pdi_step *s, struct pdi_view *ret)
{
	struct pdi_view v = {.job_id = s->job_id, .step_id = s->step_id, .uid = s->uid, .running = pdi_step_running(s),
			     .started = s->started, .ended = s->ended, .ntasks = s->ntasks, .nodes = 1,
			     .nodes_answered = 1, .expected_tasks = s->total_tasks};
	int64_t wall_offset;

	v.name = strdup(s->name);
	v.tasks = calloc(s->ntasks + 1, sizeof(*v.tasks));
	if (!v.name || !v.tasks) {
		pdi_view_done(&v);
		return -ENOMEM;
	}
	(void)pdi_tracer_drain(d->tracer);
	/* the models' times are this node's CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	wall_offset = pdi_wall_offset_ns();
	for (unsigned i = 0; i < s->ntasks; i++) {
		struct pdi_task *t = s->tasks[i];
		struct pdi_view_task *vt = &v.tasks[i];

		*vt = (struct pdi_view_task){.rank = t->rank, .pid = t->pid, .running = t->state == PDI_TASK_RUNNING,
					     .model = &t->model, .gap = t->gap, .wall_offset_ns = wall_offset};
		vt->lost = vt->running ? pdi_tracer_lost(d->tracer, t->pid) : t->lost;
		pdi_task_usage_read(t, 0, pdi_now_ns()); /* the current phase's share so far */
		pdi_task_locate(d, t, &vt->where);
		if (vt->where.site >= 0)
			vt->progress = pdi_model_visits(&t->model, pdi_state_comm((uint32_t)vt->where.site));
	}
	peers_starve_alike(&v);
	pdi_view_mark_hung(d, s, &v);
	/* last: draining and locating name new sites, and the array moves when it grows */
	v.sites = s->sites;
	v.nsites = s->nsites;
	*ret = v;
	return 0;
}


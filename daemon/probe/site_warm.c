/* SPDX-License-Identifier: GPL-2.0-only */
/* site_warm.c -- a task's calls wait while a worker reads what their site's first name needs
 * (site_warm.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "held_queue.h"
#include "ingest.h"
#include "log.h"
#include "mpi_funcs.h"
#include "objwarm.h"
#include "site_warm.h"
#include "sites.h"
#include "u64map.h"
#include "worker.h"

/* Calls waiting, all tasks together (about 200 bytes each): a worker reads an object in tens to
 * hundreds of ms, while a rank makes up to ~100,000 calls a second. Past it the task's calls are
 * taken in on the loop, the read going on for the cache. */
#define HELD_MAX 16384
/* Reads per task: a site whose object a worker could not read (replaced, unreadable) is named on
 * the loop at the next try, rather than sent to a worker again and again. A compile unit's line
 * table is a read too, and a program's sites fall in many units (one per Fortran module). */
#define WARMS_PER_TASK 64

struct held {
	struct pdi_event e;
	struct pdi_chain ch;
};

struct warm_job {
	struct pdi_job job;
	struct pdi_daemon *d;     /* done() only: the loop's */
	pid_t pid;                /* its task, found again in done() */
	struct pdi_objwarm *warm; /* what the worker reads */
	uint64_t queued_ns, run_ns;
};

/* A task's calls waiting for JOB. */
struct pdi_site_hold {
	struct warm_job *job;
	struct pdi_held_queue calls; /* of struct held */
};

static void warm_run(struct pdi_job *pj)
{
	struct warm_job *j = pdi_job_of(pj, struct warm_job, job);

	j->run_ns = pdi_now_ns();
	pdi_objwarm_run(j->warm);
	j->run_ns = pdi_now_ns() - j->run_ns;
}

/* HOLD's calls taken in for T, in order, through pdi_site_warm_hold() unless FORCE (a later call
 * may need another read); HOLD is freed. */
static void take_in(struct pdi_daemon *d, struct pdi_task *t, struct pdi_site_hold *hold, bool force)
{
	void *calls;
	struct held *v;
	unsigned n;

	pdi_held_queue_take(&hold->calls, &d->site_held, &calls, &n);
	v = calls;
	free(hold);
	for (unsigned i = 0; i < n; i++)
		if (force || !pdi_site_warm_hold(d, t, &v[i].e, &v[i].ch))
			pdi_ingest_call(d, t, &v[i].e, &v[i].ch);
	free(v);
}

static void warm_done(struct pdi_job *pj, bool cancelled)
{
	struct warm_job *j = pdi_job_of(pj, struct warm_job, job);
	struct pdi_daemon *d = j->d;
	struct pdi_task *t = pdi_registry_find_task(&d->reg, j->pid);
	struct pdi_site_hold *hold = t && t->site_hold && t->site_hold->job == j ? t->site_hold : NULL;
	unsigned n = pdi_objwarm_commit(d->objs, j->warm);

	if (hold) {
		log_info("pid %d: %u objects read on a worker in %.1f ms for a call site's name; %u calls "
			  "waited %.1f ms%s", (int)j->pid, n, (double)j->run_ns / 1e6, hold->calls.n,
			  (double)(pdi_now_ns() - j->queued_ns) / 1e6, cancelled ? " (stopping)" : "");
		t->site_hold = NULL;
		take_in(d, t, hold, cancelled);
		/* its process exited meanwhile: it ends now, unless a later call waits for another read */
		if (t->exit_due && !t->site_hold)
			pdi_task_finish(d, t);
	}
	free(j);
}

/* A worker reads the mappings COLD of T, which naming a call's site needs; T's calls wait. False
 * when no worker takes it. */
static bool start(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_mapping *const *cold, unsigned ncold,
		  uint64_t line_at)
{
	/* the pool that reads a joining process's objects (objwarm.h), at the loop's priority */
	struct pdi_workers *pool = d->ahead_workers ? d->ahead_workers : d->workers;
	struct warm_job *j = calloc(1, sizeof(*j));
	struct pdi_site_hold *hold = calloc(1, sizeof(*hold));
	struct pdi_objwarm *warm = NULL;
	int r = !pool ? -ESHUTDOWN : j && hold ? pdi_objwarm_plan_lines(d->objs, t->pid, cold, ncold, line_at, &warm) : -ENOMEM;

	if (r == 0 && warm) {
		*j = (struct warm_job){.job = {.run = warm_run, .done = warm_done}, .d = d, .pid = t->pid,
				       .warm = warm, .queued_ns = pdi_now_ns()};
		r = pdi_workers_submit(pool, &j->job);
		if (r == 0) {
			hold->job = j;
			t->site_hold = hold;
			t->site_warms++;
			log_info("pid %d: a call site's first name waits for %u objects read on a worker%s", (int)t->pid,
				  ncold, line_at ? ", with its compile unit's line table" : "");
			return true;
		}
		pdi_objwarm_free(warm);
	}
	if (r < 0)
		log_debug("pid %d: naming a call site on the loop: %s", (int)t->pid, strerror(-r));
	free(hold);
	free(j);
	return false;
}

/* What naming the sites of T's call FN with chain CH needs read (pdi_site_cold()): first that of
 * MPI_Init, taken in before it when T joined stopped at its entry (ingest.c), then its own. */
static unsigned cold_before(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_chain *ch, uint16_t fn,
			    const struct pdi_mapping *ret_maps[2], uint64_t *ret_line_at)
{
	unsigned n = t->init_pending ? pdi_site_cold(t, d->objs, t->init_chain, t->init_call.fn, ret_maps, ret_line_at)
				     : 0;

	return n ? n : pdi_site_cold(t, d->objs, ch, fn, ret_maps, ret_line_at);
}

/* E and CH kept in T's hold. False (nothing kept) past HELD_MAX or out of memory. */
static bool keep(struct pdi_daemon *d, struct pdi_site_hold *hold, const struct pdi_event *e,
		 const struct pdi_chain *ch)
{
	struct held *h = pdi_held_queue_push(&hold->calls, sizeof(*h), &d->site_held, HELD_MAX);

	if (!h)
		return false;
	*h = (struct held){.e = *e, .ch = *ch};
	return true;
}

bool pdi_site_warm_hold(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_event *e,
			const struct pdi_chain *ch)
{
	const struct pdi_mapping *cold[2];
	uint64_t line_at;
	unsigned ncold;

	if (t->site_hold) {
		if (keep(d, t->site_hold, e, ch))
			return true;
		/* no more room: what waits is taken in first, on the loop, then E */
		pdi_site_warm_flush(d, t);
		return false;
	}
	if (t->site_warms >= WARMS_PER_TASK || d->site_held >= HELD_MAX || e->fn >= pdi_mpi_nfuncs)
		return false;
	ncold = cold_before(d, t, ch, e->fn, cold, &line_at);
	if (!ncold || !start(d, t, cold, ncold, line_at))
		return false;
	if (keep(d, t->site_hold, e, ch))
		return true;
	pdi_site_warm_flush(d, t);
	return false;
}

int pdi_site_warm_inflight(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_inflight *f, pid_t tid,
			   uint32_t *ret_site)
{
	const struct pdi_mapping *cold[2];
	uint64_t line_at = 0;
	struct pdi_chain ch;
	unsigned ncold;
	uint16_t fn;
	int r = pdi_inflight_chain(t, f, tid, &ch, &fn);

	if (r < 0)
		return r;
	if (pdi_site_known(t, &ch, fn) == PDI_U64MAP_NONE) {
		/* a read under way: it may be this site's */
		if (t->site_hold)
			return -EAGAIN;
		ncold = t->site_warms < WARMS_PER_TASK ? pdi_site_cold(t, d->objs, &ch, fn, cold, &line_at) : 0;
		if (ncold && start(d, t, cold, ncold, line_at))
			return -EAGAIN;
	}
	return pdi_site_lookup(t, d->objs, &ch, fn, ret_site);
}

void pdi_site_warm_flush(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_site_hold *hold = t->site_hold;

	if (!hold)
		return;
	t->site_hold = NULL; /* its job's done() finds no calls waiting for it */
	log_debug("pid %d: %u calls taken in before a worker read their site's objects", (int)t->pid, hold->calls.n);
	take_in(d, t, hold, true);
}

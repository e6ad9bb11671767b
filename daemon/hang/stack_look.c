/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_look.c -- live stacks of still tasks read on a worker for the hang judge
 * (stack_look.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "health_state.h"
#include "log.h"
#include "mpi_funcs.h"
#include "objcache.h"
#include "progress.h"
#include "registry.h"
#include "snapshot.h"
#include "stack_look.h"
#include "stack_place.h"
#include "worker.h"

/* One task to look at: which (by its step's index, pinned by its pid) and what its stack said. */
struct look {
	unsigned index;
	pid_t pid;
	int err;
	enum pdi_stack_placed kind;
	char fn[64];
	uint64_t t; /* when the walk ran (CLOCK_MONOTONIC) */
};

struct look_job {
	struct pdi_job job;
	struct pdi_daemon *d;
	char *step;     /* by name and start: the step may be gone, or run again, by then */
	time_t started;
	unsigned n;
	struct look looks[];
};

static void look_run(struct pdi_job *pj)
{
	struct look_job *j = pdi_job_of(pj, struct look_job, job);
	struct pdi_objcache *objs = NULL;
	int r = pdi_objcache_new(&objs);

	for (unsigned i = 0; i < j->n; i++) {
		struct look *l = &j->looks[i];
		struct pdi_stack_place p;

		l->t = pdi_now_ns();
		/* names only: its cache lives for this job, and the lines of libc's (compressed) debug
		 * file cost more CPU than the walks */
		l->err = r < 0 ? r : pdi_stack_place(l->pid, objs, false, &p);
		if (l->err < 0)
			continue;
		/* the judge needs the call's name only: the frames are the report's */
		l->kind = p.kind;
		snprintf(l->fn, sizeof(l->fn), "%s", p.fn);
		pdi_stack_place_done(&p);
	}
	pdi_objcache_free(objs);
}

/* What L found, kept with task T's model for the ended step's diagnosis (stack_seen.h): a
 * place, not an unknown. */
static void keep(struct pdi_task *t, const struct look *l)
{
	int fn = l->kind == PDI_PLACED_IN_CALL ? pdi_mpi_func_find(l->fn) : PDI_STACK_SEEN_OUTSIDE;

	if (l->err == 0 && l->kind != PDI_PLACED_UNKNOWN && fn >= 0)
		pdi_stack_seen_add(&t->model.stack_seen, (uint16_t)fn, l->t);
}

/* The answer for L into P: unknown when the walk failed or never ran. */
static void answer(struct pdi_task_progress *p, const struct look *l, bool ran)
{
	p->looking = false;
	p->look_kind = ran && l->err == 0 ? (uint8_t)l->kind : PDI_PLACED_UNKNOWN;
	snprintf(p->look_fn, sizeof(p->look_fn), "%s", p->look_kind == PDI_PLACED_IN_CALL ? l->fn : "");
}

static void look_done(struct pdi_job *pj, bool cancelled)
{
	struct look_job *j = pdi_job_of(pj, struct look_job, job);
	struct pdi_step *s = pdi_registry_find_step(&j->d->reg, j->step);
	struct pdi_task_progress *progress = NULL;
	unsigned n = 0;

	if (s && s->started == j->started)
		progress = pdi_step_health_progress(s, &n);
	for (unsigned i = 0; progress && i < j->n; i++) {
		const struct look *l = &j->looks[i];

		if (l->index >= n || l->index >= s->ntasks || s->tasks[l->index]->pid != l->pid)
			continue;
		answer(&progress[l->index], l, !cancelled);
		if (!cancelled)
			keep(s->tasks[l->index], l);
		log_debug("Step %s: rank %d, still and shown computing by its thinned probes, is %s%s by its stack%s%s",
			  s->name, s->tasks[l->index]->rank,
			  progress[l->index].look_kind == PDI_PLACED_IN_CALL	  ? "in "
			  : progress[l->index].look_kind == PDI_PLACED_OUTSIDE_MPI ? "outside MPI"
										   : "not placed",
			  progress[l->index].look_fn, l->err < 0 ? ": " : "", l->err < 0 ? strerror(-l->err) : "");
	}
	free(j->step);
	free(j);
}

void pdi_hang_stack_look(struct pdi_daemon *d, struct pdi_step *s, struct pdi_task_progress *progress, unsigned n)
{
	unsigned want = 0, k = 0;
	struct look_job *j;
	int r = -ENOMEM;

	for (unsigned i = 0; i < n && i < s->ntasks; i++)
		want += progress[i].look_wanted;
	if (!want)
		return;
	if (want > PDI_SNAPSHOT_MAX_WALKS)
		want = PDI_SNAPSHOT_MAX_WALKS;
	j = calloc(1, sizeof(*j) + want * sizeof(j->looks[0]));
	if (j && (j->step = strdup(s->name))) {
		j->job = (struct pdi_job){.run = look_run, .done = look_done};
		j->d = d;
		j->started = s->started;
		for (unsigned i = 0; i < n && i < s->ntasks && k < want; i++)
			if (progress[i].look_wanted)
				j->looks[k++] = (struct look){.index = i, .pid = s->tasks[i]->pid};
		j->n = k;
		r = d->workers ? pdi_workers_submit(d->workers, &j->job) : -ESHUTDOWN;
	}
	for (unsigned i = 0, l = 0; i < n && i < s->ntasks && l < want; i++) {
		struct pdi_task_progress *p = &progress[i];

		if (!p->look_wanted)
			continue;
		l++;
		p->look_wanted = false;
		p->look_calls = s->tasks[i]->model.calls;
		p->look_ns = pdi_now_ns();
		p->looking = r == 0;
		if (r < 0)
			answer(p, &(struct look){.err = r}, false);
	}
	if (r < 0) {
		log_debug("Step %s: cannot read the stacks of %u still task%s now: %s", s->name, want, want == 1 ? "" : "s",
			  strerror(-r));
		if (j)
			free(j->step);
		free(j);
	}
}

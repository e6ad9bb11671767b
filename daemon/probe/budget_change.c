/* SPDX-License-Identifier: GPL-2.0-only */
/* budget_change.c -- the overhead budget's probe changes: planned and switched on the loop,
 * attached on a worker (see budget_change.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "budget_change.h"
#include "clock.h"
#include "daemon.h"
#include "detach.h"
#include "ident.h"
#include "log.h"
#include "mpi_funcs.h"
#include "probe_change.h"
#include "registry.h"
#include "retired.h"
#include "worker.h"

/* Changes attached at once: each waits mostly for the kernel's dup_mmap_sem, which one attach
 * holds at a time, so more would only queue there (and hold a worker each). */
#define CHANGE_JOBS 4

struct change_job {
	struct pdi_job job;
	struct pdi_daemon *d;           /* done() only: the loop's */
	pid_t pid;
	uint32_t task_id;               /* with the pid: the task, not another that has its pid since */
	int pidfd;                      /* its process, an fd of the job's own (-1: none) */
	struct pdi_probe_change *c;
	uint8_t levels[PDI_LINK_GEN_FUNCS]; /* the budget's levels it was planned for */
	int result;                     /* of the attach */
	uint64_t submitted_ns, attach_ns; /* when it was handed over; how long its attach took */
};

bool pdi_budget_change_pending(const struct pdi_task *t)
{
	return t->budget && t->budget->changing;
}

/* On a worker: attach the links, unless the process has exited (its pid could be reused). */
static void change_run(struct pdi_job *pj)
{
	struct change_job *j = pdi_job_of(pj, struct change_job, job);

	if (pdi_pidfd_exited(j->pidfd)) {
		j->result = -ESRCH;
		return;
	}
	j->attach_ns = pdi_now_ns();
	j->result = pdi_probe_change_attach(j->c);
	j->attach_ns = pdi_now_ns() - j->attach_ns;
}

/* The task J was made for, if it still runs with its change in flight; else NULL. */
static struct pdi_task *job_task(const struct change_job *j)
{
	struct pdi_task *t = pdi_registry_find_task(&j->d->reg, j->pid);

	if (!t || t->id != j->task_id || t->state != PDI_TASK_RUNNING || !pdi_budget_change_pending(t))
		return NULL;
	return t;
}

/* Does the budget still hold, for every function J changes, the level J was planned for? A slice
 * that ended meanwhile is not a new decision: the next slot turns it off (without attaching). */
static bool still_wanted(const struct pdi_task *t, const struct change_job *j)
{
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		if (pdi_probe_change_mode(j->c, fn) != PDI_PROBE_KEEP && t->budget->fn[fn].level != j->levels[fn])
			return false;
	return true;
}

static void change_done(struct pdi_job *pj, bool cancelled)
{
	struct change_job *j = pdi_job_of(pj, struct change_job, job);
	struct pdi_daemon *d = j->d;
	struct pdi_task *t = job_task(j);
	int *fds = NULL, r = cancelled ? -ECANCELED : j->result;
	unsigned n = 0;

	d->budget_changing--;
	if (t)
		t->budget->changing = false;
	if (t && r == 0 && still_wanted(t, j)) {
		bool came_on[PDI_LINK_GEN_FUNCS];

		for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
			unsigned m = pdi_probe_change_mode(j->c, fn);

			came_on[fn] = m != PDI_PROBE_KEEP && m != PDI_PROBE_OFF &&
				      pdi_attachment_mode(&t->att, fn) == PDI_PROBE_OFF;
		}
		r = pdi_probe_change_commit(d->tracer, &t->att, j->c);
		for (unsigned fn = 0; r == 0 && fn < pdi_mpi_nfuncs; fn++)
			if (came_on[fn])
				t->budget->fn[fn].on_from_ns = pdi_now_ns();
		/* now, not at the next slot: until closed, the replaced links trap every call */
		pdi_retired_close(d, t);
		log_debug("pid %d: new probes attached in %.1f ms on a worker, switched %.1f ms after the change "
			  "was decided", (int)t->pid, (double)j->attach_ns / 1e6,
			  (double)(pdi_now_ns() - j->submitted_ns) / 1e6);
		if (r < 0)
			log_warning_errno_limited((uint64_t)t->pid, r, "pid %d: cannot switch to its new probes: %m",
						  (int)t->pid);
	} else {
		if (t)
			log_debug("pid %d: new probes given up (%s)", (int)t->pid,
				  r < 0 ? strerror(-r) : "the budget changed its mind");
		if (t && r < 0 && r != -ESRCH && r != -ECANCELED)
			log_warning_errno_limited((uint64_t)t->pid, r, "pid %d: cannot attach its new probes: %m",
						  (int)t->pid);
		pdi_probe_change_drop(j->c, t ? &t->att : NULL, &fds, &n);
		if (fds)
			pdi_detach_fds_later(d->workers, fds, n, &d->budget_closing);
	}
	if (j->pidfd >= 0)
		close(j->pidfd);
	free(j);
}

int pdi_budget_change(struct pdi_daemon *d, struct pdi_task *t, const uint8_t *modes)
{
	struct pdi_probe_change *c;
	struct change_job *j;
	int r;

	if (pdi_budget_change_pending(t))
		return -EBUSY;
	if ((r = pdi_probe_change_plan(d->tracer, &t->att, t->pid, modes, &c)) < 0 || !c)
		return r;
	if (!pdi_probe_change_needs_attach(c))
		return pdi_probe_change_commit(d->tracer, &t->att, c);
	j = d->budget_changing < CHANGE_JOBS && d->workers ? calloc(1, sizeof(*j)) : NULL;
	if (!j) {
		pdi_probe_change_drop(c, &t->att, NULL, NULL); /* nothing attached yet */
		return d->budget_changing < CHANGE_JOBS && d->workers ? -ENOMEM : -EBUSY;
	}
	*j = (struct change_job){.job = {.run = change_run, .done = change_done}, .d = d, .pid = t->pid,
				 .task_id = t->id, .c = c, .pidfd = -1,
				 .submitted_ns = pdi_now_ns()};
	if (t->pidfd >= 0)
		j->pidfd = fcntl(t->pidfd, F_DUPFD_CLOEXEC, 3);
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		j->levels[fn] = t->budget->fn[fn].level;
	if ((r = pdi_workers_submit(d->workers, &j->job)) < 0) {
		pdi_probe_change_drop(c, &t->att, NULL, NULL);
		if (j->pidfd >= 0)
			close(j->pidfd);
		free(j);
		return r == -ENOMEM ? r : -EBUSY;
	}
	d->budget_changing++;
	t->budget->changing = true;
	return 0;
}

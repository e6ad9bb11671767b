/* SPDX-License-Identifier: GPL-2.0-only */
/* ingest.c -- from BPF events to task models, and the life of a task.
 *
 * This is the daemon's hot path: per event one pid lookup, one call-site cache lookup
 * and the model update. Everything slow (symbols, maps) happens once per new site. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "budget.h"
#include "daemon.h"
#include "detach.h"
#include "step_end.h"
#include "log.h"
#include "mpi_funcs.h"
#include "program.h"
#include "sites.h"
#include "tracer.h"

static int32_t int_arg(const struct pdi_event *e, uint8_t pos)
{
	/* arguments past the sixth are not captured (the stack is read only for requests) */
	if (pos == 0 || pos > PDI_NARGS)
		return PDI_NO_PEER;
	return (int32_t)(uint32_t)e->args[pos - 1];
}

static void record(struct pdi_daemon *d, const struct pdi_task *t, const struct pdi_call *c)
{
	struct pdi_call_record rec = {.call = *c, .task = t->id};

	if (!d->record)
		return;
	if (fwrite(&rec, sizeof(rec), 1, d->record) != 1) {
		log_warning("Cannot write the recording, stopping it: %m");
		fclose(d->record);
		d->record = NULL;
	}
}

static int add_call(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_event *e)
{
	const struct pdi_mpi_func *f = &pdi_mpi_funcs[e->fn];
	struct pdi_call c = {
		.fn = e->fn,
		.t_enter = e->t_enter,
		.t_exit = e->t_exit,
		.peer = int_arg(e, f->peer_arg ? f->peer_arg : f->root_arg),
		.tag = int_arg(e, f->tag_arg),
		.req = e->req,
	};
	int r;

	if (f->count_arg && f->count_arg <= PDI_NARGS && f->type_arg && f->type_arg <= PDI_NARGS)
		c.bytes = (uint64_t)(uint32_t)e->args[f->count_arg - 1] * pdi_dtype_size(&t->att.dtypes, e->args[f->type_arg - 1]);

	r = pdi_site_lookup(t, d->objs, e->callsite, e->fn, &c.site);
	if (r < 0)
		return r;
	if (t->init_pending) {
		/* We attached while the process was stopped at MPI_Init's entry, too late
		 * for that call's return probe: its end is taken as the next call's start. */
		t->init_pending = false;
		t->init_call.t_exit = e->t_enter;
		record(d, t, &t->init_call);
		(void)pdi_model_add_call(&t->model, &t->init_call);
	}
	record(d, t, &c);
	return pdi_model_add_call(&t->model, &c);
}

static void on_init_trap(struct pdi_daemon *d, const struct pdi_event *e)
{
	struct pdi_watch *w = pdi_registry_find_watch(&d->reg, (pid_t)e->args[0]);
	struct pdi_step *s = w ? w->step : NULL;
	struct pdi_task *t;
	int r;

	/* a launcher's rank belongs to the watched process itself, not to its descendants */
	if (s && !pdi_registry_find_task(&d->reg, (pid_t)e->pid)) {
		pid_t root = w->root;

		r = pdi_task_begin(d, s, (pid_t)e->pid, root == (pid_t)e->pid ? w->rank : -1, &t);
		/* a registered task that joined is watched by its pidfd from now on */
		if (r == 0 && root == (pid_t)e->pid) {
			pdi_tracer_unwatch(d->tracer, root);
			pdi_registry_remove_watch(&d->reg, root);
		}
		if (r < 0)
			log_warning_errno(r, "Cannot monitor pid %u of step %s: %m", e->pid, s->name);
		else if (pdi_site_lookup(t, d->objs, e->callsite, e->fn, &t->init_call.site) == 0) {
			t->init_call.fn = e->fn;
			t->init_call.t_enter = e->t_enter;
			t->init_call.peer = PDI_NO_PEER;
			t->init_pending = true;
		}
	}
	/* stopped by the trap: whatever happened, let it go on */
	if (kill((pid_t)e->pid, SIGCONT) < 0 && errno != ESRCH)
		log_warning("Cannot continue pid %u: %m", e->pid);
}

int pdi_ingest_event(void *daemon, const struct pdi_event *e)
{
	struct pdi_daemon *d = daemon;
	struct pdi_task *t;

	if (e->kind == PDI_EV_INIT) {
		on_init_trap(d, e);
		return 0;
	}
	if (e->fn >= pdi_mpi_nfuncs)
		return 0;
	t = pdi_registry_find_task(&d->reg, (pid_t)e->pid);
	if (!t) {
		d->unknown_events++;
		return 0;
	}
	t->events++;
	d->events++;
	pdi_budget_hit(t->budget, e->fn);
	if (add_call(d, t, e) < 0)
		t->model.dropped_edges++;
	return 0;
}

int pdi_task_begin(struct pdi_daemon *d, struct pdi_step *s, pid_t pid, int rank, struct pdi_task **ret)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct pdi_attachment att = {0};
	struct pdi_task *t;
	int r, pidfd;

	/* pidfd first: from here on a recycled pid cannot fool us */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return errno == ESRCH || errno == EINVAL ? -ESRCH : -errno;
	r = pdi_tracer_attach(d->tracer, d->objs, pid, &att);
	if (r < 0) {
		close(pidfd);
		return r;
	}
	if (rank < 0)
		rank = pdi_proc_rank(pid);
	r = pdi_registry_add_task(&d->reg, s, pid, rank < 0 ? -1 : rank, &t);
	if (r < 0) {
		pdi_attachment_detach(&att);
		close(pidfd);
		return r;
	}
	t->att = att;
	t->pidfd = pidfd;
	if ((r = pdi_budget_task_begin(d, t)) < 0)
		log_warning_errno(r, "pid %d: no overhead budget for it: %m", (int)pid);
	ev.data.u64 = PDI_SRC(PDI_SRC_TASK, (uint32_t)pid); /* tasks move in the registry; pids do not */
	if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, pidfd, &ev) < 0) {
		r = -errno;
		pdi_registry_end_task(&d->reg, t);
		return r;
	}
	pdi_program_identify(d, s, pid);
	log_info("Monitoring pid %d as rank %d of step %s (%u probes in %s)", (int)pid, t->rank, s->name,
		 att.nprobes, att.object);
	*ret = t;
	return 0;
}

void pdi_task_finish(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_inflight f;
	pid_t tid;

	if (t->state == PDI_TASK_ENDED)
		return;
	/* its last events may still be in the ring buffer */
	(void)pdi_tracer_drain(d->tracer);
	t->lost = pdi_tracer_lost(d->tracer, t->pid);
	if (pdi_tracer_inflight(d->tracer, t->pid, &f, &tid, 1) == 1) {
		unsigned fn = PDI_COOKIE_FN(f.cookie);
		uint32_t site;

		/* the process is gone, but a site it blocked in was seen before: the cache knows it */
		if (fn < pdi_mpi_nfuncs && pdi_site_lookup(t, d->objs, f.callsite, (uint16_t)fn, &site) == 0) {
			t->ended_in = strdup(t->step->sites[site].name);
			t->ended_site = site;
		} else if (fn < pdi_mpi_nfuncs) {
			t->ended_in = strdup(pdi_mpi_funcs[fn].name);
		}
		t->nended_peers = pdi_task_peers(t, &f, t->ended_peers, ELEMENTSOF(t->ended_peers));
	}
	pdi_tracer_forget(d->tracer, t->pid);
	pdi_budget_task_end(d, t);
	pdi_detach_later(d->workers, &t->att);
	pdi_registry_end_task(&d->reg, t);
	log_info("Task pid %d (rank %d) of step %s ended%s%s", (int)t->pid, t->rank, t->step->name,
		 t->ended_in ? " inside " : "", t->ended_in ? t->ended_in : "");
	pdi_step_ended(d, t->step);
}

unsigned pdi_task_peers(const struct pdi_task *t, const struct pdi_inflight *f, int32_t *out, unsigned max)
{
	unsigned fn = PDI_COOKIE_FN(f->cookie), n = 0;
	const struct pdi_mpi_func *mf;

	if (fn >= pdi_mpi_nfuncs)
		return 0;
	mf = &pdi_mpi_funcs[fn];
	if (mf->peer_arg >= 1 && mf->peer_arg <= PDI_NARGS && n < max)
		out[n++] = (int32_t)(uint32_t)f->args[mf->peer_arg - 1];
	for (uint32_t i = 0; i < f->nreqs && i < PDI_NREQS && n < max; i++) {
		const struct pdi_request *rq = pdi_model_find_request(&t->model, pdi_inflight_req(f, i));

		if (rq && rq->peer != PDI_NO_PEER)
			out[n++] = rq->peer;
	}
	return n;
}

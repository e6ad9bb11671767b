/* SPDX-License-Identifier: GPL-2.0-only */
/* progress.c -- one task as the hang judge sees it (progress.h): its last progress from its
 * model and the in-flight map, what it does from /proc once it has been still a while. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "mpi_funcs.h"
#include "progress.h"
#include "sites.h"
#include "stack_place.h"
#include "task_activity.h"
#include "stack_seen.h"
#include "tracer.h"

#define NS 1000000000ull
/* /proc is read once a task has been still this long: before, it is busy by definition */
#define LOOK_AFTER_NS PDI_STACK_SEEN_STILL_NS
/* a task outside MPI using less CPU than this is not computing */
#define IDLE_CPU_PCT 5
/* I/O counters compare only with a look this recent (a look per tick) */
#define IO_FRESH_NS (3 * NS)
/* a stack that placed a still task is read again this often: it may have left the call
 * unseen and compute now (its probes still thinned) */
#define RELOOK_NS (3 * NS)

int pdi_proc_io(pid_t pid, uint64_t *ret)
{
	unsigned long long rchar, wchar;
	char buf[1024], *p;
	ssize_t n = pdi_task_proc_read(pid, pid, "io", buf, sizeof(buf));

	if (n <= 0)
		return n < 0 ? (int)n : -EBADMSG;
	if (!(p = strstr(buf, "rchar:")) || sscanf(p, "rchar: %llu wchar: %llu", &rchar, &wchar) != 2)
		return -EBADMSG;
	*ret = rchar + wchar;
	return 0;
}

/* The visits of the sites P polls at, added up. */
static uint64_t poll_visits(const struct pdi_model *m, const struct pdi_task_progress *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < p->npoll_sites; i++)
		v += pdi_model_visits(m, pdi_state_comm(p->poll_sites[i]));
	return v;
}

/* Calls completed since the last look, and whether they were progress: not when all of them
 * were polling calls at the sites it polled at before (one, or a few in turn). */
static uint64_t completed_calls(const struct pdi_model *m, struct pdi_task_progress *p, bool *ret_progress)
{
	uint64_t dcalls = m->calls >= p->calls ? m->calls - p->calls : 0, visits;
	bool known = false;

	*ret_progress = false;
	p->calls = m->calls;
	if (!dcalls)
		return 0;
	if (!pdi_fn_polls(m->last_fn)) {
		p->npoll_sites = 0;
		*ret_progress = true;
		return dcalls;
	}
	visits = poll_visits(m, p);
	for (unsigned i = 0; i < p->npoll_sites; i++)
		known |= p->poll_sites[i] == m->last_site;
	if (known && visits - p->poll_visits == dcalls) {
		p->poll_visits = visits;
		return 0; /* still polling the same requests */
	}
	/* it came to a polling loop, or to another site of it: that is progress, the loop itself
	 * is not (a loop over more sites than are kept starts over from the last one) */
	if (!known) {
		if (p->npoll_sites == PDI_POLL_SITES)
			p->npoll_sites = 0;
		p->poll_sites[p->npoll_sites++] = m->last_site;
	}
	p->poll_visits = poll_visits(m, p);
	*ret_progress = true;
	return dcalls;
}

bool pdi_task_progress_in_call_by_stack(const struct pdi_task_progress *p, uint64_t calls)
{
	return p->look_ns && !p->looking && p->look_calls == calls && p->look_kind == PDI_PLACED_IN_CALL;
}

bool pdi_task_progress_look_pending(const struct pdi_task_progress *p, uint64_t calls)
{
	return (p->look_wanted || p->looking) && !(p->look_ns && p->look_calls == calls && !p->looking);
}

/* Task T, shown computing (or idle) outside MPI and still, while its probes were thinned: what
 * its stack said (in a call: waiting), and whether to read it (again) into P. */
static void place_by_stack(const struct pdi_model *m, struct pdi_task_progress *p, uint64_t now_ns,
			   enum pdi_activity act, struct pdi_health_task *h)
{
	bool answered = p->look_ns && !p->looking && p->look_calls == m->calls;

	p->look_wanted = false;
	if (!pdi_stack_place_wanted(m, act))
		return;
	if (answered && p->look_kind == PDI_PLACED_IN_CALL)
		h->motion = PDI_MOTION_WAITING;
	if (!p->looking && (!answered || now_ns - p->look_ns >= RELOOK_NS))
		p->look_wanted = true;
}

uint64_t pdi_task_progress_sample(struct pdi_daemon *d, struct pdi_task *t, struct pdi_task_progress *p,
				  uint64_t now_ns, struct pdi_health_task *ret, uint64_t *ret_key)
{
	const struct pdi_model *m = &t->model;
	struct pdi_health_task h = {.rank = t->rank, .motion = PDI_MOTION_COMPUTING};
	struct pdi_inflight f;
	pid_t tid;
	/* whichever thread calls MPI (FUNNELED or MULTIPLE programs: not always the main one); a call
	 * that lost its return probe while in flight says where it was, not where it is */
	bool in_mpi = pdi_tracer_inflight(d->tracer, t->pid, &t->att, &f, &tid, 1) == 1, progressed;
	unsigned fn = in_mpi ? PDI_COOKIE_FN(f.cookie) : m->last_fn;
	uint64_t key = UINT64_MAX, latest = m->started ? m->last_exit : 0, calls;
	uint32_t site;

	if (!p->last_ns) {
		/* first look: what it did before counts from its last transition, or from now */
		*p = (struct pdi_task_progress){.calls = m->calls, .last_ns = now_ns};
		if (in_mpi && f.t_enter > latest)
			latest = f.t_enter;
		if (latest && latest < now_ns)
			p->last_ns = latest;
	}
	calls = completed_calls(m, p, &progressed);
	/* entering a call is progress too, unless it is the polling call again */
	if (in_mpi && f.t_enter > p->last_ns && !(pdi_fn_polls(fn) && p->npoll_sites)) {
		progressed = true;
		latest = f.t_enter;
	}
	if (progressed && latest > p->last_ns)
		p->last_ns = latest < now_ns ? latest : now_ns;

	if (in_mpi && fn < pdi_mpi_nfuncs) {
		uint8_t cls = pdi_mpi_funcs[fn].cls;

		h.motion = cls == PDI_FC_FINALIZE ? PDI_MOTION_FINISHED : cls == PDI_FC_INIT ? PDI_MOTION_STARTING
											  : PDI_MOTION_WAITING;
		if (pdi_site_cached(t, &f, &site) == 0)
			key = pdi_state_comm(site);
	} else if (!m->started) {
		h.motion = PDI_MOTION_STARTING;
	} else if (m->last_fn < pdi_mpi_nfuncs && pdi_mpi_funcs[m->last_fn].cls == PDI_FC_FINALIZE) {
		h.motion = PDI_MOTION_FINISHED;
	} else {
		/* computing after its last call: what follows is not known yet */
		key = pdi_state_after(m->last_site);
	}

	/* still for a while: what the kernel says it does, and whether it does I/O */
	if (now_ns - p->last_ns >= LOOK_AFTER_NS && h.motion != PDI_MOTION_FINISHED) {
		struct pdi_task_activity a;
		uint64_t io;

		if (pdi_proc_io(t->pid, &io) == 0) {
			if (p->io_ns && now_ns - p->io_ns <= IO_FRESH_NS && io > p->io)
				p->last_ns = now_ns; /* reading or writing: working */
			p->io = io;
			p->io_ns = now_ns;
		}
		pdi_task_activity_read(t, t->pid, now_ns, &a);
		if (a.kind == PDI_ACT_STOPPED)
			/* stopped by a signal, or held by a debugger (not pdimond's own stack walk) */
			h.motion = pdi_task_traced_by_another(t->pid, t->pid) ? PDI_MOTION_TRACED : PDI_MOTION_STOPPED;
		else if (h.motion == PDI_MOTION_COMPUTING && a.kind != PDI_ACT_RUNNING && a.kind != PDI_ACT_STARVED &&
			 !(a.cpu_pct > IDLE_CPU_PCT))
			h.motion = PDI_MOTION_IDLE;
		if (h.motion == PDI_MOTION_COMPUTING || h.motion == PDI_MOTION_IDLE)
			place_by_stack(m, p, now_ns, a.kind, &h);
		else
			p->look_wanted = false;
	} else {
		p->io_ns = 0;
		p->look_wanted = false;
	}
	h.idle_s = (double)(now_ns - p->last_ns) / 1e9;
	*ret = h;
	*ret_key = key;
	return calls;
}

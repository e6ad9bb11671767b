/* SPDX-License-Identifier: GPL-2.0-only */
/* ingest.c -- from BPF events to task models, and the life of a task.
 *
 * This is the daemon's hot path: per event one pid lookup, one call-site cache lookup
 * and the model update. Everything slow (symbols, maps) happens once per new site. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ahead_attach.h"
#include "budget.h"
#include "daemon.h"
#include "ingest.h"
#include "log.h"
#include "mpi_funcs.h"
#include "callchain.h"
#include "program.h"
#include "retired.h"
#include "site_warm.h"
#include "sites.h"
#include "step_detach.h"
#include "step_group.h"
#include "tracer.h"
#include "task_activity.h"
#include "u64map.h"
#include "usage_timer.h"

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

static bool on_world(const struct pdi_task *t, uint64_t comm)
{
	for (unsigned i = 0; i < t->nworld_comms; i++)
		if (t->world_comms[i] == comm)
			return true;
	return false;
}

/* PDI_CALL_SUBCOMM for a collective on a communicator known not to span the step; a copy of
 * one that does (MPI_Comm_dup) is remembered as spanning it too. */
static uint8_t call_flags(struct pdi_task *t, const struct pdi_event *e)
{
	static int comm_dup = -2;

	if (comm_dup == -2)
		comm_dup = pdi_mpi_func_find("MPI_Comm_dup");
	if (!pdi_fn_is_collective(e->fn) || !t->nworld_comms)
		return 0; /* not a collective, or nothing known: every collective counts */
	if (!e->comm || !on_world(t, e->comm))
		return PDI_CALL_SUBCOMM;
	if (e->fn == comm_dup && e->req && !on_world(t, e->req) && t->nworld_comms < ELEMENTSOF(t->world_comms))
		t->world_comms[t->nworld_comms++] = e->req;
	return 0;
}

/* T's automatic phases changed (found the loop's period, merged pairwise to fit a bound, cut,
 * or turned to the wall clock because a collective may have gone unseen): the tasks of its step on
 * this node turn with it, merge theirs to the longest and fold them where not every task cut, so
 * that phase I is the same stretch of the program on every task. */
static void align_phases(struct pdi_task *t)
{
	struct pdi_step *s = t->step;
	struct pdi_model **models = calloc(s->ntasks, sizeof(*models));

	if (!models) {
		log_debug("Cannot line up the phases of step %s: %m", s->name);
		return;
	}
	for (unsigned i = 0; i < s->ntasks; i++)
		models[i] = &s->tasks[i]->model;
	if (pdi_model_ptrs_line_up(models, s->ntasks) > 0)
		log_debug("Cannot line up the phases of every task of step %s", s->name);
	free(models);
}

/* T's call E with chain CH into its model; SITE is its site if known (PDI_U64MAP_NONE: looked up,
 * named if new). */
static int add_call(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_event *e, const struct pdi_chain *ch,
		    uint32_t site)
{
	const struct pdi_mpi_func *f = &pdi_mpi_funcs[e->fn];
	struct pdi_call c = {
		.fn = e->fn,
		.t_enter = e->t_enter,
		.t_exit = e->t_exit,
		.peer = int_arg(e, f->peer_arg ? f->peer_arg : f->root_arg),
		.tag = int_arg(e, f->tag_arg),
		.req = e->req,
		.flags = call_flags(t, e),
	};
	uint32_t auto_len = t->model.auto_len, nphases = t->model.nphases;
	uint64_t next_cut = t->model.auto_next_cut;
	bool slots = t->model.slots, early = t->model.early;
	int r;

	if (f->count_arg && f->count_arg <= PDI_NARGS && f->type_arg && f->type_arg <= PDI_NARGS)
		c.bytes = (uint64_t)(uint32_t)e->args[f->count_arg - 1] * pdi_dtype_size(&t->att.dtypes, e->args[f->type_arg - 1]);

	c.site = site;
	r = site != PDI_U64MAP_NONE ? 0 : pdi_site_lookup(t, d->objs, ch, e->fn, &c.site);
	if (r == -ENOSPC) {
		/* past max_task_memory: the call is dropped and counted, as states are */
		t->dropped_sites++;
		t->model.dropped_states++;
		return 0;
	}
	if (r < 0)
		return r;
	if (t->init_pending) {
		/* We attached while the process was stopped at MPI_Init's entry, too late
		 * for that call's return probe: its end is taken as the next call's start. Its site is
		 * named now, once a worker has read what naming it needs (pdi_site_warm_hold()). */
		t->init_pending = false;
		if (pdi_site_lookup(t, d->objs, t->init_chain, t->init_call.fn, &t->init_call.site) == 0) {
			t->init_call.t_exit = e->t_enter;
			record(d, t, &t->init_call);
			(void)pdi_model_add_call(&t->model, &t->init_call);
		}
		free(t->init_chain);
		t->init_chain = NULL;
	}
	record(d, t, &c);
	r = pdi_model_add_call(&t->model, &c);
	/* and at MPI_Finalize: the task cuts no more, so the slots its siblings began after its last
	 * one are folded now (pdi_models_line_up()); else a sibling that began one just before this
	 * task's MPI_Finalize came in keeps a phase no other task has (FortranBudget, a loaded CI) */
	if (t->model.auto_len != auto_len || t->model.nphases != nphases || t->model.slots != slots ||
	    t->model.early != early || (t->model.auto_next_cut == PDI_MODEL_NO_CUT) != (next_cut == PDI_MODEL_NO_CUT) ||
	    f->cls == PDI_FC_FINALIZE)
		align_phases(t);
	/* the kernel's counts are read on a timer (usage_timer.h), off this path, from the thread that
	 * made the task's first call; and at MPI_Finalize, where the last phase's share ends (the
	 * process may be gone before the next tick) */
	if (!t->usage_tid)
		t->usage_tid = (pid_t)e->tid;
	pdi_usage_timer_start(d); /* one test while it runs; it stops when no task is left to read */
	if (f->cls == PDI_FC_FINALIZE)
		pdi_task_usage_read(t, (pid_t)e->tid, pdi_now_ns());
	return r;
}

/* MPI_Init's chain, while the process is stopped at its entry: read from its stack (the hops
 * could not be known before we attached). Its site is named when the call is taken in: naming it
 * may read a compile unit's line table, which a worker does (site_warm.h). */
static int init_chain(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_event *e)
{
	struct pdi_chain *ch = malloc(sizeof(*ch));

	if (!ch)
		return -ENOMEM;
	*ch = pdi_chain_direct(e->callsite);
	pdi_chains_of_stopped(d, t, e->args[1], e->args[2], ch);
	free(t->init_chain);
	t->init_chain = ch;
	return 0;
}

/* May the trapped process ID join step S as a descendant of watch W? Only if W's root is
 * still the process that was registered (a dead root's pid may have been reused, and its
 * "descendants" are anyone's), or was when ID was found in its tree at its exec (AHEAD: its
 * probes were attached then, see on_exec()), and the process is the step's user's. NULL if so,
 * or why not. */
static const char *join_refusal(const struct pdi_watch *w, const struct pdi_ident *id, bool ahead)
{
	const struct pdi_step *s = w->step;

	if (!ahead && !pdi_ident_alive(&w->ident))
		return "the process it descends from has exited (its pid may be reused)";
	/* a root's step (pdimon run) may hold any user's processes: root reads them all anyway */
	if (s->uid != 0 && (id->uid != s->uid || id->euid != s->uid))
		return "it does not belong to the step's user";
	return NULL;
}

/* Pin the process the trap stopped: the pid must still be that process (the event may have
 * waited in the ring buffer while it was killed and its pid reused). */
static int pin_trapped(const struct pdi_event *e, struct pdi_ident *ret)
{
	int r = pdi_ident_pin((pid_t)e->pid, ret);

	if (r < 0)
		return r;
	if (e->args[3] && ret->start_ticks != pdi_ns_to_ticks(e->args[3])) {
		pdi_ident_release(ret);
		return -ESRCH;
	}
	return 0;
}

/* Join the pinned process ID, in MPI_Init under watch W, to W's step if it may; the new task or
 * NULL. AHEAD: it was not stopped, its probes were attached at its exec. RANK: its rank if known
 * already (-1: from its environment). The caller continues it either way. */
static struct pdi_task *join_watch(struct pdi_daemon *d, struct pdi_watch *w, const struct pdi_ident *id,
				   bool ahead, int rank)
{
	struct pdi_step *s = w->step;
	pid_t root = w->root;
	const char *refusal;
	struct pdi_task *t;
	int r;

	/* a launcher's rank belongs to the watched process itself, not to its descendants */
	if (pdi_registry_find_task(&d->reg, id->pid))
		return NULL;
	refusal = join_refusal(w, id, ahead);
	if (refusal) {
		log_warning_limited(id->uid, "Not monitoring pid %d (uid %u) in step %s: %s", (int)id->pid,
				    (unsigned)id->uid, s->name, refusal);
		return NULL;
	}
	r = pdi_task_begin(d, s, id, root == id->pid ? w->rank : rank, &t);
	if (r < 0) {
		log_warning_errno_limited(id->uid, r, "Cannot monitor pid %d of step %s: %m", (int)id->pid, s->name);
		return NULL;
	}
	/* a registered task that joined is watched by its pidfd from now on */
	if (root == id->pid) {
		pdi_tracer_unwatch(d->tracer, root);
		pdi_registry_remove_watch(&d->reg, root);
	}
	return t;
}

static void continue_trapped(const struct pdi_ident *id)
{
	int r = pdi_ident_signal(id, SIGCONT);

	if (r < 0 && r != -ESRCH)
		log_warning_errno(r, "Cannot continue pid %d: %m", (int)id->pid);
}

/* Was the MPI_Init that trapped E seen by T's own entry probe? Not when the process was stopped
 * for its probes to be attached, unless the kernel ran the trap before the entry probe. */
static bool init_entry_seen(struct pdi_daemon *d, const struct pdi_event *e)
{
	struct pdi_inflight f;

	if (e->flags & PDI_EVF_NOT_HELD)
		return true;
	/* the trapped thread's entry only: a walk of the whole map for every held process was ~5%
	 * of the loop's time during a 64-rank start */
	return pdi_tracer_inflight_thread(d->tracer, (pid_t)e->pid, (pid_t)e->tid, &f) == 1 &&
	       PDI_COOKIE_FN(f.cookie) == e->fn;
}

/* A process of a watched tree reached MPI_Init: it joins its step. */
static void on_init_trap(struct pdi_daemon *d, const struct pdi_event *e)
{
	struct pdi_watch *w = pdi_registry_find_watch(&d->reg, (pid_t)e->args[0]);
	bool held = !(e->flags & PDI_EVF_NOT_HELD);
	struct pdi_ident id;
	struct pdi_task *t;
	int rank = -1;

	/* gone, or not the process trapped: nothing to join, and nothing of ours to continue; unless
	 * it was attached ahead, ran on, and has exited since (pinned at its exec) */
	if (pin_trapped(e, &id) < 0 &&
	    (held || pdi_tracer_ahead_ident(d->tracer, (pid_t)e->pid, pdi_ns_to_ticks(e->args[3]), &id, &rank) < 0))
		return;
	/* its objects read on a worker since its MPI_Init: its rank as it was then */
	if (rank < 0 && d->joining.pid == id.pid)
		rank = d->joining.rank;
	t = w ? join_watch(d, w, &id, !held, rank) : NULL;
	/* attached while the process was stopped at MPI_Init's entry: that call's entry and return
	 * probes came too late (see add_call()) */
	if (t && !init_entry_seen(d, e) && init_chain(d, t, e) == 0) {
		t->init_call.fn = e->fn;
		t->init_call.t_enter = e->t_enter;
		t->init_call.peer = PDI_NO_PEER;
		t->init_pending = true;
	}
	if (held) {
		/* stopped by the trap: whatever happened, let it go on (it, and no successor of its pid) */
		continue_trapped(&id);
		log_info("pid %d held at MPI_Init for %.1f ms while its probes were attached", (int)id.pid,
			 (double)(pdi_now_ns() - e->t_enter) / 1e6);
	} else {
		log_info("pid %d joined at MPI_Init, not held: its probes were attached when it started", (int)id.pid);
	}
	pdi_ident_release(&id);
}

/* The first process of a program since pdimond started, at its MPI_Init E, maps objects the
 * object cache has not read: they are read on a worker and it joins then (true; ahead_attach.h).
 * What only the living process can tell (its rank, maps, program) is taken now: it may have run
 * to its end by then. */
static bool join_after_read(struct pdi_daemon *d, const struct pdi_event *e)
{
	struct pdi_watch *w = pdi_registry_find_watch(&d->reg, (pid_t)e->args[0]);
	struct pdi_ident id;
	bool later = false;

	if (!w || (pid_t)e->pid == d->joining.pid || pin_trapped(e, &id) < 0)
		return false;
	if (!join_refusal(w, &id, !!(e->flags & PDI_EVF_NOT_HELD)) && !pdi_registry_find_task(&d->reg, id.pid)) {
		pdi_program_identify(d, w->step, id.pid);
		later = pdi_ahead_warm_first(d, e, id.pid == w->root ? w->rank : pdi_proc_rank(id.pid));
	}
	pdi_ident_release(&id);
	return later;
}

void pdi_join_stopped(void *daemon, pid_t root, const struct pdi_ident *id)
{
	struct pdi_daemon *d = daemon;
	struct pdi_watch *w = pdi_registry_find_watch(&d->reg, root);

	if (w)
		(void)join_watch(d, w, id, false, -1);
}

void pdi_ingest_frames(void *daemon, const struct pdi_frames *f)
{
	struct pdi_daemon *d = daemon;
	struct pdi_task *t = pdi_registry_find_task(&d->reg, (pid_t)f->pid);

	if (t)
		pdi_chains_on_frames(d, t, f);
	else
		(void)pdi_ahead_keep_frames(d, f); /* its process joins when its probes are attached */
}

int pdi_ingest_event(void *daemon, const struct pdi_event *e)
{
	struct pdi_daemon *d = daemon;
	struct pdi_chain ch;
	struct pdi_task *t;
	uint32_t site;

	if (e->kind == PDI_EV_INIT) {
		/* its probes are being attached ahead, or will be now: it joins when they are */
		if (!pdi_ahead_keep(d, e) && !pdi_ahead_on_held_init(d, e) && !join_after_read(d, e))
			on_init_trap(d, e);
		return 0;
	}
	if (e->kind == PDI_EV_EXEC) {
		pdi_ahead_on_exec(d, e);
		return 0;
	}
	if (e->fn >= pdi_mpi_nfuncs)
		return 0;
	t = pdi_registry_find_task(&d->reg, (pid_t)e->pid);
	if (!t) {
		/* a process running on with its links attached ahead, not committed yet: kept */
		if (!pdi_ahead_keep(d, e))
			d->unknown_events++;
		return 0;
	}
	t->events++;
	d->events++;
	pdi_budget_hit(t->budget, e->fn, e->t_enter);
	pdi_retired_call_ended(d, t, e);
	ch = (struct pdi_chain){.callsite = e->callsite, .caller = e->caller, .via = e->via, .end = e->chain};
	pdi_chains_finish(d, t, (pid_t)e->tid, e->t_enter, &ch);
	/* a call from where T called before is taken in at once, its site from T's cache (one lookup
	 * per call); a site new to the step whose naming reads a cold object waits for a worker, and
	 * the calls behind it with it (site_warm.h) */
	site = t->site_hold ? PDI_U64MAP_NONE : pdi_site_known(t, &ch, e->fn);
	if ((site == PDI_U64MAP_NONE || t->init_pending) && pdi_site_warm_hold(d, t, e, &ch))
		return 0;
	if (add_call(d, t, e, &ch, site) < 0)
		t->model.dropped_edges++;
	return 0;
}

void pdi_ingest_call(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_event *e, const struct pdi_chain *ch)
{
	if (add_call(d, t, e, ch, PDI_U64MAP_NONE) < 0)
		t->model.dropped_edges++;
}

/* pdi_task_begin(), with KEPT: what was read of its process on a worker when it was attached as it
 * started (pdi_ahead_take_maps()), for a process gone before its join read its maps. */
static int task_begin(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_ident *id, int rank,
		      struct pdi_joining *kept, struct pdi_task **ret)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct pdi_attachment att = {.multi_fds = {-1, -1}, .object_fd = -1};
	pid_t pid = id->pid;
	/* read of it while it surely lived: at its MPI_Init, or else at its attach as it started */
	struct pdi_joining *read = d->joining.pid == pid ? &d->joining : NULL;
	struct pdi_task *t;
	int r, pidfd;

	/* pinned first: from here on a recycled pid cannot fool us */
	pidfd = fcntl(id->pidfd, F_DUPFD_CLOEXEC, 3);
	if (pidfd < 0)
		return -errno;
	r = pdi_ident_alive(id) ? pdi_tracer_attach(d->tracer, d->objs, pid, &att) : -ESRCH;
	if (r == 0 && rank < 0)
		rank = pdi_proc_rank(pid);
	/* still the pinned process: the probes (by pid), its maps and environment were its own */
	if (r == 0 && !pdi_ident_alive(id)) {
		pdi_attachment_detach(&att);
		r = -ESRCH;
	}
	/* gone already: attached ahead, it ran on, maybe to its end, while the loop was busy; its
	 * calls are in the ring buffer, and its task ends as soon as it has begun */
	if (r == -ESRCH || r == -ENOENT) {
		if (!read && kept->maps.n)
			read = kept;
		r = pdi_tracer_attach_exited(d->tracer, d->objs, pid, id->start_ticks, read ? &read->maps : NULL,
					     read ? read->exe_fd : -1, &att) == 0 ? 0 : r;
	}
	if (r < 0) {
		close(pidfd);
		return r;
	}
	r = pdi_registry_add_task(&d->reg, s, pid, rank < 0 ? -1 : rank, &t);
	if (r < 0) {
		pdi_attachment_detach(&att);
		close(pidfd);
		return r;
	}
	t->att = att;
	t->pidfd = pidfd;
	t->start_ticks = id->start_ticks;
	if (att.dtypes.comm_world)
		t->world_comms[t->nworld_comms++] = att.dtypes.comm_world;
	t->model.clock_offset_ns = pdi_wall_offset_ns(); /* BPF times calls on CLOCK_MONOTONIC */
	t->lost_checked_ns = pdi_now_ns();
	if (read && !t->maps.n) {
		/* read before its join: it may have exited since */
		t->maps = read->maps;
		read->maps = (struct pdi_maps){0};
	}
	r = pdi_chains_begin(d, t);
	if (r < 0)
		log_debug("pid %d: call sites stay where MPI is called from: %s", (int)pid, strerror(-r));
	pdi_program_identify(d, s, pid); /* before the budget: it starts at the levels of its program */
	if ((r = pdi_budget_task_begin(d, t)) < 0)
		log_warning_errno(r, "pid %d: no overhead budget for it: %m", (int)pid);
	ev.data.u64 = PDI_SRC(PDI_SRC_TASK, (uint32_t)pid); /* tasks move in the registry; pids do not */
	if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, pidfd, &ev) < 0) {
		r = -errno;
		pdi_registry_end_task(&d->reg, t);
		return r;
	}
	pdi_step_group_join(d, s, t);
	log_info("Monitoring pid %d as rank %d of step %s (%u probes in %s)", (int)pid, t->rank, s->name,
		 att.nprobes, att.object);
	*ret = t;
	return 0;
}

int pdi_task_begin(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_ident *id, int rank, struct pdi_task **ret)
{
	struct pdi_joining kept = {.pid = id->pid, .exe_fd = -1};
	int r;

	/* whoever joins takes them, alive (they are not needed) or not */
	(void)pdi_ahead_take_maps(d, id->pid, id->start_ticks, &kept.maps, &kept.exe_fd);
	r = task_begin(d, s, id, rank, &kept, ret);
	pdi_maps_free(&kept.maps);
	if (kept.exe_fd >= 0)
		close(kept.exe_fd);
	return r;
}

/* Events of T the ring buffer had no room for since we last looked: the model's unobserved log
 * says when (between the two looks), and its phases stop being cut if a collective may be among
 * them. */
static void note_lost(struct pdi_daemon *d, struct pdi_task *t)
{
	uint64_t lost = pdi_tracer_lost(d->tracer, t->pid), now = pdi_now_ns();

	if (lost > t->lost_noted) {
		(void)pdi_unobserved_add(&t->model.unobserved, PDI_UNOBSERVED_ALL, PDI_UNOBS_LOST, t->lost_checked_ns, now);
		t->lost_noted = lost;
		align_phases(t);
	}
	t->lost_checked_ns = now;
}

void pdi_ingest_note_lost(struct pdi_daemon *d)
{
	for (unsigned i = 0; i < d->reg.ntasks; i++)
		if (d->reg.tasks[i]->state == PDI_TASK_RUNNING)
			note_lost(d, d->reg.tasks[i]);
}

void pdi_task_finish(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_inflight f;
	pid_t tid = t->pid;

	if (t->state == PDI_TASK_ENDED)
		return;
	/* its last events may still be in the ring buffer, and its calls wait for a site's name */
	(void)pdi_tracer_drain(d->tracer);
	pdi_site_warm_flush(d, t);
	note_lost(d, t);
	t->lost = t->lost_noted;
	if (pdi_tracer_inflight(d->tracer, t->pid, &t->att, &f, &tid, 1) == 1 ||
	    (pdi_tracer_exited_in(d->tracer, t->pid, &f) == 0 && !pdi_attachment_return_lost(&t->att, &f))) {
		unsigned fn = PDI_COOKIE_FN(f.cookie);
		uint32_t site;

		/* the process is gone, but a site it blocked in was seen before: the cache knows it */
		if (pdi_site_of_inflight(t, d->objs, &f, tid, &site) == 0) {
			t->ended_in = strdup(t->step->sites[site].name);
			t->ended_site = site;
		} else if (fn < pdi_mpi_nfuncs) {
			t->ended_in = strdup(pdi_mpi_funcs[fn].name);
		}
		t->nended_peers = pdi_task_peers(t, &f, t->ended_peers, ELEMENTSOF(t->ended_peers));
	}
	pdi_chains_end(d, t);
	pdi_tracer_forget(d->tracer, t->pid);
	pdi_budget_task_end(d, t);
	pdi_step_detach_task(d, t);
	pdi_registry_end_task(&d->reg, t);
	pdi_step_detach_settle(d, t->step);
	log_info("Task pid %d (rank %d) of step %s ended%s%s", (int)t->pid, t->rank, t->step->name,
		 t->ended_in ? " inside " : "", t->ended_in ? t->ended_in : "");
	d->up->step_ended(d, t->step);
}

void pdi_task_exited(struct pdi_daemon *d, struct pdi_task *t)
{
	if (t->exit_due)
		return; /* told already (its pidfd, then EndStep or Unwatch): it ends once its calls are in */
	/* its last events first: they may be the ones that wait */
	(void)pdi_tracer_drain(d->tracer);
	/* with calls waiting, site_warm.c ends it once they are in: taken in now, they would name
	 * their site on the loop, reading what the worker is reading */
	if (t->state == PDI_TASK_ENDED || !t->site_hold || epoll_ctl(d->epoll_fd, EPOLL_CTL_DEL, t->pidfd, NULL) < 0) {
		pdi_task_finish(d, t);
		return;
	}
	t->exit_due = true;
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

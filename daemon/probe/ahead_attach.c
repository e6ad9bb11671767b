/* SPDX-License-Identifier: GPL-2.0-only */
/* ahead_attach.c -- a starting process's probes attached on a worker: planned on the loop,
 * attached on the pool "startup", committed in done() on the loop, where the events its process
 * sent meanwhile are handled (see ahead_attach.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ahead_attach.h"
#include "clock.h"
#include "daemon.h"
#include "detach.h"
#include "held_queue.h"
#include "log.h"
#include "objopen.h"
#include "objwarm.h"
#include "registry.h"
#include "tracer.h"
#include "worker.h"

/* Attaches at once: each waits mostly for the kernel's dup_mmap_sem, which one attach holds at a
 * time, so more would only queue there. A pool of their own: a 64-rank step's attaches must not
 * hold the stack walks and reports of the shared pool behind them, nor wait behind those. */
#define AHEAD_THREADS 4
#define AHEAD_QUEUED 1024
/* Records kept for processes whose probes are being attached, all together (170 bytes each): a
 * process runs on with its links in place before done() commits them, a few ms at most. Of
 * them, stacks of calls whose chain BPF could not finish (4 KiB each: one per process at its
 * MPI_Init, see doc/design/call-sites.md): past their bound a chain stays unresolved, and counted
 * so by the task's call sites. */
#define AHEAD_EVENTS_MAX 16384
#define AHEAD_FRAMES_MAX 256
/* Maps kept for processes attached as they started, until they join (a few ms, normally; a
 * process that never reaches MPI_Init keeps its entry until newer ones push it out): a node's
 * starting ranks, at tens of KiB each (NWChem maps 481 objects). */
#define AHEAD_MAPS_MAX 64

/* An event, or a frames record, of a process whose probes are being attached. */
struct kept {
	struct pdi_frames *frames; /* malloc'd; NULL: EVENT */
	struct pdi_event event;
};

struct ahead_job {
	struct pdi_job job;
	struct pdi_daemon *d;          /* done() only: the loop's */
	struct ahead_job *next;        /* the attaches in flight (d->ahead_jobs) */
	struct pdi_ahead_attach *a;    /* the attach; NULL: a join waiting for WARM alone */
	struct pdi_objwarm *warm;      /* objects its join reads, read first (objwarm.h); or NULL */
	bool warmed;                   /* its join waits for WARM, or for a leader's */
	int rank;                      /* if WARMED: its rank */
	struct pdi_maps maps;          /* its maps and executable (an fd, or -1): if WARMED, read at its */
	int exe_fd;                    /* MPI_Init; else (if A) on the worker after the attach */
	uint64_t start_ticks;          /* when its process started (the attach's) */
	struct ahead_job *followers;   /* joins waiting for WARM too, not submitted (their next_follower) */
	struct ahead_job *next_follower;
	pid_t pid, root;
	int result;                    /* of the attach */
	uint64_t exec_ns, seen_ns, attach_ns; /* its exec, when the loop saw it; the attach's length */
	bool held;                     /* planned at its MPI_Init trap, not at its exec (exec_ns: the trap's) */
	bool lib_mapped;               /* MAPS, read after the attach, have the library attached on */
	bool has_init;                 /* its MPI_Init came before done(): INIT */
	struct pdi_event init;
	struct pdi_held_queue kept;    /* its later events and frames records (struct kept), in order */
	uint64_t dropped, dropped_from, dropped_to; /* events past the bound, and their times */
	uint64_t frames_dropped;       /* frames records past theirs */
};

static struct ahead_job *find_job(struct pdi_daemon *d, pid_t pid)
{
	for (struct ahead_job *j = d->ahead_jobs; j; j = j->next)
		if (j->pid == pid)
			return j;
	return NULL;
}

static void unlink_job(struct pdi_daemon *d, struct ahead_job *j)
{
	for (struct ahead_job **p = &d->ahead_jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			return;
		}
}

bool pdi_ahead_pending_root(struct pdi_daemon *d, pid_t root)
{
	for (struct ahead_job *j = d->ahead_jobs; j; j = j->next)
		if (j->root == root)
			return true;
	return false;
}

int pdi_ahead_open(struct pdi_daemon *d)
{
	int r = pdi_workers_new("startup", AHEAD_THREADS, AHEAD_QUEUED, &d->ahead_workers);

	if (r < 0)
		return r;
	/* a rank held at MPI_Init waits for its attach as it waited for the loop: at the loop's nice,
	 * not behind the step's other ranks spinning in their MPI_Init (4 ranks: 31-36 ms held, against
	 * 12-20 ms when the loop attached) */
	pdi_workers_at_loop_priority(d->ahead_workers);
	/* and never waits for its thread to be made on the loop */
	r = pdi_workers_start_all(d->ahead_workers);
	if (r < 0)
		log_warning_errno(r, "Cannot start the startup worker threads now, they start as needed: %m");
	return 0;
}

void pdi_ahead_close_dropped(struct pdi_daemon *d)
{
	int *fds;
	unsigned n;

	if (!d->tracer)
		return; /* pdimond never started (shutdown after a failed start) */
	pdi_tracer_take_dropped(d->tracer, &fds, &n);
	if (fds)
		pdi_detach_fds_later(d->workers, fds, n, NULL);
}

/* A process attached as it started, and what was read of it then: its maps and executable. */
struct pdi_ahead_maps {
	pid_t pid;
	uint64_t start_ticks;
	struct pdi_maps maps;
	int exe_fd;
};

static void ahead_maps_free(struct pdi_ahead_maps *m)
{
	pdi_maps_free(&m->maps);
	if (m->exe_fd >= 0)
		close(m->exe_fd);
}

/* J's maps and executable kept for its join; the oldest kept go past AHEAD_MAPS_MAX. */
static void keep_maps(struct pdi_daemon *d, struct ahead_job *j)
{
	if (!d->ahead_maps && !(d->ahead_maps = calloc(AHEAD_MAPS_MAX, sizeof(*d->ahead_maps))))
		return;
	if (d->nahead_maps == AHEAD_MAPS_MAX) {
		ahead_maps_free(&d->ahead_maps[0]);
		memmove(d->ahead_maps, d->ahead_maps + 1, sizeof(*d->ahead_maps) * --d->nahead_maps);
	}
	d->ahead_maps[d->nahead_maps++] = (struct pdi_ahead_maps){.pid = j->pid, .start_ticks = j->start_ticks,
								 .maps = j->maps, .exe_fd = j->exe_fd};
	j->maps = (struct pdi_maps){0};
	j->exe_fd = -1;
}

int pdi_ahead_take_maps(struct pdi_daemon *d, pid_t pid, uint64_t start_ticks, struct pdi_maps *ret_maps,
			int *ret_exe_fd)
{
	for (unsigned i = 0; i < d->nahead_maps; i++) {
		struct pdi_ahead_maps *m = &d->ahead_maps[i];

		if (m->pid != pid)
			continue;
		if (m->start_ticks != start_ticks) {
			/* another process of that pid: its maps are nobody's now */
			ahead_maps_free(m);
			memmove(m, m + 1, sizeof(*m) * (--d->nahead_maps - i));
			return -ENOENT;
		}
		*ret_maps = m->maps;
		*ret_exe_fd = m->exe_fd;
		memmove(m, m + 1, sizeof(*m) * (--d->nahead_maps - i));
		return 0;
	}
	return -ENOENT;
}

/* An fd on the executable PID maps (in MAPS), or -1: if PID is gone by its join, and a worker
 * could not read its executable, that is still read from it (pdi_tracer_attach_exited()). */
static int pin_exe(pid_t pid, const struct pdi_maps *maps)
{
	const struct pdi_mapping *m;
	dev_t dev;
	ino_t ino;
	int fd;

	if (pdi_exe_identity(pid, &dev, &ino) < 0 || !(m = pdi_maps_of_file(maps, dev, ino)) ||
	    pdi_objopen_mapped(pid, m, &fd) < 0)
		return -1;
	return fd;
}

/* On a worker: the uprobe_multi attach, on the job's copies only. */
static void ahead_run(struct pdi_job *pj)
{
	struct ahead_job *j = pdi_job_of(pj, struct ahead_job, job);

	j->attach_ns = pdi_now_ns();
	if (j->a)
		j->result = pdi_ahead_attach_run(j->a);
	/* attached as it started: what its join needs if it ends before it (its sites' objects; Open
	 * MPI's handles once ld.so has mapped the library, which a quick attach may beat). Not for a
	 * process held at its MPI_Init: it joins at done(), and waits for nothing but its attach */
	if (j->a && j->result == 0 && !j->warmed && !j->held && pdi_maps_read(j->pid, &j->maps) == 0) {
		j->exe_fd = pin_exe(j->pid, &j->maps);
		j->lib_mapped = pdi_ahead_attach_lib_mapped(j->a, &j->maps);
	}
	if (j->warm)
		pdi_objwarm_run(j->warm);
	j->attach_ns = pdi_now_ns() - j->attach_ns;
}

/* The records J kept, handled as if they came now, in order (its task exists if its MPI_Init
 * joined it). */
static void replay(struct pdi_daemon *d, struct ahead_job *j)
{
	struct pdi_task *t;
	void *records;
	struct kept *kept;
	unsigned nkept;

	if (j->has_init) {
		/* its objects read: it joins now, whatever the cache let go since */
		if (j->warmed)
			d->joining = (struct pdi_joining){.pid = j->pid, .rank = j->rank, .maps = j->maps,
							  .exe_fd = j->exe_fd};
		(void)pdi_tracer_replay_event(d->tracer, &j->init);
		if (j->warmed) {
			pdi_maps_free(&d->joining.maps); /* unless its task took them */
			d->joining = (struct pdi_joining){.exe_fd = -1};
			j->maps = (struct pdi_maps){0};
		}
	}
	pdi_held_queue_take(&j->kept, &d->ahead_events, &records, &nkept);
	kept = records;
	for (unsigned i = 0; i < nkept; i++) {
		struct kept *k = &kept[i];

		if (k->frames) {
			pdi_tracer_replay_frames(d->tracer, k->frames);
			free(k->frames);
			d->ahead_frames--;
		} else {
			(void)pdi_tracer_replay_event(d->tracer, &k->event);
		}
	}
	free(kept);
	if (j->frames_dropped)
		log_warning_limited(AHEAD_FRAMES_MAX, "pid %d: %" PRIu64 " call chains left unresolved while its probes "
				    "were attached (more than %d stacks kept for starting processes)", (int)j->pid,
				    j->frames_dropped, AHEAD_FRAMES_MAX);
	if (!j->dropped)
		return;
	t = pdi_registry_find_task(&d->reg, j->pid);
	if (t)
		(void)pdi_unobserved_add(&t->model.unobserved, PDI_UNOBSERVED_ALL, PDI_UNOBS_LOST, j->dropped_from,
					 j->dropped_to);
	log_warning_limited(AHEAD_EVENTS_MAX, "pid %d: %" PRIu64 " calls lost while its probes were attached "
			    "(more than %d kept for starting processes)", (int)j->pid, j->dropped, AHEAD_EVENTS_MAX);
}

/* J's links taken into the tracer (they are the task's when its MPI_Init joins it), and what
 * was read of its process kept for that join. */
static void commit_attach(struct pdi_daemon *d, struct ahead_job *j, bool cancelled)
{
	int r = pdi_tracer_ahead_end(d->tracer, j->a, cancelled ? -ECANCELED : j->result);

	if (r == 0 && j->maps.n) {
		/* the executable is mapped at the exec, the MPI library once ld.so has run: a quick attach
		 * may end before (its handles then stay unplaced if it ends before it joins) */
		log_debug("pid %d: maps kept for its join, %s", (int)j->pid,
			  j->lib_mapped ? "its MPI library mapped" : "read before its MPI library was mapped");
		keep_maps(d, j);
	}
	/* how late the loop saw the exec, and what the attach itself cost (bench/startup.py) */
	if (r == 0)
		log_debug("pid %d: probes attached %s, %.1f ms after its %s (seen after %.1f ms, attached in %.1f ms "
			  "on a worker)", (int)j->pid, j->held ? "while it waits at MPI_Init" : "as it started",
			  (double)(pdi_now_ns() - j->exec_ns) / 1e6, j->held ? "trap" : "exec",
			  (double)(j->seen_ns - j->exec_ns) / 1e6, (double)j->attach_ns / 1e6);
	else
		log_debug("pid %d: cannot attach its probes as it starts (%s): it waits at MPI_Init", (int)j->pid,
			  strerror(-r));
}

/* What was read of J's process and not kept: freed. */
static void free_warmed(struct ahead_job *j)
{
	pdi_maps_free(&j->maps);
	if (j->exe_fd >= 0)
		close(j->exe_fd);
	j->exe_fd = -1;
}

static void ahead_done(struct pdi_job *pj, bool cancelled)
{
	struct ahead_job *j = pdi_job_of(pj, struct ahead_job, job);
	struct pdi_daemon *d = j->d;
	struct pdi_watch *w;

	unlink_job(d, j);
	if (j->warm) {
		unsigned n = pdi_objwarm_commit(d->objs, j->warm);

		j->warm = NULL;
		log_debug("pid %d: %u objects it maps read on a worker in %.1f ms before it joins", (int)j->pid, n,
			  (double)j->attach_ns / 1e6);
	}
	if (j->a)
		commit_attach(d, j, cancelled);
	pdi_ahead_close_dropped(d);
	replay(d, j);
	/* the last of its tree's attaches: a watch that ended meanwhile goes now */
	w = pdi_registry_find_watch(&d->reg, j->root);
	if (w && w->unwatch_due && !pdi_ahead_pending_root(d, j->root))
		d->up->unwatch(d, j->root);
	/* the ranks that waited for the same objects: they are read now */
	while (j->followers) {
		struct ahead_job *f = j->followers;

		j->followers = f->next_follower;
		ahead_done(&f->job, cancelled);
	}
	free_warmed(j);
	free(j);
}

/* A job for E's process (INIT: E is its MPI_Init trap, which joins it in done()), to be given
 * its attach or its objects to read, or to follow another job. */
static struct ahead_job *new_job(struct pdi_daemon *d, const struct pdi_event *e, bool init)
{
	struct ahead_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	*j = (struct ahead_job){.job = {.run = ahead_run, .done = ahead_done}, .d = d, .pid = (pid_t)e->pid,
				.root = (pid_t)e->args[0], .exec_ns = e->t_enter, .seen_ns = pdi_now_ns(),
				.held = init && !(e->flags & PDI_EVF_NOT_HELD), .has_init = init, .exe_fd = -1,
				.start_ticks = pdi_ns_to_ticks(e->args[3])};
	if (init)
		j->init = *e;
	return j;
}

/* J in flight: its process's records are kept until its done(). */
static void track(struct pdi_daemon *d, struct ahead_job *j)
{
	j->next = d->ahead_jobs;
	d->ahead_jobs = j;
}

static bool submit(struct pdi_daemon *d, struct ahead_job *j)
{
	if (pdi_workers_submit(d->ahead_workers, &j->job) < 0)
		return false;
	track(d, j);
	return true;
}

/* Is E's watch still the one registered, with nothing ending it? The tree checked now is its
 * (join_refusal()). */
static bool watch_open(struct pdi_daemon *d, const struct pdi_event *e)
{
	struct pdi_watch *w = pdi_registry_find_watch(&d->reg, (pid_t)e->args[0]);

	return w && !w->unwatch_due && pdi_ident_alive(&w->ident);
}

/* The probes of E's process (an exec, or the MPI_Init trap that holds it: INIT) on a worker, on
 * trapped library LIB (-1: the one its program maps). Whether an attach is in flight for it now. */
static bool start_attach(struct pdi_daemon *d, const struct pdi_event *e, int lib, bool init)
{
	struct pdi_ahead_attach *a;
	struct ahead_job *j;
	int r;

	if (!watch_open(d, e))
		return false;
	r = pdi_tracer_ahead_plan(d->tracer, (pid_t)e->pid, (pid_t)e->args[0], pdi_ns_to_ticks(e->args[3]),
				  pdi_proc_rank((pid_t)e->pid), lib, &a);
	if (r < 0 || !a) {
		if (r < 0 && r != -ENOENT && r != -ESRCH)
			log_debug("pid %u: cannot attach its probes as it starts (%s): it waits at MPI_Init", e->pid,
				  strerror(-r));
		return false;
	}
	j = new_job(d, e, init);
	if (j)
		j->a = a;
	if (!j || !submit(d, j)) {
		/* it is attached when it joins, on the loop, as before */
		(void)pdi_tracer_ahead_end(d->tracer, a, -ENOMEM);
		pdi_ahead_close_dropped(d);
		free(j);
		return false;
	}
	log_debug("pid %u: probes being attached as it %s, %.1f ms after %s", e->pid, init ? "waits at MPI_Init" : "starts",
		  (double)(pdi_now_ns() - e->t_enter) / 1e6, init ? "its trap" : "its exec");
	return true;
}

/* A job in flight reading every object WARM lists (the step's other ranks map the same), or NULL. */
static struct ahead_job *warm_leader(struct pdi_daemon *d, const struct pdi_objwarm *warm)
{
	for (struct ahead_job *j = d->ahead_jobs; j; j = j->next)
		if (j->warm && pdi_objwarm_covers(j->warm, warm))
			return j;
	return NULL;
}

bool pdi_ahead_warm_first(struct pdi_daemon *d, const struct pdi_event *e, int rank)
{
	struct pdi_maps maps = {0};
	struct pdi_objwarm *warm = NULL;
	struct ahead_job *j = NULL, *leader;

	if ((pid_t)e->pid == d->joining.pid || !watch_open(d, e) || pdi_maps_read((pid_t)e->pid, &maps) < 0)
		return false;
	if (pdi_objwarm_plan(d->objs, (pid_t)e->pid, &maps, &warm) < 0 || !warm || !(j = new_job(d, e, true))) {
		(void)pdi_objwarm_commit(d->objs, warm); /* nothing read: frees it */
		pdi_maps_free(&maps);
		return false;
	}
	j->warmed = true;
	j->rank = rank;
	j->maps = maps;
	j->exe_fd = pin_exe((pid_t)e->pid, &j->maps);
	/* a step's ranks reach MPI_Init together: one reads, the others wait for it (64 ranks must
	 * not read the same objects 64 times over, on 4 threads, while held) */
	leader = warm_leader(d, warm);
	if (leader) {
		(void)pdi_objwarm_commit(d->objs, warm);
		track(d, j);
		j->next_follower = leader->followers;
		leader->followers = j;
	} else {
		j->warm = warm;
		if (!submit(d, j)) {
			(void)pdi_objwarm_commit(d->objs, warm);
			free_warmed(j);
			free(j);
			return false;
		}
	}
	log_debug("pid %u reached MPI_Init: the objects it maps are read on a worker, then it joins", e->pid);
	return true;
}

void pdi_ahead_on_exec(struct pdi_daemon *d, const struct pdi_event *e)
{
	(void)start_attach(d, e, -1, false);
}

bool pdi_ahead_on_held_init(struct pdi_daemon *d, const struct pdi_event *e)
{
	/* not stopped, or attached ahead on that library (start_attach() finds nothing to do): its
	 * links are in place, it joins now */
	return !(e->flags & PDI_EVF_NOT_HELD) && start_attach(d, e, (int)e->args[4], true);
}

/* A place for one more record at the end of J's, or NULL past the bound. */
static struct kept *keep_slot(struct pdi_daemon *d, struct ahead_job *j)
{
	return pdi_held_queue_push(&j->kept, sizeof(struct kept), &d->ahead_events, AHEAD_EVENTS_MAX);
}

/* E kept in J's records, in order; past the bound counted and its time noted. */
static void keep_event(struct pdi_daemon *d, struct ahead_job *j, const struct pdi_event *e)
{
	struct kept *k = keep_slot(d, j);

	if (k) {
		*k = (struct kept){.event = *e};
		return;
	}
	if (!j->dropped++)
		j->dropped_from = e->t_enter;
	j->dropped_to = e->t_exit > e->t_enter ? e->t_exit : e->t_enter;
}

bool pdi_ahead_keep_frames(struct pdi_daemon *d, const struct pdi_frames *f)
{
	struct ahead_job *j = d->ahead_jobs ? find_job(d, (pid_t)f->pid) : NULL;
	struct pdi_frames *copy;
	struct kept *k;

	if (!j)
		return false;
	copy = d->ahead_frames < AHEAD_FRAMES_MAX ? malloc(sizeof(*copy)) : NULL;
	k = copy ? keep_slot(d, j) : NULL;
	if (!k) {
		free(copy);
		j->frames_dropped++;
		return true;
	}
	memcpy(copy, f, sizeof(*copy));
	*k = (struct kept){.frames = copy};
	d->ahead_frames++;
	return true;
}

bool pdi_ahead_keep(struct pdi_daemon *d, const struct pdi_event *e)
{
	struct ahead_job *j = d->ahead_jobs ? find_job(d, (pid_t)e->pid) : NULL;

	if (!j)
		return false;
	if (e->kind == PDI_EV_INIT && !j->has_init) {
		/* held there (or run on, its links in place before done()): it joins in done() */
		j->has_init = true;
		j->init = *e;
		log_debug("pid %u reached MPI_Init while its probes were attached: it joins when they are", e->pid);
	} else {
		keep_event(d, j, e);
	}
	return true;
}

bool pdi_ahead_close(struct pdi_daemon *d, uint64_t deadline_ns)
{
	bool idle = !d->ahead_workers || pdi_workers_wait_idle_until(d->ahead_workers, deadline_ns);

	pdi_workers_free(d->ahead_workers);
	d->ahead_workers = NULL;
	pdi_ahead_close_dropped(d);
	for (unsigned i = 0; i < d->nahead_maps; i++)
		ahead_maps_free(&d->ahead_maps[i]);
	free(d->ahead_maps);
	d->ahead_maps = NULL;
	d->nahead_maps = 0;
	return idle;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* tracer.h -- the BPF side of pdimond: load once, attach per process, drain events. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "datatypes.h"
#include "event.h"
#include "threads.h"

struct pdi_tracer;
struct pdi_objcache;
struct pdi_elfobj;
struct pdi_probe_targets;
struct pdi_ident;

typedef int (*pdi_event_fn)(void *ctx, const struct pdi_event *e);
typedef void (*pdi_frames_fn)(void *ctx, const struct pdi_frames *f);

struct pdi_tracer_options {
	uint32_t ring_bytes;   /* ring buffer size: a power of two, at least a page */
	uint32_t wakeup_bytes; /* BPF wakes the daemon once this much is pending */
	uint32_t inflight_threads; /* threads of the node inside (or once inside) MPI at once; 0: default */
	pdi_frames_fn on_frames; /* PDI_EV_FRAMES records (callchain.c); NULL: dropped */
	unsigned target_flags; /* enum pdi_targets_flags: PDI_TARGETS_AT_START turns placement off */
};

/* Load the BPF programs. -EPERM/-EACCES when not privileged, -EOPNOTSUPP without BPF. */
int pdi_tracer_new(const struct pdi_tracer_options *opts, pdi_event_fn on_event, void *ctx,
		   struct pdi_tracer **ret);
void pdi_tracer_free(struct pdi_tracer *t);

/* One function's probes in one process, as the overhead budget left them. */
struct pdi_fn_probes {
	int fds[2];   /* its own uprobe_multi links (entry, return), -1 when none */
	uint8_t mode; /* enum pdi_probe_mode */
	bool own;     /* out of the process's shared links for good */
	uint16_t gen; /* the generation of the links that take its calls (PDI_COOKIE_GEN) */
	uint16_t issued; /* the last generation handed out for it (probe_change.c) */
};

/* The probes of one process. */
struct pdi_attachment {
	struct bpf_link **links;   /* one per probe where the kernel lacks uprobe_multi */
	unsigned nlinks;
	int multi_fds[2];          /* entry and return uprobe_multi links, -1 when unused */
	unsigned nprobes;
	bool int_handles;          /* MPICH-style integer MPI handles */
	struct pdi_dtypes dtypes;  /* sizes of the predefined datatypes, by handle */
	char object[256];          /* where the MPI symbols come from */
	int object_fd;             /* the MPI object, an fd of its own (-1: none): targets->path names
	                            * it for re-attaching, whatever the object cache closed since */
	struct pdi_probe_targets *targets; /* what was probed where (offsets, cookies, placement) */
	struct pdi_fn_probes *fns; /* per function (pdi_mpi_funcs) once the budget changed one; NULL: all full */
	int *retired;              /* entry links replaced by the budget, still to close (retired.h) */
	unsigned nretired;
	int *retired_returns;      /* return links replaced by the budget, held while a call entered
	                            * before their switch may still need one of them (retired.h) */
	unsigned nretired_returns;
	uint64_t returns_retired_ns; /* when the last of those was replaced (CLOCK_MONOTONIC) */
	uint64_t returns_held_ns;  /* when the first of those still held was, 0: none held */
	bool returns_waiting;      /* held for a call in flight (said once a hold, in the log) */
	uint64_t returns_lost_before_ns; /* calls entered before this, of a function in
	                            * returns_lost_fns, had their return probes closed while in flight */
	uint64_t returns_lost_fns[PDI_LINK_GEN_FUNCS / 64]; /* bit FN % 64 of word FN / 64 */
	struct pdi_threads threads; /* its threads as the held return links' last look read them */
	unsigned nmoved;           /* entry probes moved past a single-stepped first instruction */
	unsigned nstepped;         /* entry probes left on an instruction the kernel single-steps */
	bool ahead;                /* attached when it executed its program, before MPI_Init */
};

/* Attach entry and return probes on every probed MPI function PID maps.
 * -ESRCH: no such process; -ENOENT: it maps no MPI library; -EBUSY: its probes are being attached
 * ahead (pdi_tracer_ahead_plan()). Nothing is left attached on failure. */
int pdi_tracer_attach(struct pdi_tracer *t, struct pdi_objcache *objs, pid_t pid,
		      struct pdi_attachment *ret);
/* As pdi_tracer_attach() for PID, started at START_TICKS, which has exited already: it ran on
 * with the probes attached to it ahead (at its exec) before the daemon could join it, and its
 * calls are in the ring buffer. Those probes, and the targets of their library, make its
 * attachment; -ESRCH when it had none. Its datatypes (the bytes of its calls) from MAPS, read
 * while it lived (at its MPI_Init; NULL if not), and its executable, pinned then (EXE_FD, or -1). */
int pdi_tracer_attach_exited(struct pdi_tracer *t, struct pdi_objcache *objs, pid_t pid, uint64_t start_ticks,
			     const struct pdi_maps *maps, int exe_fd,
			     struct pdi_attachment *ret);
void pdi_attachment_detach(struct pdi_attachment *a);

/* pdimond's programs on N offsets of PATH for PID alone (entry, and return WITH_RETURN), as
 * uprobe_multi links in FDS (entry, return; -1 unused): for calibrate.c. -EOPNOTSUPP without
 * uprobe_multi. */
int pdi_tracer_attach_offsets(struct pdi_tracer *t, pid_t pid, const char *path, const uint64_t *offs,
			      const uint64_t *cookies, unsigned n, bool with_return, int fds[2]);

/* What the overhead budget leaves of one function's probes in one task. */
enum pdi_probe_mode {
	PDI_PROBE_FULL = 0,       /* entry and return */
	PDI_PROBE_ENTRY_ONLY = 1, /* entry only: the call is emitted there, its end unknown */
	PDI_PROBE_OFF = 2,        /* none */
};

/* Give function FN's probes in PID (attached as A) MODE, all on the caller's time: a plan, its
 * attach and its commit (probe_change.h), which the overhead budget runs apart. On failure nothing
 * changed. Without uprobe_multi the perf links are replaced in place, and on failure FN is left
 * without probes. */
int pdi_tracer_set_mode(struct pdi_tracer *t, struct pdi_attachment *a, pid_t pid, unsigned fn,
			enum pdi_probe_mode mode);
static inline enum pdi_probe_mode pdi_attachment_mode(const struct pdi_attachment *a, unsigned fn)
{
	return a->fns ? (enum pdi_probe_mode)a->fns[fn].mode : PDI_PROBE_FULL;
}

/* Would pdi_tracer_attach() find an MPI library in PID? 0, -ESRCH or -ENOENT. */
int pdi_tracer_check(struct pdi_objcache *objs, pid_t pid);

/* Trap MPI_Init in the MPI libraries matching these glob patterns, for all processes:
 * a process in a watched tree stops there until the daemon attached, unless its probes were
 * attached ahead (pdi_tracer_ahead_plan()). Returns the number of libraries trapped. */
int pdi_tracer_trap_init(struct pdi_tracer *t, struct pdi_objcache *objs, char *const *globs,
			 unsigned nglobs);
/* Remove every MPI_Init trap: no process stops for pdimond any more (at shutdown, first). */
void pdi_tracer_untrap(struct pdi_tracer *t);
int pdi_tracer_watch(struct pdi_tracer *t, pid_t pid);
/* PID's tree is no longer watched; what was attached ahead for it and not taken goes. */
void pdi_tracer_unwatch(struct pdi_tracer *t, pid_t pid);

/* Probes attached ahead of MPI_Init, in three steps so that the kernel's attach runs off the loop
 * (it waits for dup_mmap_sem while other processes fork and map: tens of ms to a second):
 *   1. plan (loop): PID, of the tree watched at ROOT, started at START_TICKS (clock ticks since
 *      boot), executed a program (PDI_EV_EXEC), with RANK in its environment (-1: none). It is
 *      pinned and kept as "attaching" to the trapped library its program's processes mapped
 *      before (or its program links), and the attach into *RET, or NULL there when it has links
 *      or an attach already (it executed again: the pid filter is the process's). -ENOENT when
 *      its program was never seen to map a trapped library (it is stopped at MPI_Init as
 *      before); -ESRCH when PID is gone or is no longer of ROOT's tree; -ENOSPC when too many wait.
 *      LIB: the trapped library (PDI_EV_INIT's args[4]) when the process is held at its MPI_Init
 *      (it joins with these links when attached; links it had on another library go), -1 at its
 *      exec.
 *   2. pdi_ahead_attach_run() (any thread: a worker);
 *   3. pdi_tracer_ahead_end() (loop).
 * While attaching, pdi_tracer_attach() refuses PID (-EBUSY): its MPI_Init waits for step 3. */
struct pdi_ahead_attach;
int pdi_tracer_ahead_plan(struct pdi_tracer *t, pid_t pid, pid_t root, uint64_t start_ticks, int rank, int lib,
			  struct pdi_ahead_attach **ret);
/* Any thread: attach A's links, unless its process has exited (its pid could be another's by
 * then). 0 or a negative errno; it touches nothing but A. */
int pdi_ahead_attach_run(struct pdi_ahead_attach *a);
/* Does a process whose maps are MAPS map an MPI library whose MPI_Init is trapped? MAPS against
 * the few trapped libraries; no object is read. */
bool pdi_tracer_maps_trapped(const struct pdi_tracer *t, const struct pdi_maps *maps);
/* Any thread: is the library A attaches on among MAPS (its process has mapped it)? */
bool pdi_ahead_attach_lib_mapped(const struct pdi_ahead_attach *a, const struct pdi_maps *maps);
/* On the loop, RESULT being run's (-ECANCELED: it never ran): A's links go to its process's entry,
 * which pdi_tracer_attach() takes from now on (0); else the entry goes (RESULT, or -ESRCH when it
 * went meanwhile: its root stopped being watched) and whatever A attached joins the links to
 * close (pdi_tracer_take_dropped()). Frees A. */
int pdi_tracer_ahead_end(struct pdi_tracer *t, struct pdi_ahead_attach *a, int result);
/* The links of processes attached ahead that will never join, taken by the caller to close off
 * the loop (a close waits for an RCU grace period): a malloc'd array in *RET_FDS of *RET_N fds;
 * NULL and 0 when none. */
void pdi_tracer_take_dropped(struct pdi_tracer *t, int **ret_fds, unsigned *ret_n);
/* PID, started at START_TICKS, attached ahead and exited since, as it was pinned at its exec
 * (a pidfd of the caller's own, to release), and the rank its environment said then (-1: none):
 * a short program can run to its end before the daemon handles its MPI_Init, and still joins.
 * -ESRCH when there is no such process. */
int pdi_tracer_ahead_ident(struct pdi_tracer *t, pid_t pid, uint64_t start_ticks, struct pdi_ident *ret,
			   int *ret_rank);

int pdi_tracer_epoll_fd(struct pdi_tracer *t);
/* A record kept aside while its process attached (ahead_attach.c), handed now to the handler
 * the ring buffer's records go to: one path for every record, whenever it is handled. */
int pdi_tracer_replay_event(struct pdi_tracer *t, const struct pdi_event *e);
void pdi_tracer_replay_frames(struct pdi_tracer *t, const struct pdi_frames *f);

/* Hand every pending event to on_event. Returns the number handled or negative errno. */
int pdi_tracer_drain(struct pdi_tracer *t);
/* Empty the ring buffer without handing its events on: those of pdimond's own probes. */
void pdi_tracer_discard(struct pdi_tracer *t);

/* Events the BPF side could not queue for PID (ring buffer full). */
uint64_t pdi_tracer_lost(struct pdi_tracer *t, pid_t pid);

/* The functions of the calls that threads TIDS of PID have in flight, entered before BEFORE_NS,
 * into RET as bits (bit FN % 64 of RET[FN / 64]): one lookup per thread, no walk of the node's
 * map (threads.h gives the list). 0. */
int pdi_tracer_inflight_fns_before(struct pdi_tracer *t, pid_t pid, const pid_t *tids, unsigned ntids,
				   uint64_t before_ns, uint64_t ret[PDI_LINK_GEN_FUNCS / 64]);

/* Has the call F, in flight in a thread of the process attached as A, lost its return? Its
 * function's return probes were all closed while it was in flight (the budget holds them a while
 * for it, retired.h, then lets them go): an end it came to was not seen, so F tells where the
 * thread was, not that it is still there. Its readers take the thread as outside MPI, where a
 * still task is placed by its live stack (report/stack_place.h): a rank blocked in that call is
 * found waiting there, one that left it and computes is not. A later hit of the thread's still
 * ends it (mpi_enter emits it then, PDI_EVF_NO_EXIT). */
static inline bool pdi_attachment_return_lost(const struct pdi_attachment *a, const struct pdi_inflight *f)
{
	unsigned fn = PDI_COOKIE_FN(f->cookie);

	return f->t_enter < a->returns_lost_before_ns && fn < PDI_LINK_GEN_FUNCS &&
	       (a->returns_lost_fns[fn / 64] >> (fn % 64) & 1);
}

/* Fill in the call site of the call thread TID has in flight where its entry left it to the
 * return probe (pdi_inflight.callsite 0, see bpf/mpitrace.bpf.c): from the return address the
 * kernel keeps for that probe, through a BPF iterator run on the thread (a few system calls; never
 * per call). Nothing changes when the thread is in no such call. 0, or negative errno. */
int pdi_tracer_fill_callsite(struct pdi_tracer *t, pid_t tid);

/* Where the threads of PID are inside MPI now: up to MAX calls into OUT and their threads into
 * TIDS, the main thread's first, then the others' (an MPI thread need not be the main one), their
 * call sites filled in (pdi_tracer_fill_callsite()); returns how many. With ATT, PID's
 * attachment, a call that lost its return (pdi_attachment_return_lost()) is passed over: it tells
 * where a thread was. One map lookup per thread of /proc/PID/task; of a process gone, the main
 * thread's entry alone (its call site filled in as it exited). */
int pdi_tracer_inflight(struct pdi_tracer *t, pid_t pid, const struct pdi_attachment *att,
			struct pdi_inflight *out, pid_t *tids, int max);

/* Whether thread TID of PID is inside MPI now, into *RET: 1 (yes), 0 (no), or -errno. One map
 * lookup, no walk of the map: what a trapped thread's join asks at every MPI_Init. RET's call site
 * may be 0, left to the call's return (pdi_tracer_fill_callsite()). */
int pdi_tracer_inflight_thread(struct pdi_tracer *t, pid_t pid, pid_t tid, struct pdi_inflight *ret);

/* The call a thread of PID other than its main one was inside when it exited: where an ended
 * task died when its main thread was not in MPI (pdi_tracer_inflight() reads the main thread,
 * whose entry stays until pdi_tracer_forget()). -ENOENT if none. */
int pdi_tracer_exited_in(struct pdi_tracer *t, pid_t pid, struct pdi_inflight *ret);
/* The BPF maps of the call-site hops (struct pdi_hop_key -> struct pdi_hop) and of the code
 * ranges hopped over (tgid -> struct pdi_hop_ranges): callchain.c fills them, and calls
 * pdi_tracer_procs_changed() after each change of the ranges. */
int pdi_tracer_hop_maps(struct pdi_tracer *t, int *ret_hops_fd, int *ret_ranges_fd);
/* Say that a process's hop ranges or link generations have just changed: each thread's entry
 * keeps a copy of what its calls need of them, renewed at its next call. */
void pdi_tracer_procs_changed(struct pdi_tracer *t);

/* Forget PID's BPF state once its task has ended. */
void pdi_tracer_forget(struct pdi_tracer *t, pid_t pid);

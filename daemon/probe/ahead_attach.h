/* SPDX-License-Identifier: GPL-2.0-only */
/* ahead_attach.h -- a starting process's probes attached on a worker, not on the loop.
 *
 * A process of a watched tree that executes a program gets its probes at once (startup.c), but
 * the kernel's attach can wait tens of ms to a second (dup_mmap_sem, while the step's other
 * processes fork and map): on the loop that delayed every other process's exec and MPI_Init
 * behind it. So the attach is planned on the loop, runs on a pool of its own, and is committed
 * on the loop in done(). Until then the process's MPI_Init (the trap's event) and whatever
 * events of it follow are kept, and handled in order when done() has run: it joins with the
 * links attached ahead, held at MPI_Init meanwhile if it got there first. Kept events are
 * bounded (AHEAD_EVENTS_MAX for all processes); those past the bound are counted, and their
 * time marked unobserved in the task's model. So are the frames records that finish the call
 * chains of its first calls (its MPI_Init's, when it was not held). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct pdi_daemon;
struct pdi_maps;
struct pdi_event;
struct pdi_frames;

/* The pool the attaches run on, made and registered by pdimond.c. */
int pdi_ahead_open(struct pdi_daemon *d);
/* A process of a watched tree executed a program (PDI_EV_EXEC): its probes, on a worker, if we
 * know where they go. */
void pdi_ahead_on_exec(struct pdi_daemon *d, const struct pdi_event *e);
/* A process of a watched tree stopped by the MPI_Init trap (PDI_EV_INIT E, held) with no probes
 * attached ahead on that library (a program that loads MPI with dlopen, or maps another library
 * than its last run): its probes on a worker, and it joins in done() (true); false when it joins
 * now (attached ahead there, or not held) or the attach cannot go to a worker (then it is
 * attached on the loop, as before). */
bool pdi_ahead_on_held_init(struct pdi_daemon *d, const struct pdi_event *e);
/* A process of a watched tree reached MPI_Init (PDI_EV_INIT E, held or not) and maps objects the
 * object cache has not read (the first process of its program since pdimond started): they are
 * read on a worker, its records kept meanwhile as for an attach, and it joins in done() (true),
 * with RANK and its maps as read now (d->joining: it may have exited by then). False: it joins
 * now. */
bool pdi_ahead_warm_first(struct pdi_daemon *d, const struct pdi_event *e, int rank);
/* E is of a process whose probes are being attached: kept, to be handled when they are (true);
 * false when no attach of its process is in flight. */
bool pdi_ahead_keep(struct pdi_daemon *d, const struct pdi_event *e);
/* The same for a frames record (the stack of a call whose chain BPF could not finish). */
bool pdi_ahead_keep_frames(struct pdi_daemon *d, const struct pdi_frames *f);
/* Is a process of ROOT's tree still being attached? Its watch stays until it is. */
bool pdi_ahead_pending_root(struct pdi_daemon *d, pid_t root);
/* The maps of process PID (started at START_TICKS) and its executable pinned (an fd, or -1), read
 * on the worker right after its probes were attached as it started, taken into *RET_MAPS and
 * *RET_EXE_FD: a process that exited before it joined (pdimond stopped or busy meanwhile) is joined
 * from them (pdi_tracer_attach_exited(): Open MPI's handles are addresses in it). Whoever joins
 * takes them, alive or not. -ENOENT (nothing changed) if none are kept. */
int pdi_ahead_take_maps(struct pdi_daemon *d, pid_t pid, uint64_t start_ticks, struct pdi_maps *ret_maps,
			int *ret_exe_fd);
/* Close, on a worker, the links of processes attached ahead that will never join. */
void pdi_ahead_close_dropped(struct pdi_daemon *d);
/* At shutdown: the attaches in flight finish, and what they kept is handled; jobs of the pool still
 * queued at DEADLINE_NS (pdi_now_ns()) are cancelled. False if some were. */
bool pdi_ahead_close(struct pdi_daemon *d, uint64_t deadline_ns);

/* SPDX-License-Identifier: GPL-2.0-only */
/* worker.h -- slow work off pdimond's event loop: a job runs on a worker thread with a copy
 * of its inputs, and its result comes back to the loop through an eventfd in the epoll set.
 *
 * The contract (doc/design/event-loop.md argues it):
 *   - The loop owns all of the daemon's state (registry, steps, tasks, the bus, the loop's
 *     store connection). A job's run() never touches it: it reads and writes only the job's
 *     own memory, filled with copies on the loop before pdi_workers_submit(). A job refers to
 *     a step by its name, never by a pointer into the registry: the step may be gone, or be
 *     another one, when the result comes back.
 *   - run() bounds its own duration: every wait in it has a deadline (a peer that never
 *     answers, a process that never stops, a munged that is dead, a locked database). Workers
 *     are joined at shutdown, so an unbounded job would hang the daemon's exit.
 *   - done() runs on the loop, once per submitted job, always: after run() returned, or
 *     without run() when the pool stops before the job started (CANCELLED true, only from
 *     pdi_workers_free()). It takes the result into the daemon's state (checking again that
 *     what the job was for still exists) and frees the job. It must not block.
 *   - A pool runs its jobs in submission order; with max_threads 1 one job finishes before
 *     the next starts (an ordered lane, e.g. the store's writes). With more threads, jobs
 *     start in order and finish in any order.
 *   - Threads are created when work waits and none is idle, up to max_threads, and live until
 *     the pool is freed: the count is bounded and stays flat. None exists before the first
 *     submission, unless pdi_workers_start_all() made them all (a fork() loses them: pdimond
 *     daemonizes before it makes any).
 *   - Worker threads block every signal: signals reach the loop's signalfd only.
 *
 * Use: embed struct pdi_job in the job's own struct, set run and done, submit; register
 * pdi_workers_fd() in the loop's epoll and call pdi_workers_dispatch() when it is readable. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The nice value pdimond's loop runs at (pdimond.c); worker threads, made by the loop, take
 * theirs back up by as much: their work is slow, bounded and can wait for the job's CPUs. */
#define PDI_LOOP_NICE (-10)

struct pdi_job {
	/* On a worker thread: the slow part, on the job's own copies only. */
	void (*run)(struct pdi_job *job);
	/* On the loop: take the result, free the job. CANCELLED: run() was never called. */
	void (*done)(struct pdi_job *job, bool cancelled);
	/* the pool's, not the caller's */
	struct pdi_job *next;
	uint64_t queued_ns;
};

/* The job that embeds J as its member MEMBER. */
#define pdi_job_of(j, type, member) ((type *)((char *)(j)-offsetof(type, member)))

struct pdi_workers;

/* A pool named NAME (for logs and thread names, at most 11 bytes used) of up to MAX_THREADS
 * (>= 1) threads, holding at most MAX_QUEUED jobs that wait for a thread (0: no limit; a
 * lane whose jobs must never be refused). 0, -EINVAL, -ENOMEM, or the eventfd's error. */
int pdi_workers_new(const char *name, unsigned max_threads, unsigned max_queued, struct pdi_workers **ret);
/* Stop: jobs not started are cancelled, running ones finish (they are bounded), then every
 * remaining done() is called on the calling thread (the loop), and the pool is freed. NULL ok. */
void pdi_workers_free(struct pdi_workers *w);

/* The threads of W keep the loop's nice value rather than take it back up: for work that the
 * probed processes wait on as they would on the loop (a starting step's attaches, which hold its
 * ranks at MPI_Init: probe/ahead_attach.c), not background work. Before the first submission. */
void pdi_workers_at_loop_priority(struct pdi_workers *w);

/* Make all of W's threads now rather than as work comes: for work a probed process waits on, which
 * then never waits for a thread to be made (nor finds one made meanwhile by another job). After
 * pdi_workers_at_loop_priority(), before the first submission. 0 or negative errno (then W keeps
 * the threads it made, and makes the others as work comes). */
int pdi_workers_start_all(struct pdi_workers *w);

/* Readable (EPOLLIN) when done() callbacks wait: the loop then calls pdi_workers_dispatch(). */
int pdi_workers_fd(const struct pdi_workers *w);

/* Queue JOB (run and done set). 0, or (JOB then not queued: the caller still owns it and
 * done() is not called) -EBUSY when MAX_QUEUED jobs wait already, -EAGAIN when no thread
 * could be created and none exists, -ESHUTDOWN while stopping. */
int pdi_workers_submit(struct pdi_workers *w, struct pdi_job *job);

/* On the loop: call done() for every finished job. Returns how many. */
unsigned pdi_workers_dispatch(struct pdi_workers *w);

/* On the loop, blocking: wait until nothing is queued or running, calling done() as jobs
 * finish (so that a done() may submit follow-up jobs, which are waited for too). For
 * shutdown and tests only: the loop stands still meanwhile. */
void pdi_workers_wait_idle(struct pdi_workers *w);
/* The same, until DEADLINE_NS (pdi_now_ns()) at the latest: true once idle, false at the
 * deadline with jobs still queued or running (each is bounded, a chain of follow-ups is not). */
bool pdi_workers_wait_idle_until(struct pdi_workers *w, uint64_t deadline_ns);

struct pdi_workers_stats {
	unsigned threads, busy;   /* threads created; those running a job now */
	unsigned queued;          /* waiting for a thread */
	uint64_t completed;       /* jobs whose run() returned, since the start */
	uint64_t oldest_ns;       /* how long the oldest queued or running job has waited since
				     it was submitted (0: none) */
};

void pdi_workers_stats(struct pdi_workers *w, struct pdi_workers_stats *ret);

/* SPDX-License-Identifier: GPL-2.0-only */
/* progress.h -- what the hang judge (lib/health/health.h) is fed about one running task: when it
 * last made progress and what it does now, from what pdimond already has (the task's model,
 * the BPF in-flight map) and, once it has been still for a while, from /proc: what the
 * diagnosis reads of it (its state and CPU use, report/task_activity.c), whether a debugger
 * holds it, and the I/O of its main thread.
 *
 * Progress is an MPI call completed or entered, except polling: calls of MPI_Test* or
 * MPI_Iprobe at one site, or a few in turn, and nothing else in between are a wait, not
 * progress. I/O of the
 * main thread (bytes read or written since the last look) is progress too: a rank writing a
 * checkpoint while the others wait in a collective is working. CPU time is not (a spinning
 * rank burns it): it tells computing from sleeping.
 *
 * A task its probes show computing since its last seen call, while the overhead budget thinned
 * them, may as well be in a call they did not see begin: its live stack, read on a worker
 * (stack_look.h, stack_place.h: the placement the report uses), says which, and a task in a
 * call is waiting, not computing, for the judge too. */
#pragma once

#include <stdint.h>

#include "health.h"

struct pdi_daemon;
struct pdi_task;

#define PDI_POLL_SITES 4

/* What the last looks at a task left. Zeroed: never looked at. */
struct pdi_task_progress {
	uint64_t calls;        /* the model's calls at the last look */
	uint64_t last_ns;      /* its last progress (CLOCK_MONOTONIC); 0 before the first look */
	uint32_t poll_sites[PDI_POLL_SITES]; /* the sites it polls at (Test/Iprobe) in turn: a loop may
					     test two requests at two sites (HPCC) */
	unsigned npoll_sites;  /* 0: not polling */
	uint64_t poll_visits;  /* those sites' visits at the last look */
	uint64_t io;           /* its main thread's rchar + wchar at the last look */
	uint64_t io_ns;        /* when it was read (0: never, or too long ago to compare) */
	/* its live stack, read on a worker while its thinned probes showed it computing
	 * (stack_look.h): what it said holds while the model's calls stay LOOK_CALLS */
	uint64_t look_calls;   /* the model's calls when the look was asked for */
	uint64_t look_ns;      /* when (0: never) */
	uint8_t look_kind;     /* enum pdi_stack_placed: unknown until it answers, or when it failed */
	bool looking;          /* a walk is in flight */
	bool look_wanted;      /* this tick asks for one */
	char look_fn[64];      /* PDI_PLACED_IN_CALL: the MPI function on its stack */
};

/* Was task P placed in an MPI call by its stack, at its model's CALLS now? */
bool pdi_task_progress_in_call_by_stack(const struct pdi_task_progress *p, uint64_t calls);
/* Is a look at its stack asked for or in flight, with no answer yet for CALLS? */
bool pdi_task_progress_look_pending(const struct pdi_task_progress *p, uint64_t calls);

/* The bytes the main thread of PID has read and written (rchar + wchar of its io file, which
 * takes ptrace read access): 0, or -errno. */
int pdi_proc_io(pid_t pid, uint64_t *ret);

/* Task T at NOW_NS: its progress tracked in P, and what the judge takes from it in RET (its
 * state's durations pooled with its step's other tasks by the caller: RET->state is left
 * empty). Returns the calls it completed since the last look that were progress (polling
 * left out), for the step's rate. *RET_KEY: the state it is in (a model state key; UINT64_MAX
 * when none) for the caller to pool durations by. */
uint64_t pdi_task_progress_sample(struct pdi_daemon *d, struct pdi_task *t, struct pdi_task_progress *p,
				  uint64_t now_ns, struct pdi_health_task *ret, uint64_t *ret_key);

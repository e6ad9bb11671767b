/* SPDX-License-Identifier: GPL-2.0-only */
/* view.h -- a step as the analysis sees it: its call sites, and per task the model, where
 * the task is (or was when it ended) and what the node's kernel says it is doing. One
 * daemon builds the view of its own tasks (daemon/report/view_local.c); the gather ships
 * views between daemons as payloads (encode, decode, merge) and the root analyses the
 * merged one with the same code as one node. Pure code: no I/O, no daemon state. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"
#include "model.h"
#include "site.h"

enum pdi_where_kind { PDI_WHERE_FINISHED, PDI_WHERE_BLOCKED, PDI_WHERE_IN_MPI, PDI_WHERE_COMPUTING, PDI_WHERE_NO_MPI };

extern const char *const pdi_where_names[];

/* What the kernel of the task's node says the task is doing (daemon-side, from /proc): a
 * position in MPI tells where a task is, this whether it can move at all. */
enum pdi_activity {
	PDI_ACT_UNKNOWN,  /* not looked at: an ended task, or /proc could not be read */
	PDI_ACT_SLEEPING, /* waiting in the kernel (a blocking receive, a poll) */
	PDI_ACT_RUNNING,  /* on a CPU or ready and getting its share */
	PDI_ACT_STARVED,  /* ready to run but mostly waiting for a CPU (interference) */
	PDI_ACT_STOPPED,  /* stopped by a signal (SIGSTOP, SIGTSTP) or a debugger */
	PDI_ACT_DISK,     /* uninterruptible sleep: a file system or device that does not answer */
};
#define PDI_ACT_MAX PDI_ACT_DISK

extern const char *const pdi_activity_names[];

struct pdi_task_activity {
	enum pdi_activity kind;
	char wchan[64];   /* the kernel function it sleeps in, "" when none or unknown */
	int cpu_pct;      /* its CPU use over the last look, -1 when unknown */
	int wait_pct;     /* time ready but not running over the last look, -1 when unknown */
	uint64_t over_ns; /* the time the last look's shares are of (0: one sample only) */
};

/* A thread's shares of the time from its kernel counts (/proc/.../schedstat): RUN_NS on a CPU
 * and WAIT_NS ready in a run queue, added since a look INTERVAL_NS ago, into A's cpu_pct,
 * wait_pct and over_ns. The kernel adds a run-queue wait to its count when the wait ends (the
 * thread gets its CPU), in one lump: a wait that began before the earlier look arrives after
 * it, and the counts then cover more than the interval. A thread is running, ready or asleep
 * at any instant, so they cover at least RUN_NS + WAIT_NS: the shares are of that, when longer
 * than the interval (so neither passes 100%). */
void pdi_task_activity_shares(struct pdi_task_activity *a, uint64_t run_ns, uint64_t wait_ns, uint64_t interval_ns);

/* Where one task is now, or was when it ended: the one definition (the analysis groups and
 * orders tasks by it, every rendering prints it). */
struct pdi_where {
	enum pdi_where_kind kind;
	char text[600];   /* "MPI_Barrier@ring.c:37" or "after MPI_Waitall@ring.c:33" */
	uint64_t for_ns;  /* how long it has been there (running tasks) */
	int64_t site;     /* the call it is in or after, -1 when unknown */
	int32_t peers[PDI_NREQS + 1]; /* the ranks a blocked call waits for */
	unsigned npeers;
	uint64_t callsite; /* a live blocked call's return address, 0 otherwise */
	pid_t tid;         /* the thread in that call */
	struct pdi_task_activity act;
	/* Read off its live stack (report/snapshot.c): its probes were thinned (unobserved.h) since
	 * its last seen call, so they could not say whether it computes or sits in a call they did
	 * not see begin; its stack did. In a call so found, FOR_NS is how long it has been in it
	 * at least (since its probes saw in full again) and SITE is -1 (the call site is unknown). */
	bool by_stack;
};

#define PDI_VIEW_MAX_FRAMES 257 /* a task's call path: a live stack and its call site */

/* One task as the analysis sees it: a task of this daemon, or one gathered from another
 * node's daemon. */
struct pdi_view_task {
	int rank;
	pid_t pid;
	bool running;
	const struct pdi_model *model;
	struct pdi_where where;
	uint64_t progress;   /* visits of its current state: how far it got (STAT-TO) */
	uint64_t lost;       /* events lost */
	bool gap;            /* calls made while pdimond was down are missing */
	int64_t wall_offset_ns; /* add to the model's times (its node's CLOCK_MONOTONIC) for the time of
				   day in ns since the epoch; 0 when unknown */
	char **stack;        /* its call path, outermost first, ending in where it is; NULL: none.
				Owned by the view, whatever made it */
	size_t nstack;
};

/* A step as the analysis sees it: one daemon's part, or the parts of every node merged. */
struct pdi_view {
	char *name;
	uint32_t job_id, step_id;
	uid_t uid;
	bool running;
	int64_t started, ended;       /* seconds since the epoch; ended 0 while running */
	struct pdi_site *sites;       /* the state keys' site indices index these */
	uint32_t nsites;
	struct pdi_view_task *tasks;
	unsigned ntasks;
	/* a multi-node view */
	unsigned nodes, nodes_answered;
	uint32_t expected_tasks;      /* all the step's tasks, as Slurm counts them; 0: unknown */
	/* the node's hang judge holds the step hung (no task progressed for longer than its record
	 * makes plausible), though tasks may poll in MPI (Test, Iprobe) or compute rather than sit
	 * in one call; set by the daemon that roots the step, not carried in payloads */
	bool hung;
	uint64_t hung_for_ns;         /* how long no task has progressed */
	char **missing, **missing_why; /* nodes that did not answer, and why */
	unsigned nmissing;
	/* what the view owns */
	struct pdi_model *own_models;
	size_t nown_models;
	bool own_sites;
};

void pdi_view_done(struct pdi_view *v);
struct pdi_wire_writer;
/* V as a payload into OUT (its tasks grouped by identical models). 0, -ENOMEM, -EMSGSIZE. */
int pdi_view_encode(const struct pdi_view *v, struct pdi_wire_writer *out);
/* A payload as a view that owns all it points to. 0, or -EBADMSG, -EPROTONOSUPPORT (a newer
 * payload, or an MPI function this pdimon does not know), -ENOMEM. */
int pdi_view_decode(const uint8_t *p, size_t len, struct pdi_view *ret);
/* Payloads A then B as one, into OUT: B's sites renamed to A's by name. Either may be empty. */
int pdi_view_merge(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, struct pdi_wire_writer *out);
bool pdi_view_running(const struct pdi_view *v);
/* A state's name in V: its call site, or the pair of sites around a computation. */
void pdi_view_state_name(const struct pdi_view *v, uint64_t key, char *buf, size_t len);
/* The name of site I of V, "?" when V has none such. */
const char *pdi_view_site_name(const struct pdi_view *v, uint64_t i);
/* What task T is doing, or did when it ended, in words: "stopped (SIGSTOP or a debugger), no
 * MPI progress for 41 s", "computing, 100% CPU, no MPI call for 41 s", "asleep outside MPI
 * (not computing), ...", "waiting in MPI_Send@a.c:3 for 2 s", "ended outside MPI without
 * MPI_Finalize (after ...)"; a time under a second is not said. */
void pdi_view_task_doing(const struct pdi_view_task *t, char *buf, size_t len);
/* Whether task T's model misses something (site.h's one definition). */
bool pdi_view_task_incomplete(const struct pdi_view_task *t);

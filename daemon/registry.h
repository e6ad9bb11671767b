/* SPDX-License-Identifier: GPL-2.0-only */
/* registry.h -- the steps pdimond monitors, their tasks and the call sites they share. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "ident.h"
#include "model.h"
#include "procmaps.h"
#include "site.h"
#include "tracer.h"
#include "u64map.h"

struct pdi_chain;
struct pdi_step;
struct pdi_site_samples;
struct pdi_budget_task;
struct pdi_site_hold;
struct pdi_detach_batch;
struct pdi_step_group;

enum pdi_task_state {
	PDI_TASK_RUNNING,
	PDI_TASK_ENDED,
};

struct pdi_task {
	struct pdi_step *step;
	uint32_t id;         /* the n-th task of this daemon's life (recordings name tasks by it) */
	pid_t pid;
	int rank;            /* -1 when the process does not say */
	int pidfd;           /* readable when the process exits */
	uint64_t start_ticks; /* with the pid and the boot id: the process, across restarts */
	enum pdi_task_state state;
	struct pdi_attachment att;
	struct pdi_budget_task *budget; /* its probes' cost and levels (probe/budget.h); NULL: no budget */
	struct pdi_model model;
	struct pdi_u64map site_cache; /* call site address | fn << 48 -> site index */
	struct pdi_maps maps;         /* the process's mappings, reread when an address is not in them */
	struct pdi_chains *chains;    /* call chains past MPI bindings and libraries (callchain.c) */
	uint64_t world_comms[16];     /* MPI_COMM_WORLD and its copies: collectives on these span the
					 step and cut phases (ingest.c); none when the handle is unknown */
	unsigned nworld_comms;
	time_t started, ended;        /* wall clock */
	uint64_t events;
	uint64_t lost;                /* events the BPF side could not queue */
	uint64_t lost_noted;          /* of which the model's unobserved log has a record */
	uint64_t lost_checked_ns;     /* when they were last counted (CLOCK_MONOTONIC) */
	bool init_pending;            /* stopped in MPI_Init before we attached: see ingest.c */
	bool gap;                     /* the model missed calls: the daemon was down for a while */
	struct pdi_call init_call;
	struct pdi_chain *init_chain; /* its chain, read from the stopped process's stack, until its
					 site is named as the call is taken in (site_warm.h) */
	uint64_t dropped_sites;       /* calls whose new site did not fit in max_task_memory */
	bool stored_final;            /* ended, and written so: checkpoints skip it */
	bool store_pending;           /* written in the transaction under way */
	char *ended_in;               /* the MPI call the task was in when it ended, if any */
	int64_t ended_site;           /* its site, -1 when unknown */
	int32_t ended_peers[PDI_NREQS + 1]; /* the ranks that call waited for */
	unsigned nended_peers;
	struct pdi_cpu_seen {         /* the last look at its CPU use (task_activity.c) */
		uint64_t at_ns, run_ns, wait_ns;
		pid_t tid;
	} cpu_seen;
	pid_t usage_tid;              /* the thread whose counts its phases get: the first to call MPI
					 (task_activity.c) */
	int usage_fd;                 /* its /proc/PID/task/TID/schedstat, held open: read again
					 with pread() on every tick of the usage timer; -1 none */
	struct pdi_site_hold *site_hold; /* its calls waiting for a worker to read what their site's
					    name needs; NULL: none (probe/site_warm.h) */
	unsigned site_warms;          /* such reads since it began */
	bool exit_due;                /* its process exited while they waited: it ends when they are in */
};

enum pdi_phases { PDI_PHASES_DEFAULT, PDI_PHASES_AUTO, PDI_PHASES_PCONTROL };

struct pdi_step {
	char *name;                   /* "JOB.STEP" for a Slurm step */
	enum pdi_phases phases;       /* as the user asked: --pdi-monitor=phases=... */
	uid_t uid;                    /* the owner: who may read it */
	uint32_t job_id, step_id;     /* 0 when not a Slurm step */
	struct pdi_task **tasks;
	unsigned ntasks;
	struct pdi_site *sites;
	uint32_t nsites;
	uint32_t nsites_stored;       /* sites [0, nsites_stored) are in the store: never rewritten */
	struct pdi_u64map site_idx;
	char *executable;             /* the program of its first task: prior runs are found by it */
	char build[80];               /* its identity (program.h); "" when unknown */
	uint64_t input_size;          /* the user's input size (--pdi-monitor=size=N); 0: none */
	char **nodes;                 /* a Slurm step's nodes, in Slurm's order (the first roots the
	                               * gather), as its first registration gave them; NULL if none */
	unsigned nnodes;
	char *node;                   /* this node as that list names it; NULL if not given */
	uint32_t total_tasks;         /* the step's tasks on all its nodes, as Slurm counts them; 0:
					 unknown */
	unsigned nwatches;            /* processes whose MPI descendants will join */
	bool ending;                  /* the launcher said the step is over */
	/* its end (step_end.c): report built, stored, announced, in that order */
	bool end_started;             /* the report of its end is being built */
	uint32_t end_gen;             /* bumped when it runs again: results of an earlier end are stale */
	bool announced;               /* its end has been signalled */
	bool stored;                  /* its ended state is in the store: it may leave memory */
	unsigned store_pending;       /* its records queued for the store, not yet written */
	struct pdi_step_waiter *waiters; /* callers waiting for the report of its end */
	uint64_t used;                /* when it was last asked for (registry clock): the cache's LRU */
	char *report_json, *report_summary; /* built once the step has ended: it no longer changes */
	struct pdi_site_samples *site_samples; /* earlier runs from the site store (samples.h); NULL */
	unsigned site_samples_asked;  /* the task count they were last asked for (0: never) */
	unsigned site_samples_seen;   /* the task count at the last look, and since when: asked */
	uint64_t site_samples_seen_ns; /* once it stays the same for a while */
	time_t started, ended;
	/* its health (daemon/hang/): the judge's state, and what the user and site chose */
	struct pdi_step_health *health;
	uint8_t on_hang;              /* enum pdi_on_hang: --pdi-monitor=on-hang=...; 0: the site's */
	bool quiet;                   /* --pdi-monitor=notify=off: no line on the user's output */
	struct pdi_detach_batch *closing; /* its exited tasks' probe links, to close together
					   * (probe/step_detach.h); NULL: none */
	struct pdi_step_group *group; /* its own cgroup, whose CPU is read beside its tasks' counts
				       * (probe/step_group.h); NULL: not looked for yet */
};

/* A caller waiting for the report of a step's end (step_end.h): STATUS 0 and the report's
 * JSON and SUMMARY (the callee copies what it keeps), or a negative errno and WHY. */
typedef void (*pdi_step_answer_fn)(void *ctx, int status, const char *json, const char *summary, const char *why);
struct pdi_step_waiter {
	struct pdi_step_waiter *next;
	pdi_step_answer_fn answer;
	void *ctx;
	bool stored;  /* answered once the step is stored and announced, not once its report is built */
};

/* S's waiters answered (and forgotten): all of them, or with BUILT only those that wait for
 * the report alone. */
void pdi_step_answer_waiters(struct pdi_step *s, bool built, int status, const char *json, const char *summary,
			     const char *why);

/* A process whose MPI_Init (its own, or a descendant's) makes a task of STEP: the command
 * of "pdimon run", or a Slurm task registered before it executes the program. */
struct pdi_watch {
	pid_t root;
	struct pdi_ident ident;       /* the root, pinned: a reused pid is not it */
	struct pdi_step *step;
	int rank;                     /* the rank the launcher gave, -1 to read it from the environment */
	bool unwatch_due;             /* ended while a process of its tree was attached: it goes when
				       * that is done (probe/ahead_attach.h) */
};

/* What the rooms above the registry keep in a task and a step (a task's overhead budget and call
 * chains: probe/; a step's health: hang/; its earlier runs from the site: store/), freed with
 * it, and whether what they do about a step is settled: the registry calls no room above it by
 * name (doc/design/layout.md); upcalls.c wires these (upcalls.h). */
struct pdi_registry_parts {
	void (*task_free)(struct pdi_task *t);
	void (*step_free)(struct pdi_step *s);
	bool (*step_settled)(const struct pdi_step *s);
};

struct pdi_registry {
	const struct pdi_registry_parts *parts;
	struct pdi_step **steps;
	unsigned nsteps;
	struct pdi_watch *watches;
	unsigned nwatches;
	struct pdi_task **tasks;      /* every task, ended ones too, in registration order */
	unsigned ntasks;
	struct pdi_u64map task_by_pid; /* pid -> index into tasks, of running tasks */
	const char *runtime_dir;      /* where watched roots are recorded (trapped.h); NULL: nowhere */
	struct pdi_model_config model_cfg;
	uint32_t next_task_id;
	uint64_t clock;               /* ticks at every use of a step: the cache's LRU order */
};

/* The ended steps kept in memory once stored: the most recently used, within both limits. */
struct pdi_cache_limits {
	unsigned max_steps;
	uint64_t max_bytes;
};

void pdi_registry_init(struct pdi_registry *r, const struct pdi_model_config *cfg, const struct pdi_registry_parts *parts);
void pdi_registry_done(struct pdi_registry *r);

struct pdi_step *pdi_registry_find_step(struct pdi_registry *r, const char *name);
/* The step called NAME, created (owned by UID) if new. */
int pdi_registry_get_step(struct pdi_registry *r, const char *name, uid_t uid, struct pdi_step **ret);

/* Watch the pinned ROOT, whose pidfd the watch takes over (ROOT's is -1 after). */
int pdi_registry_add_watch(struct pdi_registry *r, struct pdi_step *s, struct pdi_ident *root, int rank);
struct pdi_watch *pdi_registry_find_watch(struct pdi_registry *r, pid_t root);
/* Forget the watch of ROOT; ends its step if that was all it waited for. */
void pdi_registry_remove_watch(struct pdi_registry *r, pid_t root);
bool pdi_step_running(const struct pdi_step *s);

/* Forget STEP if it has no task and watches nothing (a failed attach created it). */
void pdi_registry_drop_if_empty(struct pdi_registry *r, struct pdi_step *s);

/* The running task with PID, or NULL. */
struct pdi_task *pdi_registry_find_task(struct pdi_registry *r, pid_t pid);

/* Add a task to STEP. -EEXIST if PID is monitored already. */
int pdi_registry_add_task(struct pdi_registry *r, struct pdi_step *s, pid_t pid, int rank,
			  struct pdi_task **ret);
/* Add a task that has ended already (history, or a process gone while pdimond was down). */
int pdi_registry_add_ended_task(struct pdi_registry *r, struct pdi_step *s, pid_t pid, int rank,
				struct pdi_task **ret);
/* Mark a task ended; it keeps its model. */
void pdi_registry_end_task(struct pdi_registry *r, struct pdi_task *t);
unsigned pdi_step_running_tasks(const struct pdi_step *s);

/* Forget step S with its tasks (detached, their pidfds closed) and watches: a step that
 * leaves memory, or one that could not be loaded whole. The caller stops watching S's
 * watched processes in the tracer first. */
void pdi_registry_remove_step(struct pdi_registry *r, struct pdi_step *s);
/* S was asked for: it goes to the front of the cache's order. */
void pdi_registry_touch(struct pdi_registry *r, struct pdi_step *s);
/* What S holds in memory, as the cache counts it: its models, sites, tasks and report. */
uint64_t pdi_step_bytes(const struct pdi_step *s);
/* Whether S may leave memory: ended, announced, stored, nothing of it in flight. */
bool pdi_step_evictable(const struct pdi_registry *r, const struct pdi_step *s);
/* Evictable steps beyond LIMITS leave memory, least recently used first. How many left. */
unsigned pdi_registry_evict(struct pdi_registry *r, const struct pdi_cache_limits *limits);

/* The rank an MPI launcher gave PID, from its environment; -ENOENT when none says. */
int pdi_proc_rank(pid_t pid);
/* PID's environment: NUL-separated, NUL-terminated, malloc'd; -ESRCH when it is gone. */
int pdi_proc_environ(pid_t pid, char **ret, size_t *ret_len);
/* NAME's value in such an environment, or NULL. */
const char *pdi_env_get(const char *env, size_t len, const char *name);

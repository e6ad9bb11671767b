/* SPDX-License-Identifier: GPL-2.0-only */
/* daemon.h -- the one struct that owns everything pdimond runs on. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "calibrate.h"
#include "clock.h"
#include "config.h"
#include "hang.h"
#include "registry.h"
#include "service.h"

struct pdi_daemon;
struct pdi_tracer;
struct pdi_objcache;
struct pdi_store;
struct pdi_peer;
struct pdi_gather;
struct pdi_workers;
struct ahead_job;
struct pdi_subscribers;
struct pdi_site_store;
struct pdi_budget_learned;
typedef struct sd_bus sd_bus;

/* epoll_event.data.u64: what became ready, and which one (a task's index). */
enum pdi_source_kind {
	PDI_SRC_BUS = 1,
	PDI_SRC_SIGNAL,
	PDI_SRC_TIMER,
	PDI_SRC_RING,
	PDI_SRC_TASK,
	PDI_SRC_PEER_LISTEN, /* the peer port: connections from other pdimonds */
	PDI_SRC_PEER,        /* one of those connections (its slot in peer.c) */
	PDI_SRC_WORKERS,     /* jobs finished off the loop (worker.h) */
	PDI_SRC_STORE,       /* records written by the store's lane (persist.h) */
	PDI_SRC_BUDGET,      /* the overhead budget's slot timer (probe/budget.h) */
	PDI_SRC_SITE_STORE,  /* the site store's lane finished a job (site_store.h) */
	PDI_SRC_USAGE,       /* the timer that reads the tasks' kernel counts (probe/usage_timer.h) */
};
#define PDI_SRC(kind, index) ((uint64_t)(kind) << 56 | (uint64_t)(index))
#define PDI_SRC_KIND(u) ((unsigned)((u) >> 56))
#define PDI_SRC_INDEX(u) ((unsigned)((u)&0xffffffffu))

/* The calls that run up the floors (doc/design/layout.md): a room below calls a room above it
 * only through these, which upcalls.c wires (upcalls.h). */
struct pdi_upcalls {
	/* step_end.h's pdi_step_ended(), for the ingest (a task exited) and the store (a restored
	 * step had ended meanwhile) */
	void (*step_ended)(struct pdi_daemon *d, struct pdi_step *s);
	/* bus.h's signals, for the step's end (step_end.c) and its health (hang/step_health.c) */
	void (*emit_step_ended)(struct pdi_daemon *d, const struct pdi_step *s, const char *state);
	void (*emit_step_health_changed)(struct pdi_daemon *d, const struct pdi_step *s, const char *health,
					 const char *verdict_json);
	/* the hang judge's (hang/step_health.h, hang/health_state.h), for the step's view and report below it: how long
	 * a call is before it is blocked, since when a task polls, the step's health, and the
	 * report with the step's health in it */
	uint64_t (*hang_blocked_after_ns)(const struct pdi_daemon *d, const struct pdi_step *s);
	uint64_t (*hang_polling_since)(const struct pdi_step *s, unsigned i);
	enum pdi_health (*step_health_of)(const struct pdi_step *s, time_t *ret_since);
	int (*step_health_amend_report)(const struct pdi_step *s, char **json);
	/* bus/api.h's pdi_unwatch(), for the start-up attaches (probe/ahead_attach.c): a watch that
	 * ended while a process of its tree was being attached goes when the last such attach is done */
	void (*unwatch)(struct pdi_daemon *d, pid_t root);
};

struct pdi_daemon {
	struct pdi_config cfg;
	const char *config_path;  /* what SIGHUP rereads, made absolute */
	bool explicit_config;     /* --config: the file must exist */
	char **overrides;         /* --set KEY=VALUE, applied after the file, at every reload */
	unsigned noverrides;
	bool verbose;             /* -v: debug messages whatever log_level says */
	struct pdi_service svc;   /* the service manager, or the parent waiting in the terminal */
	uint64_t loop_max_ns;     /* the longest a wake-up kept the loop busy since the start */
	struct pdi_registry reg;
	const struct pdi_upcalls *up; /* &pdi_upcalls (upcalls.h) */
	struct pdi_tracer *tracer;
	struct pdi_objcache *objs;
	sd_bus *bus;
	int epoll_fd, signal_fd, timer_fd;
	uid_t slurm_uid;          /* may register tasks; -1 when the SlurmUser is unknown here */
	gid_t admin_gid;          /* reads every step; -1 when none is configured */
	bool quit;
	bool failed;              /* quit because of an error: exit non-zero */
	uint64_t started_ns;      /* CLOCK_MONOTONIC */
	uint64_t events;          /* calls ingested since start */
	uint64_t unknown_events;  /* calls from processes no longer (or never) monitored */
	uint64_t rate_events, rate_t_ns; /* for events/s over the last second or so */
	double events_per_s;
	FILE *record;             /* the "record" setting's file, or NULL */
	struct pdi_store *store;  /* NULL when nothing persists; the loop's reads only */
	struct pdi_store *store_writer; /* the store's lane's connection: its jobs only */
	struct pdi_workers *store_lane; /* writes, in order, off the loop (persist.h) */
	uint64_t last_checkpoint_ns, last_expire_ns;
	struct pdi_peer *peer;     /* NULL: no peer listener (peer_port = 0, or the port is taken) */
	struct pdi_gather *gather; /* a step's tree gather (gather.h); NULL without the listener */
	struct pdi_workers *workers; /* slow work off the loop (worker.h) */
	/* probes of starting processes attached off the loop (probe/ahead_attach.h) */
	struct pdi_workers *ahead_workers;
	struct ahead_job *ahead_jobs; /* attaches in flight, with what their processes sent meanwhile */
	unsigned ahead_events;        /* events and frames records kept by them, all together */
	unsigned ahead_frames;        /* of which frames records */
	unsigned site_held;           /* calls waiting for their site's objects (probe/site_warm.h) */
	/* maps of processes attached as they started, read on a worker then, until they join */
	struct pdi_ahead_maps *ahead_maps;
	unsigned nahead_maps;
	/* the process whose MPI_Init is handled once its objects were read (ahead_attach.c), with what
	 * was read of it at its MPI_Init, while it surely lived: it may have exited since */
	struct pdi_joining {
		pid_t pid;
		int rank;
		struct pdi_maps maps;
		int exe_fd; /* its executable, pinned (pdi_objopen_mapped()); -1 if not */
	} joining;
	bool evict_due;            /* a step joined the cache of ended steps: check its limits */
	struct pdi_subscribers *subscribers; /* who hears the step signals (bus/subscribe.c) */
	/* the overhead budget (probe/budget.h) */
	struct pdi_probe_costs probe_costs; /* per hit on this node, measured at start-up */
	int budget_fd;                      /* its slot timer; -1 when the budget is off */
	bool budget_armed;                  /* the timer runs only while tasks do */
	uint64_t budget_epoch_ns, budget_last_ns;
	unsigned budget_closing;            /* its jobs closing replaced links (probe/detach.h) */
	unsigned budget_changing;           /* its jobs attaching new links (probe/budget_change.h) */
	struct pdi_budget_learned *budget_learned; /* levels per program (probe/budget_learn.h); NULL: off */
	/* the tasks' kernel counts, read on a timer (probe/usage_timer.h) */
	int usage_fd;                       /* its timerfd; -1 when not open */
	uint64_t usage_armed_ns;            /* its period while it runs, 0 stopped */
	unsigned usage_tasks;               /* tasks the last tick read */
	double usage_cost_ns;               /* the loop's CPU per task read, smoothed */
	uint64_t usage_reads, usage_cpu_ns; /* all the readings so far, and their CPU */
	/* the mounts of cgroup v2 and v1's cpuacct (O_PATH; -1 none), where steps' own cgroups are
	 * pinned (probe/step_group.h); looked for at the first task */
	int cgroup_v2_fd, cgroup_v1_fd;
	bool cgroup_looked;
	struct pdi_site_store *site; /* the site's PostgreSQL; NULL when none (site_store.h) */
	struct pdi_hang hang;         /* hang detection, daemon-wide (hang/hang.h) */
};

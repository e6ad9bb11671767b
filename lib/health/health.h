/* SPDX-License-Identifier: GPL-2.0-only */
/* health.h -- whether a live step is ok, slow or hung, judged continuously from what the
 * daemon already has, with no timeout to set (doc/design/hang-detection.md).
 *
 * Each tick the daemon hands in, per running task, how long it has gone without progress
 * (an MPI call completed or entered, other than polling one request; or I/O), what it is
 * doing (waiting in MPI, computing, sleeping, stopped, traced) and the durations learned for
 * the state it is in; and the step's count of completed calls. The judge keeps:
 *   - hung: no task has made progress for Q, Q is beyond the step's threshold at the
 *     configured false-alarm rate, and no task's current state is known to last that long.
 *     The threshold (quiet.h) comes from the step's own healthy quiet episodes and its
 *     program's earlier runs, kept apart by kind: "open" while a task outside MPI is in a
 *     state never seen to end or known to last long (a first checkpoint may), "settled"
 *     otherwise (a task spinning in a state that always ended in milliseconds); each kind
 *     has its own prior and half the false-alarm rate;
 *   - slow: the rate of progress stayed far below the step's own for long enough that a
 *     healthy step does so less often than the rate allows (rate.h);
 *   - what could not be judged (a debugger holds a task, every task is stopped, the daemon
 *     did not run for a while), said once.
 * A verdict is an episode: it is announced once, and its end (progress again) once. A step
 * of several nodes is suspected here and confirmed by the caller across its nodes before it
 * is announced (pdi_health_commit). Pure: no I/O, no clock (times come in). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "quiet.h"
#include "rate.h"

enum pdi_health { PDI_HEALTH_OK, PDI_HEALTH_SLOW, PDI_HEALTH_HUNG };
extern const char *const pdi_health_names[]; /* "ok", "slow", "hung" */

/* What a running task does, as far as progress goes. */
enum pdi_motion {
	PDI_MOTION_WAITING,   /* inside an MPI call */
	PDI_MOTION_COMPUTING, /* outside MPI, running */
	PDI_MOTION_IDLE,      /* outside MPI, sleeping (or in a device) without I/O */
	PDI_MOTION_STOPPED,   /* stopped by a signal */
	PDI_MOTION_TRACED,    /* stopped by a debugger */
	PDI_MOTION_STARTING,  /* no MPI call completed yet */
	PDI_MOTION_FINISHED,  /* returned from MPI_Finalize */
};
extern const char *const pdi_motion_names[];

/* The durations learned for a state (this run, every task of the step that was in it). */
struct pdi_state_durations {
	uint64_t n;         /* completed visits */
	double mean_s, sd_s;
	double longest_s;   /* the longest seen (or the best lower bound of it) */
};

/* The key that stands for every computation after call site SITE (what comes next is not
 * known while it runs): for pdi_state_durations_of(). */
static inline uint64_t pdi_state_after(uint32_t site)
{
	return pdi_state_comp(site, PDI_SITE_MAX);
}

/* The durations of state KEY (a model state key, or pdi_state_after()) over MODELS (N of
 * them; at most PDI_HEALTH_POOL are read: the tasks of a step run one program), in seconds. */
#define PDI_HEALTH_POOL 16
void pdi_state_durations_of(const struct pdi_model *const *models, unsigned n, uint64_t key,
			    struct pdi_state_durations *ret);

struct pdi_health_task {
	int rank;
	enum pdi_motion motion;
	double idle_s;                    /* since its last progress */
	struct pdi_state_durations state; /* of the state it is in; n 0 when unknown */
	bool blind;                       /* some of its calls go unseen (probes detached to save
					     overhead): no quiet of it is evidence */
};

struct pdi_health_input {
	double now_s;        /* a monotonic clock */
	uint64_t progress;   /* the step's completed calls (polling excluded), ever increasing */
	const struct pdi_health_task *tasks; /* its running tasks here */
	unsigned ntasks;
};

struct pdi_health_params {
	struct pdi_quiet_params quiet;
	struct pdi_rate_params rate;
	double novel_prior_scale_s; /* the prior while a task outside MPI is in a state never seen to
				       end: what it does may legitimately take long (a first checkpoint) */
	double floor_s;         /* never hung before this much quiet (hang_timeout_ms); 0: none */
	double state_min_visits; /* a state explains a quiet only with this many completed visits */
	double stall_factor;    /* a tick this many times late: the daemon did not run meanwhile */
};

extern const struct pdi_health_params pdi_health_params_default;

/* The two kinds of quiet episode: each has its own record, its own prior and half the rate
 * of false alarms. */
enum pdi_quiet_kind {
	PDI_QUIET_SETTLED, /* every task outside MPI is in a state known to end soon */
	PDI_QUIET_OPEN,    /* one is in a state never seen to end, or known to last this long */
	PDI_QUIET_KINDS,
};

/* What a step (or its program over its runs) showed while healthy, by kind of episode. */
struct pdi_health_record {
	struct pdi_quiet_record kind[PDI_QUIET_KINDS];
};

void pdi_health_record_merge(struct pdi_health_record *into, const struct pdi_health_record *from);
struct pdi_wire_writer;
/* As bytes for the store: 0, or the writer's error. */
int pdi_health_record_encode(const struct pdi_health_record *r, struct pdi_wire_writer *w);
/* From the store, checked: 0, -EBADMSG (RET untouched). */
int pdi_health_record_decode(const void *p, size_t len, struct pdi_health_record *ret);

/* What could not be judged, each said once per step. */
enum pdi_unjudged {
	PDI_UNJUDGED_TRACED = 1u << 0,   /* a debugger holds a task */
	PDI_UNJUDGED_SUSPENDED = 1u << 1, /* every task is stopped */
	PDI_UNJUDGED_STALLED = 1u << 2,  /* the daemon did not run for a while: not counted */
	PDI_UNJUDGED_STARTING = 1u << 3, /* a task has made no MPI call yet */
	PDI_UNJUDGED_BLIND = 1u << 4,    /* a task's probes are detached: its progress may be unseen */
};

/* One tick's verdict. */
struct pdi_health_verdict {
	enum pdi_health health;    /* what the step looks like now */
	double quiet_s;            /* no progress for this long */
	double threshold_s;        /* hung at this much quiet, now */
	double p;                  /* how unlikely a healthy step is this quiet (hung) */
	double since_s;            /* when the verdict's episode began (the clock of the input) */
	int critical;              /* index in the input's tasks of the one most behind (a stopped
				      one first, then one asleep or computing outside MPI, the
				      longest idle of those), -1 none */
	double rate_ratio;         /* slow: its recent progress rate over its usual one */
	unsigned unjudged;         /* enum pdi_unjudged bits that hold now */
	unsigned unjudged_new;     /* those of them never said before: say them, once */
	int unjudged_task;         /* the task a reason is about (traced, starting, blind), -1 none */
};

/* The judge of one step: what it learned and what it announced. */
struct pdi_health_judge {
	struct pdi_health_params params;
	struct pdi_health_record run;     /* this run's healthy episodes */
	struct pdi_health_record history; /* the program's earlier runs */
	struct pdi_rate rate;
	enum pdi_health announced;        /* committed: what the world was told */
	double announced_since_s;
	double last_now_s;                /* the previous tick, 0 before the first */
	double last_quiet_s;
	uint64_t last_progress;
	double paused_s;                  /* time not counted (stalls) in the current episode */
	bool episode_tainted;             /* a task was stopped or traced in it: not healthy data */
	enum pdi_quiet_kind episode_kind; /* of the current episode, as last seen */
	bool judging;                     /* every task has started: ticks count */
	unsigned said;                    /* enum pdi_unjudged bits said already */
};

void pdi_health_init(struct pdi_health_judge *h, const struct pdi_health_params *p);
/* The earlier runs' record: the program's history from the store. */
void pdi_health_set_history(struct pdi_health_judge *h, const struct pdi_health_record *history);

/* One tick. The verdict may differ from what was announced: the caller confirms it (across
 * nodes) and commits it, or leaves it. */
void pdi_health_tick(struct pdi_health_judge *h, const struct pdi_health_input *in, struct pdi_health_verdict *ret);

/* The quiet of TASKS alone judged with H's record and parameters, H unchanged: HUNG or OK,
 * with the quiet, threshold, p and the task most behind, into RET. What confirms a hang a node
 * suspected, on the tasks of all of the step's nodes (their idle: the time since each last
 * moved, as far as every node can tell). */
void pdi_health_judge_tasks(const struct pdi_health_judge *h, const struct pdi_health_task *tasks, unsigned n,
			    struct pdi_health_verdict *ret);

/* Whether V changes what was announced: a new episode (slow or hung), or its end. */
bool pdi_health_news(const struct pdi_health_judge *h, const struct pdi_health_verdict *v);
/* V is announced (after the caller confirmed it). */
void pdi_health_commit(struct pdi_health_judge *h, const struct pdi_health_verdict *v);

/* The record of everything seen healthy (history and this run), for the threshold. */
void pdi_health_record(const struct pdi_health_judge *h, struct pdi_health_record *ret);
/* The state durations' horizon: the longest a visit is still plausible at P's rate. */
double pdi_state_horizon(const struct pdi_state_durations *d, double observed_s, const struct pdi_health_params *p);

/* SPDX-License-Identifier: GPL-2.0-only */
/* budget.h -- the overhead budget: no task pays its probes more than max_overhead_pct.
 *
 * Each task's cost is the sum over its probed functions of (calls per second) x (what a hit
 * costs on this node, calibrate.h), over the share of the CPU its MPI thread gets while ready
 * (bounded: a rank waiting for its core pays its hits out of less CPU), and the switches of its probes
 * that its levels make (budget_price.h). When it would pass the budget, the hottest function is
 * degraded one step at a time: its return probe dropped (nonblocking calls only), then
 * probed in time slices of 1/2 ... 1/32 of every second, then detached (re-measured in one
 * slice 2 and 3 s after, then every 4 s). When its rate falls, it is restored to the fullest
 * level that fits (a detached one as soon as its re-measuring slice has been counted). The
 * running tasks of a step on this node keep one level per function, the most degraded any of
 * them needs, so that they are seen alike and their models stay comparable. The first task of a
 * step starts at the levels earlier runs of its program needed (budget_learn.h). Each change is
 * marked in the task's model (unobserved.h). See doc/design/overhead-budget.md. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "budget_learn.h"
#include "budget_price.h"
#include "calibrate.h"

struct pdi_daemon;
struct pdi_task;

#define PDI_BUDGET_SLOTS 32u    /* a period is cut in this many slots */
#define PDI_BUDGET_SHARE_BOUND 4 /* a hit costs a task at most this many times its CPU cost */

/* One function of one task. */
struct pdi_budget_fn {
	uint8_t level;          /* 0 full, 1 entry only, 2-6 slices of 1/2-1/32, 7 detached: the
				   level of the step's running tasks on this node, the most degraded
				   any of them needs */
	uint8_t need;           /* the level this task's own cost needs */
	uint8_t kind;           /* its entry instruction: enum pdi_insn_kind */
	uint16_t stable;        /* periods since its need last changed */
	uint64_t hits;          /* calls seen this period */
	uint64_t observed_ns;   /* time its probes were on this period */
	uint64_t on_from_ns;    /* when its probes last came on: an attach on a worker lands within a
				   slot, and only the time they were on counts (budget_change.c) */
	double rate;            /* calls per second, from the last period it was seen in */
	bool rated;             /* RATE was measured (a level learned from earlier runs comes first) */
	bool learned;           /* its level is the one earlier runs of the program left (budget_learn.h) */
	bool need_learned;      /* its need is that level, held LEARNED_HOLD periods (budget.c) */
	uint8_t peak;           /* the most degraded need its rates in this run gave it: with a learned
				   need kept to its end, what the program's next run starts at */
	uint64_t detached_period; /* the period its level became detached in: its re-measuring
				     slices are counted from there (budget.c) */
};

struct pdi_budget_task {
	struct pdi_budget_fn *fn; /* per pdi_mpi_funcs entry */
	double cost;              /* estimated share of the task's time its probes take */
	uint64_t period_start_ns; /* calls made before it belong to a period already measured */
	bool changing;            /* its probes are being changed on a worker (budget_change.h) */
	double cpu_share;         /* the share of its ready time its MPI thread runs, smoothed, at
				     least 1 / PDI_BUDGET_SHARE_BOUND: a hit costs it that much more */
	uint64_t run_ns, wait_ns; /* its schedstat at the last look */
	bool share_seen;          /* CPU_SHARE was measured once (before: 1, a core of its own) */
	uint64_t step_synced_ns;  /* the slot its levels were last made its step's (budget.c) */
	uint64_t program;         /* pdi_program_hash() of its step, for the levels learned per program;
				     0: unknown */
	uint64_t begun_ns;        /* when the budget began to hold it */
	double charged_ns;        /* the time its probes took from it by the budget's account: COST
				     over each slot, summed; said at its end, so that what the
				     budget believed can be set beside what a run measured */
};

/* The budget timer (a timerfd the loop polls), or -1 when the budget is off. */
int pdi_budget_open(struct pdi_daemon *d);
void pdi_budget_close(struct pdi_daemon *d);
/* The budget timer fired: slices begin and end, rates are measured, levels change. */
void pdi_budget_on_timer(struct pdi_daemon *d);
/* A task's probes were attached / it ended. */
int pdi_budget_task_begin(struct pdi_daemon *d, struct pdi_task *t);
void pdi_budget_task_end(struct pdi_daemon *d, struct pdi_task *t);
/* One call of function FN of task T, made at T_ENTER, was seen (ingest.c). A call drained late
 * (the loop was busy) that was made in an earlier period is not counted in this one: against
 * the few ms a detached function is re-measured in, a backlog would read as an enormous rate. */
static inline void pdi_budget_hit(struct pdi_budget_task *b, unsigned fn, uint64_t t_enter)
{
	if (b && t_enter >= b->period_start_ns)
		b->fn[fn].hits++;
}

static inline void pdi_budget_task_free(struct pdi_budget_task *b)
{
	if (b)
		free(b->fn);
	free(b);
}

/* The next CPU share of a task from the last one and a look at its thread that found it RUN ns on
 * a CPU and WAIT ns waiting for one since the look before (schedstat): averaged with the last,
 * bounded below by 1 / PDI_BUDGET_SHARE_BOUND; a thread that hardly was ready leaves it. */
double pdi_budget_cpu_share(double last, uint64_t run, uint64_t wait);

/* "full", "entry only", "sampled 1/8", "detached" */
const char *pdi_budget_level_name(unsigned level, char *buf, unsigned len);

/* SPDX-License-Identifier: GPL-2.0-only */
/* starved.h -- "not getting CPU": the share of the time a task was ready to run that it spent
 * on a CPU, phase by phase, against its peers in the same phase and against its own usual.
 *
 * A process that shares a rank's CPU (a daemon, a misplaced job, a memory-bandwidth hog) takes
 * CPU from that rank alone: the rank waits on the run queue while its peers, on other CPUs, do
 * not, and the peers then wait for it inside MPI. The seconds it waited (lost_time.h's
 * "waiting") hardly show it where the machine is loaded anyway -- every rank of an
 * oversubscribed node waits most of the time -- but the share it got does: a third of its
 * peers' share is a third, whatever the load. A load that slows every task alike changes no
 * ratio, and a rank that always gets less (it shares its CPU by placement) is taken at its
 * usual ratio, so neither is a fault.
 *
 * The shares are compared in slots of each phase where the kernel's counts were read inside it
 * (usage_log.h), so that a hog that arrived late in a phase, or covered most of a long one, is
 * not diluted by the rest of it. The finding is the run of slots in a row where one task fell
 * furthest behind (how far times how long: a 6 s interference outweighs a sharper blip; a phase
 * read in the same batch as the next, with no share of its own, does not end the row, nor does one
 * where every task got at most 1/PDI_STARVED_JOIN of its usual share: a dip of all alike), its
 * phases the finding's, beginning where its share first fell below its own usual: where
 * interference begins, the scheduler takes a moment to settle and every rank may get as little
 * for a while. A task sharing the CPU with it that fell nearly as far behind is named beside it.
 *
 * The kernel's counts are struct pdi_usage (read by pdimond from /proc/PID/task/TID/schedstat as
 * each phase begins and every quarter of a second through the step): no per-call cost. A slot
 * counts for a task only when it was ready to run (on a CPU or waiting for one) most of it: a
 * task asleep in MPI has no share to compare. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alike.h"
#include "model.h"

/* A phase where a task got this many times less of the CPU than its peers (beyond its own
 * usual) is a candidate; adjacent phases join the run at PDI_STARVED_JOIN. */
#define PDI_STARVED_RATIO 3.0
#define PDI_STARVED_JOIN 2.0
/* A phase just before the run joins it when the task got this many times less than its own
 * usual share there, over the step and before that phase (where the interference began, in part
 * of the phase, or the scheduler settled after it: not a machine busier for all since the start). */
#define PDI_STARVED_ONSET 1.3
/* ... and so does the phase before the run's when the task got at most 1/PDI_STARVED_JOIN of its own
 * usual share in its last PDI_STARVED_EDGE_S (s), where the readings there are that fine
 * (pdimond's timer, usage_timer.h): an interference that began in a phase's last moments. */
#define PDI_STARVED_EDGE_S 0.1
/* A task whose share rose this many times over its usual during the run took the CPU. */
#define PDI_STARVED_TOOK 1.25
/* ... or a task that was on a CPU this share of the time it was ready over the run, while every
 * other ready task got at most 1/PDI_STARVED_OWN_OVER of its share, had a CPU to itself; on a
 * node loaded beyond its cores, where no task gets that share, one that got PDI_STARVED_TOOK_OVER
 * times the share of every other ready task took the CPU all the same. */
#define PDI_STARVED_OWN_CPU 0.8
#define PDI_STARVED_OWN_OVER 1.5
#define PDI_STARVED_TOOK_OVER 2.0
/* The run must last this long (s): a stall's worth of not getting CPU, not a scheduler tick. */
#define PDI_STARVED_MIN_S 1.0
/* A phase counts for a task when it was ready to run this share of it. */
#define PDI_STARVED_READY 0.5
/* A task's usual: its ratio to its peers below which it stayed this share of its time (phases
 * weighed by length), and the share of the CPU it got at least (1 -) this share of its time. Not
 * the median: interference may cover most of a short step's time (HPCC, issue 9: 5 s of 9, after
 * a set-up of 3.4 s it began in), while a task that shares its CPU by placement gets less all
 * the time, in its best tenth too. */
#define PDI_STARVED_USUAL_Q 0.1
/* A phase is compared in slots of at least this long (s), as many as the readings inside it on
 * every task allow (usage_log.h), at most PDI_STARVED_SLOTS: a process that came to share a
 * rank's CPU late in a phase, or for most of a long one, shows in the slots it was there. */
#define PDI_STARVED_SLOT_S 0.25
#define PDI_STARVED_SLOTS 16
/* The spread of the phases' log ratios below which it is taken as this: about 10%; and the units
 * outside the run below which they are too few to tell the step's noise (the peak is then
 * compared with the other tasks in its unit, the run as a whole with nothing). */
#define PDI_STARVED_NOISE_FLOOR 0.1
#define PDI_STARVED_NOISE_UNITS 6
/* Another task that fell this share as far behind over the run (log ratio times seconds)
 * shares the CPU with it: named beside it. */
#define PDI_STARVED_ALSO_SHARE 0.5

struct pdi_starved {
	bool found;          /* some task fell behind its peers at least PDI_STARVED_RATIO times, in a run of
				phases that lasted PDI_STARVED_MIN_S */
	bool has_usage;      /* some phase had the kernel's counts of two tasks to compare */
	size_t task;         /* the model that fell furthest behind */
	uint32_t peak, onset, last; /* the run's first and last phase (the run it fell furthest behind
				       over), and the phase in it where it fell furthest behind */
	double ratio;        /* at the peak (the slot of phase PEAK where it fell furthest behind): its
				peers' share of the CPU over its own, beyond its usual */
	double wait_share;   /* at the peak: the share of the slot it waited for a CPU */
	double peers_wait_share; /* ... and its peers' (median) */
	double run_s;        /* the run's length (s) */
	double wait_s;       /* the time it waited for a CPU over the run (s) */
	double task_margin;  /* how far it fell behind over the run (log ratio x s) over the furthest behind
				task not named beside it */
	double other_phase;  /* the largest log ratio of any task in a phase outside the run */
	double other_behind; /* the most any task fell behind (log ratio x s) in one phase outside the run */
	double z;            /* the peak's log ratio above the other units' largest (median), in robust
				sds, or the run's mean log ratio above the largest mean of as many units in
				a row elsewhere, whichever is higher */

	/* what pdi_starved_of() reads */
	double *x;           /* n x nphases: each model's log ratio beyond its usual; 0 unknown */
	double *window;      /* n: how far each model fell behind over the run (log ratio x s) */
	bool taken;          /* the CPU it went without was taken by one task of the step (a rank spinning
				in its own code while its peers wait for it: the fault is that task's) */
	size_t taker;        /* ... that model: a single task, on a CPU over the run's phases
				PDI_STARVED_RATIO times as long as any other or that took the CPU by
				its share (pdi_starved_took_cpu()), and more than its usual share or its peers'
				(gain) by PDI_STARVED_TOOK */
	double taker_cpu_s, next_cpu_s; /* its time on a CPU over the run's phases, and the most any other
				task had there (s) */
	double *gain;        /* n: how much more of the CPU each model got over the run than its usual,
				or than its peers beyond its usual ratio, whichever is more (log share;
				the spinning rank that took it) */
	size_t n;
	uint32_t nphases, first, end;
	struct pdi_alike alike; /* every rank fell alike, and a process of the job's own took it (alike.h) */
};

/* The shares of N models (WEIGHTS[i] tasks each; NULL: 1) over phases [FIRST, END). 0 (found
 * false when nothing stands out, or there were no counts), or -ENOMEM, -EINVAL (no phase). */
int pdi_starved_find(const struct pdi_model *const *models, const uint32_t *weights, size_t n, uint32_t first,
		     uint32_t end, struct pdi_starved *ret);
void pdi_starved_done(struct pdi_starved *s);

/* Whether a task on a CPU SHARE of the time it was ready to run, while no other ready task of
 * the step was on one more than OTHERS of its own, took the CPU its peers waited for: it had a
 * CPU to itself (PDI_STARVED_OWN_CPU, PDI_STARVED_OWN_OVER), or, on a loaded node, got
 * PDI_STARVED_TOOK_OVER times the share of every other (OTHERS above 0: some other task competed
 * for a CPU). False when SHARE is NAN. */
bool pdi_starved_took_cpu(double share, double others);

/* Model T's log ratio in phase P (0 outside, or unknown). */
double pdi_starved_of(const struct pdi_starved *s, size_t t, uint32_t p);
/* Whether model T is named with the finding: the task that took the CPU (taken), or else the
 * task, or one that fell nearly as far behind over the run (it shares the CPU). */
bool pdi_starved_named(const struct pdi_starved *s, size_t t);
/* The tasks the interference hit: the finding's task and those named beside it (they fell nearly
 * as far behind over the run: they share its CPU), the furthest behind first, into RET (room for
 * S->n); their number, 0 when none or the CPU was taken by a task of the step. Where ranks are not
 * bound to CPUs the scheduler moves them through the busy CPU and a hog takes from several
 * (interf14's unpinned seeds 932-933: a second rank as low as the victim in GROMACS mem); the
 * reader is told which, in the order of what they lost. */
size_t pdi_starved_hit(const struct pdi_starved *s, size_t *ret);
/* What the finding's task was doing, in words, into BUF: "waited 4.8 s for a CPU from phase 5 to
 * 9 (6.0 s), at worst 62% of the time in phase 7 (its peers 20%): a fifth of their share of the
 * CPU"; where the CPU was taken, what the task that took it did: "on a CPU 0.70 s over phase 4,
 * its peers 0.17 s at most: it took the CPU they waited for"; "" when none. */
void pdi_starved_text(const struct pdi_starved *s, char *buf, size_t len);

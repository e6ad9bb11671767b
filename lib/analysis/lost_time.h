/* SPDX-License-Identifier: GPL-2.0-only */
/* lost_time.h -- the time one task lost against its peers, phase by phase, in seconds: what
 * a person calls a stall, and what the call timings alone cannot always show.
 *
 * In a phase of an SPMD program the tasks do the same work; the one that stalls makes the
 * others wait for it inside MPI, where they busy-poll (MPI libraries spin while they wait).
 * So what one task did beyond the others' median, in the same phase, is the fault's
 * signature, and a loaded machine, which slows every task alike, hardly makes it:
 *
 *   computing  time between its MPI calls (a task spinning in its own code, or slowed in it), no
 *              more than its computations took beyond their usual pace (pace.h): more of its
 *              usual work at its usual pace (HPL's panel) is the program's
 *   held       time neither running nor runnable, from the kernel's counts (struct pdi_usage):
 *              stopped by a signal or a debugger, asleep in I/O -- the task stopped inside MPI
 *              that the call timings cannot tell from its peers waiting in the same call
 *   waiting    time runnable but without a CPU, from the same counts: interference on its CPU,
 *              or a rank of the step that took the CPU (taken: spinning in its own code on a
 *              node with fewer cores than ranks, while the others poll in MPI for it)
 *
 * Each is taken beyond the task's own usual offset from its peers (a rank that always does
 * the I/O, a sub-domain that is always larger), so that a steady imbalance is not a fault; time
 * held or waiting, net of what the task gave back in the phase beside across a cut placed on it
 * later or earlier than on its peers (the counts then cover a longer stretch of its time than of
 * theirs, and a loaded node's tasks wait for a CPU most of the time).
 * The finding is the task and phase that lost the most, or held the most where a task was held
 * for a stall's worth (no healthy task is; a loaded machine stretches a program's own imbalance
 * by seconds); the run of adjacent phases where the same task kept losing a good part of that
 * (interference that lasts several phases) is one event, and its first phase is where the fault
 * began. Where no task lost a stall's worth, a task on a CPU a stall's worth longer than every
 * other, that took the CPU by its share, is the finding (taken: a spinner whose peers waited for
 * it in calls no probe saw).
 *
 * With a single phase (a program with no collective to cut phases on) nothing says what is
 * usual for a task: its total computation differs between ranks by construction, so only the
 * time held counts there (no healthy task is held for seconds), and a burst of computation: one
 * stretch after a call site, where the task computed at least PDI_LOST_BURST_VISITS times,
 * that lasted a stall's worth beyond its other stretches after that call (a rank spinning in
 * its own code), beyond its peers' own bursts. So it is in the set-up and the tear-down, which
 * AutomaDeD leaves out of its comparison (automaded.c, lost_at_the_edges): where a code whose
 * phases stop being cut early (the budget thinned the collectives they are counted on) does
 * most of its work. A burst counts only where the task's probes were blind in its phase (a
 * function detached, or sampled to less than a call seen a second: unobserved.h) for less time
 * than it lasted: else the stretch between two seen calls may be calls no probe saw. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

enum pdi_lost_kind { PDI_LOST_NONE, PDI_LOST_COMPUTING, PDI_LOST_HELD, PDI_LOST_WAITING };
extern const char *const pdi_lost_kind_names[]; /* "none", "computing", "held", "waiting" */

struct pdi_lost {
	/* per phase (indexed like the models' phases; 0 outside the phases looked at) */
	double *phase_s;           /* the most any task lost in it (s) */
	/* the finding: the task and phase that lost the most, and the run it belongs to */
	bool found;                /* some task lost more than nothing */
	size_t task;               /* index of its model */
	enum pdi_lost_kind kind;   /* how it lost it, at the peak */
	uint32_t peak, onset, last; /* the phase it lost most in; the run's first and last phase */
	double peak_s, total_s;    /* lost in the peak phase; over the run */
	double next_task_s;        /* the most another task lost in the peak phase */
	double other_phase_s;      /* the most any task lost in a phase outside the run (held, when the
				      finding is time held) */
	double noise_s;            /* the phases' robust spread of phase_s (1.4826 MAD), floored; with
				      fewer than PDI_LOST_MIN_PHASES phases, the other tasks' spread in
				      the peak phase */
	double z;                  /* how far the peak stands above the other phases' median (or the
				      other tasks'), in noise_s; where the CPU was taken, or how far the
				      taker's lead on a CPU stands above the other phases' leads, if more */
	bool has_usage;            /* the kernel's counts were there to look at */
	bool taken;                /* the finding is time waiting for a CPU, and one other task of the step
				      took the CPU over the run (pdi_starved_took_cpu(): a CPU to
				      itself, or on a loaded node twice every other's share): a rank
				      spinning in its own code, the fault is that task's; or, where no
				      task lost a stall's worth, the finding is the task that took it,
				      on a CPU a stall's worth longer than every other (its peers'
				      waits unseen: taker is task) */
	size_t taker;              /* ... that model (a single task) */
	double taker_share, next_share; /* its share of the time it was ready on a CPU over the run, and the
				      most any other ready task had */
	double taker_cpu_s, next_cpu_s; /* its time on a CPU over the run, and the most any other model had
				      there (s) */
	double other_lead_s;       /* the most one task was on a CPU beyond every other in a phase outside
				      the run (s) */
	/* where the time went: the transition of the task the finding names (the taker, where one
	   took the CPU) in the run's first phase whose time there stands furthest beyond the same
	   transition's on its peers, taken as the phase's loss is (beyond their median, beyond its
	   own usual excess); among its computations only, where it lost its time computing. A stall
	   sits in one transition: the computation a task slept or spun in, the call it was stopped
	   in. None where no transition holds PDI_LOST_AT_SHARE of what the task lost in that phase
	   (a task stopped inside a call its peers waited in too: the kernel's counts tell it, the
	   call timings do not), or the noise floor */
	bool has_at;
	size_t at_task;            /* the model it is in */
	uint32_t at_phase;         /* onset */
	uint64_t at_from, at_to;   /* the transition's state keys */
	double at_s;               /* its time beyond its peers' (s) */

	/* what pdi_lost_of() reads */
	double *by_task;           /* n x nphases: lost by model t in phase p (s) */
	uint8_t *kinds;            /* n x nphases: how (enum pdi_lost_kind) */
	size_t n;
	uint32_t nphases, first, end;
};

/* What any phase must lose beyond the step's noise to extend a run (robust sds of phase_s). */
#define PDI_LOST_RUN_Z 4.0
/* A phase adjacent to the run joins it when it lost this share of the peak. */
#define PDI_LOST_RUN_SHARE 0.3
/* Phases below which the noise is the other tasks' in the peak phase, not the other phases'. */
#define PDI_LOST_MIN_PHASES 6
/* Another task that lost this share of the peak in the same phase is named beside it. */
#define PDI_LOST_ALSO_SHARE 0.5
/* A task waiting for a CPU counts as ready in a run when it was ready this share of its time. */
#define PDI_LOST_READY 0.5
/* The transition where the time went holds at least this share of what its task lost in the phase. */
#define PDI_LOST_AT_SHARE 0.3

/* Whether task U of L lost its time in the peak phase to the CPU the finding's task took, not
 * by itself: the finding's task (model C) computed there at no less than its usual share of the
 * CPU, while U (model MU) got less than its own usual share and waited for a CPU, beyond what
 * the finding's task waited, about the time it lost or more. A rank spinning in its own code on a
 * full node stretches the computation of the rank it shares a CPU with by the CPU it takes
 * (NWChem, issue 9: the spinner at 83% of a CPU against its usual 46%, its neighbour at 25%
 * against 50%, 1.8 s more waiting for a CPU than the spinner: its 0.75 s "lost" was that).
 * False when the kernel's counts are missing, or the finding is not computation, or U's loss is
 * not computation or waiting for a CPU. */
bool pdi_lost_cpu_taken(const struct pdi_lost *l, size_t u, const struct pdi_model *c, const struct pdi_model *mu);

/* Whether the kernel's counts single out the finding's task of L alone in its peak phase, among
 * the N models: it was held (neither running nor ready to run), or on a CPU, a stall's worth
 * (PDI_EXCESS_FLOOR_S) longer than every other model there. What a step of few phases is judged
 * by, where the phases' usual is not known (AutomaDeD 3.3: compare the tasks within the phase):
 * meep and HPCC, issue 9, a rank stopped 3 s in the set-up, held 3.05 s against its peers'
 * 0.06-0.08 s; a rank spinning 2.8 s, 3.4 s on a CPU against at most 1.9 s. False when a model
 * lacks the counts there. */
bool pdi_lost_kernel_alone(const struct pdi_lost *l, const struct pdi_model *const *models, size_t n);

/* The stall L's finding stands for (s): the time its task lost over the run, or, where one task
 * took the CPU (L->taken), how much longer that task was on a CPU over the run than any other
 * when that is more. On a node loaded beyond its cores the rank beside a spinner loses a part of
 * the spin only: the others wait for the spinner in calls no probe saw, and they yield their CPUs
 * as they poll (HPCC and GROMACS at loads of 10-16, issue 9, spin13: the neighbour waited 0.49 s
 * and 0.26 s longer than its peers, the spinner was on a CPU 2.65 s and 2.14 s against 0.95 s and
 * 0.49 s at most, in phases of 3.6 s and 4.2 s that took 0.25 s elsewhere). 0 when none. */
double pdi_lost_stall_s(const struct pdi_lost *l);

/* How far L's finding stands above the other phases (1 = no contrast): the time lost in its peak
 * phase over the most any task lost in a phase outside its run, or, where one task took the CPU
 * (L->taken), that task's lead on a CPU over the run against the most one task led every other
 * in a phase outside it, if more. A phase where one task's cut fell later than its peers' moves
 * time waiting from one phase to the next (lost_time.c), which the time lost is net of. */
double pdi_lost_phase_margin(const struct pdi_lost *l);

/* What the task that took the CPU did (L->taken), in words, into BUF: "on a CPU 4.71 s over phase
 * 15, 97% of the time it was ready, the others 2.07 s and 43% at most: it took the CPU they waited
 * for (one of them 1.3 s longer than its peers)"; "" when none. */
void pdi_lost_taken_text(const struct pdi_lost *l, char *buf, size_t len);

/* A phase that took this much longer than usual on some task, or a task that lost this much
 * against its peers, is a candidate stall (s): the documented floor below which the diagnosis
 * (automaded.h) calls a step's variation normal. Scheduling hiccups of a loaded 2-core machine
 * reach a few tenths of a second (bench/apps.py). */
#define PDI_EXCESS_FLOOR_S 1.0
/* A burst (one phase) needs this many stretches after the same call: the others say its usual. */
#define PDI_LOST_BURST_VISITS 5
/* The spread below which the phases' noise is taken as this (s): a few scheduler ticks. */
#define PDI_LOST_NOISE_FLOOR_S 0.05

/* The lost time of N models (WEIGHTS[i] tasks each; NULL: 1) over phases [FIRST, END) of each.
 * 0, or -ENOMEM, or -EINVAL (no phase to look at). Free with pdi_lost_done(). */
int pdi_lost_time(const struct pdi_model *const *models, const uint32_t *weights, size_t n, uint32_t first,
		  uint32_t end, struct pdi_lost *ret);
void pdi_lost_done(struct pdi_lost *l);

/* The time task T computed in phase P: between its MPI calls, from the edges out of its
 * computation states (s). */
double pdi_phase_computation_s(const struct pdi_phase *p);

/* The time model T lost in phase P (s), computed as pdi_lost_time() did; 0 outside. Into
 * RET_KIND (may be NULL) how. */
double pdi_lost_of(const struct pdi_lost *l, size_t t, uint32_t p, enum pdi_lost_kind *ret_kind);

/* SPDX-License-Identifier: GPL-2.0-only */
/* automaded.h -- AutomaDeD's localization (sec. 4.2-4.4): the faulty phase, the faulty
 * task(s) in it, and the transitions where the fault shows.
 *
 * Normal behaviour comes from sample runs (earlier runs of the same program) when there are
 * some, otherwise from each task's own other phases. With 5 phases or more, the prologue
 * (MPI_Init up to the loop) and the epilogue (the loop's rest and MPI_Finalize) are left
 * out: they differ by construction.
 *
 * - Faulty phase (4.2): a deviation score per phase. A temporary effect is the phase that
 *   deviates most; a permanent one (a runaway thread, interference from then on) is the
 *   phase where behaviour shifted: the first of the high-deviation phases (k-means on the
 *   scores) with sample runs; without, the first phase of a lasting step in one task's
 *   computation time, or the later phase of the most different adjacent pair. Either gives
 *   way to time lost: the phase where one task lost a stall's worth of time against its
 *   peers (lost_time.h: computing, held by the kernel, waiting for a CPU) -- the first phase
 *   of the run of phases it kept losing in -- or else one that took a stall's worth longer
 *   than usual. Before the time lost, unless that names a task held by the kernel (a stop)
 *   or another task (one spinning takes the CPU of the rank beside it): the task that got a
 *   fraction of its peers' share of the CPU for a stall's worth of time (starved.h: not
 *   getting CPU, interference on its CPU), from the first phase it fell behind in.
 * - Faulty task(s) (4.3): HAC on the tasks' models of the faulty phase, with a threshold
 *   trained on a normal phase to the number of clusters its merge heights show; the
 *   cluster of the task that changed most (the task that lost the time, when time picked
 *   the phase), and the characteristic transitions: those that add most to the difference
 *   from normal, and, where the time one task lost against its peers picked the phase and
 *   the task (by_lost), first the transition it lost that time in (lost_time.h, at_*).
 *   The model-difference scores weigh a change of any transition's time distribution, so on
 *   a loaded machine a reshuffle of microsecond transitions outscores the one transition
 *   that took seconds longer than on its peers (Monitor.transient_stall_phase at a load of
 *   22: rank 1 slept 3 s between its Waitall and its Barrier, and other transitions came
 *   first). The finding is the time; its transition says where it went. Not so where a
 *   task's share of the CPU picked them (by_starved): a task not getting CPU loses time in
 *   every transition alike, so no one transition holds it; nor where only a phase's length
 *   did (by_time alone): no task lost against its peers, so nothing singles one transition
 *   out against theirs.
 * - Transition analysis (4.4): the probability of each transition's times in the faulty
 *   phase under its normal distribution; k-means on the log-probabilities separates the
 *   unusual ones. For a permanent effect, the largest increase of theta = stddev * nu-bar,
 *   earliest first by the paper's relation. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lost_time.h"
#include "model.h"
#include "smm.h"
#include "starved.h"

#define PDI_TOP_TRANSITIONS 5
/* PDI_EXCESS_FLOOR_S (lost_time.h): a candidate stall's least length. */

struct pdi_transition_score {
	uint64_t from, to; /* state keys */
	double score;      /* contribution to Diff; for unusual ones, log10 of their probability */
	size_t task;       /* index of the model it was found in */
	double lost_s;     /* characteristic: the time its task lost in it against its peers (s), where
			      that put it first (lost_time.h, at_s); else 0 */
};

enum pdi_effect { PDI_EFFECT_NONE, PDI_EFFECT_TEMPORARY, PDI_EFFECT_PERMANENT };

struct pdi_automaded {
	uint32_t nphases;         /* analysed: the fewest any task has */
	uint32_t first_phase;     /* compared phases: [first_phase, end_phase) */
	uint32_t end_phase;
	size_t nsamples;          /* sample runs used (0: the run's own phases) */
	double *phase_score;      /* per phase (nphases): the tasks' weighted deviations; 0 outside */
	double *phase_excess;     /* per phase: how much longer than usual it took on the task where it
				     grew most (s; each task's median over the compared phases), no more
				     than its computations took beyond their usual pace (pace.h); 0
				     outside */
	struct pdi_lost lost;     /* the time one task lost against its peers (lost_time.h): its
				     phase_s is the most any task lost in each phase, a stall of one
				     task, which the machine's load, shared by all tasks, hardly makes */
	bool by_time;             /* the faulty phase is the one that lost a stall's worth of time
				     (one task's against its peers, else the phase's length): the
				     scores pointed at a phase that took its usual time */
	bool by_lost;             /* ... one task's against its peers (lost): it names the task too */
	struct pdi_starved starved; /* each task's share of the CPU against its peers' (starved.h) */
	bool by_starved;          /* the faulty phase and task are the ones not getting CPU: the first
				     phase of the run it fell behind in, and that task */
	bool by_group;            /* the faulty phase is where every rank lost CPU alike to a process
				     of the job's own group (starved.alike, alike.h): no task is named */
	enum pdi_effect effect;
	uint32_t faulty_phase;
	double phase_margin;      /* faulty score over the next highest: 1 = no contrast */
	double split_ratio;       /* permanent: differences across the shift over those within */
	double step_t;            /* Welch's t of the largest lasting step in a task's computation */
	size_t step_task;         /* the task of that step */
	bool stepped;             /* the permanent effect is that step */

	double *task_score;       /* per model, in the faulty phase */
	size_t faulty_task;       /* index into the models given */
	double task_margin;
	uint32_t *cluster;        /* per model: its cluster in the faulty phase */
	size_t nclusters;
	uint32_t faulty_cluster;  /* the cluster of faulty_task */
	double threshold;         /* HAC's, as trained */

	struct pdi_transition_score top[PDI_TOP_TRANSITIONS];     /* characteristic (4.3) */
	size_t ntop;
	struct pdi_transition_score unusual[PDI_TOP_TRANSITIONS]; /* low probability (4.4) */
	size_t nunusual;
	bool has_change;                                          /* permanent: theta's pick */
	struct pdi_transition_score change;
	uint32_t change_phase;
};

/* What AutomaDeD runs on. A model may stand for a class of tasks with identical models
 * (eqclass.h): WEIGHT says how many, so that a class counts as its tasks would. */
struct pdi_automaded_input {
	const struct pdi_model *const *models; /* one per task, or per class of identical tasks */
	const uint32_t *weights;               /* tasks each model stands for; NULL: 1 each */
	size_t n;
	enum pdi_timedist dist;
	/* sample runs: NSAMPLES rows of N models, row r's model t the counterpart of models[t]
	 * (NULL where that run has none); NULL when there are no sample runs */
	const struct pdi_model *const *samples;
	size_t nsamples;
};

/* 0, or -EINVAL when there is nothing to compare (no model, or fewer than 2 phases: *WHY
 * says which when WHY is not NULL), -ENOMEM. */
int pdi_automaded_run(const struct pdi_automaded_input *in, struct pdi_automaded *ret, const char **why);
void pdi_automaded_done(struct pdi_automaded *a);

/* k-means with k = 2 on V (1-D): writes 1 into HIGH[i] for the upper cluster, 0 otherwise.
 * Returns the size of the upper cluster (0 when all values are equal). */
size_t pdi_kmeans2(const double *v, size_t n, uint8_t *high);

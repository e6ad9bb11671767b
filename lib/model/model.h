/* SPDX-License-Identifier: GPL-2.0-only */
/* model.h -- one task's semi-Markov models, one per phase (AutomaDeD 2.1, 3.1; PDI 3.1).
 *
 * States are communication states (an MPI function at a call site, named by a site id
 * the caller interns per step so that all tasks share names) and computation states
 * (the code between two consecutive calls, named by the pair). An edge carries the
 * transition count and the time spent in its source state before the transition. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timedist.h"
#include "u64map.h"
#include "stack_seen.h"
#include "usage_log.h"
#include "unobserved.h"

#define PDI_STATE_COMP (1ull << 63)
/* step-wide collectives whose functions are recorded (coll_fns) to find the main loop's period */
#define PDI_MODEL_PERIOD_SAMPLE 96
#define PDI_NO_PEER INT32_MIN
/* auto_next_cut of a model that cuts no more: a step-wide collective may have gone unseen (the
 * overhead budget moved or thinned the probes, or the ring buffer was full), so its count no
 * longer says the same point of the program as its siblings' (doc/design/call-sites.md) */
#define PDI_MODEL_NO_CUT UINT64_MAX

static inline uint64_t pdi_state_comm(uint32_t site)
{
	return site;
}

static inline uint64_t pdi_state_comp(uint32_t from_site, uint32_t to_site)
{
	return PDI_STATE_COMP | ((uint64_t)from_site << 32) | to_site;
}

static inline bool pdi_state_is_comp(uint64_t key)
{
	return key & PDI_STATE_COMP;
}

static inline uint32_t pdi_state_site(uint64_t key) /* comm state's site, comp state's next site */
{
	return (uint32_t)key;
}

static inline uint32_t pdi_state_prev_site(uint64_t key) /* comp state's previous site */
{
	return (uint32_t)(key >> 32) & 0x7fffffff;
}

struct pdi_model_config {
	size_t max_bytes;                    /* per task; states and edges past it are dropped */
	uint32_t max_phases;                 /* automatic phases are merged pairwise past it */
	uint32_t auto_phase_min_collectives; /* an automatic phase spans at least this many */
	bool auto_phases;                    /* cut phases on collectives until a Pcontrol shows */
	/* the same wall-clock instant for every task of a step (ns since the epoch; 0: never): a task
	 * that has not sampled the step-wide collectives' period by then (a code that communicates
	 * on process grids or point to point only) cuts its phases on the wall clock instead */
	int64_t auto_slots_from_ns;
	/* an earlier instant (ns since the epoch; 0: none) from which a task that has not found that
	 * period yet cuts on the wall clock already, in the same slots: kept if it turns to the wall
	 * clock at auto_slots_from_ns, folded into its set-up if the period shows first. A code with
	 * no step-wide loop then has phases from its first seconds, not from the fifth on. */
	int64_t auto_slots_early_ns;
};

/* How long after a step began its tasks decide how to cut automatic phases (auto_slots_from_ns):
 * time enough for a main loop on MPI_COMM_WORLD to show, at an idle machine's pace. */
#define PDI_MODEL_SLOTS_AFTER_NS 5000000000ll
/* How long after a step began its tasks cut early wall-clock phases (auto_slots_early_ns) while
 * they wait for that: past MPI_Init and the set-up's first collectives, at an idle machine's pace
 * (meep's 44 MPI_Allreduces end within its first second; doc/design/wall-clock-phases.md). */
#define PDI_MODEL_EARLY_AFTER_NS 1000000000ll

extern const struct pdi_model_config pdi_model_config_default;

struct pdi_state {
	uint64_t key;
	uint64_t visits;
	uint64_t bytes; /* communication states: data the calls sent or received, where known */
};

struct pdi_edge {
	uint32_t from, to; /* indices into the phase's states */
	struct pdi_gauss time;
	struct pdi_hist hist;
};

/* A phase's share of the kernel's counts (pdi_model_phase_usage()), in ns. */
struct pdi_phase_usage {
	uint64_t wall_ns; /* between the readings that bound the phase */
	uint64_t cpu_ns, wait_ns;
	uint64_t held_ns; /* neither running nor runnable: wall - cpu - wait */
};

struct pdi_phase {
	uint64_t t_start, t_end; /* first call's entry, last call's exit (CLOCK_MONOTONIC ns; see
				    pdi_phase_wall_ns() for the wall clock) */
	struct pdi_usage usage;  /* the kernel's counts at the phase's first call (t_start),
				    interpolated between the readings either side; 0 until a reading
				    after it is taken (pdi_model_usage_add()) */
	uint64_t first_collective; /* step-wide collectives before it: an automatic phase of this
				      index starts at the same one on every task; on the wall
				      clock (pdi_model.slots), the slot it starts in */
	struct pdi_state *states;
	struct pdi_edge *edges;
	uint32_t nstates, cap_states;
	uint32_t nedges, cap_edges;
	struct pdi_u64map state_idx; /* state key -> index */
	struct pdi_u64map edge_idx;  /* (from << 32 | to) -> index */
};

/* A request created by a nonblocking call: who a later Wait on it waits for. */
struct pdi_request {
	uint64_t handle;
	int32_t peer;
	int32_t tag;
	uint32_t site;
	uint16_t fn;
};

/* A collective on a communicator known not to span the step (a row of a process grid, a
 * split): tasks outside it never make the call, so phases are not cut on it. */
#define PDI_CALL_SUBCOMM 0x1

/* One completed MPI call as the model sees it. */
struct pdi_call {
	uint32_t site;
	uint16_t fn; /* index into pdi_mpi_funcs */
	uint8_t flags; /* PDI_CALL_* */
	uint64_t t_enter, t_exit;
	int32_t peer; /* PDI_NO_PEER when none */
	int32_t tag;
	uint64_t req; /* request created (Isend...) or completed (Wait...), 0 if none */
	uint64_t bytes; /* count times the datatype's size, 0 when unknown */
};

/* A recorded call, as pdimond's "record" setting writes them: replayable into models. */
struct pdi_call_record {
	uint32_t task; /* index of the task in the recording, in order of first appearance */
	uint32_t pad;
	struct pdi_call call;
};

struct pdi_model {
	struct pdi_model_config cfg;
	struct pdi_phase *phases;
	uint32_t nphases, cap_phases;

	/* where the task is: after a call returns it computes in comp(last_site, ?) */
	bool started;
	uint32_t last_site;
	uint16_t last_fn;
	uint64_t last_enter, last_exit;
	uint64_t calls;

	/* phase cutting: on the collectives that span the step, which every task makes in the same
	 * order (MPI's rule for collectives), so that cuts at the same counts line phases up */
	bool saw_pcontrol;
	bool slots; /* automatic phases are cut on the wall clock: slots of auto_len ms, counted from
		       the epoch, so that a phase of a slot starts in the same one on every task */
	bool early; /* ... before the step's instant decided it (auto_slots_early_ns): they fold into
		       the set-up should the step-wide collectives' period show first */
	uint64_t ncollectives;
	uint32_t *coll_fns;     /* the first collectives' functions, to find the loop's period */
	uint64_t auto_next_cut; /* collective count (slot) at which the next automatic phase starts;
				   PDI_MODEL_NO_CUT once the count cannot be vouched for */
	uint32_t auto_len;      /* collectives (ms) per automatic phase, 0 until the period is known */
	/* since when a step-wide collective may have gone unseen (what was unobserved, kept in
	 * the unobserved log; derived from it, so not encoded), and how much of the log that took in */
	uint64_t count_doubt_ns;
	uint64_t count_doubt_seen;

	int64_t clock_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC where the calls were timed */

	/* requests */
	struct pdi_request *reqs;
	uint32_t nreqs, cap_reqs;
	struct pdi_u64map req_idx;

	/* what the memory bound cost us */
	size_t bytes;
	uint64_t dropped_states, dropped_edges, dropped_requests, folded_phase_cuts;
	uint64_t merged_phases; /* automatic phases merged pairwise to fit the memory bound */

	/* what the overhead budget kept the probes from seeing (unobserved.h) */
	struct pdi_unobserved_log unobserved;
	/* what its live stack said while the probes were thinned (stack_seen.h) */
	struct pdi_stack_seen_log stack_seen;

	struct pdi_usage usage_now; /* the latest reading: where the current phase's share ends */
	struct pdi_usage_log usage_log; /* readings through the step, inside long phases too */
	struct pdi_usage_recent usage_recent; /* the latest readings: where the phases not placed
						 yet begin (not stored) */
};

/* A phase's time T (its t_start or t_end) on the wall clock, ns since the epoch. */
static inline int64_t pdi_phase_wall_ns(const struct pdi_model *m, uint64_t t)
{
	return (int64_t)t + m->clock_offset_ns;
}

void pdi_model_init(struct pdi_model *m, const struct pdi_model_config *cfg);
void pdi_model_done(struct pdi_model *m);

/* Feed one completed call, in the task's program order. 0, or -ENOMEM/-ENOSPC when even the
 * first phase cannot be made (the model is intact). */
int pdi_model_add_call(struct pdi_model *m, const struct pdi_call *c);

/* A reading U of the task's counts (the daemon reads them on a timer: usage_interval_ms): the
 * latest (where the current phase's share ends), one of the recent ones and of the log's when due;
 * every phase begun at or before it and not placed yet gets its counts at its first call,
 * interpolated between the readings either side (a phase begun before the oldest reading kept,
 * the task's first before it was read, takes that reading). Readings out of order (a clock or
 * counter going back) are ignored. */
void pdi_model_usage_add(struct pdi_model *m, const struct pdi_usage *u);

/* Phase P's share of the counts: from its first call to the next phase's (to the latest reading
 * for the current phase). False when either is missing (not read, an older model, a task that ended
 * before it was read), or P spans no time. */
bool pdi_model_phase_usage(const struct pdi_model *m, uint32_t p, struct pdi_phase_usage *ret);

/* Total visits of a state over all phases (the order of tasks sitting in the same state). */
uint64_t pdi_model_visits(const struct pdi_model *m, uint64_t state_key);

const struct pdi_request *pdi_model_find_request(const struct pdi_model *m, uint64_t handle);

/* Index of the state with KEY in phase P, or PDI_U64MAP_NONE. */
static inline uint32_t pdi_phase_state(const struct pdi_phase *p, uint64_t key)
{
	return pdi_u64map_get(&p->state_idx, key);
}

/* The edge FROM -> TO (state keys) of phase P, or NULL when P never took that transition. */
static inline const struct pdi_edge *pdi_phase_edge(const struct pdi_phase *p, uint64_t from, uint64_t to)
{
	uint32_t i = pdi_phase_state(p, from), j = pdi_phase_state(p, to), e;

	if (i == PDI_U64MAP_NONE || j == PDI_U64MAP_NONE ||
	    (e = pdi_u64map_get(&p->edge_idx, (uint64_t)i << 32 | j)) == PDI_U64MAP_NONE)
		return NULL;
	return &p->edges[e];
}

/* The largest site a state key can name: a computation state keeps 31 bits of its previous site. */
#define PDI_SITE_MAX 0x7fffffffu

/* Merge M's automatic phases pairwise until they span AUTO_LEN collectives each, as M would
 * have done itself had its memory or phase bound been reached where another task's was: the
 * phases of tasks of one step then line up again (the same index, the same collectives).
 * Returns 0, or -EINVAL if M's phases cannot be made that long (AUTO_LEN is not M's length
 * times a power of two, or M has no automatic phases). */
int pdi_model_coarsen(struct pdi_model *m, uint32_t auto_len);

/* The last collective count at which M's automatic phases are known to start where its
 * siblings' do: UINT64_MAX while every step-wide collective was seen; once one may have gone
 * unseen (M cuts no more), the start of its last phase. */
uint64_t pdi_model_cut_horizon(const struct pdi_model *m);

/* Fold M's automatic phases that start past collective HORIZON (a sibling's
 * pdi_model_cut_horizon()) into the last one that does not: every task of a step then has the
 * same phases, the last one running to the task's end. */
void pdi_model_fold_past(struct pdi_model *m, uint64_t horizon);

/* Line up the N models of one step (tasks on several nodes, merged at different times): a task
 * whose collective count is in doubt turns to the wall clock, and once any task cuts on it, every
 * task still cutting on collectives turns too (its phases keep the slots they started in);
 * coarsen them to the longest automatic phases among them, then fold them all at the earliest cut
 * horizon; phases on the wall clock keep only the slots every task began a phase in (up to the
 * latest slot all of them reached), the others fold into the phase before. Returns how many
 * could not be coarsened (left as they were). */
size_t pdi_models_line_up(struct pdi_model *models, size_t n);
/* The same, for models held elsewhere (the running tasks of a step on this node). */
size_t pdi_model_ptrs_line_up(struct pdi_model **models, size_t n);

/* Rename the call sites M refers to (states, the current site, requests): site X becomes MAP[X]. Site numbers are local to a step, so a model of another
 * run of the same program must be renamed into this step's numbering before the two can be
 * compared. States the map makes one are merged (visits and bytes added), and so are their
 * edges (time distributions merged); state and edge order is that of first occurrence.
 * 0; or, M untouched, -EINVAL (M names a site >= NMAP, or MAP a site > PDI_SITE_MAX) or
 * -ENOMEM. */
int pdi_model_remap_sites(struct pdi_model *m, const uint32_t *map, uint32_t nmap);

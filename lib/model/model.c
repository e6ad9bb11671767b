/* SPDX-License-Identifier: GPL-2.0-only */
/* model.c -- building a task's per-phase semi-Markov models from its MPI calls.
 *
 * Each call C following call B adds two transitions: comm(B) -> comp(B,C), timed by
 * B's duration, and comp(B,C) -> comm(C), timed by the computation between them.
 *
 * Phases come from MPI_Pcontrol markers when the program has them. Otherwise they are
 * cut on the collectives of communicators that span the step (MPI_COMM_WORLD and its
 * copies; the daemon flags the others, PDI_CALL_SUBCOMM): every task makes those in the same
 * order, so cutting at the same counts lines the phases of all tasks up without any
 * communication. The cut length is a multiple of the main loop's period, found on the
 * sequence of those collectives' functions (the same on every task, unlike their call sites),
 * so that every phase holds whole iterations and normal phases look alike.
 *
 * A cut at a count is only worth something if the count is right: once a step-wide collective may
 * have gone unseen (the overhead budget moved or thinned the probes, or the ring buffer was full:
 * the unobserved log says when), the task's phases since then fold into the one before and it
 * turns to the wall clock (below): its earlier phases keep the slot they started in, and its
 * siblings turn with it (pdi_models_line_up()), so that phases still line up and go on being cut.
 * A step without wall-clock phases (auto_slots_from_ns 0) cuts no more instead, and its siblings
 * fold theirs at the same collective (pdi_model_cut_horizon()), the last phase running to each
 * task's end.
 *
 * Codes that make too few step-wide collectives (a grid code whose collectives run on rows and
 * columns of a process grid made by MPI_Comm_split or _create, a stencil that talks point to point)
 * find no period by the instant the step fixed for it (auto_slots_from_ns): such a task cuts its
 * phases on the wall clock instead, at the first call of each slot of auto_len ms counted from the
 * epoch. Every task decides at the same instant on the collectives it entered before it, so they
 * decide alike (pdi_models_line_up() folds tasks that did not, should a collective straddle it);
 * a slot a task made no call in (stopped, blocked) is one its siblings fold away, so that a
 * phase is the same stretch of wall-clock time, and of a program in lockstep, on every task.
 * Counts need not be vouched for there: a collective unseen changes nothing.
 *
 * Memory: past 7/8 of the bound the automatic phases are merged pairwise, which a task's
 * siblings can repeat (pdi_model_coarsen) to stay lined up; states and transitions are
 * dropped, and counted, only when no merge is left to make. The phase table is granted past
 * the bound, so that a cut never fails on one task and not on another. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "mpi_funcs.h"

#define PERIOD_SAMPLE PDI_MODEL_PERIOD_SAMPLE /* in model.h: model_io.c sizes coll_fns with it */
#define MERGE_AT(max) ((max) / 8 * 7) /* bytes past which automatic phases are merged */
#define PERIOD_SKIP 32   /* of which the first are taken as the prologue */
#define PERIOD_MAX 32
#define MAX_REQUESTS 4096
#define SLOT_MS 250 /* the first length of a phase on the wall clock */

const struct pdi_model_config pdi_model_config_default = {
	.max_bytes = 1 << 20,
	.max_phases = 65,
	.auto_phase_min_collectives = 32,
	.auto_phases = true,
};

void pdi_model_init(struct pdi_model *m, const struct pdi_model_config *cfg)
{
	*m = (struct pdi_model){.cfg = cfg ? *cfg : pdi_model_config_default, .count_doubt_ns = UINT64_MAX};
	/* pairwise merging needs an even number of loop phases after the prologue */
	if (m->cfg.max_phases < 3)
		m->cfg.max_phases = 3;
	m->cfg.max_phases |= 1;
}

static void phase_done(struct pdi_phase *p)
{
	free(p->states);
	free(p->edges);
	pdi_u64map_free(&p->state_idx);
	pdi_u64map_free(&p->edge_idx);
}

void pdi_model_done(struct pdi_model *m)
{
	for (uint32_t i = 0; i < m->nphases; i++)
		phase_done(&m->phases[i]);
	free(m->phases);
	free(m->coll_fns);
	free(m->reqs);
	pdi_u64map_free(&m->req_idx);
	pdi_unobserved_free(&m->unobserved);
	*m = (struct pdi_model){0};
}

/* Grow *V (of element size SZ, capacity *CAP) to NCAP elements, within the byte budget unless
 * ALWAYS (then only charged to it). */
static int reserve_array(struct pdi_model *m, void **v, uint32_t *cap, uint32_t ncap, size_t sz, bool always)
{
	void *nv;

	if (ncap <= *cap)
		return 0;
	if (!always && m->bytes + (size_t)(ncap - *cap) * sz > m->cfg.max_bytes)
		return -ENOSPC;
	nv = realloc(*v, (size_t)ncap * sz);
	if (!nv)
		return -ENOMEM;
	m->bytes += (size_t)(ncap - *cap) * sz;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* Grow *V (N elements in use) to hold one more. */
static int grow_array(struct pdi_model *m, void **v, uint32_t *cap, uint32_t n, size_t sz)
{
	if (n < *cap)
		return 0;
	return reserve_array(m, v, cap, *cap ? *cap + *cap / 2 : 8, sz, false);
}

static int map_put(struct pdi_model *m, struct pdi_u64map *map, uint64_t key, uint32_t val)
{
	size_t before = pdi_u64map_bytes(map);
	int r;

	if (m->bytes + pdi_u64map_grow_bytes(map) > m->cfg.max_bytes)
		return -ENOSPC;
	r = pdi_u64map_put(map, key, val);
	if (r == 0)
		m->bytes += pdi_u64map_bytes(map) - before;
	return r;
}

static struct pdi_phase *cur_phase(struct pdi_model *m)
{
	return &m->phases[m->nphases - 1];
}

static int new_phase(struct pdi_model *m, uint64_t t, uint64_t first_collective)
{
	/* granted past the budget (the table is bounded by max_phases): a cut must not fail on a
	 * task that is short of memory and succeed on its siblings */
	int r = m->nphases < m->cap_phases ? 0
					    : reserve_array(m, (void **)&m->phases, &m->cap_phases,
							    m->cap_phases ? m->cap_phases + m->cap_phases / 2 : 8,
							    sizeof(*m->phases), true);

	if (r < 0)
		return r;
	m->phases[m->nphases++] = (struct pdi_phase){.t_start = t, .t_end = t, .first_collective = first_collective};
	return 0;
}

/* Phase P's counts at its first call, once a reading at or after it is kept: between the readings
 * either side, so that its share is over its own time, from its first call to the next phase's.
 * Before, it was the reading taken as pdimond took the first call in, a batch of the ring buffer
 * (up to 0.1 s or more) late, and the next phase's the same: a process that came to share the
 * CPU in the last 20-150 ms of a phase showed in the next one, which was named (issue 9, five of
 * eight misses over seeds 400-501), and two phases begun in one batch had one reading. */
static void place_phase(struct pdi_model *m, uint32_t p)
{
	const struct pdi_usage_recent *r = &m->usage_recent;
	struct pdi_phase *ph = &m->phases[p];

	if (!ph->usage.at_ns && r->n && ph->t_start <= r->v[r->n - 1].at_ns)
		ph->usage = pdi_usage_at(r->v, r->n, ph->t_start);
}

/* Close the current phase at T and start the next; past the bound the cut is folded. The new
 * phase is placed at once when readings past T are in (its call taken in a batch late). */
static int open_phase(struct pdi_model *m, uint64_t t, uint64_t first_collective)
{
	cur_phase(m)->t_end = t;
	if (m->nphases >= m->cfg.max_phases || new_phase(m, t, first_collective) < 0) {
		m->folded_phase_cuts++;
		return -ENOSPC;
	}
	place_phase(m, m->nphases - 1);
	return 0;
}

/* Index of state KEY in P, added if new; PDI_U64MAP_NONE if the budget is spent. */
static uint32_t get_state(struct pdi_model *m, struct pdi_phase *p, uint64_t key)
{
	uint32_t i = pdi_u64map_get(&p->state_idx, key);

	if (i != PDI_U64MAP_NONE)
		return i;
	if (grow_array(m, (void **)&p->states, &p->cap_states, p->nstates, sizeof(*p->states)) < 0 ||
	    map_put(m, &p->state_idx, key, p->nstates) < 0) {
		m->dropped_states++;
		return PDI_U64MAP_NONE;
	}
	p->states[p->nstates] = (struct pdi_state){.key = key};
	return p->nstates++;
}

static void visit(struct pdi_model *m, struct pdi_phase *p, uint64_t key)
{
	uint32_t i = get_state(m, p, key);

	if (i != PDI_U64MAP_NONE)
		p->states[i].visits++;
}

static void add_edge(struct pdi_model *m, struct pdi_phase *p, uint64_t from, uint64_t to, double t)
{
	uint32_t f = get_state(m, p, from), d = get_state(m, p, to), i;
	uint64_t key;

	if (f == PDI_U64MAP_NONE || d == PDI_U64MAP_NONE) {
		m->dropped_edges++;
		return;
	}
	key = (uint64_t)f << 32 | d;
	i = pdi_u64map_get(&p->edge_idx, key);
	if (i == PDI_U64MAP_NONE) {
		if (grow_array(m, (void **)&p->edges, &p->cap_edges, p->nedges, sizeof(*p->edges)) < 0 ||
		    map_put(m, &p->edge_idx, key, p->nedges) < 0) {
			m->dropped_edges++;
			return;
		}
		i = p->nedges++;
		p->edges[i] = (struct pdi_edge){.from = f, .to = d};
	}
	pdi_gauss_add(&p->edges[i].time, t);
	pdi_hist_add(&p->edges[i].hist, t);
}

/* Fold phase B into phase A (both of this model). */
static int merge_phase(struct pdi_model *m, struct pdi_phase *a, const struct pdi_phase *b)
{
	for (uint32_t i = 0; i < b->nstates; i++) {
		uint32_t s = get_state(m, a, b->states[i].key);
		if (s != PDI_U64MAP_NONE) {
			a->states[s].visits += b->states[i].visits;
			a->states[s].bytes += b->states[i].bytes;
		}
	}
	for (uint32_t i = 0; i < b->nedges; i++) {
		const struct pdi_edge *e = &b->edges[i];
		uint32_t f = get_state(m, a, b->states[e->from].key);
		uint32_t d = get_state(m, a, b->states[e->to].key);
		uint64_t key = (uint64_t)f << 32 | d;
		uint32_t j;

		if (f == PDI_U64MAP_NONE || d == PDI_U64MAP_NONE) {
			m->dropped_edges++;
			continue;
		}
		j = pdi_u64map_get(&a->edge_idx, key);
		if (j == PDI_U64MAP_NONE) {
			if (grow_array(m, (void **)&a->edges, &a->cap_edges, a->nedges, sizeof(*a->edges)) < 0 ||
			    map_put(m, &a->edge_idx, key, a->nedges) < 0) {
				m->dropped_edges++;
				continue;
			}
			j = a->nedges++;
			a->edges[j] = (struct pdi_edge){.from = f, .to = d};
		}
		pdi_gauss_merge(&a->edges[j].time, &e->time);
		pdi_hist_merge(&a->edges[j].hist, &e->hist);
	}
	if (b->t_end > a->t_end)
		a->t_end = b->t_end;
	return 0;
}

static size_t phase_bytes(const struct pdi_phase *p)
{
	return (size_t)p->cap_states * sizeof(*p->states) + (size_t)p->cap_edges * sizeof(*p->edges) +
	       pdi_u64map_bytes(&p->state_idx) + pdi_u64map_bytes(&p->edge_idx);
}

/* After M's phases were merged: the room past what they may soon grow into is given back. A
 * task that folds 90 phases into 4 holds no more than 4 need, and its saved model stays within
 * the capacity model_io's decoder takes for its count (cap_ok(): 4n + 16 at most; a snapshot of
 * a step whose phases had folded was refused as corrupt, and its report failed). */
static void fit_phases(struct pdi_model *m)
{
	uint32_t cap = m->nphases + m->nphases / 2 + 8;
	struct pdi_phase *v;

	if (m->cap_phases <= 2 * m->nphases + 16)
		return;
	v = realloc(m->phases, (size_t)cap * sizeof(*v));
	if (!v)
		return; /* smaller cannot fail on glibc; the larger array is still whole if it does */
	m->bytes -= (size_t)(m->cap_phases - cap) * sizeof(*v);
	m->phases = v;
	m->cap_phases = cap;
}

/* Halve the automatic phases after the prologue: (1,2) -> 1, (3,4) -> 2, ... The phases keep
 * starting on the grid of the doubled length; so does the next cut. */
static void halve_auto_phases(struct pdi_model *m)
{
	uint32_t out = 1;

	/* an odd count leaves the current phase alone: it now lasts twice as long */
	if ((m->nphases - 1) % 2 == 1 && m->auto_next_cut != PDI_MODEL_NO_CUT)
		m->auto_next_cut += m->auto_len;
	m->merged_phases += (m->nphases - 1) / 2;

	for (uint32_t i = 1; i + 1 < m->nphases; i += 2, out++) {
		struct pdi_phase *a = &m->phases[i], *b = &m->phases[i + 1];

		m->bytes -= phase_bytes(b);
		merge_phase(m, a, b);
		phase_done(b);
		*b = (struct pdi_phase){0};
		if (out != i) {
			m->phases[out] = *a;
			*a = (struct pdi_phase){0};
		}
	}
	if ((m->nphases - 1) % 2 == 1) { /* the lone current phase */
		m->phases[out] = m->phases[m->nphases - 1];
		if (out != m->nphases - 1)
			m->phases[m->nphases - 1] = (struct pdi_phase){0};
		out++;
	}
	m->nphases = out;
	m->auto_len *= 2;
	fit_phases(m);
}

/* Fold M's phase I into the one before (I >= 1): its usage and the phases after move up. */
static void fold_into_previous(struct pdi_model *m, uint32_t i)
{
	m->bytes -= phase_bytes(&m->phases[i]);
	merge_phase(m, &m->phases[i - 1], &m->phases[i]);
	phase_done(&m->phases[i]);
	memmove(&m->phases[i], &m->phases[i + 1], (m->nphases - i - 1) * sizeof(*m->phases));
	m->phases[--m->nphases] = (struct pdi_phase){0};
	fit_phases(m);
}

/* Double the slots of phases on the wall clock: a phase starting in slot S now starts in S / 2,
 * and phases that come to start in the same slot are merged. Any task doing so at any time keeps
 * its phases on the same grid as its siblings'. */
static void halve_slot_phases(struct pdi_model *m)
{
	uint32_t before = m->nphases;

	for (uint32_t i = 1; i < m->nphases; i++)
		m->phases[i].first_collective /= 2;
	for (uint32_t i = 2; i < m->nphases;)
		if (m->phases[i].first_collective == m->phases[i - 1].first_collective)
			fold_into_previous(m, i);
		else
			i++;
	m->merged_phases += before - m->nphases;
	if (m->auto_next_cut != PDI_MODEL_NO_CUT)
		m->auto_next_cut = (m->auto_next_cut + 1) / 2;
	m->auto_len *= 2;
}

static void halve_phases(struct pdi_model *m)
{
	if (m->slots)
		halve_slot_phases(m);
	else
		halve_auto_phases(m);
}

/* Fold M's phases from KEEP on into phase KEEP - 1. */
static void fold_from(struct pdi_model *m, uint32_t keep)
{
	if (keep == 0 || keep >= m->nphases)
		return;
	for (uint32_t i = keep; i < m->nphases; i++) {
		m->bytes -= phase_bytes(&m->phases[i]);
		merge_phase(m, &m->phases[keep - 1], &m->phases[i]);
		phase_done(&m->phases[i]);
		m->phases[i] = (struct pdi_phase){0};
	}
	m->nphases = keep;
	fit_phases(m);
}

/* Could record U hide a step-wide collective? Entry-only probes see every call; thinner
 * probes, a gap or a full ring buffer may not. */
static bool hides_collectives(const struct pdi_unobserved *u)
{
	return u->level != PDI_UNOBS_ENTRY_ONLY &&
	       (u->fn == PDI_UNOBSERVED_ALL || (u->fn < pdi_mpi_nfuncs && pdi_fn_is_collective(u->fn)));
}

/* Since when a step-wide collective may have gone unseen (UINT64_MAX: never). */
static uint64_t doubt_since(const struct pdi_unobserved_log *l)
{
	uint64_t t = UINT64_MAX;

	for (uint32_t i = 0; i < l->n; i++)
		if (hides_collectives(&l->v[i]) && l->v[i].t_start < t)
			t = l->v[i].t_start;
	/* a full log folds new records into its last one, whatever they hid */
	if (l->stretched && l->n && l->v[l->n - 1].t_start < t)
		t = l->v[l->n - 1].t_start;
	return t;
}

/* M's collective count may be short since DOUBT: its phases cut since then fold into the one
 * before, and it cuts no more. */
static void stop_cuts(struct pdi_model *m, uint64_t doubt)
{
	uint32_t keep = m->nphases;

	while (keep > 1 && m->phases[keep - 1].t_start >= doubt)
		keep--;
	fold_from(m, keep);
	m->auto_next_cut = PDI_MODEL_NO_CUT;
}

/* The wall-clock slot of M's time T. */
static uint64_t slot_of(const struct pdi_model *m, uint64_t t)
{
	int64_t w = pdi_phase_wall_ns(m, t);

	return w > 0 ? (uint64_t)w / ((uint64_t)m->auto_len * 1000000) : 0;
}

/* Could M, cutting on collectives, not cutting yet or cutting early slots, cut on the wall clock
 * for good instead? */
static bool may_turn(const struct pdi_model *m)
{
	return !m->saw_pcontrol && m->cfg.auto_phases && (!m->slots || m->early);
}

/* M cuts on the wall clock for good: the collectives' period is looked for no more. True when it
 * cut early slots already: it stays on them, whatever its count says. */
static bool slots_for_good(struct pdi_model *m)
{
	free(m->coll_fns);
	m->coll_fns = NULL;
	if (!m->early)
		return false;
	m->early = false;
	return true;
}

/* M turns to the wall clock, its collective count in doubt since DOUBT (UINT64_MAX: never): its
 * phases cut since then fold into the one before, as stop_cuts() would; each earlier one keeps the
 * slot it started in (phases that started in one slot merge), so that it stays lined up with its
 * siblings' phases of that slot whichever way they were cut: a collective is entered by every
 * task within the same moments. It cuts at its first call in each slot after its last call, or
 * after DOUBT where that is later, and not before the instant its step fixed for wall-clock
 * phases (auto_slots_from_ns): before it, as for a task that turns there, it is still set-up. */
static void turn_to_slots(struct pdi_model *m, uint64_t doubt)
{
	uint64_t last = doubt != UINT64_MAX && doubt > m->last_enter ? doubt : m->last_enter;
	uint32_t keep = m->nphases;
	uint64_t from;

	if (slots_for_good(m))
		return;
	while (keep > 1 && m->phases[keep - 1].t_start >= doubt)
		keep--;
	fold_from(m, keep);
	m->slots = true;
	m->auto_len = SLOT_MS;
	for (uint32_t i = 1; i < m->nphases; i++)
		m->phases[i].first_collective = slot_of(m, m->phases[i].t_start);
	for (uint32_t i = 2; i < m->nphases;)
		if (m->phases[i].first_collective == m->phases[i - 1].first_collective)
			fold_into_previous(m, i);
		else
			i++;
	m->auto_next_cut = slot_of(m, last) + 1;
	from = m->cfg.auto_slots_from_ns > 0 ? (uint64_t)m->cfg.auto_slots_from_ns / (SLOT_MS * 1000000ull) + 1 : 0;
	if (m->auto_next_cut < from)
		m->auto_next_cut = from;
}

/* Before a call entered at T is fed: if M's count may be short by then, M turns to the wall
 * clock where its step has wall-clock phases (turn_to_slots()), or else cuts no more. The log is
 * looked at again only when it changed; a record that arrives late (lost events are counted
 * when pdimond next looks, a gap is marked once the probes are back) may start before cuts
 * already made, or before the doubt M stopped at: those cuts fold too. */
static void check_count(struct pdi_model *m, uint64_t t)
{
	uint64_t seen = m->unobserved.n + m->unobserved.stretched;
	bool changed = seen != m->count_doubt_seen;

	if (changed) {
		m->count_doubt_ns = doubt_since(&m->unobserved);
		m->count_doubt_seen = seen;
	}
	if (!may_turn(m) || t < m->count_doubt_ns)
		return;
	if (m->cfg.auto_slots_from_ns)
		turn_to_slots(m, m->count_doubt_ns);
	else if (changed || m->auto_next_cut != PDI_MODEL_NO_CUT)
		stop_cuts(m, m->count_doubt_ns);
}

uint64_t pdi_model_cut_horizon(const struct pdi_model *m)
{
	uint64_t doubt;
	uint32_t i;

	if (m->saw_pcontrol || !m->cfg.auto_phases || m->slots || !m->nphases)
		return UINT64_MAX;
	doubt = doubt_since(&m->unobserved);
	/* a model still cutting may have its doubt ahead of the calls it was fed; one that was not fed
	 * a call since its doubt began (a record added last) is as good as stopped */
	if (m->auto_next_cut != PDI_MODEL_NO_CUT && doubt > m->last_enter)
		return UINT64_MAX;
	for (i = m->nphases; i > 1 && m->phases[i - 1].t_start >= doubt; i--)
		;
	return m->phases[i - 1].first_collective;
}

void pdi_model_fold_past(struct pdi_model *m, uint64_t horizon)
{
	uint32_t keep = m->nphases;

	if (m->saw_pcontrol || !m->cfg.auto_phases || m->slots || !m->nphases || horizon == UINT64_MAX)
		return;
	while (keep > 1 && m->phases[keep - 1].first_collective > horizon)
		keep--;
	fold_from(m, keep);
	/* past the horizon already: any later cut would be folded again */
	if (m->ncollectives > horizon)
		m->auto_next_cut = PDI_MODEL_NO_CUT;
}

/* Can M's automatic phases be merged pairwise? */
static bool can_halve(const struct pdi_model *m)
{
	return m->auto_len && !m->saw_pcontrol && m->nphases >= 2 && m->auto_len <= UINT32_MAX / 2;
}

int pdi_model_coarsen(struct pdi_model *m, uint32_t auto_len)
{
	uint32_t len = m->auto_len;

	while (len && len < auto_len)
		len *= 2;
	if (!len || len != auto_len)
		return -EINVAL;
	while (m->auto_len < auto_len) {
		if (!can_halve(m))
			return -EINVAL;
		halve_phases(m);
	}
	return 0;
}

/* Does M cut its automatic phases on the wall clock (1), on collectives (0), or not yet (-1)? */
static int cut_mode(const struct pdi_model *m)
{
	if (m->saw_pcontrol || !m->cfg.auto_phases)
		return -1;
	return m->slots ? 1 : m->auto_len ? 0 : -1;
}

/* The phases of a step's tasks cannot be compared (no memory to line them up): each keeps one
 * and cuts no more, which is still in line. */
static void stop_all(size_t n, struct pdi_model *(*get)(void *ctx, size_t i), void *ctx)
{
	for (size_t i = 0; i < n; i++) {
		struct pdi_model *m = get(ctx, i);

		if (m->saw_pcontrol || !m->cfg.auto_phases)
			continue;
		fold_from(m, 1);
		m->auto_next_cut = PDI_MODEL_NO_CUT;
	}
}

/* Phases on the wall clock: up to the latest slot every such task began a phase in, keep the
 * phases whose slot all of them began one in; fold the others into the phase before. */
static int line_up_slots(size_t n, struct pdi_model *(*get)(void *ctx, size_t i), void *ctx)
{
	struct pdi_u64map count = {0};
	uint64_t reached = UINT64_MAX;
	uint32_t ntasks = 0;
	int r = 0;

	for (size_t i = 0; i < n; i++) {
		const struct pdi_model *m = get(ctx, i);

		if (cut_mode(m) != 1 || !m->nphases)
			continue;
		ntasks++;
		/* phase 0 starts at 0: a task that has not cut yet holds every fold back; one that will
		 * cut no more (stopped, or in MPI_Finalize) holds none: slots it has none in never come */
		if (m->auto_next_cut == PDI_MODEL_NO_CUT || (m->calls && pdi_mpi_funcs[m->last_fn].cls == PDI_FC_FINALIZE))
			continue;
		if (m->phases[m->nphases - 1].first_collective < reached)
			reached = m->phases[m->nphases - 1].first_collective;
	}
	if (ntasks < 2 || !reached)
		return 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct pdi_model *m = get(ctx, i);

		for (uint32_t p = 1; cut_mode(m) == 1 && r == 0 && p < m->nphases; p++) {
			uint64_t s = m->phases[p].first_collective;
			uint32_t c = pdi_u64map_get(&count, s);

			if (s <= reached)
				r = pdi_u64map_put(&count, s, c == PDI_U64MAP_NONE ? 1 : c + 1);
		}
	}
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct pdi_model *m = get(ctx, i);

		for (uint32_t p = 1; cut_mode(m) == 1 && p < m->nphases;) {
			uint64_t s = m->phases[p].first_collective;

			if (s <= reached && pdi_u64map_get(&count, s) != ntasks)
				fold_into_previous(m, p);
			else
				p++;
		}
	}
	pdi_u64map_free(&count);
	return r;
}

/* Tasks of one step cut on the wall clock alike: a task whose count is in doubt turns now, where
 * its step has wall-clock phases (it may not have made a call since, as its siblings have); then,
 * once any task cuts on the wall clock, those still cutting on collectives turn too (a sibling on
 * another node saw what this one missed, or a collective straddled the instant they decided at),
 * so that every task holds the same slots. */
static void turn_alike(size_t n, struct pdi_model *(*get)(void *ctx, size_t i), void *ctx)
{
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		struct pdi_model *m = get(ctx, i);
		uint64_t doubt = doubt_since(&m->unobserved);

		if (may_turn(m) && m->cfg.auto_slots_from_ns && doubt != UINT64_MAX)
			turn_to_slots(m, doubt);
		/* early slots are lined up with the others, but turn no one: their period may still show */
		any |= cut_mode(m) == 1 && !m->early;
	}
	for (size_t i = 0; any && i < n; i++) {
		struct pdi_model *m = get(ctx, i);

		if (cut_mode(m) == 0)
			turn_to_slots(m, doubt_since(&m->unobserved));
	}
}

/* pdi_models_line_up() over models reached through GET. */
static size_t line_up(size_t n, struct pdi_model *(*get)(void *ctx, size_t i), void *ctx)
{
	uint64_t horizon = UINT64_MAX;
	uint32_t len[2] = {0, 0};
	size_t failed = 0;

	turn_alike(n, get, ctx);
	for (size_t i = 0; i < n; i++) {
		int mode = cut_mode(get(ctx, i));

		if (mode >= 0 && get(ctx, i)->auto_len > len[mode])
			len[mode] = get(ctx, i)->auto_len;
	}
	for (size_t i = 0; i < n; i++) {
		struct pdi_model *m = get(ctx, i);
		int mode = cut_mode(m);

		if (mode >= 0 && m->auto_len < len[mode] && pdi_model_coarsen(m, len[mode]) < 0)
			failed++;
	}
	if (len[1] && line_up_slots(n, get, ctx) < 0)
		stop_all(n, get, ctx); /* no memory to compare them: one phase each is still in line */
	for (size_t i = 0; i < n; i++) {
		uint64_t h = pdi_model_cut_horizon(get(ctx, i));

		if (h < horizon)
			horizon = h;
	}
	for (size_t i = 0; i < n; i++)
		pdi_model_fold_past(get(ctx, i), horizon);
	return failed;
}

static struct pdi_model *array_at(void *ctx, size_t i)
{
	return &((struct pdi_model *)ctx)[i];
}

static struct pdi_model *pointer_at(void *ctx, size_t i)
{
	return ((struct pdi_model **)ctx)[i];
}

size_t pdi_models_line_up(struct pdi_model *models, size_t n)
{
	return line_up(n, array_at, models);
}

size_t pdi_model_ptrs_line_up(struct pdi_model **models, size_t n)
{
	return line_up(n, pointer_at, models);
}

/* The smallest period of the recorded collective functions past the prologue, 1 if none. */
static uint32_t find_period(const uint32_t *s)
{
	for (uint32_t p = 1; p <= PERIOD_MAX; p++) {
		uint32_t i = PERIOD_SKIP;

		while (i + p < PERIOD_SAMPLE && s[i] == s[i + p])
			i++;
		if (i + p == PERIOD_SAMPLE)
			return p;
	}
	return 1;
}

/* On the wall clock: does C start a phase, in slot *RET_FIRST? */
static bool starts_slot(struct pdi_model *m, const struct pdi_call *c, uint64_t *ret_first)
{
	if (m->auto_next_cut == PDI_MODEL_NO_CUT || slot_of(m, c->t_enter) < m->auto_next_cut)
		return false;
	if (m->nphases == m->cfg.max_phases)
		halve_slot_phases(m);
	if (slot_of(m, c->t_enter) < m->auto_next_cut)
		return false;
	*ret_first = slot_of(m, c->t_enter);
	m->auto_next_cut = *ret_first + 1;
	return true;
}

/* Has M, entering a call at T, reached the instant its step decides at without the collectives'
 * period? Then it cuts on the wall clock: on from its early phases if it cut them, from the next
 * slot on if not. */
static bool turns_to_slots(struct pdi_model *m, uint64_t t)
{
	if (!m->cfg.auto_slots_from_ns || m->ncollectives >= PERIOD_SAMPLE || pdi_phase_wall_ns(m, t) < m->cfg.auto_slots_from_ns)
		return false;
	if (slots_for_good(m))
		return true;
	m->slots = true;
	m->auto_len = SLOT_MS;
	m->auto_next_cut = slot_of(m, t) + 1;
	return true;
}

/* Does M, still looking for the collectives' period at T, cut early phases on the wall clock? From
 * the first call at or after its step's early instant on, in the slots of the grid every task
 * uses (slot_of()), the set-up before it staying phase 0. */
static bool cuts_early(struct pdi_model *m, uint64_t t)
{
	if (m->early)
		return true;
	if (m->auto_len || !m->cfg.auto_slots_from_ns || !m->cfg.auto_slots_early_ns ||
	    pdi_phase_wall_ns(m, t) < m->cfg.auto_slots_early_ns)
		return false;
	m->slots = m->early = true;
	m->auto_len = SLOT_MS;
	m->auto_next_cut = slot_of(m, t);
	return true;
}

/* M, cutting early slots, entered a step-wide collective at T: it is still in its set-up (a code
 * without a loop of them makes its last ones before its loop; one with such a loop folds them all
 * at its 96th anyway), so its early phases fold into phase 0 and cut on from the next slot. */
static void set_up_goes_on(struct pdi_model *m, uint64_t t)
{
	fold_from(m, 1);
	m->auto_next_cut = slot_of(m, t) + 1;
}

/* M's step-wide collectives showed their period before its step's instant: its early phases fold
 * into the set-up, and it cuts on collectives as though it had never cut on the wall clock. */
static void leave_early(struct pdi_model *m)
{
	fold_from(m, 1);
	m->slots = m->early = false;
	m->auto_len = 0;
	m->auto_next_cut = 0;
}

/* Does call C start a new phase, after *RET_FIRST step-wide collectives (or in that slot)?
 * Records what the decision needs. */
static bool starts_phase(struct pdi_model *m, const struct pdi_call *c, uint64_t *ret_first)
{
	uint8_t cls = pdi_mpi_funcs[c->fn].cls;
	uint64_t k;

	/* a Pcontrol is not counted: the phase starts after as many collectives as were made */
	*ret_first = m->ncollectives;
	if (cls == PDI_FC_PCONTROL) {
		m->saw_pcontrol = true;
		return true;
	}
	if (m->saw_pcontrol || !m->cfg.auto_phases)
		return false;
	if (m->slots && !m->early)
		return starts_slot(m, c, ret_first);
	if (turns_to_slots(m, c->t_enter))
		return starts_slot(m, c, ret_first);
	if (!pdi_fn_is_collective(c->fn) || (c->flags & PDI_CALL_SUBCOMM))
		return cuts_early(m, c->t_enter) && starts_slot(m, c, ret_first);
	k = m->ncollectives++;
	if (k < PERIOD_SAMPLE) {
		if (!m->coll_fns && !(m->coll_fns = calloc(PERIOD_SAMPLE, sizeof(*m->coll_fns))))
			return false; /* no period, no automatic phases: the model stays whole */
		m->coll_fns[k] = c->fn;
		if (k + 1 == PERIOD_SAMPLE) {
			uint32_t p = find_period(m->coll_fns);
			uint32_t min = m->cfg.auto_phase_min_collectives ? m->cfg.auto_phase_min_collectives : 1;

			if (m->early)
				leave_early(m);
			/* a sample that may lack collectives finds no period its siblings share */
			if (m->auto_next_cut != PDI_MODEL_NO_CUT) {
				m->auto_len = (min + p - 1) / p * p;
				m->auto_next_cut = PERIOD_SAMPLE;
			}
			free(m->coll_fns);
			m->coll_fns = NULL;
		} else if (cuts_early(m, c->t_enter)) {
			set_up_goes_on(m, c->t_enter);
		}
		return false;
	}
	if (k != m->auto_next_cut)
		return false;
	if (m->nphases == m->cfg.max_phases)
		halve_auto_phases(m);
	m->auto_next_cut = k + m->auto_len;
	return true;
}

static void remember_request(struct pdi_model *m, const struct pdi_call *c)
{
	uint32_t i = pdi_u64map_get(&m->req_idx, c->req);

	if (i == PDI_U64MAP_NONE) {
		/* handles are recycled by the MPI library, so the table stays as small as the
		 * number of requests the program keeps live; the cap is for programs that leak */
		if (m->nreqs >= MAX_REQUESTS ||
		    grow_array(m, (void **)&m->reqs, &m->cap_reqs, m->nreqs, sizeof(*m->reqs)) < 0 ||
		    map_put(m, &m->req_idx, c->req, m->nreqs) < 0) {
			m->dropped_requests++;
			return;
		}
		i = m->nreqs++;
	}
	m->reqs[i] = (struct pdi_request){
		.handle = c->req, .peer = c->peer, .tag = c->tag, .site = c->site, .fn = c->fn};
}

int pdi_model_add_call(struct pdi_model *m, const struct pdi_call *c)
{
	uint64_t comm = pdi_state_comm(c->site);
	uint8_t cls = pdi_mpi_funcs[c->fn].cls;
	struct pdi_phase *p;
	uint64_t first = 0;
	uint32_t i;
	bool cut;
	int r;

	if (!m->nphases && (r = new_phase(m, c->t_enter, 0)) < 0)
		return r;
	if (m->bytes > MERGE_AT(m->cfg.max_bytes) && can_halve(m) && m->nphases >= 3)
		halve_phases(m);
	check_count(m, c->t_enter);
	cut = starts_phase(m, c, &first);
	p = cur_phase(m);
	if (m->started) {
		uint64_t prev = pdi_state_comm(m->last_site);
		uint64_t comp = pdi_state_comp(m->last_site, c->site);

		/* the computation before a phase's first call still belongs to the phase before */
		add_edge(m, p, prev, comp, (double)(m->last_exit - m->last_enter));
		visit(m, p, comp);
		add_edge(m, p, comp, comm, c->t_enter > m->last_exit ? (double)(c->t_enter - m->last_exit) : 0);
		if (cut && open_phase(m, c->t_enter, first) == 0)
			p = cur_phase(m); /* which starts at this call: no incoming edge */
	}
	i = get_state(m, p, comm);
	if (i != PDI_U64MAP_NONE) {
		p->states[i].visits++;
		p->states[i].bytes += c->bytes;
	}
	p->t_end = c->t_exit;

	if ((cls == PDI_FC_ISEND || cls == PDI_FC_IRECV || cls == PDI_FC_ICOLL) && c->req)
		remember_request(m, c);

	m->started = true;
	m->last_site = c->site;
	m->last_fn = c->fn;
	m->last_enter = c->t_enter;
	m->last_exit = c->t_exit;
	m->calls++;
	return 0;
}

uint64_t pdi_model_visits(const struct pdi_model *m, uint64_t state_key)
{
	uint64_t v = 0;

	for (uint32_t i = 0; i < m->nphases; i++) {
		uint32_t s = pdi_phase_state(&m->phases[i], state_key);
		if (s != PDI_U64MAP_NONE)
			v += m->phases[i].states[s].visits;
	}
	return v;
}

const struct pdi_request *pdi_model_find_request(const struct pdi_model *m, uint64_t handle)
{
	uint32_t i = pdi_u64map_get(&m->req_idx, handle);

	return i == PDI_U64MAP_NONE ? NULL : &m->reqs[i];
}

/* ---- the kernel's counts per phase (struct pdi_usage) ---- */

void pdi_model_usage_add(struct pdi_model *m, const struct pdi_usage *u)
{
	uint32_t p = m->nphases;

	if (!m->nphases || !u->at_ns || (m->usage_now.at_ns && !pdi_usage_after(&m->usage_now, u)))
		return;
	m->usage_now = *u;
	pdi_usage_recent_add(&m->usage_recent, u);
	pdi_usage_log_add(&m->usage_log, u);
	while (p > 0 && !m->phases[p - 1].usage.at_ns)
		p--;
	for (; p < m->nphases; p++)
		place_phase(m, p);
}

bool pdi_model_phase_usage(const struct pdi_model *m, uint32_t p, struct pdi_phase_usage *ret)
{
	const struct pdi_usage *a, *b;
	uint64_t busy;

	if (p >= m->nphases)
		return false;
	a = &m->phases[p].usage;
	b = p + 1 < m->nphases ? &m->phases[p + 1].usage : &m->usage_now;
	if (!a->at_ns || !b->at_ns || b->at_ns <= a->at_ns || !pdi_usage_after(a, b))
		return false;
	busy = (b->cpu_ns - a->cpu_ns) + (b->wait_ns - a->wait_ns);
	*ret = (struct pdi_phase_usage){.wall_ns = b->at_ns - a->at_ns, .cpu_ns = b->cpu_ns - a->cpu_ns,
					.wait_ns = b->wait_ns - a->wait_ns};
	/* the counters and the clock are read a few microseconds apart */
	ret->held_ns = ret->wall_ns > busy ? ret->wall_ns - busy : 0;
	return true;
}

/* ---- renaming sites ---- */

/* KEY with its sites renamed by MAP; -EINVAL if it names a site MAP does not cover. */
static int remap_key(uint64_t key, const uint32_t *map, uint32_t nmap, uint64_t *ret)
{
	uint32_t to = pdi_state_site(key), from = pdi_state_prev_site(key);

	if (!pdi_state_is_comp(key)) {
		if (key >> 32 || to >= nmap)
			return -EINVAL;
		*ret = pdi_state_comm(map[to]);
		return 0;
	}
	if (from >= nmap || to >= nmap)
		return -EINVAL;
	*ret = pdi_state_comp(map[from], map[to]);
	return 0;
}

/* Everything pdi_model_remap_sites() can refuse, checked before anything changes. */
static int remap_check(const struct pdi_model *m, const uint32_t *map, uint32_t nmap)
{
	uint64_t key;

	for (uint32_t i = 0; i < nmap; i++)
		if (map[i] > PDI_SITE_MAX)
			return -EINVAL;
	for (uint32_t i = 0; i < m->nphases; i++)
		for (uint32_t s = 0; s < m->phases[i].nstates; s++)
			if (remap_key(m->phases[i].states[s].key, map, nmap, &key) < 0)
				return -EINVAL;
	if (m->started && m->last_site >= nmap)
		return -EINVAL;
	for (uint32_t i = 0; i < m->nreqs; i++)
		if (m->reqs[i].site >= nmap)
			return -EINVAL;
	return 0;
}

/* P's states, then its edges, renamed into the fresh phase Q (same capacities, so that the
 * model's byte count only moves by the maps' size). TO: scratch, P->nstates entries. */
static int remap_phase(const struct pdi_phase *p, const uint32_t *map, uint32_t nmap, uint32_t *to,
		       struct pdi_phase *q)
{
	*q = (struct pdi_phase){.t_start = p->t_start, .t_end = p->t_end, .first_collective = p->first_collective,
				.usage = p->usage, .cap_states = p->cap_states, .cap_edges = p->cap_edges};
	if ((p->cap_states && !(q->states = malloc((size_t)p->cap_states * sizeof(*q->states)))) ||
	    (p->cap_edges && !(q->edges = malloc((size_t)p->cap_edges * sizeof(*q->edges)))))
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nstates; i++) {
		uint64_t key = 0;
		uint32_t j;

		(void)remap_key(p->states[i].key, map, nmap, &key); /* checked by remap_check() */
		j = pdi_u64map_get(&q->state_idx, key);
		if (j == PDI_U64MAP_NONE) {
			if (pdi_u64map_put(&q->state_idx, key, q->nstates) < 0)
				return -ENOMEM;
			j = q->nstates++;
			q->states[j] = (struct pdi_state){.key = key};
		}
		q->states[j].visits += p->states[i].visits;
		q->states[j].bytes += p->states[i].bytes;
		to[i] = j;
	}
	for (uint32_t i = 0; i < p->nedges; i++) {
		const struct pdi_edge *e = &p->edges[i];
		uint64_t key = (uint64_t)to[e->from] << 32 | to[e->to];
		uint32_t j = pdi_u64map_get(&q->edge_idx, key);

		if (j != PDI_U64MAP_NONE) {
			pdi_gauss_merge(&q->edges[j].time, &e->time);
			pdi_hist_merge(&q->edges[j].hist, &e->hist);
			continue;
		}
		if (pdi_u64map_put(&q->edge_idx, key, q->nedges) < 0)
			return -ENOMEM;
		q->edges[q->nedges] = *e;
		q->edges[q->nedges].from = to[e->from];
		q->edges[q->nedges].to = to[e->to];
		q->nedges++;
	}
	return 0;
}

static size_t phase_map_bytes(const struct pdi_phase *p)
{
	return pdi_u64map_bytes(&p->state_idx) + pdi_u64map_bytes(&p->edge_idx);
}

int pdi_model_remap_sites(struct pdi_model *m, const uint32_t *map, uint32_t nmap)
{
	uint32_t maxstates = 0, *to = NULL;
	struct pdi_phase *q = NULL;
	int r;

	if ((r = remap_check(m, map, nmap)) < 0)
		return r;
	for (uint32_t i = 0; i < m->nphases; i++)
		if (m->phases[i].nstates > maxstates)
			maxstates = m->phases[i].nstates;
	/* the phases are built aside and swapped in at the end: on failure M is as it was */
	q = calloc(m->nphases ? m->nphases : 1, sizeof(*q));
	to = malloc((maxstates ? maxstates : 1) * sizeof(*to));
	r = q && to ? 0 : -ENOMEM;
	for (uint32_t i = 0; r == 0 && i < m->nphases; i++)
		r = remap_phase(&m->phases[i], map, nmap, to, &q[i]);
	if (r < 0) {
		for (uint32_t i = 0; q && i < m->nphases; i++)
			phase_done(&q[i]); /* those not reached are zeroed */
		goto out;
	}
	for (uint32_t i = 0; i < m->nphases; i++) {
		m->bytes += phase_map_bytes(&q[i]);
		m->bytes -= phase_map_bytes(&m->phases[i]);
		phase_done(&m->phases[i]);
		m->phases[i] = q[i];
	}
	if (m->started)
		m->last_site = map[m->last_site];
	for (uint32_t i = 0; i < m->nreqs; i++)
		m->reqs[i].site = map[m->reqs[i].site];
out:
	free(q);
	free(to);
	return r;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_evidence.c -- the rank seen computing while its peers were seen waiting
 * (stack_evidence.h). */
#include <stdio.h>

#include "mpi_funcs.h"
#include "stack_evidence.h"

/* Time NS of task T on a clock all tasks share: the time of day when T's offset is known. */
static int64_t wall(const struct pdi_view_task *t, uint64_t ns)
{
	return (int64_t)ns + t->wall_offset_ns;
}

static bool overlaps(const struct pdi_view_task *a, const struct pdi_stack_seen *x, const struct pdi_view_task *b,
		     const struct pdi_stack_seen *y)
{
	const int64_t tol = (int64_t)PDI_STACK_EVIDENCE_TOLERANCE_NS, after = (int64_t)PDI_STACK_EVIDENCE_AFTER_NS;

	return wall(b, y->t_first) <= wall(a, x->t_last) + after && wall(b, y->t_last) + tol >= wall(a, x->t_first);
}

/* The phase of model M whose window holds T: the last that began by then. */
static uint32_t phase_at(const struct pdi_model *m, uint64_t t)
{
	uint32_t p = 0;

	for (uint32_t k = 0; k < m->nphases; k++)
		if (m->phases[k].t_start <= t)
			p = k;
	return p;
}

/* Whether the looks of record X (computing) came after a real still second of model M: the
 * judge looks at a task that showed no call for a second, which says it was still only when its
 * probes would have shown its calls. Under a tiny budget (apps.py --budget 0.02) every hot
 * function is detached and every rank looks still: healthy meep ranks were looked at in the
 * middle of their usual computation, one computing while three waited, in 3 of 4 fault-free
 * runs. At pdimond's default budget the spinners' functions were sampled (1/16-1/4 at
 * 10,000-40,000 calls a second: hundreds seen a second) and the look stands. */
static bool still_before(const struct pdi_model *m, const struct pdi_stack_seen *x)
{
	uint64_t from = x->t_first > PDI_STACK_SEEN_STILL_NS ? x->t_first - PDI_STACK_SEEN_STILL_NS : 0;

	return !pdi_unobserved_blind_through(&m->unobserved, from, x->t_first);
}

/* Whether record X of task I (computing) was seen while peers waited: how many, into *RET. */
static bool peers_waited(const struct pdi_view *v, unsigned i, const struct pdi_stack_seen *x, bool any_peer,
			 struct pdi_stack_evidence *ret)
{
	const struct pdi_view_task *a = &v->tasks[i];
	unsigned waiting = 0;
	int peer = -1;
	uint16_t peer_fn = 0;

	for (unsigned j = 0; j < v->ntasks; j++) {
		const struct pdi_view_task *b = &v->tasks[j];
		bool in_call = false;
		uint16_t fn = 0;

		if (j == i)
			continue;
		for (uint32_t k = 0; k < b->model->stack_seen.n; k++) {
			const struct pdi_stack_seen *y = &b->model->stack_seen.v[k];

			if (!overlaps(a, x, b, y))
				continue;
			if (y->fn == PDI_STACK_SEEN_OUTSIDE)
				return false; /* another computed then too: not one rank the others waited for */
			in_call = true;
			fn = y->fn;
		}
		if (in_call && waiting++ == 0) {
			peer = b->rank;
			peer_fn = fn;
		}
	}
	/* a peer no look saw then may have been computing as well (a healthy meep, issue 9: rank 1
	 * seen computing, ranks 0 and 3 waiting, rank 2 not looked at) */
	if (!waiting || (!any_peer && waiting + 1 < v->ntasks))
		return false;
	*ret = (struct pdi_stack_evidence){.found = true, .task = i, .rank = a->rank,
					   .phase = phase_at(a->model, x->t_first), .t_first = x->t_first,
					   .t_last = x->t_last, .waiting = waiting, .peer_rank = peer, .peer_fn = peer_fn};
	return true;
}

void pdi_stack_evidence(const struct pdi_view *v, bool any_peer, struct pdi_stack_evidence *ret)
{
	struct pdi_stack_evidence best = {0}, e;

	for (unsigned i = 0; i < v->ntasks; i++) {
		const struct pdi_model *m = v->tasks[i].model;
		const struct pdi_stack_seen_log *l = &m->stack_seen;

		for (uint32_t k = 0; k < l->n; k++) {
			if (l->v[k].fn != PDI_STACK_SEEN_OUTSIDE || !still_before(m, &l->v[k]) ||
			    !peers_waited(v, i, &l->v[k], any_peer, &e))
				continue;
			if (best.found && best.task != i) {
				*ret = (struct pdi_stack_evidence){0}; /* two ranks: the looks single none out */
				return;
			}
			if (!best.found || e.waiting > best.waiting ||
			    (e.waiting == best.waiting && e.t_last - e.t_first > best.t_last - best.t_first))
				best = e;
		}
	}
	*ret = best;
}

void pdi_stack_evidence_text(const struct pdi_stack_evidence *e, char *buf, size_t len)
{
	char over[48] = "";

	if (e->t_last > e->t_first)
		snprintf(over, sizeof(over), " over %.1f s", (double)(e->t_last - e->t_first) / 1e9);
	snprintf(buf, len, "rank %d was computing outside MPI on its live stack (%s%s) while %u peer%s waited inside MPI "
		 "(rank %d in %s)",
		 e->rank, e->t_last > e->t_first ? "looks" : "one look", over, e->waiting, e->waiting == 1 ? "" : "s",
		 e->peer_rank, pdi_mpi_func_name(e->peer_fn));
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* retired.c -- the links the overhead budget replaced: entry links closed at once, return links
 * once no call in flight needs them (see retired.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "close_together.h"
#include "daemon.h"
#include "detach.h"
#include "log.h"
#include "mpi_funcs.h"
#include "registry.h"
#include "retired.h"
#include "tracer.h"

/* Jobs closing replaced links at once (each close waits for an RCU grace period; concurrent ones
 * share it). */
#define CLOSING_JOBS 4

void pdi_retired_call_ended(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_event *e)
{
	const struct pdi_attachment *a = &t->att;

	if (a->nretired_returns && e->t_enter < a->returns_retired_ns && e->t_exit >= a->returns_retired_ns)
		pdi_retired_close(d, t);
}

unsigned pdi_retired_count(const struct pdi_task *t)
{
	return t->att.nretired + t->att.nretired_returns;
}

/* Of FNS (bits by function), keep those A leaves without a return probe now: a call of one of the
 * others ends through its function's current return link, whichever link it was entered by. Any
 * bit left? */
static bool without_return(const struct pdi_attachment *a, uint64_t fns[PDI_LINK_GEN_FUNCS / 64])
{
	bool any = false;

	for (unsigned fn = 0; fn < PDI_LINK_GEN_FUNCS; fn++) {
		uint64_t bit = 1ull << (fn % 64);

		if (!(fns[fn / 64] & bit))
			continue;
		if (fn < pdi_mpi_nfuncs && pdi_attachment_mode(a, fn) == PDI_PROBE_FULL)
			fns[fn / 64] &= ~bit;
		else
			any = true;
	}
	return any;
}

/* The hold of T's return links ran out with calls of FNS (bits) in flight since before their switch
 * (all functions without a return probe, when the map could not be read): those calls lose their
 * return, and say so to their readers. */
static void mark_lost(struct pdi_task *t, const uint64_t fns[PDI_LINK_GEN_FUNCS / 64], int r)
{
	struct pdi_attachment *a = &t->att;
	char names[128] = "";

	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		bool lost = r < 0 ? pdi_attachment_mode(a, fn) != PDI_PROBE_FULL : fns[fn / 64] >> (fn % 64) & 1;

		if (!lost)
			continue;
		a->returns_lost_fns[fn / 64] |= 1ull << (fn % 64);
		if (r == 0 && strlen(names) + strlen(pdi_mpi_funcs[fn].name) + 2 < sizeof(names))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", names[0] ? ", " : "",
				 pdi_mpi_funcs[fn].name);
	}
	a->returns_lost_before_ns = a->returns_retired_ns;
	log_debug("pid %d (rank %d): replaced return probes closed after %.1f s with %s in flight since before "
		  "their switch: %s", (int)t->pid, t->rank, (double)PDI_RETURNS_HOLD_NS / 1e9, r < 0 ? "calls maybe" : names,
		  "where such a call is, its thread is placed by its stack");
}

/* Whether T's replaced return links may go now: no call in flight needs them, or their hold ran
 * out (those calls then marked). */
static bool returns_may_go(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_attachment *a = &t->att;
	uint64_t fns[PDI_LINK_GEN_FUNCS / 64];
	/* a thread with a call entered before the switch was alive at it: a list read since names it */
	int r = pdi_threads_since(&a->threads, t->pid, a->returns_retired_ns);

	if (r == 0)
		r = pdi_tracer_inflight_fns_before(d->tracer, t->pid, a->threads.tids, a->threads.n,
						   a->returns_retired_ns, fns);
	if (r == -ENOENT) {
		memset(fns, 0, sizeof(fns)); /* gone: no call of it waits for a return */
		r = 0;
	}
	if (r == 0 && !without_return(a, fns))
		return true;
	if (pdi_now_ns() - a->returns_held_ns >= PDI_RETURNS_HOLD_NS) {
		/* a call that loses its return is emitted by its thread's next hit, with the call site
		 * its entry may have left to the return: taken now, while the kernel still has it */
		for (unsigned i = 0; i < a->threads.n; i++)
			(void)pdi_tracer_fill_callsite(d->tracer, a->threads.tids[i]);
		mark_lost(t, fns, r);
		return true;
	}
	if (!a->returns_waiting)
		log_debug("pid %d (rank %d): %u replaced return probes held for calls in flight since before their "
			  "switch", (int)t->pid, t->rank, a->nretired_returns);
	a->returns_waiting = true;
	return false;
}

void pdi_retired_close(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_attachment *a = &t->att;

	/* no look at the map while the closes are behind anyway */
	if (d->budget_closing >= CLOSING_JOBS)
		return;
	/* with the entry links, in one job: the returns go once they may */
	if (a->nretired_returns && returns_may_go(d, t)) {
		if (a->returns_waiting)
			log_debug("pid %d (rank %d): %u replaced return probes let go after %.1f ms held", (int)t->pid,
				  t->rank, a->nretired_returns, (double)(pdi_now_ns() - a->returns_held_ns) / 1e6);
		for (unsigned i = 0; i < a->nretired_returns; i++) {
			int pair[2] = {a->retired_returns[i], -1};

			pdi_links_keep_pair(&a->retired, &a->nretired, pair);
		}
		free(a->retired_returns);
		a->retired_returns = NULL;
		a->nretired_returns = 0;
		a->returns_held_ns = 0;
		a->returns_waiting = false;
	}
	pdi_detach_list_later(d->workers, &a->retired, &a->nretired, &d->budget_closing);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* budget_recent.h -- a probed function's calls in each of the overhead budget's last few slots,
 * counted by when they were made (their entry time), not by when pdimond drained them.
 *
 * The budget's rate of a function is its calls over the time its probes were on since the period
 * began: a burst that begins in the middle of a period is diluted by the quiet slots before it, and
 * the budget thinned the function step by step as the average caught up (hpcc's RandomAccess:
 * MPI_Test full -> entry only -> 1/2 -> 1/4 ..., a probe change each, every call fully probed
 * meanwhile). The last two slots alone say the burst's rate two slots after it began, wherever in
 * the period. Counted by entry time, a slot's count is never more than the calls made in it: calls
 * drained late (drain_interval_ms) only make it low, until they come in. Pure: unit-tested. */
#pragma once

#include <stdint.h>

#define PDI_BUDGET_RECENT_SLOTS 4u /* slots kept: the two read, and room for calls drained late */

struct pdi_budget_recent {
	uint32_t slot[PDI_BUDGET_RECENT_SLOTS]; /* the slot (number since the budget's epoch, mod 2^32)
						   each count is of */
	uint32_t calls[PDI_BUDGET_RECENT_SLOTS];
};

/* One call made in slot SLOT; a call of a slot older than the ones kept is not counted. */
static inline void pdi_budget_recent_add(struct pdi_budget_recent *r, uint64_t slot)
{
	unsigned i = (unsigned)(slot % PDI_BUDGET_RECENT_SLOTS);

	if (r->slot[i] != (uint32_t)slot) {
		if ((int32_t)((uint32_t)slot - r->slot[i]) < 0)
			return; /* drained after its bucket was taken by a later slot */
		r->slot[i] = (uint32_t)slot;
		r->calls[i] = 0;
	}
	if (r->calls[i] < UINT32_MAX)
		r->calls[i]++;
}

/* Calls per second in the N (1..PDI_BUDGET_RECENT_SLOTS - 1) complete slots before slot NOW, each
 * SLOT_NS long; 0 before the N-th slot. */
double pdi_budget_recent_rate(const struct pdi_budget_recent *r, uint64_t now, unsigned n, uint64_t slot_ns);

/* SPDX-License-Identifier: GPL-2.0-only */
/* budget_recent.c -- a function's calls per second in the budget's last complete slots
 * (budget_recent.h). */
#include "budget_recent.h"

double pdi_budget_recent_rate(const struct pdi_budget_recent *r, uint64_t now, unsigned n, uint64_t slot_ns)
{
	uint64_t calls = 0;

	if (n == 0 || n >= PDI_BUDGET_RECENT_SLOTS || now < n || slot_ns == 0)
		return 0;
	for (uint64_t s = now - n; s < now; s++) {
		unsigned i = (unsigned)(s % PDI_BUDGET_RECENT_SLOTS);

		if (r->slot[i] == (uint32_t)s)
			calls += r->calls[i];
	}
	return (double)calls * 1e9 / (double)(n * slot_ns);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* budget_price.c -- what a probed function costs a task at each budget level (budget_price.h). */
#include "budget_price.h"

/* A detached function is re-measured in one slice 2 and 3 periods after its detach, then every 4th
 * (budget.c): in the steady state, one slice (two switches) every 4 periods. */
#define DETACHED_SLICE_EVERY 4.0

unsigned pdi_budget_duty_log2(unsigned level)
{
	return level < 2 ? 0 : level < PDI_BUDGET_DETACHED ? level - 1 : 8;
}

double pdi_budget_switches_per_period(unsigned level)
{
	if (level < 2)
		return 0;
	return level < PDI_BUDGET_DETACHED ? 2 : 2 / DETACHED_SLICE_EVERY;
}

unsigned pdi_budget_next_level(const struct pdi_budget_price *p, unsigned level, int dir)
{
	unsigned l = dir > 0 ? level + 1 : level - 1;

	if (l == 1 && !p->entry_only)
		l = dir > 0 ? 2 : 0;
	return l;
}

double pdi_budget_cost(const struct pdi_budget_price *p, double rate, unsigned level, double period_s, double cpu_share)
{
	/* a sliced function's calls are seen entry only where the model can do without the return */
	bool entry = level == 1 || (level >= 2 && p->entry_only);
	double hit = p->shared_ns + (entry ? p->entry_hit_ns : p->hit_ns);
	double per_s = rate * hit / (double)(1u << pdi_budget_duty_log2(level)) +
		       pdi_budget_switches_per_period(level) * p->switch_ns / period_s;

	return per_s * 1e-9 / cpu_share;
}

unsigned pdi_budget_cheaper_level(const struct pdi_budget_price *p, double rate, unsigned level, double period_s,
				  double cpu_share)
{
	double now = pdi_budget_cost(p, rate, level, period_s, cpu_share);

	for (unsigned l = pdi_budget_next_level(p, level, +1); l < PDI_BUDGET_DETACHED; l = pdi_budget_next_level(p, l, +1))
		if (pdi_budget_cost(p, rate, l, period_s, cpu_share) < now)
			return l;
	return PDI_BUDGET_DETACHED;
}

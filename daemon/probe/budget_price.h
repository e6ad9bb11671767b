/* SPDX-License-Identifier: GPL-2.0-only */
/* budget_price.h -- what one probed function costs a task at each overhead-budget level, and the
 * next level that really costs less: pure arithmetic, no daemon state (budget.c decides with it).
 *
 * A level costs the function's hits at what one costs, over the share of the time it is probed,
 * and the switches of its probes that the level makes: a sampled function's probes are replaced
 * twice a period (on at the period's start, off after its slice), a detached one's twice per
 * re-measuring slice, each an attach and a close on pdimond's workers (register and unregister
 * walks in the kernel) that a job filling its node's cores pays. Uncounted, they cost the polling
 * benchmark nearly as much again as all the budget counted (doc/design/overhead-budget.md, "What
 * the budget missed"). With them, a sampled level can cost
 * more than the level before it (a function called a few thousand times a second costs less
 * fully probed than switched twice a second): thinning skips such levels. */
#pragma once

#include <stdbool.h>

#define PDI_BUDGET_DETACHED 7 /* the last level: 0 full, 1 entry only, 2-6 slices of 1/2-1/32 */

/* What a function's probes cost, in ns of CPU. */
struct pdi_budget_price {
	double hit_ns;        /* one call with entry and return probes */
	double entry_hit_ns;  /* one call with the entry probe alone */
	double shared_ns;     /* added to every hit: other processes' links, pdimond's intake */
	double switch_ns;     /* pdimond's CPU per switch of the function's probes on or off */
	bool entry_only;      /* the model can do without its return (nonblocking tests and probes) */
};

/* Share of its time (1/2^duty_log2) a function at LEVEL is probed; 0 for full-time levels. */
unsigned pdi_budget_duty_log2(unsigned level);
/* Switches of a function's probes per period that LEVEL makes in the steady state. */
double pdi_budget_switches_per_period(unsigned level);
/* The next level from LEVEL in direction DIR (+1 thinner, -1 fuller) that P's function has
 * (entry only exists for some functions). */
unsigned pdi_budget_next_level(const struct pdi_budget_price *p, unsigned level, int dir);
/* The share of a task's time a function called RATE times a second costs it at LEVEL (P's prices,
 * a period of PERIOD_S seconds), over the share CPU_SHARE (> 0) of the CPU the task gets. */
double pdi_budget_cost(const struct pdi_budget_price *p, double rate, unsigned level, double period_s, double cpu_share);
/* The first level thinner than LEVEL that costs less than LEVEL does; PDI_BUDGET_DETACHED when
 * none does (detached is the last resort, and costs least but for its re-measuring). */
unsigned pdi_budget_cheaper_level(const struct pdi_budget_price *p, double rate, unsigned level, double period_s,
				  double cpu_share);

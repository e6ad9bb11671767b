/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_budget.c -- the one time budget the plugin may cost a step, and the decision to
 * stop calling a pdimond that did not answer.
 *
 * The budget is the real time the plugin spends on pdimond for the step: each call's
 * duration (CLOCK_MONOTONIC around the whole exchange) and srun's waits between calls; not
 * a window from the first call, so that the call that ends the step, hours later, still has
 * what the registrations left. Every call takes at most what is left (and at most
 * timeout_ms); once the budget is spent, or once pdimond failed to answer at all (no reply
 * in time, not on the bus, the bus unreachable), the plugin does not call it again for the
 * step. The state lives in the process that makes the calls: slurmstepd calls
 * slurm_spank_task_post_fork for each task one after the other, in the same process
 * (Slurm's mgr.c forks the tasks, then runs the post-fork hooks in the parent before it
 * lets any task exec), so the first task's timeout spares all the others; srun has its
 * own budget for the report at the step's end. */
#include <stdio.h>
#include <time.h>

#include "spank_ctx.h"

uint64_t pdimon_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void pdimon_budget_spend(uint64_t ms)
{
	struct pdimon_budget *b = &pdimon_ctx.budget;

	b->spent_ms = b->spent_ms + ms < pdimon_ctx.budget_ms ? b->spent_ms + ms : pdimon_ctx.budget_ms;
}

unsigned pdimon_budget_left_ms(void)
{
	return pdimon_ctx.budget_ms - (unsigned)pdimon_ctx.budget.spent_ms;
}

unsigned pdimon_budget_call_ms(char *why, size_t whylen)
{
	struct pdimon_budget *b = &pdimon_ctx.budget;
	unsigned left = pdimon_budget_left_ms();

	if (b->gave_up) {
		snprintf(why, whylen, "%s", b->why);
		return 0;
	}
	if (!left) {
		snprintf(why, whylen, "the plugin's time budget of %u ms for this step is spent", pdimon_ctx.budget_ms);
		return 0;
	}
	return left < pdimon_ctx.timeout_ms ? left : pdimon_ctx.timeout_ms;
}

void pdimon_budget_give_up(const char *why)
{
	struct pdimon_budget *b = &pdimon_ctx.budget;

	if (b->gave_up)
		return;
	b->gave_up = true;
	snprintf(b->why, sizeof(b->why), "%s (not asked again for this step)", why);
}

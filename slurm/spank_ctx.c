/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_ctx.c -- the step's settings and state, shared by the plugin's contexts: the
 * defaults that options (spank_pdimon.c) change, and which steps are no MPI job. */
#include <slurm/slurm.h>

#include "spank_ctx.h"

struct pdimon_ctx pdimon_ctx = {.timeout_ms = 2000, .wait_ms = 5000, .budget_ms = 5000};

bool pdimon_skip_step(uint32_t step_id)
{
	return step_id == SLURM_BATCH_SCRIPT || step_id == SLURM_EXTERN_CONT || step_id == SLURM_INTERACTIVE_STEP;
}

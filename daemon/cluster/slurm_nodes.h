/* SPDX-License-Identifier: GPL-2.0-only */
/* slurm_nodes.h -- a Slurm step's node list, from slurmctld (scontrol). */
#pragma once

#include <stdint.h>

/* The nodes of step JOB.STEP in Slurm's order, into *RET (*RET_N names, each and the array
 * malloc'd), within TIMEOUT_MS. -ENOENT when Slurm knows no such running step (or is not
 * there), -ETIMEDOUT, -ENOMEM. */
int pdi_slurm_step_nodes(uint32_t job, uint32_t step, unsigned timeout_ms, char ***ret, unsigned *ret_n);

/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_remote.c -- slurmstepd: register each task with the node's pdimond right after
 * the fork (before it executes the program, so none of its MPI calls is missed), and end
 * the step when slurmstepd exits. */
#include <stdio.h>
#include <sys/types.h>

#include <slurm/slurm.h>

#include "spank_pdimon.h"

int pdimon_remote_task_post_fork(spank_t sp)
{
	uint32_t job, step, rank;
	pid_t pid;
	uid_t uid;
	char why[256];

	if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS || pdimon_skip_step(step))
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
		slurm_info(PDI_PREFIX "cannot read the task's ids from Slurm; step %u.%u not monitored", job, step);
		return 0;
	}
	if (pdimon_bus_call("RegisterTask", why, sizeof(why), NULL, "uuuuus", job, step, rank, (uint32_t)pid,
			    (uint32_t)uid, pdimon_ctx.options) < 0) {
		slurm_info(PDI_PREFIX "task %u of step %u.%u not monitored: %s", rank, job, step, why);
		return 0;
	}
	pdimon_ctx.registered = true;
	return 0;
}

int pdimon_remote_exit(spank_t sp)
{
	uint32_t job, step;
	char why[256];

	if (!pdimon_ctx.registered || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return 0;
	if (pdimon_bus_call("EndStep", why, sizeof(why), NULL, "uu", job, step) < 0)
		slurm_info(PDI_PREFIX "cannot end step %u.%u: %s", job, step, why);
	return 0;
}

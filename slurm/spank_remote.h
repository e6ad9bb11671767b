/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_remote.h -- the plugin in slurmstepd (spank_remote.c). */
#pragma once

#include <slurm/spank.h>

int pdimon_remote_task_post_fork(spank_t sp);
int pdimon_remote_exit(spank_t sp);

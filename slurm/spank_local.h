/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_local.h -- the plugin in srun (spank_local.c). */
#pragma once

#include <slurm/spank.h>

int pdimon_local_user_init(spank_t sp);
int pdimon_local_exit(spank_t sp);

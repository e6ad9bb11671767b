/* SPDX-License-Identifier: GPL-2.0-only */
/* rank_phases.h -- ranks x phases for the report: the share of each phase a rank spent inside
 * MPI calls (the phases' wall-clock windows are the diagnosis's, analysis.h). A stuck or
 * slow rank shows as a row unlike the others. Large steps are aggregated: ranks whose rows
 * are alike share one, and past PDI_RANK_PHASES_MAX_ROWS rows blocks of consecutive ranks
 * show, per phase, their member farthest from the phase's median, so that an odd rank still
 * shows. */
#pragma once

#include <stddef.h>

#include "json.h"
#include "model.h"

#define PDI_RANK_PHASES_ROWS_EACH 64  /* up to this many tasks, a row per rank */
#define PDI_RANK_PHASES_MAX_ROWS 256

/* The member "rank_phases" of the report into J, from the N tasks' RANKS and MODELS:
 * {"metric": "mpi_share", "aggregated": "none"|"alike"|"blocks",
 * "rows": [{"ranks": "[0-3]", "count": 4, "mpi": [share or null, ...]}]}. 0, or -ENOMEM. */
int pdi_rank_phases_json(struct pdi_json *j, const int *ranks, const struct pdi_model *const *models, size_t n);

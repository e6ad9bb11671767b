/* SPDX-License-Identifier: GPL-2.0-only */
/* learned_store.h -- the overhead budget's levels learned per program (probe/budget_learn.h),
 * kept in the store so that a restart of pdimond does not forget them: loaded at start, and
 * what changed written on the store's lane, off the loop, bounded by budget_programs as the
 * table is. Functions are named there, not numbered: their indices change between releases. */
#pragma once

#include <stdint.h>

struct pdi_daemon;

/* At start: the levels the store kept, into d->budget_learned (nothing without a store or with
 * the table off). A row this pdimon cannot read is skipped. */
void pdi_learned_store_load(struct pdi_daemon *d);
/* The levels noted since the last call, queued for the store's lane (on the loop: a copy, no
 * I/O). Nothing to do costs a walk of the table's entries. */
void pdi_learned_store_flush(struct pdi_daemon *d);

/* LEVELS (pdi_mpi_nfuncs, indices of pdi_mpi_funcs) as "MPI_Test=3 MPI_Iprobe=5", malloc'd;
 * "" if none is degraded; NULL: no memory. */
char *pdi_learned_levels_format(const uint8_t *levels);
/* The reverse, into LEVELS (pdi_mpi_nfuncs entries, zeroed first). A word that is no
 * NAME=LEVEL of a function this pdimon knows, or whose level is not 1-255, is skipped: the
 * number of levels taken. */
unsigned pdi_learned_levels_parse(const char *text, uint8_t *levels);

/* SPDX-License-Identifier: GPL-2.0-only */
/* budget_learn.h -- the overhead budget's levels learned per program: a site runs the same codes
 * again and again, and a run as short as a few seconds is over before the budget has measured
 * its way down (doc/design/overhead-budget.md, "Levels learned per program"). When a step's
 * function had to be degraded, the most degraded level it held is remembered for its program
 * (pdi_program_hash(): its executable and build identity, so a rebuild is another program);
 * the next step of that program on the node starts its first task at those levels, and the
 * usual rule restores them once measured rates say so. A bounded table (budget_programs
 * entries), the least recently used entry goes first. Kept in the store across restarts
 * (store/learned_store.h). Pure: no daemon state, unit-tested. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct pdi_budget_learned;

/* A table of at most MAX programs, each with NFUNCS levels. 0, -EINVAL (MAX or NFUNCS 0), -ENOMEM. */
int pdi_budget_learned_new(unsigned max, unsigned nfuncs, struct pdi_budget_learned **ret);
void pdi_budget_learned_free(struct pdi_budget_learned *l);
/* The levels remembered for PROGRAM (pdi_program_hash(); NFUNCS entries, valid until the next
 * note), or NULL. */
const uint8_t *pdi_budget_learned_find(struct pdi_budget_learned *l, uint64_t program);
/* A task of step STEP (any number that tells steps apart: the same for all its tasks) of PROGRAM
 * held LEVELS at most (NFUNCS entries). The first note of a step replaces what K had (the
 * program's latest run is the best guess of its next); the next notes of the same step raise it
 * to the most degraded of its tasks'. A program that never needed a degraded level takes no
 * room. 0 or -ENOMEM (the table unchanged). */
int pdi_budget_learned_note(struct pdi_budget_learned *l, uint64_t program, uint64_t step, const uint8_t *levels);
/* PROGRAM's LEVELS as the store kept them, last used at USED (the table's clock, as
 * pdi_budget_learned_changed() gave it): at start, least recently used first, so that the
 * bound keeps the most recent. Not changed. Levels that degrade nothing take no room. 0 or
 * -ENOMEM. */
int pdi_budget_learned_put(struct pdi_budget_learned *l, uint64_t program, uint64_t used, const uint8_t *levels);
/* The entries noted since the last call (those that went for room are the store's to drop by
 * the same bound), each once: CB(CTX, PROGRAM, USED, LEVELS). A negative return of CB stops,
 * that entry and the rest stay changed, and is returned. NULL L: nothing. */
int pdi_budget_learned_changed(struct pdi_budget_learned *l,
			       int (*cb)(void *ctx, uint64_t program, uint64_t used, const uint8_t *levels), void *ctx);
/* Programs remembered. */
unsigned pdi_budget_learned_count(const struct pdi_budget_learned *l);

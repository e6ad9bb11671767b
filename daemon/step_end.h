/* SPDX-License-Identifier: GPL-2.0-only */
/* step_end.h -- the one place where a step ends: report built, stored, announced, then the
 * step may leave memory (step_end.c). */
#pragma once

#include "registry.h"

struct pdi_daemon;

/* S may have ended (no task runs, nothing is awaited): if so, end it, once. Returns at once;
 * the rest follows on workers and the store's lane. */
void pdi_step_ended(struct pdi_daemon *d, struct pdi_step *s);
/* S is ending: ANSWER(CTX, ...) gets the report of its end, once, on the loop: as soon as it
 * is built, or with STORED once the step is stored and its end announced. 0; -EALREADY when
 * S is not ending or already has what was asked for (the caller answers itself); -ENOMEM. */
int pdi_step_wait_end(struct pdi_step *s, bool stored, pdi_step_answer_fn answer, void *ctx);
/* Ended steps whose record the store refused (a full disk, a locked database): again. */
void pdi_step_store_again(struct pdi_daemon *d);
/* Ended steps beyond the cache's limits leave memory (the store has them). */
void pdi_step_evict(struct pdi_daemon *d);

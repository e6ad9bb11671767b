/* SPDX-License-Identifier: GPL-2.0-only */
/* history.h -- the programs' history of quiet episodes in the store, and a step's own health
 * across a restart (history.c). */
#pragma once

#include "health_state.h"

struct pdi_daemon;
struct pdi_step;

/* The store's answer, on the loop: the program's HISTORY over RUNS earlier runs, and OWN, S's
 * own health as a pdimond before this one left it (NULL: none); NULL and 0 when there is
 * none or it could not be read. The judge hands it in (step_health.c), so history names no
 * function of the judge above it. */
typedef void (*pdi_hang_loaded_fn)(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_health_record *history,
				   const struct pdi_health_saved *own, unsigned runs);

/* The program's quiet episodes of its earlier runs, and this step's own health if a pdimond
 * before this one judged it, loaded off the loop and handed to LOADED (always called once,
 * unless S is gone or ran again by then). */
void pdi_hang_history_load(struct pdi_daemon *d, struct pdi_step *s, pdi_hang_loaded_fn loaded);
/* S's record and health written off the loop (at each announcement and when S ended). */
void pdi_hang_history_save(struct pdi_daemon *d, struct pdi_step *s);

/* SPDX-License-Identifier: GPL-2.0-only */
/* history.h -- the programs' history of quiet episodes in the store, and a step's own health
 * across a restart (history.c). */
#pragma once

struct pdi_daemon;
struct pdi_step;

/* The program's quiet episodes of its earlier runs, and this step's own health if a pdimond
 * before this one judged it, loaded off the loop into S's judge. */
void pdi_hang_history_load(struct pdi_daemon *d, struct pdi_step *s);
/* S's record and health written off the loop (at each announcement and when S ended). */
void pdi_hang_history_save(struct pdi_daemon *d, struct pdi_step *s);

/* SPDX-License-Identifier: GPL-2.0-only */
/* persist.h -- what pdimond keeps in its store, and gets back from it after a restart. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct pdi_daemon;
struct pdi_step;

/* Open the configured database; on failure say why and return <0: pdimond then refuses to
 * run rather than lose data silently. */
int pdi_persist_open(struct pdi_daemon *d);
void pdi_persist_close(struct pdi_daemon *d);

/* Write STEP whole (step, sites, tasks with their models, and its report once it ended) in
 * one transaction. A failure (disk full...) is logged; what was stored before stays. */
int pdi_persist_step(struct pdi_daemon *d, struct pdi_step *s);
/* Write every running step: a restart resumes from here. */
void pdi_persist_checkpoint(struct pdi_daemon *d);

/* After a start: bring back the steps that were running, re-attach to their tasks that
 * still run, watch again those registered tasks that have not reached MPI_Init. */
int pdi_persist_restore(struct pdi_daemon *d);

/* A stored step, into the registry (ended), for show and report. -ENOENT. */
int pdi_persist_load(struct pdi_daemon *d, const char *name, struct pdi_step **ret);

/* The stored steps not in memory, as rows for "pdimon steps --all"; free with
 * pdi_persist_rows_free(). */
struct pdi_step_row;
int pdi_persist_rows(struct pdi_daemon *d, struct pdi_step_row **ret, size_t *ret_n);
void pdi_persist_rows_free(struct pdi_step_row *v, size_t n);

/* Expire stored steps by the retention settings. */
void pdi_persist_expire(struct pdi_daemon *d);

/* SPDX-License-Identifier: GPL-2.0-only */
/* persist.h -- what pdimond keeps in its store, and gets back from it after a restart. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct pdi_daemon;
struct pdi_step;

/* Open the configured database (and the store's lane: a worker that writes, in order, on a
 * connection of its own); on failure say why and return <0: pdimond then refuses to run
 * rather than lose data silently. */
int pdi_persist_open(struct pdi_daemon *d);
/* From now on the loop's own reads give up on a locked database after a few milliseconds
 * (-EBUSY) rather than stand the loop still. */
void pdi_persist_loop_reads(struct pdi_daemon *d);
/* The lane's eventfd for the loop's epoll (-1 without a store), and its dispatch. */
int pdi_persist_lane_fd(struct pdi_daemon *d);
void pdi_persist_dispatch(struct pdi_daemon *d);
/* Write what is queued, then close. */
void pdi_persist_close(struct pdi_daemon *d);

/* Called on the loop once a record of step NAME has been written (STATUS 0) or not; END_GEN:
 * the step's end_gen when it was copied. */
typedef void (*pdi_persist_fn)(struct pdi_daemon *d, const char *name, uint32_t end_gen, int status);
/* Write STEP whole (step, sites, tasks with their models, its watched processes, its report
 * when it has one) in one transaction, on the store's lane: copied now, written in the order
 * of the calls, off the loop. DONE (may be NULL) follows. 0; -ENOENT without a store; -ENOMEM
 * (nothing queued, said in the log). */
int pdi_persist_step(struct pdi_daemon *d, struct pdi_step *s, pdi_persist_fn done);
/* Write every running step (one record of a step queued at a time): a restart resumes from
 * here. */
void pdi_persist_checkpoint(struct pdi_daemon *d);

/* After a start: bring back the steps that were running, re-attach to their tasks that
 * still run, watch again those registered tasks that have not reached MPI_Init. */
int pdi_persist_restore(struct pdi_daemon *d);

/* Whose stored step NAME is, from its row only: what to check before loading it. -ENOENT,
 * -EBUSY (locked by another process), -EIO. */
int pdi_persist_owner(struct pdi_daemon *d, const char *name, uid_t *ret_uid);
/* A stored step, into the registry (ended, stored: the cache evicts it), for show and
 * report. Nothing stays in the registry on failure. -ENOENT, -EEXIST (in memory already),
 * -EBUSY, -ENOMEM. */
int pdi_persist_load(struct pdi_daemon *d, const char *name, struct pdi_step **ret);

/* A line of "pdimon steps": a step in memory, or only in the store. */
struct pdi_step_row {
	const char *name, *state;
	uid_t uid;
	uint32_t job_id, step_id, ntasks, running;
	time_t started, ended;
	const char *health;   /* ok, slow, hung; NULL: not known (a step only in the store) */
	time_t health_since;  /* when it became so; 0 when ok */
};

/* The stored steps not in memory, as rows for "pdimon steps --all"; free with
 * pdi_persist_rows_free(). */
struct pdi_step_row;
int pdi_persist_rows(struct pdi_daemon *d, struct pdi_step_row **ret, size_t *ret_n);
void pdi_persist_rows_free(struct pdi_step_row *v, size_t n);

/* Expire stored steps by the retention settings, on the store's lane. */
void pdi_persist_expire(struct pdi_daemon *d);

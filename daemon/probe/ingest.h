/* SPDX-License-Identifier: GPL-2.0-only */
/* ingest.h -- from BPF events to task models, and the life of a task (ingest.c). */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "event.h"

struct pdi_daemon;
struct pdi_ident;
struct pdi_inflight;
struct pdi_chain;
struct pdi_step;
struct pdi_task;

int pdi_ingest_event(void *daemon, const struct pdi_event *e);
/* T's call E, its chain CH final, into T's model (its site named, site_warm.h decided it may be). */
void pdi_ingest_call(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_event *e, const struct pdi_chain *ch);
/* After a drain: the running tasks' events the ring buffer lost since the last look are marked
 * in their models (their collective counts may be short from then on). */
void pdi_ingest_note_lost(struct pdi_daemon *d);
/* A pdi_trapped_join_fn: a process of root ROOT's tree found stopped at start joins its
 * restored watch's step as if its trap had just fired (trapped.h continues it after). */
void pdi_join_stopped(void *daemon, pid_t root, const struct pdi_ident *id);
/* A PDI_EV_FRAMES record: the stack of a call whose chain BPF could not finish. */
void pdi_ingest_frames(void *daemon, const struct pdi_frames *f);
/* Monitor the pinned process ID as a task of STEP: attach probes, watch for its exit by its
 * pidfd (the task holds its own). RANK -1: from its environment. */
int pdi_task_begin(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_ident *id, int rank, struct pdi_task **ret);
/* The task's process has exited (or we stop): drain its events and keep its model. */
void pdi_task_finish(struct pdi_daemon *d, struct pdi_task *t);
/* T's process has exited (its pidfd is readable): T ends now, or, while its calls wait for a
 * worker to read what their site's name needs (site_warm.h), once they are taken in: its pidfd
 * leaves the loop's epoll set meanwhile. */
void pdi_task_exited(struct pdi_daemon *d, struct pdi_task *t);

/* The ranks the in-flight call F of task T waits for: its peer argument, or the peers of
 * the requests it completes (from the Isend/Irecv that made them). Returns how many. */
unsigned pdi_task_peers(const struct pdi_task *t, const struct pdi_inflight *f, int32_t *out, unsigned max);

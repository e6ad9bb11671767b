/* SPDX-License-Identifier: GPL-2.0-only */
/* site_warm.h -- a call site's first name read off the loop.
 *
 * A site new to its step is named by its line, from the DWARF of the object it is in, and its
 * places by the objects' symbols. The first time, that means opening and indexing an object the
 * cache has not read (a library loaded with dlopen, the objects of a process registered while it
 * runs) or loading an object's DWARF and its address index (a big Fortran code's: tens to
 * hundreds of ms). Then the task's calls wait, in the order they came, while a worker reads what
 * is missing (objwarm.h); once the cache has it, they are taken in on the loop, where naming is a
 * binary search and a compile unit's line table. Meanwhile the loop drains the ring buffer and
 * answers the bus; no call is lost, none is given another site. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct pdi_chain;
struct pdi_daemon;
struct pdi_event;
struct pdi_inflight;
struct pdi_task;
struct pdi_site_hold;

/* Does T's call E, whose chain CH is final, wait for a worker? It does if T's calls wait already
 * (E goes after them), or if naming its site would read what may take long (pdi_site_cold()):
 * then a worker reads it. True: E is kept, and taken in by pdi_ingest_call() once read. False:
 * take it in now (also when it cannot wait: no worker, or too many calls wait, and T's waiting
 * calls were taken in first). */
bool pdi_site_warm_hold(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_event *e,
			const struct pdi_chain *ch);

/* The site of the call thread TID of T is in (F, from pdi_tracer_inflight()), as
 * pdi_site_of_inflight() names it, unless naming it would read what may take long
 * (pdi_site_cold()), or T's calls wait for such a read: then -EAGAIN, and a worker reads it (T's
 * calls wait behind, as for a call's site): what is built now (a view, a report) says the call's
 * function, what is built once it is read, its site. */
int pdi_site_warm_inflight(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_inflight *f, pid_t tid,
			   uint32_t *ret_site);

/* T's waiting calls, if any, taken in now on the loop, naming their sites there: T ends, and its
 * model must hold all its calls. The worker's reading still goes to the cache. */
void pdi_site_warm_flush(struct pdi_daemon *d, struct pdi_task *t);

/* SPDX-License-Identifier: GPL-2.0-only */
/* site_store.h -- the site store (site_store = postgresql://... in pdimond.conf): every ended
 * step's report, per-site totals and models, written to a PostgreSQL shared by the site, and
 * the runs `pdimon trends` fits read back from it. doc/design/site-store.md argues the design.
 *
 * The loop never waits for PostgreSQL: writes and queries run on a lane of one thread that
 * owns the connection (worker.h). The local store is the outbox: a step ended here is marked
 * pending in it, in the same transaction that stores it, and unmarked only once PostgreSQL
 * committed it, so an outage, a restart of either side or a crash loses nothing. What waits in
 * memory is one batch of at most site_store_queue steps (and about 64 MiB of models, one step
 * at least); the rest waits in the local store. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pdi_daemon;
struct pdi_json;

/* From the configuration: a bad URI, a password in it, or a credentials file that others can
 * read are refused with one line, and pdimond goes on without a site store (the steps it ends
 * stay pending in the local store for when it is fixed). Needs the local store. 0 or <0. */
int pdi_site_store_open(struct pdi_daemon *d);
/* Ends the lane: a write in flight finishes (bounded by libpq's timeouts) and stays pending
 * if it did not commit. */
void pdi_site_store_close(struct pdi_daemon *d);

/* The lane's eventfd, for the loop's epoll (-1 without a site store), and its dispatch. */
int pdi_site_store_fd(struct pdi_daemon *d);
void pdi_site_store_dispatch(struct pdi_daemon *d);

/* A step ended and was stored pending: send it when the lane is free. */
void pdi_site_store_kick(struct pdi_daemon *d);
/* From the loop's timer: retry after an outage, send what a restart left pending. */
void pdi_site_store_tick(struct pdi_daemon *d);

/* The trends of PROGRAM for UID from the site store, in FORMAT: the answer comes later, through
 * DONE(CTX, status, text) on the loop (status <0: text is the one-line error). When the site
 * store is down, from the local store, saying so. Returns 0 (DONE will be called), or <0 when
 * there is no site store or its lane is full (DONE will not be called). */
int pdi_site_store_trends(struct pdi_daemon *d, const char *program, uid_t uid, bool admin, const char *format,
			  void (*done)(void *ctx, int status, const char *text), void *ctx);

/* "site_store": {...} of pdimon status --json: where, up or down and why, steps pending. */
void pdi_site_store_status(struct pdi_daemon *d, struct pdi_json *j);
/* The same as a line of pdimon status ("" without a site store). */
void pdi_site_store_status_line(struct pdi_daemon *d, char *buf, size_t len);

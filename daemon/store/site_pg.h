/* SPDX-License-Identifier: GPL-2.0-only */
/* site_pg.h -- the site store's PostgreSQL side: one connection, its schema and migrations,
 * writing a node's part of an ended step, reading the runs trends fit. Blocking (every wait
 * bounded by libpq timeouts): called only on the site store's lane (site_store.c), never on
 * the loop. Every function returns 0 or a negative errno and fills WHY with one line:
 *   -ECONNREFUSED  the server cannot be reached (down, wrong host or port)
 *   -EACCES        it refused our credentials
 *   -EPROTONOSUPPORT its schema is newer than this pdimond knows
 *   -EIO           anything else it said (the line is its message)
 *   -ENOMEM        */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "site_step.h"
#include "store.h"
#include "trend_store.h"

#define PDI_SITE_SCHEMA "pdimon" /* every table lives in this PostgreSQL schema */

struct pdi_site_pg;

/* A connection to URI (libpq's URI or key=value string, without a password) with PASSWORD
 * (NULL: none, or libpq's own ~/.pgpass), as NODE. Connects on first use. */
int pdi_site_pg_new(const char *uri, const char *password, const char *node, struct pdi_site_pg **ret);
void pdi_site_pg_free(struct pdi_site_pg *p);

/* Connected, with the schema brought up to date (migrations under an advisory lock, so that
 * several pdimonds starting at once do not race). */
int pdi_site_pg_ready(struct pdi_site_pg *p, char *why, size_t len);

/* Write S (upsert by node and step name: writing it twice is harmless) in one transaction. */
int pdi_site_pg_put_step(struct pdi_site_pg *p, const struct pdi_site_step *s, char *why, size_t len);

/* The ended runs of PROGRAM (trend_runs.h's naming) that UID may read (all when ADMIN), a
 * Slurm step's parts on all its nodes summed into one run. */
int pdi_site_pg_trend_runs(struct pdi_site_pg *p, const char *program, uid_t uid, bool admin,
			   struct pdi_trend_runs *ret, char *why, size_t len);

/* AutomaDeD's sample runs from the whole site: the MAX most recent ended runs of EXECUTABLE
 * at TOTAL tasks that completed, other than a step called EXCLUDE, each from a node's part of
 * it that holds every one of RANKS (NRANKS of them): that part's step row (its ntasks then
 * NRANKS), report, sites, and the tasks of RANKS. *RET (NULL when none) and *RET_N: free each
 * with pdi_site_step_free() and the array with free(). */
int pdi_site_pg_sample_runs(struct pdi_site_pg *p, const char *executable, uint32_t total, const char *exclude,
			    const int32_t *ranks, size_t nranks, unsigned max, struct pdi_site_step ***ret,
			    size_t *ret_n, char *why, size_t len);

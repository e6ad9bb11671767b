/* SPDX-License-Identifier: GPL-2.0-only */
/* site_pg_sql.h -- what the site store's PostgreSQL files share (site_pg.c, site_pg_read.c): the
 * connection's struct, statements with their parameters, and their checked results. Only for
 * the site store's lane. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "site_pg.h"

struct pdi_site_pg {
	char *uri, *password, *node;
	PGconn *conn;
	bool schema_ok; /* checked since this connection was made */
};

/* The result of a statement, or NULL with *R and WHY set (and the connection dropped if it broke). */
PGresult *pdi_site_pg_checked(struct pdi_site_pg *p, PGresult *res, ExecStatusType want, int *r, char *why,
			      size_t len);
/* Run SQL without parameters or rows. 0 or <0 with WHY. */
int pdi_site_pg_exec(struct pdi_site_pg *p, const char *sql, char *why, size_t len);
/* After a failure inside a transaction: end it, if the connection still stands. */
void pdi_site_pg_rollback(struct pdi_site_pg *p);

#define PDI_SITE_PG_MAX_PARAMS 16

/* A statement's parameters: as text, a bytea one as binary. */
struct pdi_site_params {
	const char *v[PDI_SITE_PG_MAX_PARAMS];
	int len[PDI_SITE_PG_MAX_PARAMS], fmt[PDI_SITE_PG_MAX_PARAMS];
	char num[PDI_SITE_PG_MAX_PARAMS][24];
	int n;
};

void pdi_site_param_str(struct pdi_site_params *q, const char *s); /* NULL: SQL NULL */
void pdi_site_param_int(struct pdi_site_params *q, int64_t v);
void pdi_site_param_bin(struct pdi_site_params *q, const void *v, size_t len);
PGresult *pdi_site_pg_run(struct pdi_site_pg *p, const char *sql, const struct pdi_site_params *q);

/* SPDX-License-Identifier: GPL-2.0-only */
/* site_pg.c -- the site store on PostgreSQL (libpq): the connection, schema and migrations,
 * statements, and writing a node's part of a step.
 *
 * Like the local store, every statement takes its values as parameters (names, paths and
 * reports come from users' jobs), and a step goes in as one transaction, replacing its earlier
 * copy: a write retried after a lost acknowledgement changes nothing. Timeouts bound every wait
 * (connect_timeout, tcp_user_timeout, statement_timeout), so a job on the lane always ends. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "errline.h"
#include "site_pg_sql.h"

#define SCHEMA_LOCK 0x5044494d /* "PDIM": the advisory lock migrations take */
#define CONNECT_TIMEOUT_S "10"
#define TCP_USER_TIMEOUT_MS "20000"
#define STATEMENT_TIMEOUT "-c statement_timeout=30000 -c lock_timeout=20000"

/* The schema, one entry per version: migrations[i] takes the site store from version i to i + 1,
 * in one transaction with the version's update. Append, never edit a released entry. */
static const char *const migrations[] = {
	/* 1: steps (a node's part of each), their call sites with totals, tasks with models */
	"CREATE TABLE " PDI_SITE_SCHEMA ".steps ("
	"  id BIGSERIAL PRIMARY KEY,"
	"  node TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  job_id BIGINT NOT NULL,"
	"  step_id BIGINT NOT NULL,"
	"  uid BIGINT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  started BIGINT NOT NULL,"
	"  ended BIGINT NOT NULL,"
	"  executable TEXT NOT NULL,"
	"  build TEXT NOT NULL,"
	"  input_size BIGINT NOT NULL,"
	"  ntasks INTEGER NOT NULL,"      /* on this node */
	"  total_tasks INTEGER NOT NULL," /* on all the step's nodes, 0: ntasks */
	"  verdict TEXT NOT NULL,"
	"  report TEXT,"                  /* the JSON report, as pdimon report --json prints it */
	"  stored TIMESTAMPTZ NOT NULL DEFAULT now(),"
	"  UNIQUE (node, name));"
	"CREATE INDEX steps_by_executable ON " PDI_SITE_SCHEMA ".steps (executable, ended);"
	"CREATE INDEX steps_by_build ON " PDI_SITE_SCHEMA ".steps (build);"
	"CREATE TABLE " PDI_SITE_SCHEMA ".sites ("
	"  step BIGINT NOT NULL REFERENCES " PDI_SITE_SCHEMA ".steps (id) ON DELETE CASCADE,"
	"  idx INTEGER NOT NULL,"
	"  fn TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  caller TEXT NOT NULL,"
	"  file TEXT NOT NULL,"
	"  line INTEGER NOT NULL,"
	"  site_key BIGINT NOT NULL,"
	"  calls BIGINT NOT NULL,"
	"  bytes BIGINT NOT NULL,"
	"  time_ns BIGINT NOT NULL,"
	"  PRIMARY KEY (step, idx));"
	"CREATE TABLE " PDI_SITE_SCHEMA ".tasks ("
	"  step BIGINT NOT NULL REFERENCES " PDI_SITE_SCHEMA ".steps (id) ON DELETE CASCADE,"
	"  rank INTEGER NOT NULL,"
	"  pid INTEGER NOT NULL,"
	"  state TEXT NOT NULL,"
	"  events_lost BIGINT NOT NULL,"
	"  ended_in TEXT NOT NULL,"
	"  model BYTEA," /* lib/model/model_io.h's format */
	"  PRIMARY KEY (step, rank, pid));",
};

#define SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))



/* ---- the connection ---- */

int pdi_site_pg_new(const char *uri, const char *password, const char *node, struct pdi_site_pg **ret)
{
	struct pdi_site_pg *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->uri = strdup(uri);
	p->password = password ? strdup(password) : NULL;
	p->node = strdup(node ? node : "");
	if (!p->uri || (password && !p->password) || !p->node) {
		pdi_site_pg_free(p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

static void disconnect(struct pdi_site_pg *p)
{
	PQfinish(p->conn);
	p->conn = NULL;
	p->schema_ok = false;
}

void pdi_site_pg_free(struct pdi_site_pg *p)
{
	if (!p)
		return;
	disconnect(p);
	free(p->uri);
	if (p->password)
		explicit_bzero(p->password, strlen(p->password));
	free(p->password);
	free(p->node);
	free(p);
}

static int connect_db(struct pdi_site_pg *p, char *why, size_t len)
{
	const char *keys[] = {"dbname", "password", "connect_timeout", "tcp_user_timeout", "application_name",
			      "options", NULL};
	const char *values[] = {p->uri, p->password, CONNECT_TIMEOUT_S, TCP_USER_TIMEOUT_MS, "pdimond",
				STATEMENT_TIMEOUT, NULL};
	const char *msg;
	int r;

	if (!p->password) { /* no password of ours: leave the key out so libpq's own sources apply */
		keys[1] = "connect_timeout";
		values[1] = CONNECT_TIMEOUT_S;
	}
	p->conn = PQconnectdbParams(keys, values, 1);
	if (!p->conn)
		return pdi_errline(why, len, -ENOMEM, "out of memory");
	if (PQstatus(p->conn) == CONNECTION_OK)
		return 0;
	msg = PQerrorMessage(p->conn);
	r = PQconnectionNeedsPassword(p->conn) || strstr(msg, "authentication failed") || strstr(msg, "no password")
		    ? -EACCES
		    : strstr(msg, "does not exist") ? -EIO : -ECONNREFUSED;
	pdi_errline(why, len, r, "%s", msg);
	disconnect(p);
	return r;
}

PGresult *pdi_site_pg_checked(struct pdi_site_pg *p, PGresult *res, ExecStatusType want, int *r, char *why, size_t len)
{
	const char *state;

	if (res && PQresultStatus(res) == want)
		return res;
	state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	*r = !res ? -ENOMEM : PQstatus(p->conn) != CONNECTION_OK ? -ECONNREFUSED : -EIO;
	if (state && !strncmp(state, "28", 2))
		*r = -EACCES; /* invalid authorization */
	pdi_errline(why, len, *r, "%s", res ? PQresultErrorMessage(res) : PQerrorMessage(p->conn));
	PQclear(res);
	if (PQstatus(p->conn) != CONNECTION_OK)
		disconnect(p);
	return NULL;
}

int pdi_site_pg_exec(struct pdi_site_pg *p, const char *sql, char *why, size_t len)
{
	int r = 0;
	PGresult *res = pdi_site_pg_checked(p, PQexec(p->conn, sql), PGRES_COMMAND_OK, &r, why, len);

	PQclear(res);
	return r;
}

void pdi_site_pg_rollback(struct pdi_site_pg *p)
{
	if (p->conn && PQtransactionStatus(p->conn) != PQTRANS_IDLE)
		PQclear(PQexec(p->conn, "ROLLBACK"));
}

/* ---- the schema ---- */

static int schema_version(struct pdi_site_pg *p, int *ret, char *why, size_t len)
{
	int r = 0;
	PGresult *res = pdi_site_pg_checked(p, PQexec(p->conn, "SELECT version FROM " PDI_SITE_SCHEMA ".schema_version"),
				PGRES_TUPLES_OK, &r, why, len);

	if (!res)
		return r;
	*ret = PQntuples(res) ? atoi(PQgetvalue(res, 0, 0)) : 0;
	PQclear(res);
	return 0;
}

static int migrate(struct pdi_site_pg *p, char *why, size_t len)
{
	char sql[128];
	int v = 0, r;

	if ((r = pdi_site_pg_exec(p, "BEGIN", why, len)) < 0)
		return r;
	snprintf(sql, sizeof(sql), "SELECT pg_advisory_xact_lock(%d)", SCHEMA_LOCK);
	r = 0;
	PQclear(pdi_site_pg_checked(p, PQexec(p->conn, sql), PGRES_TUPLES_OK, &r, why, len));
	if (r >= 0)
		r = pdi_site_pg_exec(p, "CREATE SCHEMA IF NOT EXISTS " PDI_SITE_SCHEMA ";"
			    "CREATE TABLE IF NOT EXISTS " PDI_SITE_SCHEMA ".schema_version (version INTEGER NOT NULL)",
			 why, len);
	if (r >= 0)
		r = schema_version(p, &v, why, len);
	if (r >= 0 && v > SCHEMA_VERSION)
		r = pdi_errline(why, len, -EPROTONOSUPPORT,
			 "its schema is version %d, newer than this pdimond knows (%d): upgrade pdimon on this node", v,
			 SCHEMA_VERSION);
	for (; r >= 0 && v < SCHEMA_VERSION; v++) {
		r = pdi_site_pg_exec(p, migrations[v], why, len);
		snprintf(sql, sizeof(sql), "DELETE FROM " PDI_SITE_SCHEMA ".schema_version; INSERT INTO " PDI_SITE_SCHEMA
					   ".schema_version VALUES (%d)", v + 1);
		if (r >= 0)
			r = pdi_site_pg_exec(p, sql, why, len);
	}
	if (r >= 0)
		r = pdi_site_pg_exec(p, "COMMIT", why, len);
	if (r < 0)
		pdi_site_pg_rollback(p);
	return r;
}

int pdi_site_pg_ready(struct pdi_site_pg *p, char *why, size_t len)
{
	int r;

	if (p->conn && PQstatus(p->conn) != CONNECTION_OK)
		disconnect(p);
	if (!p->conn && (r = connect_db(p, why, len)) < 0)
		return r;
	if (p->schema_ok)
		return 0;
	if ((r = migrate(p, why, len)) < 0)
		return r;
	p->schema_ok = true;
	return 0;
}

/* ---- statements ---- */


void pdi_site_param_str(struct pdi_site_params *q, const char *s)
{
	q->v[q->n] = s;
	q->len[q->n] = 0;
	q->fmt[q->n++] = 0;
}

void pdi_site_param_int(struct pdi_site_params *q, int64_t v)
{
	snprintf(q->num[q->n], sizeof(q->num[0]), "%" PRId64, v);
	pdi_site_param_str(q, q->num[q->n]);
}

void pdi_site_param_bin(struct pdi_site_params *q, const void *v, size_t len)
{
	q->v[q->n] = v;
	q->len[q->n] = (int)len;
	q->fmt[q->n++] = 1;
}

PGresult *pdi_site_pg_run(struct pdi_site_pg *p, const char *sql, const struct pdi_site_params *q)
{
	return PQexecParams(p->conn, sql, q->n, NULL, q->v, q->len, q->fmt, 0);
}

/* ---- writing a step ---- */

static const char *const STEP_PUT =
	"INSERT INTO " PDI_SITE_SCHEMA ".steps (node, name, job_id, step_id, uid, state, started, ended, executable,"
	" build, input_size, ntasks, total_tasks, verdict, report)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
	" ON CONFLICT (node, name) DO UPDATE SET job_id = excluded.job_id, step_id = excluded.step_id,"
	" uid = excluded.uid, state = excluded.state, started = excluded.started, ended = excluded.ended,"
	" executable = excluded.executable, build = excluded.build, input_size = excluded.input_size,"
	" ntasks = excluded.ntasks, total_tasks = excluded.total_tasks, verdict = excluded.verdict,"
	" report = excluded.report, stored = now() RETURNING id";
static const char *const SITE_PUT =
	"INSERT INTO " PDI_SITE_SCHEMA ".sites (step, idx, fn, name, caller, file, line, site_key, calls, bytes, time_ns)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
static const char *const TASK_PUT =
	"INSERT INTO " PDI_SITE_SCHEMA ".tasks (step, rank, pid, state, events_lost, ended_in, model)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7)";

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int put_step_row(struct pdi_site_pg *p, const struct pdi_site_step *s, char *id, size_t idlen, char *why,
			size_t len)
{
	const struct pdi_store_step *st = &s->step;
	struct pdi_site_params q = {0};
	PGresult *res;
	int r = 0;

	pdi_site_param_str(&q, p->node);
	pdi_site_param_str(&q, st->name);
	pdi_site_param_int(&q, st->job_id);
	pdi_site_param_int(&q, st->step_id);
	pdi_site_param_int(&q, st->uid);
	pdi_site_param_str(&q, st->state);
	pdi_site_param_int(&q, st->started);
	pdi_site_param_int(&q, st->ended);
	pdi_site_param_str(&q, st->executable);
	pdi_site_param_str(&q, st->build);
	pdi_site_param_int(&q, clamp64(st->input_size));
	pdi_site_param_int(&q, st->ntasks);
	pdi_site_param_int(&q, st->total_tasks);
	pdi_site_param_str(&q, st->verdict);
	pdi_site_param_str(&q, s->report);
	res = pdi_site_pg_checked(p, pdi_site_pg_run(p, STEP_PUT, &q), PGRES_TUPLES_OK, &r, why, len);
	if (!res)
		return r;
	snprintf(id, idlen, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

static int put_children(struct pdi_site_pg *p, const struct pdi_site_step *s, const char *id, char *why, size_t len)
{
	struct pdi_site_params q = {0};
	int r = 0;

	pdi_site_param_str(&q, id);
	PQclear(pdi_site_pg_checked(p, pdi_site_pg_run(p, "DELETE FROM " PDI_SITE_SCHEMA ".sites WHERE step = $1", &q), PGRES_COMMAND_OK, &r,
			why, len));
	if (r >= 0)
		PQclear(pdi_site_pg_checked(p, pdi_site_pg_run(p, "DELETE FROM " PDI_SITE_SCHEMA ".tasks WHERE step = $1", &q), PGRES_COMMAND_OK,
				&r, why, len));
	for (size_t i = 0; r >= 0 && i < s->nsites; i++) {
		const struct pdi_site_row *x = &s->sites[i];

		q = (struct pdi_site_params){0};
		pdi_site_param_str(&q, id);
		pdi_site_param_int(&q, x->index);
		pdi_site_param_str(&q, x->fn);
		pdi_site_param_str(&q, x->name);
		pdi_site_param_str(&q, x->caller);
		pdi_site_param_str(&q, x->file);
		pdi_site_param_int(&q, x->line);
		pdi_site_param_int(&q, (int64_t)x->key);
		pdi_site_param_int(&q, clamp64(x->calls));
		pdi_site_param_int(&q, clamp64(x->bytes));
		pdi_site_param_int(&q, clamp64(x->time_ns));
		PQclear(pdi_site_pg_checked(p, pdi_site_pg_run(p, SITE_PUT, &q), PGRES_COMMAND_OK, &r, why, len));
	}
	for (size_t i = 0; r >= 0 && i < s->ntasks; i++) {
		const struct pdi_store_task *t = &s->tasks[i].t;

		q = (struct pdi_site_params){0};
		pdi_site_param_str(&q, id);
		pdi_site_param_int(&q, t->rank);
		pdi_site_param_int(&q, t->pid);
		pdi_site_param_str(&q, t->state);
		pdi_site_param_int(&q, clamp64(t->events_lost));
		pdi_site_param_str(&q, t->ended_in);
		if (t->model_len)
			pdi_site_param_bin(&q, t->model, t->model_len);
		else
			pdi_site_param_str(&q, NULL);
		PQclear(pdi_site_pg_checked(p, pdi_site_pg_run(p, TASK_PUT, &q), PGRES_COMMAND_OK, &r, why, len));
	}
	return r;
}

int pdi_site_pg_put_step(struct pdi_site_pg *p, const struct pdi_site_step *s, char *why, size_t len)
{
	char id[24];
	int r = pdi_site_pg_ready(p, why, len);

	if (r < 0)
		return r;
	if ((r = pdi_site_pg_exec(p, "BEGIN", why, len)) < 0)
		return r;
	r = put_step_row(p, s, id, sizeof(id), why, len);
	if (r >= 0)
		r = put_children(p, s, id, why, len);
	if (r >= 0)
		r = pdi_site_pg_exec(p, "COMMIT", why, len);
	if (r < 0)
		pdi_site_pg_rollback(p);
	return r;
}


/* SPDX-License-Identifier: GPL-2.0-only */
/* site_pg.c -- the site store on PostgreSQL (libpq): schema, migrations, writes, trend queries.
 *
 * Like the local store, every statement takes its values as parameters (names, paths and
 * reports come from users' jobs), and a step goes in as one transaction, replacing its earlier
 * copy: a write retried after a lost acknowledgement changes nothing. Timeouts bound every wait
 * (connect_timeout, tcp_user_timeout, statement_timeout), so a job on the lane always ends. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "errline.h"
#include "mpi_funcs.h"
#include "site_pg.h"

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
	"  model BYTEA," /* lib/model_io.h's format */
	"  PRIMARY KEY (step, rank, pid));",
};

#define SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

struct pdi_site_pg {
	char *uri, *password, *node;
	PGconn *conn;
	bool schema_ok; /* checked since this connection was made */
};


/* ---- payloads ---- */

void pdi_site_step_free(struct pdi_site_step *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nsites; i++) {
		free(s->sites[i].fn);
		free(s->sites[i].name);
		free(s->sites[i].caller);
		free(s->sites[i].file);
	}
	free(s->sites);
	for (size_t i = 0; i < s->ntasks; i++)
		free(s->tasks[i].model);
	free(s->tasks);
	free(s->report);
	free(s);
}

size_t pdi_site_step_bytes(const struct pdi_site_step *s)
{
	size_t n = sizeof(*s) + (s->report ? strlen(s->report) : 0) + s->nsites * sizeof(*s->sites);

	for (size_t i = 0; i < s->ntasks; i++)
		n += sizeof(s->tasks[i]) + s->tasks[i].t.model_len;
	return n;
}

static int read_site(void *ctx, const struct pdi_store_site *x)
{
	struct pdi_site_step *s = ctx;
	struct pdi_site_row *v = realloc(s->sites, (s->nsites + 1) * sizeof(*v)), *row;

	if (!v)
		return -ENOMEM;
	s->sites = v;
	row = &v[s->nsites];
	*row = (struct pdi_site_row){.index = x->index, .line = x->line, .key = x->key,
				     .fn = strdup(pdi_mpi_funcs[x->fn].name), .name = strdup(x->name),
				     .caller = strdup(x->caller), .file = strdup(x->file)};
	s->nsites++; /* freed with the payload, whole or not */
	return row->fn && row->name && row->caller && row->file ? 0 : -ENOMEM;
}

static int read_total(void *ctx, const struct pdi_store_site_total *t)
{
	struct pdi_site_step *s = ctx;

	for (size_t i = 0; i < s->nsites; i++)
		if (s->sites[i].index == t->index) {
			s->sites[i].calls = t->calls;
			s->sites[i].bytes = t->bytes;
			s->sites[i].time_ns = t->time_ns;
		}
	return 0;
}

static int read_task(void *ctx, const struct pdi_store_task *x)
{
	struct pdi_site_step *s = ctx;
	struct pdi_site_task *v = realloc(s->tasks, (s->ntasks + 1) * sizeof(*v)), *t;

	if (!v)
		return -ENOMEM;
	s->tasks = v;
	t = &v[s->ntasks];
	*t = (struct pdi_site_task){.t = *x};
	if (x->model_len) {
		if (!(t->model = malloc(x->model_len)))
			return -ENOMEM;
		memcpy(t->model, x->model, x->model_len);
		t->t.model = t->model;
	}
	s->ntasks++;
	return 0;
}

int pdi_site_step_read(struct pdi_store *st, const char *name, struct pdi_site_step **ret)
{
	struct pdi_site_step *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	r = pdi_store_get_step(st, name, &s->step);
	if (r >= 0)
		r = pdi_store_list_sites(st, name, read_site, s);
	if (r >= 0)
		r = pdi_store_list_site_totals(st, name, read_total, s);
	if (r >= 0)
		r = pdi_store_list_tasks(st, name, read_task, s);
	if (r >= 0 && (r = pdi_store_get_report(st, name, &s->report)) == -ENOENT)
		r = 0;
	if (r < 0) {
		pdi_site_step_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

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

/* The result of a statement, or NULL with WHY filled (and the connection dropped if it broke). */
static PGresult *checked(struct pdi_site_pg *p, PGresult *res, ExecStatusType want, int *r, char *why, size_t len)
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

static int exec(struct pdi_site_pg *p, const char *sql, char *why, size_t len)
{
	int r = 0;
	PGresult *res = checked(p, PQexec(p->conn, sql), PGRES_COMMAND_OK, &r, why, len);

	PQclear(res);
	return r;
}

/* After a failure inside a transaction: end it, if the connection still stands. */
static void rollback(struct pdi_site_pg *p)
{
	if (p->conn && PQtransactionStatus(p->conn) != PQTRANS_IDLE)
		PQclear(PQexec(p->conn, "ROLLBACK"));
}

/* ---- the schema ---- */

static int schema_version(struct pdi_site_pg *p, int *ret, char *why, size_t len)
{
	int r = 0;
	PGresult *res = checked(p, PQexec(p->conn, "SELECT version FROM " PDI_SITE_SCHEMA ".schema_version"),
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

	if ((r = exec(p, "BEGIN", why, len)) < 0)
		return r;
	snprintf(sql, sizeof(sql), "SELECT pg_advisory_xact_lock(%d)", SCHEMA_LOCK);
	r = 0;
	PQclear(checked(p, PQexec(p->conn, sql), PGRES_TUPLES_OK, &r, why, len));
	if (r >= 0)
		r = exec(p, "CREATE SCHEMA IF NOT EXISTS " PDI_SITE_SCHEMA ";"
			    "CREATE TABLE IF NOT EXISTS " PDI_SITE_SCHEMA ".schema_version (version INTEGER NOT NULL)",
			 why, len);
	if (r >= 0)
		r = schema_version(p, &v, why, len);
	if (r >= 0 && v > SCHEMA_VERSION)
		r = pdi_errline(why, len, -EPROTONOSUPPORT,
			 "its schema is version %d, newer than this pdimond knows (%d): upgrade pdimon on this node", v,
			 SCHEMA_VERSION);
	for (; r >= 0 && v < SCHEMA_VERSION; v++) {
		r = exec(p, migrations[v], why, len);
		snprintf(sql, sizeof(sql), "DELETE FROM " PDI_SITE_SCHEMA ".schema_version; INSERT INTO " PDI_SITE_SCHEMA
					   ".schema_version VALUES (%d)", v + 1);
		if (r >= 0)
			r = exec(p, sql, why, len);
	}
	if (r >= 0)
		r = exec(p, "COMMIT", why, len);
	if (r < 0)
		rollback(p);
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

/* ---- writing a step ---- */

#define MAX_PARAMS 16

/* Parameters as text, a bytea one as binary. */
struct params {
	const char *v[MAX_PARAMS];
	int len[MAX_PARAMS], fmt[MAX_PARAMS];
	char num[MAX_PARAMS][24];
	int n;
};

static void p_str(struct params *q, const char *s)
{
	q->v[q->n] = s;
	q->len[q->n] = 0;
	q->fmt[q->n++] = 0;
}

static void p_int(struct params *q, int64_t v)
{
	snprintf(q->num[q->n], sizeof(q->num[0]), "%" PRId64, v);
	p_str(q, q->num[q->n]);
}

static void p_bin(struct params *q, const void *v, size_t len)
{
	q->v[q->n] = v;
	q->len[q->n] = (int)len;
	q->fmt[q->n++] = 1;
}

static PGresult *run(struct pdi_site_pg *p, const char *sql, const struct params *q)
{
	return PQexecParams(p->conn, sql, q->n, NULL, q->v, q->len, q->fmt, 0);
}

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
	struct params q = {0};
	PGresult *res;
	int r = 0;

	p_str(&q, p->node);
	p_str(&q, st->name);
	p_int(&q, st->job_id);
	p_int(&q, st->step_id);
	p_int(&q, st->uid);
	p_str(&q, st->state);
	p_int(&q, st->started);
	p_int(&q, st->ended);
	p_str(&q, st->executable);
	p_str(&q, st->build);
	p_int(&q, clamp64(st->input_size));
	p_int(&q, st->ntasks);
	p_int(&q, st->total_tasks);
	p_str(&q, st->verdict);
	p_str(&q, s->report);
	res = checked(p, run(p, STEP_PUT, &q), PGRES_TUPLES_OK, &r, why, len);
	if (!res)
		return r;
	snprintf(id, idlen, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

static int put_children(struct pdi_site_pg *p, const struct pdi_site_step *s, const char *id, char *why, size_t len)
{
	struct params q = {0};
	int r = 0;

	p_str(&q, id);
	PQclear(checked(p, run(p, "DELETE FROM " PDI_SITE_SCHEMA ".sites WHERE step = $1", &q), PGRES_COMMAND_OK, &r,
			why, len));
	if (r >= 0)
		PQclear(checked(p, run(p, "DELETE FROM " PDI_SITE_SCHEMA ".tasks WHERE step = $1", &q), PGRES_COMMAND_OK,
				&r, why, len));
	for (size_t i = 0; r >= 0 && i < s->nsites; i++) {
		const struct pdi_site_row *x = &s->sites[i];

		q = (struct params){0};
		p_str(&q, id);
		p_int(&q, x->index);
		p_str(&q, x->fn);
		p_str(&q, x->name);
		p_str(&q, x->caller);
		p_str(&q, x->file);
		p_int(&q, x->line);
		p_int(&q, (int64_t)x->key);
		p_int(&q, clamp64(x->calls));
		p_int(&q, clamp64(x->bytes));
		p_int(&q, clamp64(x->time_ns));
		PQclear(checked(p, run(p, SITE_PUT, &q), PGRES_COMMAND_OK, &r, why, len));
	}
	for (size_t i = 0; r >= 0 && i < s->ntasks; i++) {
		const struct pdi_store_task *t = &s->tasks[i].t;

		q = (struct params){0};
		p_str(&q, id);
		p_int(&q, t->rank);
		p_int(&q, t->pid);
		p_str(&q, t->state);
		p_int(&q, clamp64(t->events_lost));
		p_str(&q, t->ended_in);
		if (t->model_len)
			p_bin(&q, t->model, t->model_len);
		else
			p_str(&q, NULL);
		PQclear(checked(p, run(p, TASK_PUT, &q), PGRES_COMMAND_OK, &r, why, len));
	}
	return r;
}

int pdi_site_pg_put_step(struct pdi_site_pg *p, const struct pdi_site_step *s, char *why, size_t len)
{
	char id[24];
	int r = pdi_site_pg_ready(p, why, len);

	if (r < 0)
		return r;
	if ((r = exec(p, "BEGIN", why, len)) < 0)
		return r;
	r = put_step_row(p, s, id, sizeof(id), why, len);
	if (r >= 0)
		r = put_children(p, s, id, why, len);
	if (r >= 0)
		r = exec(p, "COMMIT", why, len);
	if (r < 0)
		rollback(p);
	return r;
}

/* ---- trends ---- */

/* A Slurm step's parts on several nodes are one run; other names are unique per node only. */
#define RUNS_OF_PROGRAM                                                                                            \
	"WITH parts AS (SELECT id, CASE WHEN job_id <> 0 THEN name ELSE node || ':' || name END AS run,"       \
	" executable, build, verdict, ended, input_size, ntasks, total_tasks FROM " PDI_SITE_SCHEMA ".steps"        \
	" WHERE ended <> 0 AND ($1::boolean OR uid = $2::bigint) AND (CASE"                                           \
	"  WHEN left($3, 1) = '/' THEN executable = $3"                                                            \
	"  WHEN $3 LIKE 'build-id:%' OR $3 LIKE 'file:%' THEN build = $3"                                           \
	"  ELSE regexp_replace(executable, '^.*/', '') = $3 END))"

static const char *const RUNS_Q =
	RUNS_OF_PROGRAM " SELECT run, max(executable), max(build),"
			" CASE WHEN bool_and(verdict = 'completed') THEN 'completed' ELSE min(verdict) END,"
			" max(ended), max(input_size), sum(ntasks), max(total_tasks) FROM parts GROUP BY run ORDER BY run";
static const char *const SITES_Q =
	RUNS_OF_PROGRAM " SELECT parts.run, s.name, sum(s.calls)::bigint, sum(s.bytes)::bigint, sum(s.time_ns)::bigint"
			" FROM " PDI_SITE_SCHEMA ".sites s JOIN parts ON s.step = parts.id GROUP BY parts.run, s.name"
			" ORDER BY parts.run, s.name";

static uint64_t u64_at(const PGresult *res, int row, int col)
{
	long long v = strtoll(PQgetvalue(res, row, col), NULL, 10);

	return v > 0 ? (uint64_t)v : 0;
}

static int collect_runs(const PGresult *runs, const PGresult *sites, struct pdi_trend_runs *rs)
{
	int nsites = PQntuples(sites), k = 0, r = 0;
	struct pdi_trend_site_total *v = calloc((size_t)nsites + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (int i = 0; r >= 0 && i < PQntuples(runs); i++) {
		const char *run = PQgetvalue(runs, i, 0);
		uint64_t counted = u64_at(runs, i, 6), total = u64_at(runs, i, 7);
		struct pdi_trend_run x = {.step = run, .executable = PQgetvalue(runs, i, 1), .build = PQgetvalue(runs, i, 2),
					  .verdict = PQgetvalue(runs, i, 3), .ended = (int64_t)u64_at(runs, i, 4),
					  .input_size = u64_at(runs, i, 5), .counted = (uint32_t)counted,
					  .tasks = (uint32_t)(total > counted ? total : counted)};
		size_t n = 0;

		/* both ordered by run: the sites of this run follow */
		while (k < nsites && strcmp(PQgetvalue(sites, k, 0), run) < 0)
			k++;
		for (; k < nsites && !strcmp(PQgetvalue(sites, k, 0), run); k++)
			v[n++] = (struct pdi_trend_site_total){.name = PQgetvalue(sites, k, 1), .calls = u64_at(sites, k, 2),
							       .bytes = u64_at(sites, k, 3), .time_ns = u64_at(sites, k, 4)};
		x.sites = v;
		x.nsites = n;
		r = pdi_trend_runs_add(rs, &x);
	}
	free(v);
	return r;
}

int pdi_site_pg_trend_runs(struct pdi_site_pg *p, const char *program, uid_t uid, bool admin,
			   struct pdi_trend_runs *ret, char *why, size_t len)
{
	struct pdi_trend_runs rs = {0};
	PGresult *runs = NULL, *sites = NULL;
	struct params q = {0};
	int r = pdi_site_pg_ready(p, why, len);

	if (r < 0)
		return r;
	p_str(&q, admin ? "true" : "false");
	p_int(&q, uid);
	p_str(&q, program);
	/* one snapshot for both queries */
	if ((r = exec(p, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", why, len)) < 0)
		return r;
	runs = checked(p, run(p, RUNS_Q, &q), PGRES_TUPLES_OK, &r, why, len);
	if (runs)
		sites = checked(p, run(p, SITES_Q, &q), PGRES_TUPLES_OK, &r, why, len);
	if (runs && sites)
		r = collect_runs(runs, sites, &rs);
	PQclear(runs);
	PQclear(sites);
	if (r >= 0)
		r = exec(p, "COMMIT", why, len);
	if (r < 0) {
		rollback(p);
		pdi_trend_runs_done(&rs);
		if (r == -ENOMEM)
			pdi_errline(why, len, r, "out of memory");
		return r;
	}
	*ret = rs;
	return 0;
}

/* ---- sample runs ---- */

static const char *const SAMPLE_RUNS_Q =
	"SELECT p.id, p.node, p.name, p.job_id, p.step_id, p.uid, p.state, p.started, p.ended, p.executable,"
	" p.build, p.input_size, p.total_tasks, p.verdict, p.report FROM " PDI_SITE_SCHEMA ".steps p"
	" WHERE p.ended <> 0 AND p.executable = $1 AND p.name <> $2 AND p.verdict = 'completed'"
	" AND (CASE WHEN p.total_tasks > 0 THEN p.total_tasks ELSE p.ntasks END) = $3::integer"
	" AND (SELECT count(DISTINCT t.rank) FROM " PDI_SITE_SCHEMA ".tasks t"
	"      WHERE t.step = p.id AND t.rank = ANY($4::integer[]) AND t.state = 'ended') = $5::integer"
	" ORDER BY p.ended DESC, p.id DESC LIMIT $6::integer";
static const char *const SAMPLE_SITES_Q = "SELECT idx, fn, name, caller, file, line, site_key FROM " PDI_SITE_SCHEMA
					  ".sites WHERE step = $1 ORDER BY idx";
static const char *const SAMPLE_TASKS_Q =
	"SELECT rank, pid, state, events_lost, ended_in, model FROM " PDI_SITE_SCHEMA ".tasks"
	" WHERE step = $1 AND rank = ANY($2::integer[]) AND state = 'ended' ORDER BY rank, pid";

static void copy_field(char *dst, size_t size, const char *v)
{
	snprintf(dst, size, "%s", v);
}

static int sample_children(struct pdi_site_pg *p, const char *id, const char *ranks, struct pdi_site_step *s,
			   char *why, size_t len)
{
	struct params q = {0};
	PGresult *res;
	int r = 0;

	p_str(&q, id);
	if (!(res = checked(p, run(p, SAMPLE_SITES_Q, &q), PGRES_TUPLES_OK, &r, why, len)))
		return r;
	s->sites = calloc((size_t)PQntuples(res) + 1, sizeof(*s->sites));
	for (int i = 0; s->sites && i < PQntuples(res); i++) {
		struct pdi_site_row *x = &s->sites[s->nsites++];

		x->index = (uint32_t)strtoul(PQgetvalue(res, i, 0), NULL, 10);
		x->fn = strdup(PQgetvalue(res, i, 1));
		x->name = strdup(PQgetvalue(res, i, 2));
		x->caller = strdup(PQgetvalue(res, i, 3));
		x->file = strdup(PQgetvalue(res, i, 4));
		x->line = atoi(PQgetvalue(res, i, 5));
		x->key = (uint64_t)strtoll(PQgetvalue(res, i, 6), NULL, 10);
		if (!x->fn || !x->name || !x->caller || !x->file)
			r = -ENOMEM;
	}
	if (!s->sites)
		r = -ENOMEM;
	PQclear(res);
	if (r < 0)
		return pdi_errline(why, len, r, "out of memory");
	p_str(&q, ranks);
	if (!(res = checked(p, run(p, SAMPLE_TASKS_Q, &q), PGRES_TUPLES_OK, &r, why, len)))
		return r;
	s->tasks = calloc((size_t)PQntuples(res) + 1, sizeof(*s->tasks));
	for (int i = 0; s->tasks && r >= 0 && i < PQntuples(res); i++) {
		struct pdi_site_task *t = &s->tasks[s->ntasks++];
		size_t n = 0;

		t->t.rank = atoi(PQgetvalue(res, i, 0));
		t->t.pid = atoi(PQgetvalue(res, i, 1));
		copy_field(t->t.state, sizeof(t->t.state), PQgetvalue(res, i, 2));
		t->t.events_lost = (uint64_t)strtoll(PQgetvalue(res, i, 3), NULL, 10);
		copy_field(t->t.ended_in, sizeof(t->t.ended_in), PQgetvalue(res, i, 4));
		if (PQgetisnull(res, i, 5))
			continue;
		unsigned char *blob = PQunescapeBytea((const unsigned char *)PQgetvalue(res, i, 5), &n);

		if (!blob || !(t->model = malloc(n ? n : 1))) {
			PQfreemem(blob);
			r = -ENOMEM;
			break;
		}
		memcpy(t->model, blob, n);
		PQfreemem(blob);
		t->t.model = t->model;
		t->t.model_len = n;
	}
	if (!s->tasks)
		r = -ENOMEM;
	PQclear(res);
	return r < 0 ? pdi_errline(why, len, r, "out of memory") : 0;
}

/* "{4,5,6,7}": an integer[] parameter. */
static char *int_array(const int32_t *v, size_t n)
{
	char *s = malloc(n * 12 + 3), *e;

	if (!s)
		return NULL;
	e = s;
	*e++ = '{';
	for (size_t i = 0; i < n; i++)
		e += sprintf(e, "%s%d", i ? "," : "", v[i]);
	*e++ = '}';
	*e = '\0';
	return s;
}

static int sample_row(struct pdi_site_pg *p, const PGresult *res, int i, const char *ranks, size_t nranks,
		      struct pdi_site_step **ret, char *why, size_t len)
{
	struct pdi_site_step *s = calloc(1, sizeof(*s));
	struct pdi_store_step *st;
	int r;

	if (!s)
		return pdi_errline(why, len, -ENOMEM, "out of memory");
	st = &s->step;
	/* named by node too: the same step name has a part on every node */
	snprintf(st->name, sizeof(st->name), "%.60s:%.60s", PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
	st->job_id = (uint32_t)strtoul(PQgetvalue(res, i, 3), NULL, 10);
	st->step_id = (uint32_t)strtoul(PQgetvalue(res, i, 4), NULL, 10);
	st->uid = (uint32_t)strtoul(PQgetvalue(res, i, 5), NULL, 10);
	copy_field(st->state, sizeof(st->state), PQgetvalue(res, i, 6));
	st->started = strtoll(PQgetvalue(res, i, 7), NULL, 10);
	st->ended = strtoll(PQgetvalue(res, i, 8), NULL, 10);
	copy_field(st->executable, sizeof(st->executable), PQgetvalue(res, i, 9));
	copy_field(st->build, sizeof(st->build), PQgetvalue(res, i, 10));
	st->input_size = (uint64_t)strtoll(PQgetvalue(res, i, 11), NULL, 10);
	st->total_tasks = (uint32_t)strtoul(PQgetvalue(res, i, 12), NULL, 10);
	copy_field(st->verdict, sizeof(st->verdict), PQgetvalue(res, i, 13));
	st->ntasks = (uint32_t)nranks; /* the part of it that matters here */
	if (!PQgetisnull(res, i, 14) && !(s->report = strdup(PQgetvalue(res, i, 14)))) {
		pdi_site_step_free(s);
		return pdi_errline(why, len, -ENOMEM, "out of memory");
	}
	if ((r = sample_children(p, PQgetvalue(res, i, 0), ranks, s, why, len)) < 0) {
		pdi_site_step_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

int pdi_site_pg_sample_runs(struct pdi_site_pg *p, const char *executable, uint32_t total, const char *exclude,
			    const int32_t *ranks, size_t nranks, unsigned max, struct pdi_site_step ***ret,
			    size_t *ret_n, char *why, size_t len)
{
	struct pdi_site_step **v = NULL;
	char *array = int_array(ranks, nranks);
	struct params q = {0};
	PGresult *res = NULL;
	size_t n = 0;
	int r = array ? pdi_site_pg_ready(p, why, len) : pdi_errline(why, len, -ENOMEM, "out of memory");

	if (r >= 0)
		r = exec(p, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", why, len);
	if (r >= 0) {
		p_str(&q, executable);
		p_str(&q, exclude);
		p_int(&q, total);
		p_str(&q, array);
		p_int(&q, (int64_t)nranks);
		p_int(&q, max);
		res = checked(p, run(p, SAMPLE_RUNS_Q, &q), PGRES_TUPLES_OK, &r, why, len);
	}
	if (res && !(v = calloc((size_t)PQntuples(res) + 1, sizeof(*v))))
		r = pdi_errline(why, len, -ENOMEM, "out of memory");
	for (int i = 0; res && v && r >= 0 && i < PQntuples(res); i++)
		if ((r = sample_row(p, res, i, array, nranks, &v[n], why, len)) >= 0)
			n++;
	PQclear(res);
	if (r >= 0)
		r = exec(p, "COMMIT", why, len);
	free(array);
	if (r < 0) {
		rollback(p);
		for (size_t i = 0; i < n; i++)
			pdi_site_step_free(v[i]);
		free(v);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

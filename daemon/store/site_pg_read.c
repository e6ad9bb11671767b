/* SPDX-License-Identifier: GPL-2.0-only */
/* site_pg_read.c -- what the site store gives back: the runs trends fit (a Slurm step's parts on
 * its nodes summed), and AutomaDeD's sample runs for a step (from any node). On the lane only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errline.h"
#include "site_pg_sql.h"

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
	struct pdi_site_params q = {0};
	int r = pdi_site_pg_ready(p, why, len);

	if (r < 0)
		return r;
	pdi_site_param_str(&q, admin ? "true" : "false");
	pdi_site_param_int(&q, uid);
	pdi_site_param_str(&q, program);
	/* one snapshot for both queries */
	if ((r = pdi_site_pg_exec(p, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", why, len)) < 0)
		return r;
	runs = pdi_site_pg_checked(p, pdi_site_pg_run(p, RUNS_Q, &q), PGRES_TUPLES_OK, &r, why, len);
	if (runs)
		sites = pdi_site_pg_checked(p, pdi_site_pg_run(p, SITES_Q, &q), PGRES_TUPLES_OK, &r, why, len);
	if (runs && sites)
		r = collect_runs(runs, sites, &rs);
	PQclear(runs);
	PQclear(sites);
	if (r >= 0)
		r = pdi_site_pg_exec(p, "COMMIT", why, len);
	if (r < 0) {
		pdi_site_pg_rollback(p);
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
	struct pdi_site_params q = {0};
	PGresult *res;
	int r = 0;

	pdi_site_param_str(&q, id);
	if (!(res = pdi_site_pg_checked(p, pdi_site_pg_run(p, SAMPLE_SITES_Q, &q), PGRES_TUPLES_OK, &r, why, len)))
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
	pdi_site_param_str(&q, ranks);
	if (!(res = pdi_site_pg_checked(p, pdi_site_pg_run(p, SAMPLE_TASKS_Q, &q), PGRES_TUPLES_OK, &r, why, len)))
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
	struct pdi_site_params q = {0};
	PGresult *res = NULL;
	size_t n = 0;
	int r = array ? pdi_site_pg_ready(p, why, len) : pdi_errline(why, len, -ENOMEM, "out of memory");

	if (r >= 0)
		r = pdi_site_pg_exec(p, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", why, len);
	if (r >= 0) {
		pdi_site_param_str(&q, executable);
		pdi_site_param_str(&q, exclude);
		pdi_site_param_int(&q, total);
		pdi_site_param_str(&q, array);
		pdi_site_param_int(&q, (int64_t)nranks);
		pdi_site_param_int(&q, max);
		res = pdi_site_pg_checked(p, pdi_site_pg_run(p, SAMPLE_RUNS_Q, &q), PGRES_TUPLES_OK, &r, why, len);
	}
	if (res && !(v = calloc((size_t)PQntuples(res) + 1, sizeof(*v))))
		r = pdi_errline(why, len, -ENOMEM, "out of memory");
	for (int i = 0; res && v && r >= 0 && i < PQntuples(res); i++)
		if ((r = sample_row(p, res, i, array, nranks, &v[n], why, len)) >= 0)
			n++;
	PQclear(res);
	if (r >= 0)
		r = pdi_site_pg_exec(p, "COMMIT", why, len);
	free(array);
	if (r < 0) {
		pdi_site_pg_rollback(p);
		for (size_t i = 0; i < n; i++)
			pdi_site_step_free(v[i]);
		free(v);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

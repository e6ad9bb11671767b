/* SPDX-License-Identifier: GPL-2.0-only */
/* test-store.c -- the SQLite store: round trips, upserts, retention, refusals, full disks,
 * hostile strings. Each test works in a directory of its own under /tmp. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model.h"
#include "model_io.h"
#include "mpi_funcs.h"
#include "store.h"

static char dir[64], path[128];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/pdimon-store-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	chmod(dir, 0755); /* for the tests that drop privileges */
	snprintf(path, sizeof(path), "%s/state/pdimon.db", dir);
}

static int remove_one(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

static void remove_dir(void)
{
	cr_assert_eq(nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS), 0, "removing %s", dir);
}

TestSuite(store, .init = make_dir, .fini = remove_dir);

static struct pdi_store *open_ok(void)
{
	struct pdi_store *s = NULL;
	char err[256];
	int r = pdi_store_open(path, &s, err, sizeof(err));

	cr_assert_eq(r, 0, "open %s: %d %s", path, r, err);
	cr_assert_not_null(s);
	return s;
}

static int open_err(char *err)
{
	struct pdi_store *s = (struct pdi_store *)0x1;
	int r = pdi_store_open(path, &s, err, 256);

	cr_assert_lt(r, 0, "open %s succeeded", path);
	cr_assert_eq(s, (struct pdi_store *)0x1, "nothing returned on failure");
	cr_assert_neq(err[0], 0, "a reason is given");
	cr_assert_null(strchr(err, '\n'), "one line: %s", err);
	cr_log_info("refused (%d): %s", r, err);
	return r;
}

/* Run SQL on the database behind the store's back; the first column of its last row. */
static long long sql(const char *q)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = 0;
	int rc;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 2000);
	cr_assert_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK, "%s: %s", q, sqlite3_errmsg(db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	cr_assert_eq(rc, SQLITE_DONE, "%s: %s", q, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static struct pdi_store_step step(const char *name, int64_t started, int64_t ended)
{
	struct pdi_store_step st = {.job_id = 4242, .step_id = 3, .uid = 1000, .started = started, .ended = ended,
				    .ntasks = 2};

	snprintf(st.name, sizeof(st.name), "%s", name);
	snprintf(st.state, sizeof(st.state), "%s", ended ? "ended" : "running");
	snprintf(st.executable, sizeof(st.executable), "/home/u/bin/%s", name);
	return st;
}

static void assert_same_step(const struct pdi_store_step *a, const struct pdi_store_step *b)
{
	cr_assert_str_eq(a->name, b->name);
	cr_assert_eq(a->job_id, b->job_id);
	cr_assert_eq(a->step_id, b->step_id);
	cr_assert_eq(a->uid, b->uid);
	cr_assert_str_eq(a->state, b->state);
	cr_assert_eq(a->started, b->started);
	cr_assert_eq(a->ended, b->ended);
	cr_assert_str_eq(a->executable, b->executable);
	cr_assert_eq(a->ntasks, b->ntasks);
	cr_assert_str_eq(a->build, b->build);
	cr_assert_eq(a->input_size, b->input_size);
	cr_assert_eq(a->total_tasks, b->total_tasks);
	cr_assert_str_eq(a->verdict, b->verdict);
}

static uint16_t fn_id(const char *name)
{
	int i = pdi_mpi_func_find(name);

	cr_assert_geq(i, 0);
	return (uint16_t)i;
}

/* ---- collecting listings ---- */

struct steps {
	struct pdi_store_step v[64];
	unsigned n;
};

static int collect_step(void *ctx, const struct pdi_store_step *st)
{
	struct steps *l = ctx;

	cr_assert_lt(l->n, 64);
	l->v[l->n++] = *st;
	return 0;
}

static struct steps list_steps(struct pdi_store *s, bool running)
{
	struct steps l = {.n = 0};

	cr_assert_eq(pdi_store_list_steps(s, running, collect_step, &l), 0);
	return l;
}

struct sites {
	uint32_t index[16];
	uint16_t fn[16];
	char name[16][256], caller[16][256], file[16][256];
	int line[16];
	uint64_t key[16];
	unsigned n;
};

static int collect_site(void *ctx, const struct pdi_store_site *v)
{
	struct sites *l = ctx;

	cr_assert_lt(l->n, 16);
	l->index[l->n] = v->index;
	l->fn[l->n] = v->fn;
	snprintf(l->name[l->n], 256, "%s", v->name);
	snprintf(l->caller[l->n], 256, "%s", v->caller);
	snprintf(l->file[l->n], 256, "%s", v->file);
	l->line[l->n] = v->line;
	l->key[l->n] = v->key;
	l->n++;
	return 0;
}

struct tasks {
	struct pdi_store_task v[16];
	void *model[16];
	unsigned n;
};

static int collect_task(void *ctx, const struct pdi_store_task *t)
{
	struct tasks *l = ctx;

	cr_assert_lt(l->n, 16);
	l->v[l->n] = *t;
	l->model[l->n] = NULL;
	if (t->model_len) {
		l->model[l->n] = malloc(t->model_len);
		memcpy(l->model[l->n], t->model, t->model_len);
	}
	l->v[l->n].model = l->model[l->n];
	l->n++;
	return 0;
}

static void tasks_free(struct tasks *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->model[i]);
}

static struct tasks list_tasks(struct pdi_store *s, const char *stepname)
{
	struct tasks l = {.n = 0};

	cr_assert_eq(pdi_store_list_tasks(s, stepname, collect_task, &l), 0);
	return l;
}

static void assert_report(struct pdi_store *s, const char *stepname, const char *want)
{
	char *json = NULL;

	cr_assert_eq(pdi_store_get_report(s, stepname, &json), 0);
	cr_assert_str_eq(json, want);
	free(json);
}

/* ---- round trips ---- */

static void put_everything(struct pdi_store *s, const void *model, size_t model_len)
{
	struct pdi_store_step st = step("4242.3", 1700000000, 0);
	struct pdi_store_site sites[] = {
		{0, fn_id("MPI_Init"), "MPI_Init@ring.c:10", "main", "ring.c", 10, 0x1111},
		{1, fn_id("MPI_Allreduce"), "MPI_Allreduce@ring.c:20", "step", "/src/ring.c", 20, 0xfedcba9876543210},
		{2, fn_id("MPI_Send"), "MPI_Send@libfoo.so+0x1234", NULL, NULL, 0, 0},
	};
	struct pdi_store_task t0 = {.rank = 0, .pid = 1234, .state = "running", .events_lost = 7,
				    .model = model, .model_len = model_len};
	struct pdi_store_task t1 = {.rank = 1, .pid = 1235, .state = "ended", .events_lost = UINT64_MAX,
				    .ended_in = "MPI_Allreduce", .start_ticks = 123456789,
				    .boot_id = "0b2a4c1e-9f3d-4e6a-8b7c-1d2e3f405162"};

	cr_assert_eq(pdi_store_put_step(s, &st), 0);
	cr_assert_eq(pdi_store_put_sites(s, "4242.3", sites, 3), 0);
	cr_assert_eq(pdi_store_put_task(s, "4242.3", &t1), 0);
	cr_assert_eq(pdi_store_put_task(s, "4242.3", &t0), 0);
	cr_assert_eq(pdi_store_put_report(s, "4242.3", "{\"verdict\":\"ok\"}"), 0);
}

static void check_everything(struct pdi_store *s, const void *model, size_t model_len)
{
	struct pdi_store_step st, want = step("4242.3", 1700000000, 0);
	struct sites sl = {.n = 0};
	struct tasks tl;

	cr_assert_eq(pdi_store_get_step(s, "4242.3", &st), 0);
	assert_same_step(&st, &want);
	cr_assert_eq(pdi_store_list_sites(s, "4242.3", collect_site, &sl), 0);
	cr_assert_eq(sl.n, 3);
	cr_assert_eq(sl.index[1], 1);
	cr_assert_eq(sl.fn[1], fn_id("MPI_Allreduce"));
	cr_assert_str_eq(sl.name[1], "MPI_Allreduce@ring.c:20");
	cr_assert_str_eq(sl.caller[1], "step");
	cr_assert_str_eq(sl.file[1], "/src/ring.c");
	cr_assert_eq(sl.line[1], 20);
	cr_assert_eq(sl.key[1], 0xfedcba9876543210, "u64 keys keep their top bit");
	cr_assert_str_eq(sl.caller[2], "", "NULL is stored as an empty string");
	cr_assert_eq(sl.fn[0], fn_id("MPI_Init"));

	tl = list_tasks(s, "4242.3");
	cr_assert_eq(tl.n, 2);
	cr_assert_eq(tl.v[0].rank, 0, "in rank order");
	cr_assert_eq(tl.v[0].pid, 1234);
	cr_assert_str_eq(tl.v[0].state, "running");
	cr_assert_eq(tl.v[0].events_lost, 7);
	cr_assert_eq(tl.v[0].model_len, model_len);
	cr_assert(memcmp(tl.v[0].model, model, model_len) == 0);
	cr_assert_str_eq(tl.v[0].ended_in, "");
	cr_assert_eq(tl.v[1].events_lost, UINT64_MAX);
	cr_assert_str_eq(tl.v[1].ended_in, "MPI_Allreduce");
	/* who the process was: a restart revives it only if the same one still runs */
	cr_assert_eq(tl.v[1].start_ticks, 123456789);
	cr_assert_str_eq(tl.v[1].boot_id, "0b2a4c1e-9f3d-4e6a-8b7c-1d2e3f405162");
	cr_assert_eq(tl.v[0].start_ticks, 0);
	cr_assert_null(tl.v[1].model, "no model");
	cr_assert_eq(tl.v[1].model_len, 0);
	tasks_free(&tl);
	assert_report(s, "4242.3", "{\"verdict\":\"ok\"}");
}

/* A real model blob, as pdimond will store them. */
static void model_blob(void **p, size_t *len)
{
	struct pdi_model m;

	pdi_model_init(&m, NULL);
	for (uint32_t i = 0; i < 500; i++) {
		struct pdi_call c = {.site = i % 7, .fn = fn_id(i % 7 ? "MPI_Send" : "MPI_Barrier"),
				     .t_enter = 1000 + 100 * i, .t_exit = 1050 + 100 * i, .peer = 1};

		cr_assert_eq(pdi_model_add_call(&m, &c), 0);
	}
	cr_assert_eq(pdi_model_encode(&m, p, len), 0);
	pdi_model_done(&m);
}

Test(store, create_put_get_list_reopen)
{
	struct pdi_store *s;
	struct pdi_model m;
	struct tasks tl;
	struct stat sb;
	void *blob;
	size_t len;

	model_blob(&blob, &len);
	s = open_ok();
	put_everything(s, blob, len);
	check_everything(s, blob, len);
	pdi_store_close(s);

	s = open_ok();
	check_everything(s, blob, len);
	tl = list_tasks(s, "4242.3");
	cr_assert_eq(pdi_model_decode(tl.v[0].model, tl.v[0].model_len, NULL, &m), 0, "the model comes back whole");
	cr_assert_eq(m.calls, 500);
	pdi_model_done(&m);
	tasks_free(&tl);
	pdi_store_close(s);
	free(blob);

	/* what open made */
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0600, "mode %o", sb.st_mode & 0777);
	cr_assert_eq(sql("PRAGMA user_version"), 4);
	cr_assert_eq(sql("PRAGMA application_id"), 0x5044494d);
	cr_assert_eq(sql("PRAGMA auto_vacuum"), 2, "incremental");
	cr_assert_eq(sql("SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'"), 1);
}

Test(store, open_adopts_an_empty_file_and_closes_null)
{
	int fd;

	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/empty.db", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	pdi_store_close(open_ok());
	cr_assert_eq(sql("PRAGMA user_version"), 4);
	pdi_store_close(NULL);
}

Test(store, upserts)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step st = step("a", 100, 0), got;
	struct pdi_store_site v = {5, fn_id("MPI_Send"), "MPI_Send@x.c:1", "f", "x.c", 1, 1};
	struct pdi_store_task t = {.rank = 3, .pid = 99, .state = "running", .model = "m1", .model_len = 2};
	struct sites sl = {.n = 0};
	struct tasks tl;

	cr_assert_eq(pdi_store_put_step(s, &st), 0);
	cr_assert_eq(pdi_store_put_sites(s, "a", &v, 1), 0);
	cr_assert_eq(pdi_store_put_task(s, "a", &t), 0);
	cr_assert_eq(pdi_store_put_report(s, "a", "first"), 0);

	/* the step ends: same row, its children stay */
	st.ended = 200;
	snprintf(st.state, sizeof(st.state), "hung");
	st.ntasks = 9;
	cr_assert_eq(pdi_store_put_step(s, &st), 0);
	cr_assert_eq(pdi_store_get_step(s, "a", &got), 0);
	assert_same_step(&got, &st);
	cr_assert_eq(list_steps(s, false).n, 1);

	v.line = 2;
	v.name = "MPI_Send@x.c:2";
	cr_assert_eq(pdi_store_put_sites(s, "a", &v, 1), 0);
	cr_assert_eq(pdi_store_list_sites(s, "a", collect_site, &sl), 0);
	cr_assert_eq(sl.n, 1);
	cr_assert_eq(sl.line[0], 2);
	cr_assert_str_eq(sl.name[0], "MPI_Send@x.c:2");

	t.model = "model two";
	t.model_len = 9;
	snprintf(t.state, sizeof(t.state), "ended");
	cr_assert_eq(pdi_store_put_task(s, "a", &t), 0);
	t.pid = 100; /* same rank, another process: another task */
	cr_assert_eq(pdi_store_put_task(s, "a", &t), 0);
	tl = list_tasks(s, "a");
	cr_assert_eq(tl.n, 2);
	cr_assert_str_eq(tl.v[0].state, "ended");
	cr_assert_eq(tl.v[0].model_len, 9);
	cr_assert(memcmp(tl.v[0].model, "model two", 9) == 0);
	tasks_free(&tl);

	cr_assert_eq(pdi_store_put_report(s, "a", "second"), 0);
	assert_report(s, "a", "second");
	cr_assert_eq(sql("SELECT count(*) FROM reports"), 1);
	pdi_store_close(s);
}

static int stop_at_second(void *ctx, const struct pdi_store_step *st)
{
	unsigned *n = ctx;

	(void)st;
	return ++*n == 2 ? -ECANCELED : 0;
}

Test(store, listings_and_missing_steps)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step a = step("a", 300, 0), b = step("b", 100, 150), c = step("c", 200, 0), got;
	struct pdi_store_site v = {0, fn_id("MPI_Send"), "n", "c", "f", 1, 1};
	struct pdi_store_task t = {.rank = 0, .pid = 1};
	struct steps l;
	unsigned n = 0;
	char *json = (char *)0x1;

	cr_assert_eq(pdi_store_put_step(s, &a), 0);
	cr_assert_eq(pdi_store_put_step(s, &b), 0);
	cr_assert_eq(pdi_store_put_step(s, &c), 0);
	l = list_steps(s, false);
	cr_assert_eq(l.n, 3);
	cr_assert_str_eq(l.v[0].name, "b", "in order of start");
	cr_assert_str_eq(l.v[1].name, "c");
	cr_assert_str_eq(l.v[2].name, "a");
	l = list_steps(s, true);
	cr_assert_eq(l.n, 2);
	cr_assert_str_eq(l.v[0].name, "c");
	cr_assert_str_eq(l.v[1].name, "a");
	cr_assert_eq(pdi_store_list_steps(s, false, stop_at_second, &n), -ECANCELED);
	cr_assert_eq(n, 2);

	cr_assert_eq(pdi_store_get_step(s, "nope", &got), -ENOENT);
	cr_assert_eq(pdi_store_get_report(s, "nope", &json), -ENOENT);
	cr_assert_eq(pdi_store_get_report(s, "a", &json), -ENOENT, "no report yet");
	cr_assert_eq(json, (char *)0x1);
	cr_assert_eq(pdi_store_put_sites(s, "nope", &v, 1), -ENOENT);
	cr_assert_eq(pdi_store_put_task(s, "nope", &t), -ENOENT);
	cr_assert_eq(pdi_store_put_report(s, "nope", "{}"), -ENOENT);
	cr_assert_eq(pdi_store_list_sites(s, "nope", collect_site, &n), -ENOENT);
	cr_assert_eq(pdi_store_list_tasks(s, "nope", collect_task, &n), -ENOENT);
	cr_assert_eq(pdi_store_put_sites(s, "a", NULL, 0), 0, "no sites is fine");
	pdi_store_close(s);
}

Test(store, bad_arguments)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step st = step("a", 1, 0);
	struct pdi_store_site v[2] = {{0, fn_id("MPI_Send"), "ok", "", "", 0, 0},
				      {1, (uint16_t)pdi_mpi_nfuncs, "bad fn", "", "", 0, 0}};
	struct pdi_store_task t = {.rank = 0, .pid = 1, .model_len = 5};
	struct sites sl = {.n = 0};

	cr_assert_eq(pdi_store_put_step(s, &st), 0);
	memset(st.name, 'x', sizeof(st.name)); /* unterminated */
	cr_assert_eq(pdi_store_put_step(s, &st), -EINVAL);
	st.name[0] = 0;
	cr_assert_eq(pdi_store_put_step(s, &st), -EINVAL, "a step needs a name");
	cr_assert_eq(pdi_store_put_sites(s, "a", v, 2), -EINVAL);
	cr_assert_eq(pdi_store_list_sites(s, "a", collect_site, &sl), 0);
	cr_assert_eq(sl.n, 0, "sites go in all or none");
	cr_assert_eq(pdi_store_put_task(s, "a", &t), -EINVAL, "a model length without a model");
	cr_assert_eq(pdi_store_put_report(s, "a", NULL), -EINVAL);
	cr_assert_eq(pdi_store_expire(s, 1000, -1, 0), -EINVAL);
	cr_assert_eq(pdi_store_commit(s), -EINVAL, "no group to commit");
	cr_assert_eq(pdi_store_begin(s), 0);
	cr_assert_eq(pdi_store_begin(s), -EINVAL, "groups do not nest");
	pdi_store_rollback(s);
	pdi_store_close(s);
}

/* ---- groups ---- */

Test(store, groups_are_all_or_nothing)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step a = step("a", 1, 0), b = step("b", 2, 0), got;
	struct pdi_store_task t = {.rank = 0, .pid = 1, .state = "ended"};
	struct tasks tl;

	cr_assert_eq(pdi_store_begin(s), 0);
	cr_assert_eq(pdi_store_put_step(s, &a), 0);
	cr_assert_eq(pdi_store_put_task(s, "a", &t), 0);
	cr_assert_eq(pdi_store_put_report(s, "a", "{}"), 0);
	cr_assert_eq(sql("SELECT count(*) FROM steps"), 0, "invisible to others before the commit");
	cr_assert_eq(pdi_store_commit(s), 0);
	cr_assert_eq(sql("SELECT count(*) FROM steps"), 1);

	cr_assert_eq(pdi_store_begin(s), 0);
	cr_assert_eq(pdi_store_put_step(s, &b), 0);
	cr_assert_eq(pdi_store_put_task(s, "b", &t), 0);
	pdi_store_rollback(s);
	cr_assert_eq(pdi_store_get_step(s, "b", &got), -ENOENT);

	/* a failed put loses the group: what came before it in the group is not committed */
	cr_assert_eq(pdi_store_begin(s), 0);
	cr_assert_eq(pdi_store_put_step(s, &b), 0);
	cr_assert_eq(pdi_store_put_task(s, "nope", &t), -ENOENT);
	cr_assert_eq(pdi_store_put_report(s, "b", "{}"), -ENOENT, "the group is lost");
	cr_assert_eq(pdi_store_commit(s), -ENOENT);
	cr_assert_eq(pdi_store_get_step(s, "b", &got), -ENOENT);
	/* and the store goes on */
	cr_assert_eq(pdi_store_put_step(s, &b), 0);
	cr_assert_eq(pdi_store_get_step(s, "b", &got), 0);
	tl = list_tasks(s, "a");
	cr_assert_eq(tl.n, 1);
	tasks_free(&tl);
	pdi_store_close(s);
}

/* Listing callbacks that use the store: nested listings, reads and writes. */
struct nest {
	struct pdi_store *s;
	unsigned inner, tasks;
};

static int count_task(void *ctx, const struct pdi_store_task *t)
{
	struct nest *n = ctx;

	(void)t;
	n->tasks++;
	return 0;
}

static int count_step(void *ctx, const struct pdi_store_step *st)
{
	struct nest *n = ctx;

	(void)st;
	n->inner++;
	return 0;
}

static int nested(void *ctx, const struct pdi_store_step *st)
{
	struct nest *n = ctx;
	struct pdi_store_step copy = *st;
	char *json;

	cr_assert_eq(pdi_store_list_steps(n->s, false, count_step, n), 0);
	cr_assert_eq(pdi_store_list_tasks(n->s, st->name, count_task, n), 0);
	cr_assert_eq(pdi_store_put_report(n->s, st->name, st->name), 0);
	cr_assert_eq(pdi_store_get_report(n->s, st->name, &json), 0);
	free(json);
	copy.ntasks = 77;
	cr_assert_eq(pdi_store_put_step(n->s, &copy), 0);
	return 0;
}

Test(store, callbacks_may_use_the_store)
{
	struct pdi_store *s = open_ok();
	struct nest n = {.s = s};
	struct pdi_store_task t = {.rank = 0, .pid = 1};
	char name[8];

	for (int i = 0; i < 3; i++) {
		struct pdi_store_step st = step("", i, 0);

		snprintf(name, sizeof(name), "s%d", i);
		snprintf(st.name, sizeof(st.name), "%s", name);
		cr_assert_eq(pdi_store_put_step(s, &st), 0);
		cr_assert_eq(pdi_store_put_task(s, name, &t), 0);
	}
	cr_assert_eq(pdi_store_list_steps(s, false, nested, &n), 0);
	cr_assert_eq(n.inner, 9);
	cr_assert_eq(n.tasks, 3);
	cr_assert_eq(sql("SELECT count(*) FROM steps WHERE ntasks = 77"), 3);
	assert_report(s, "s2", "s2");
	pdi_store_close(s);
}

/* ---- retention ---- */

static void put_step_with_model(struct pdi_store *s, const char *name, int64_t started, int64_t ended, size_t model_len)
{
	struct pdi_store_step st = step(name, started, ended);
	struct pdi_store_task t = {.rank = 0, .pid = 1, .state = "x", .model_len = model_len};
	char *model = malloc(model_len);

	for (size_t i = 0; i < model_len; i++)
		model[i] = (char)(i * 7 + started);
	t.model = model;
	cr_assert_eq(pdi_store_put_step(s, &st), 0);
	cr_assert_eq(pdi_store_put_task(s, name, &t), 0);
	cr_assert_eq(pdi_store_put_report(s, name, "{}"), 0);
	free(model);
}

Test(store, expire_by_age_keeps_running_steps)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step got;
	struct steps l;

	put_step_with_model(s, "old", 100, 200, 100);
	put_step_with_model(s, "recent", 100, 900, 100);
	put_step_with_model(s, "ancient-but-running", 1, 0, 100);
	cr_assert_eq(pdi_store_expire(s, 1000, 0, 0), 0, "nothing to do");
	cr_assert_eq(pdi_store_expire(s, 1000, 500, 0), 1);
	cr_assert_eq(pdi_store_get_step(s, "old", &got), -ENOENT);
	l = list_steps(s, false);
	cr_assert_eq(l.n, 2);
	cr_assert_eq(sql("SELECT count(*) FROM tasks"), 2, "tasks went with their step");
	cr_assert_eq(sql("SELECT count(*) FROM reports"), 2);
	cr_assert_eq(pdi_store_expire(s, 1000, 500, 0), 0);
	cr_assert_eq(pdi_store_expire(s, INT64_MAX, 1, 0), 1);
	cr_assert_eq(pdi_store_expire(s, INT64_MIN, INT64_MAX, 0), 0, "no overflow");
	l = list_steps(s, false);
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.v[0].name, "ancient-but-running");
	pdi_store_close(s);
}

static long long db_bytes(void)
{
	return sql("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size");
}

Test(store, expire_by_size_oldest_first_keeps_running_steps)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step got;
	char name[16];
	long long full, after;
	struct steps l;
	int r;

	put_step_with_model(s, "running", 1, 0, 64 << 10);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "ended-%02d", i);
		/* end order differs from start order: expiry follows the ends */
		put_step_with_model(s, name, 1000 + i, 5000 - 100 * i, 64 << 10);
	}
	full = db_bytes();
	cr_assert_gt(full, 21 * (64 << 10));
	cr_assert_eq(pdi_store_expire(s, 0, 0, (uint64_t)full + 1), 0, "under the limit already");

	r = pdi_store_expire(s, 0, 0, 600 << 10);
	after = db_bytes();
	cr_log_info("%lld bytes, %d steps deleted for 600 KiB, %lld bytes left", full, r, after);
	cr_assert_lt(after, 600 << 10);
	cr_assert_gt(r, 10);
	cr_assert_lt(r, 20);
	l = list_steps(s, false);
	cr_assert_eq(l.n, 21 - (unsigned)r);
	cr_assert_eq(pdi_store_get_step(s, "running", &got), 0);
	/* the ones that ended first (the highest numbers) went first */
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "ended-%02d", i);
		cr_assert_eq(pdi_store_get_step(s, name, &got), i < 20 - r ? 0 : -ENOENT, "%s", name);
	}

	/* a limit below the running steps: every ended step goes, the running one stays */
	cr_assert_eq(pdi_store_expire(s, 0, 0, 1), (int)l.n - 1);
	l = list_steps(s, false);
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.v[0].name, "running");
	cr_assert_lt(db_bytes(), 200 << 10, "the pages were given back");
	pdi_store_close(s);
}

/* ---- refusals ---- */

static void write_file(const void *data, size_t len)
{
	char d[128];
	FILE *f;

	snprintf(d, sizeof(d), "%s/state", dir);
	mkdir(d, 0700);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

Test(store, garbage_file_is_corrupt)
{
	char junk[8192], err[256];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 31 + 7);
	write_file(junk, sizeof(junk));
	cr_assert_eq(open_err(err), -EBADMSG);
	cr_assert_not_null(strstr(err, "is corrupt"), "%s", err);
	cr_assert_not_null(strstr(err, path), "names the file: %s", err);
}

Test(store, damaged_pages_fail_quick_check)
{
	struct pdi_store *s = open_ok();
	char err[256];
	FILE *f;
	long long page, root;

	for (int i = 0; i < 30; i++) {
		char name[16];

		snprintf(name, sizeof(name), "step-%d", i);
		put_step_with_model(s, name, i, i + 1, 3000);
	}
	pdi_store_close(s); /* checkpoints the WAL into the file */
	page = sql("PRAGMA page_size");
	root = sql("SELECT rootpage FROM sqlite_master WHERE name = 'tasks'");
	/* scribble over the tasks table's root page, leaving the header and the schema alone */
	f = fopen(path, "r+");
	cr_assert_not_null(f);
	fseek(f, (root - 1) * page + 8, SEEK_SET);
	for (int i = 0; i < 2000; i++)
		fputc(i * 13, f);
	fclose(f);
	cr_assert_eq(open_err(err), -EBADMSG);
	cr_assert_not_null(strstr(err, "is corrupt"), "%s", err);
}

Test(store, another_programs_database)
{
	char err[256];

	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/other.db", dir);
	sql("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER)");
	cr_assert_eq(open_err(err), -EBADMSG);
	cr_assert_not_null(strstr(err, "not a pdimon database"), "%s", err);
	cr_assert_eq(sql("SELECT count(*) FROM sqlite_master WHERE name = 'steps'"), 0, "left alone");
}

Test(store, newer_schema_is_refused)
{
	char err[256];

	pdi_store_close(open_ok());
	sql("PRAGMA user_version = 5");
	cr_assert_eq(open_err(err), -EPROTONOSUPPORT);
	cr_assert_not_null(strstr(err, "newer pdimon"), "%s", err);
	cr_assert_eq(sql("PRAGMA user_version"), 5, "left alone");
}

/* Open as an unprivileged user in a child: root writes anything, whatever the modes say. */
static int open_as_nobody(const char *p, char *err)
{
	int fds[2], status;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct pdi_store *s;
		char e[256] = "";
		int r;

		close(fds[0]);
		if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
				       setresuid(65534, 65534, 65534) < 0))
			_exit(255);
		r = pdi_store_open(p, &s, e, sizeof(e));
		if (r == 0)
			pdi_store_close(s);
		if (write(fds[1], e, sizeof(e)) != sizeof(e))
			_exit(254);
		_exit(-r);
	}
	close(fds[1]);
	cr_assert_eq(read(fds[0], err, 256), 256);
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	if (WEXITSTATUS(status) >= 254)
		cr_skip_test("cannot drop privileges here");
	return -WEXITSTATUS(status);
}

Test(store, unwritable_file_or_directory)
{
	char err[256], p[160];
	struct stat sb;

	pdi_store_close(open_ok());
	snprintf(p, sizeof(p), "%s/state", dir);
	chmod(p, 0755);
	chmod(path, 0644); /* readable, not writable, by others */
	cr_assert_eq(open_as_nobody(path, err), -EACCES);
	cr_log_info("read-only file: %s", err);
	cr_assert_not_null(strstr(err, "cannot open"), "%s", err);
	cr_assert_not_null(strstr(err, "Permission denied"), "%s", err);

	/* a new database in a directory we cannot write */
	snprintf(p, sizeof(p), "%s/state/other.db", dir);
	cr_assert_eq(open_as_nobody(p, err), -EACCES);
	cr_log_info("read-only directory: %s", err);
	cr_assert_neq(stat(p, &sb), 0, "nothing created");
}

/* ---- full disks ---- */

Test(store, disk_full_keeps_earlier_data)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_task big = {.rank = 1, .pid = 2, .state = "ended", .model_len = 4 << 20};
	struct pdi_store_step b = step("b", 5, 6), got;
	void *blob, *junk = calloc(1, big.model_len);
	size_t len;
	char *json;
	struct tasks tl;

	model_blob(&blob, &len);
	put_everything(s, blob, len);
	big.model = junk;
	cr_assert_eq(pdi_store_limit(s, (uint64_t)db_bytes() + (64 << 10)), 0);

	cr_assert_eq(pdi_store_put_task(s, "4242.3", &big), -ENOSPC);
	check_everything(s, blob, len);
	cr_assert_eq(pdi_store_put_report(s, "4242.3", "{\"after\":\"full\"}"), 0, "small writes still fit");
	assert_report(s, "4242.3", "{\"after\":\"full\"}");
	cr_assert_eq(pdi_store_put_report(s, "4242.3", "{\"verdict\":\"ok\"}"), 0);

	/* in a group: nothing of it lands */
	cr_assert_eq(pdi_store_begin(s), 0);
	cr_assert_eq(pdi_store_put_step(s, &b), 0);
	cr_assert_eq(pdi_store_put_task(s, "b", &big), -ENOSPC);
	cr_assert_eq(pdi_store_put_report(s, "b", "{}"), -ENOSPC, "the group is lost");
	cr_assert_eq(pdi_store_commit(s), -ENOSPC);
	cr_assert_eq(pdi_store_get_step(s, "b", &got), -ENOENT);
	cr_assert_eq(pdi_store_get_report(s, "b", &json), -ENOENT);

	/* expiry frees room */
	cr_assert_eq(pdi_store_limit(s, 0), 0);
	cr_assert_eq(pdi_store_put_step(s, &b), 0);
	cr_assert_eq(pdi_store_put_task(s, "b", &big), 0);
	cr_assert_eq(pdi_store_limit(s, (uint64_t)db_bytes()), 0);
	cr_assert_eq(pdi_store_put_task(s, "4242.3", &big), -ENOSPC);
	cr_assert_eq(pdi_store_expire(s, 100, 1, 0), 1);
	cr_assert_eq(pdi_store_put_task(s, "4242.3", &big), 0, "b's pages were reused");
	pdi_store_close(s);

	s = open_ok();
	tl = list_tasks(s, "4242.3");
	cr_assert_eq(tl.n, 3);
	cr_assert_eq(tl.v[0].model_len, len, "the earlier model survived everything");
	cr_assert(memcmp(tl.v[0].model, blob, len) == 0);
	tasks_free(&tl);
	pdi_store_close(s);
	free(junk);
	free(blob);
}

/* ---- hostile strings ---- */

Test(store, hostile_strings_are_data)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step st = {.uid = 0, .started = 1}, got;
	struct pdi_store_site v = {0, 0, NULL, NULL, NULL, -1, UINT64_MAX};
	struct pdi_store_task t = {.rank = -1, .pid = INT32_MIN}, tg;
	struct sites sl = {.n = 0};
	struct tasks tl;
	char junk[256], json[1024];
	const char *evil = "x'); DROP TABLE steps; --\"%s%n\\";

	for (int i = 0; i < 255; i++)
		junk[i] = (char)(i + 1); /* every byte but NUL, invalid UTF-8 included */
	junk[255] = 0;
	snprintf(st.name, sizeof(st.name), "%s", evil);
	memcpy(st.state, "'\"\xff\xfe;--%n\x01", 11);
	memcpy(st.executable, junk, 255);
	snprintf(json, sizeof(json), "{\"a\":\"%s\",\"b\":\"%.200s\"}", evil, junk);
	v.fn = fn_id("MPI_Recv");
	v.name = junk;
	v.caller = evil;
	v.file = "\xc3\x28 bad utf-8 \xe2\x82";
	memcpy(t.state, junk + 200, 15);
	memcpy(t.ended_in, junk + 100, 63);

	cr_assert_eq(pdi_store_put_step(s, &st), 0);
	cr_assert_eq(pdi_store_put_sites(s, evil, &v, 1), 0);
	cr_assert_eq(pdi_store_put_task(s, evil, &t), 0);
	cr_assert_eq(pdi_store_put_report(s, evil, json), 0);
	pdi_store_close(s);

	s = open_ok();
	cr_assert_eq(pdi_store_get_step(s, evil, &got), 0);
	cr_assert(memcmp(&got.name, &st.name, sizeof(st.name)) == 0);
	cr_assert(memcmp(&got.state, &st.state, sizeof(st.state)) == 0);
	cr_assert(memcmp(&got.executable, &st.executable, sizeof(st.executable)) == 0);
	cr_assert_eq(pdi_store_list_sites(s, evil, collect_site, &sl), 0);
	cr_assert_eq(sl.n, 1);
	cr_assert_eq(memcmp(sl.name[0], junk, 255), 0);
	cr_assert_eq(sl.name[0][255], 0);
	cr_assert_str_eq(sl.caller[0], evil);
	cr_assert_str_eq(sl.file[0], v.file);
	cr_assert_eq(sl.key[0], UINT64_MAX);
	cr_assert_eq(sl.line[0], -1);
	tl = list_tasks(s, evil);
	cr_assert_eq(tl.n, 1);
	tg = tl.v[0];
	cr_assert_eq(tg.rank, -1);
	cr_assert_eq(tg.pid, INT32_MIN);
	cr_assert(memcmp(tg.state, t.state, sizeof(t.state)) == 0);
	cr_assert(memcmp(tg.ended_in, t.ended_in, sizeof(t.ended_in)) == 0);
	tasks_free(&tl);
	assert_report(s, evil, json);
	cr_assert_eq(list_steps(s, false).n, 1, "nothing was dropped or injected");
	cr_assert_eq(sql("SELECT count(*) FROM sqlite_master WHERE type = 'table'"), 6);
	pdi_store_close(s);
}

Test(store, unknown_function_in_the_database)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step st = step("a", 1, 0);
	struct pdi_store_site v = {0, fn_id("MPI_Send"), "n", "c", "f", 1, 1};
	struct sites sl = {.n = 0};

	cr_assert_eq(pdi_store_put_step(s, &st), 0);
	cr_assert_eq(pdi_store_put_sites(s, "a", &v, 1), 0);
	cr_assert_eq(sql("SELECT count(*) FROM sites WHERE fn = 'MPI_Send'"), 1, "functions are stored by name");
	sql("UPDATE sites SET fn = 'MPI_Frobnicate'");
	cr_assert_eq(pdi_store_list_sites(s, "a", collect_site, &sl), -EPROTONOSUPPORT);
	pdi_store_close(s);
}

Test(store, forget_watched_keeps_the_tasks)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step st = step("w", 100, 0);
	struct pdi_store_task ran = {.rank = 0, .pid = 10, .state = "ended", .model = "m", .model_len = 1};
	struct pdi_store_task waited = {.rank = -1, .pid = 11, .state = "watched"};
	struct tasks tl;

	cr_assert_eq(pdi_store_put_step(s, &st), 0);
	cr_assert_eq(pdi_store_put_task(s, "w", &ran), 0);
	cr_assert_eq(pdi_store_put_task(s, "w", &waited), 0);
	cr_assert_eq(pdi_store_forget_watched(s, "w"), 0);
	tl = list_tasks(s, "w");
	cr_assert_eq(tl.n, 1, "the watched process of a checkpoint stays after the step's end");
	cr_assert_str_eq(tl.v[0].state, "ended");
	tasks_free(&tl);
	cr_expect_eq(pdi_store_forget_watched(s, "nope"), -ENOENT);
	pdi_store_close(s);
}

Test(store, a_second_connection_gives_up_on_a_lock_after_its_timeout)
{
	struct pdi_store *s = open_ok(), *reader = NULL, *writer = NULL;
	struct pdi_store_step st = step("x", 100, 0), got;
	sqlite3 *other;
	struct timespec t0, t1;
	double ms;

	cr_assert_eq(pdi_store_put_step(s, &st), 0);
	cr_assert_eq(pdi_store_attach(path, 5000, &reader), 0);
	cr_assert_eq(pdi_store_attach(path, 100, &writer), 0);
	cr_assert_eq(pdi_store_get_step(reader, "x", &got), 0, "a second connection reads what the first wrote");
	/* another process's connection holds the write lock (in WAL, readers go on) */
	cr_assert_eq(sqlite3_open(path, &other), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	cr_assert_eq(pdi_store_get_step(reader, "x", &got), 0, "in WAL, a write lock does not stop a reader");
	st.ended = 5;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(pdi_store_put_step(writer, &st), -EBUSY);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	cr_expect_lt(ms, 2000, "waited %.0f ms for a lock with a timeout of 100 ms", ms);
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(other);
	cr_expect_eq(pdi_store_put_step(writer, &st), 0, "the lock is gone");
	pdi_store_close(writer);
	pdi_store_close(reader);
	pdi_store_close(s);
}

/* ---- schema 2: program identity, per-site totals, the site store's outbox ---- */

static int collect_total(void *ctx, const struct pdi_store_site_total *t)
{
	struct pdi_store_site_total *v = ctx;

	cr_assert_lt(t->index, 2);
	v[t->index] = *t;
	v[t->index].name = strdup(t->name);
	return 0;
}

static int collect_name(void *ctx, const char *name)
{
	char *v = ctx;

	strcat(v, name);
	strcat(v, " ");
	return 0;
}

Test(store, identity_totals_and_the_site_outbox)
{
	struct pdi_store *s = open_ok();
	struct pdi_store_step a = step("a", 100, 200), b = step("b", 150, 300), got;
	struct pdi_store_site sites[] = {
		{.index = 0, .fn = fn_id("MPI_Send"), .name = "MPI_Send@a.c:3", .key = 1},
		{.index = 1, .fn = fn_id("MPI_Barrier"), .name = "MPI_Barrier@a.c:9", .key = 2}};
	struct pdi_store_site_total totals[] = {{.index = 0, .calls = 300, .bytes = 2400, .time_ns = 5000},
						{.index = 1, .calls = 10, .time_ns = (uint64_t)INT64_MAX}}, back[2] = {0};
	char pending[64] = "";

	snprintf(a.build, sizeof(a.build), "build-id:0123abcd");
	a.input_size = 1u << 20;
	a.total_tasks = 8;
	snprintf(a.verdict, sizeof(a.verdict), "completed");
	cr_assert_eq(pdi_store_put_step(s, &a), 0);
	cr_assert_eq(pdi_store_put_step(s, &b), 0);
	cr_assert_eq(pdi_store_get_step(s, "a", &got), 0);
	assert_same_step(&got, &a);
	cr_assert_eq(pdi_store_put_sites(s, "a", sites, 2), 0);
	cr_assert_eq(pdi_store_put_site_totals(s, "a", totals, 2), 0);
	cr_assert_eq(pdi_store_list_site_totals(s, "a", collect_total, back), 0);
	cr_assert_str_eq(back[0].name, "MPI_Send@a.c:3");
	cr_assert_eq(back[0].calls, 300);
	cr_assert_eq(back[0].bytes, 2400);
	cr_assert_eq(back[1].time_ns, (uint64_t)INT64_MAX);
	free((char *)back[0].name);
	free((char *)back[1].name);
	totals[0].calls = (uint64_t)INT64_MAX + 1;
	cr_assert_eq(pdi_store_put_site_totals(s, "a", totals, 2), -EINVAL);
	cr_assert_eq(pdi_store_put_site_totals(s, "nope", totals, 1), -ENOENT);

	/* the outbox: oldest end first; retention by age spares it, by size takes it last */
	cr_assert_eq(pdi_store_set_site_pending(s, "b", true), 0);
	cr_assert_eq(pdi_store_set_site_pending(s, "a", true), 0);
	cr_assert_eq(pdi_store_list_site_pending(s, collect_name, pending), 0);
	cr_assert_str_eq(pending, "a b ");
	cr_assert_eq(pdi_store_expire(s, 10000, 10, 0), 0, "both pending: kept");
	cr_assert_eq(pdi_store_set_site_pending(s, "a", false), 0);
	cr_assert_eq(pdi_store_expire(s, 10000, 10, 0), 1);
	cr_assert_eq(pdi_store_get_step(s, "a", &got), -ENOENT);
	cr_assert_eq(sql("SELECT count(*) FROM site_totals"), 0, "cascaded");
	pending[0] = 0;
	cr_assert_eq(pdi_store_list_site_pending(s, collect_name, pending), 0);
	cr_assert_str_eq(pending, "b ");
	cr_assert_eq(pdi_store_expire(s, 10000, 0, 1), 1, "a size limit takes pending steps too");
	pdi_store_close(s);
}

Test(store, a_version_1_database_is_migrated)
{
	struct pdi_store *s;
	struct pdi_store_step got;
	char state[160];

	snprintf(state, sizeof(state), "%s/state", dir);
	cr_assert_eq(mkdir(state, 0700), 0);
	/* version 1 as the released pdimon made it */
	sql("PRAGMA application_id = 1346652493");
	sql("CREATE TABLE steps (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, job_id INTEGER NOT NULL,"
	    " step_id INTEGER NOT NULL, uid INTEGER NOT NULL, state TEXT NOT NULL, started INTEGER NOT NULL,"
	    " ended INTEGER NOT NULL, executable TEXT NOT NULL, ntasks INTEGER NOT NULL)");
	sql("CREATE TABLE sites (step INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE, idx INTEGER NOT NULL,"
	    " fn TEXT NOT NULL, name TEXT NOT NULL, caller TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL,"
	    " site_key INTEGER NOT NULL, PRIMARY KEY (step, idx)) WITHOUT ROWID");
	sql("CREATE TABLE tasks (id INTEGER PRIMARY KEY, step INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,"
	    " rank INTEGER NOT NULL, pid INTEGER NOT NULL, state TEXT NOT NULL, events_lost INTEGER NOT NULL,"
	    " ended_in TEXT NOT NULL, model BLOB, UNIQUE (step, rank, pid))");
	sql("CREATE TABLE reports (step INTEGER PRIMARY KEY REFERENCES steps (id) ON DELETE CASCADE, json TEXT NOT NULL)");
	sql("INSERT INTO steps VALUES (1, 'old', 7, 0, 1000, 'ended', 10, 20, '/bin/x', 4)");
	sql("PRAGMA user_version = 1");
	s = open_ok();
	cr_assert_eq(sql("PRAGMA user_version"), 4);
	cr_assert_eq(pdi_store_get_step(s, "old", &got), 0);
	cr_assert_eq(got.ntasks, 4);
	cr_assert_str_eq(got.build, "");
	cr_assert_eq(got.input_size, 0);
	cr_assert_str_eq(got.verdict, "");
	/* version 3: tasks of old databases have no identity, so a restart never revives them */
	cr_assert_eq(sql("SELECT count(*) FROM pragma_table_info('tasks') WHERE name IN ('start_ticks', 'boot_id')"), 2);
	/* version 4: no budget levels learned yet */
	cr_assert_eq(sql("SELECT count(*) FROM budget_learned"), 0);
	pdi_store_close(s);
}

static int learned_row(void *ctx, const struct pdi_store_learned *x)
{
	char *out = ctx;

	snprintf(out + strlen(out), 256 - strlen(out), "%llx@%lld:%s;", (unsigned long long)x->program,
		 (long long)x->used, x->levels);
	return 0;
}

Test(store, budget_levels_kept_bounded_least_recent_first)
{
	struct pdi_store *s = open_ok();
	/* a program hash with the top bit set is stored as the same 64 bits */
	struct pdi_store_learned v[] = {{0xfedcba9876543210ull, 5, "MPI_Test=3"}, {2, 7, "MPI_Iprobe=5 MPI_Test=1"},
					{3, 6, "MPI_Send=2"}};
	char out[256] = "";

	cr_assert_eq(pdi_store_put_learned(s, v, 3, 2), 0);
	cr_assert_eq(pdi_store_list_learned(s, learned_row, out), 0);
	cr_assert_str_eq(out, "3@6:MPI_Send=2;2@7:MPI_Iprobe=5 MPI_Test=1;", "the two most recent, oldest first");
	v[0].used = 9;
	v[0].levels = "";
	cr_assert_eq(pdi_store_put_learned(s, v, 1, 2), 0);
	out[0] = '\0';
	cr_assert_eq(pdi_store_list_learned(s, learned_row, out), 0);
	cr_assert_str_eq(out, "2@7:MPI_Iprobe=5 MPI_Test=1;fedcba9876543210@9:;");
	pdi_store_close(s);
}

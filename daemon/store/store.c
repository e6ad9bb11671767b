/* SPDX-License-Identifier: GPL-2.0-only */
/* store.c -- pdimond's SQLite store: schema and its migrations, upserts, listings, retention.
 *
 * Every statement is prepared once with bound parameters, so that names, paths and reports
 * (which come from users' jobs) are data, never SQL. Each write runs in a transaction of its
 * own, or in a savepoint inside the caller's group, so that a failure (a full disk above all)
 * leaves the database as the last successful commit left it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errline.h"
#include "mpi_funcs.h"
#include "store.h"

#define APPLICATION_ID 0x5044494d /* "PDIM": tells our databases from other programs' */
#define BUSY_TIMEOUT_MS 5000      /* a sqlite3 shell reading the database holds it this long at most */
#define WAL_SIZE_LIMIT "8388608"  /* bytes the WAL is truncated back to after checkpoints */
#define MAX_PAGE_COUNT 4294967294u

/* The schema, one entry per version: migrations[i] takes a database from user_version i to
 * i + 1. To change the schema, append an entry (CREATE, ALTER TABLE ... ADD COLUMN, data
 * fix-ups, or the create-copy-drop-rename dance for what ALTER cannot do) and adapt the
 * queries below; never edit an entry once released, since databases in the field replay
 * every entry after their version. Each entry runs in one transaction with the user_version
 * bump, so a crash leaves a whole version; an older pdimond then refuses the database
 * (-EPROTONOSUPPORT) instead of misreading it. Add a test opening a database of the previous
 * version. */
static const char *const migrations[] = {
	/* 1: steps, their call sites, tasks with their models, the latest report */
	"CREATE TABLE steps ("
	"  id INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL UNIQUE,"
	"  job_id INTEGER NOT NULL,"
	"  step_id INTEGER NOT NULL,"
	"  uid INTEGER NOT NULL,"
	"  state TEXT NOT NULL,"
	"  started INTEGER NOT NULL,"
	"  ended INTEGER NOT NULL," /* 0 while running */
	"  executable TEXT NOT NULL,"
	"  ntasks INTEGER NOT NULL);"
	"CREATE INDEX steps_by_end ON steps (ended, id);"
	"CREATE INDEX steps_by_executable ON steps (executable, started);"
	"CREATE TABLE sites ("
	"  step INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,"
	"  idx INTEGER NOT NULL,"
	"  fn TEXT NOT NULL," /* the MPI function's name: indices change between releases */
	"  name TEXT NOT NULL,"
	"  caller TEXT NOT NULL,"
	"  file TEXT NOT NULL,"
	"  line INTEGER NOT NULL,"
	"  site_key INTEGER NOT NULL," /* u64, as the same 64 bits */
	"  PRIMARY KEY (step, idx)) WITHOUT ROWID;"
	"CREATE TABLE tasks ("
	"  id INTEGER PRIMARY KEY,"
	"  step INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,"
	"  rank INTEGER NOT NULL,"
	"  pid INTEGER NOT NULL,"
	"  state TEXT NOT NULL,"
	"  events_lost INTEGER NOT NULL," /* u64, as the same 64 bits */
	"  ended_in TEXT NOT NULL,"
	"  model BLOB," /* lib/model/model_io.h's format; NULL when none */
	"  UNIQUE (step, rank, pid));"
	"CREATE TABLE reports ("
	"  step INTEGER PRIMARY KEY REFERENCES steps (id) ON DELETE CASCADE,"
	"  json TEXT NOT NULL);"
	"PRAGMA application_id = 1346652493;", /* APPLICATION_ID, 0x5044494d */
	/* 2: the program's identity and input size, the verdict, the per-site totals that trends
	 * fit, and which ended steps the site store does not have yet */
	"ALTER TABLE steps ADD COLUMN build TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE steps ADD COLUMN input_size INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE steps ADD COLUMN total_tasks INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE steps ADD COLUMN verdict TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE steps ADD COLUMN site_pending INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX steps_site_pending ON steps (ended, id) WHERE site_pending != 0;"
	"CREATE TABLE site_totals ("
	"  step INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,"
	"  idx INTEGER NOT NULL," /* the site's index in sites */
	"  calls INTEGER NOT NULL,"
	"  bytes INTEGER NOT NULL,"
	"  time_ns INTEGER NOT NULL,"
	"  PRIMARY KEY (step, idx)) WITHOUT ROWID;",
	/* 3: who a task's process is, so that a restart never takes a reused pid for it */
	"ALTER TABLE tasks ADD COLUMN start_ticks INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE tasks ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';",
	/* 4: the overhead budget's levels learned per program, so that a restart keeps them */
	"CREATE TABLE budget_learned ("
	"  program INTEGER PRIMARY KEY," /* pdi_program_hash(), u64 as the same 64 bits */
	"  used INTEGER NOT NULL,"       /* when last noted: the least recent goes first */
	"  levels TEXT NOT NULL);",      /* "MPI_Test=3 ...": by name, indices change between releases */
};

#define SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

enum query {
	Q_STEP_PUT,
	Q_STEP_ID,
	Q_STEP_GET,
	Q_STEPS,
	Q_STEPS_RUNNING,
	Q_SITE_PUT,
	Q_SITES,
	Q_TASK_PUT,
	Q_TASKS,
	Q_TASKS_UNWATCH,
	Q_REPORT_PUT,
	Q_REPORT_GET,
	Q_TOTAL_PUT,
	Q_TOTALS,
	Q_PENDING_SET,
	Q_PENDING,
	Q_EXPIRE_AGE,
	Q_EXPIRE_OLDEST,
	Q_SIZE,
	Q_LEARNED_PUT,
	Q_LEARNED_TRIM,
	Q_LEARNED,
	Q_COUNT
};

#define STEP_COLS                                                                                                  \
	"name, job_id, step_id, uid, state, started, ended, executable, ntasks, build, input_size, total_tasks, verdict"

static const char *const queries[Q_COUNT] = {
	[Q_STEP_PUT] = "INSERT INTO steps (" STEP_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
		       " ON CONFLICT (name) DO UPDATE SET job_id = excluded.job_id, step_id = excluded.step_id,"
		       " uid = excluded.uid, state = excluded.state, started = excluded.started,"
		       " ended = excluded.ended, executable = excluded.executable, ntasks = excluded.ntasks,"
		       " build = excluded.build, input_size = excluded.input_size, total_tasks = excluded.total_tasks,"
		       " verdict = excluded.verdict",
	[Q_STEP_ID] = "SELECT id FROM steps WHERE name = ?1",
	[Q_STEP_GET] = "SELECT " STEP_COLS " FROM steps WHERE name = ?1",
	[Q_STEPS] = "SELECT " STEP_COLS " FROM steps ORDER BY started, id",
	[Q_STEPS_RUNNING] = "SELECT " STEP_COLS " FROM steps WHERE ended = 0 ORDER BY started, id",
	[Q_SITE_PUT] = "INSERT INTO sites (step, idx, fn, name, caller, file, line, site_key)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
		       " ON CONFLICT (step, idx) DO UPDATE SET fn = excluded.fn, name = excluded.name,"
		       " caller = excluded.caller, file = excluded.file, line = excluded.line,"
		       " site_key = excluded.site_key",
	[Q_SITES] = "SELECT idx, fn, name, caller, file, line, site_key FROM sites WHERE step = ?1 ORDER BY idx",
	[Q_TASK_PUT] = "INSERT INTO tasks (step, rank, pid, state, events_lost, ended_in, model, start_ticks, boot_id)"
		       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
		       " ON CONFLICT (step, rank, pid) DO UPDATE SET state = excluded.state,"
		       " events_lost = excluded.events_lost, ended_in = excluded.ended_in, model = excluded.model,"
		       " start_ticks = excluded.start_ticks, boot_id = excluded.boot_id",
	[Q_TASKS] = "SELECT rank, pid, state, events_lost, ended_in, model, start_ticks, boot_id FROM tasks WHERE step = ?1"
		    " ORDER BY rank, pid",
	[Q_TASKS_UNWATCH] = "DELETE FROM tasks WHERE step = ?1 AND state = 'watched'",
	[Q_REPORT_PUT] = "INSERT INTO reports (step, json) VALUES (?1, ?2)"
			 " ON CONFLICT (step) DO UPDATE SET json = excluded.json",
	[Q_REPORT_GET] = "SELECT json FROM reports WHERE step = ?1",
	[Q_TOTAL_PUT] = "INSERT INTO site_totals (step, idx, calls, bytes, time_ns) VALUES (?1, ?2, ?3, ?4, ?5)"
			" ON CONFLICT (step, idx) DO UPDATE SET calls = excluded.calls, bytes = excluded.bytes,"
			" time_ns = excluded.time_ns",
	[Q_TOTALS] = "SELECT t.idx, s.name, t.calls, t.bytes, t.time_ns FROM site_totals t"
		     " JOIN sites s ON s.step = t.step AND s.idx = t.idx WHERE t.step = ?1 ORDER BY t.idx",
	[Q_PENDING_SET] = "UPDATE steps SET site_pending = ?2 WHERE id = ?1",
	[Q_PENDING] = "SELECT name FROM steps WHERE site_pending != 0 ORDER BY ended, id",
	/* age spares what the site store does not have yet; size takes it last */
	[Q_EXPIRE_AGE] = "DELETE FROM steps WHERE ended != 0 AND ended < ?1 AND site_pending = 0",
	[Q_EXPIRE_OLDEST] = "DELETE FROM steps WHERE id ="
			    " (SELECT id FROM steps WHERE ended != 0 ORDER BY site_pending, ended, id LIMIT 1)",
	[Q_LEARNED_PUT] = "INSERT INTO budget_learned (program, used, levels) VALUES (?1, ?2, ?3)"
			  " ON CONFLICT (program) DO UPDATE SET used = excluded.used, levels = excluded.levels",
	[Q_LEARNED_TRIM] = "DELETE FROM budget_learned WHERE program NOT IN"
			   " (SELECT program FROM budget_learned ORDER BY used DESC LIMIT ?1)",
	[Q_LEARNED] = "SELECT program, used, levels FROM budget_learned ORDER BY used, program",
	[Q_SIZE] = "SELECT page_count * page_size, freelist_count * page_size"
		   " FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
};

struct pdi_store {
	sqlite3 *db;
	sqlite3_stmt *stmt[Q_COUNT]; /* prepared on first use */
	bool group;                  /* between pdi_store_begin() and its end */
	int group_err;               /* the first failure in the group, which lost it */
};

/* ---- errors ---- */

static int sql_errno(sqlite3 *db, int rc)
{
	int e;

	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EBADMSG;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		/* a full disk or quota can surface as a failed write or open, not SQLITE_FULL */
		e = db ? sqlite3_system_errno(db) : 0;
		if (e == ENOSPC || e == EDQUOT)
			return -ENOSPC;
		if (e == EROFS || e == EACCES)
			return -e;
		return -EIO;
	default:
		return -EIO;
	}
}

static int db_err(struct pdi_store *s, int rc)
{
	return sql_errno(s->db, rc);
}


const char *pdi_store_errmsg(struct pdi_store *s)
{
	return sqlite3_errmsg(s->db);
}

/* ---- statements ---- */

static int exec(struct pdi_store *s, const char *sql)
{
	return db_err(s, sqlite3_exec(s->db, sql, NULL, NULL, NULL));
}

/* The statement for Q, ready to bind. A callback of a listing that calls the store again may
 * need a statement its caller is still stepping: that one gets a fresh copy. */
static int prep(struct pdi_store *s, enum query q, sqlite3_stmt **ret)
{
	sqlite3_stmt *st = s->stmt[q];
	int rc;

	if (st && !sqlite3_stmt_busy(st)) {
		*ret = st;
		return 0;
	}
	rc = sqlite3_prepare_v3(s->db, queries[q], -1, st ? 0 : SQLITE_PREPARE_PERSISTENT, &st, NULL);
	if (rc != SQLITE_OK)
		return db_err(s, rc);
	if (!s->stmt[q])
		s->stmt[q] = st;
	*ret = st;
	return 0;
}

/* Done with ST: reset it, and drop the bindings, which point into the caller's memory. */
static void unprep(struct pdi_store *s, enum query q, sqlite3_stmt *st)
{
	if (st != s->stmt[q]) {
		sqlite3_finalize(st);
		return;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* 1 for a row, 0 when done, or an error. */
static int row(struct pdi_store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : db_err(s, rc);
}

/* Binds ?1, ?2... in order, keeping the first failure. */
struct binder {
	sqlite3_stmt *st;
	int n;
	int rc;
};

static void b_int(struct binder *b, int64_t v)
{
	b->n++;
	if (b->rc == SQLITE_OK)
		b->rc = sqlite3_bind_int64(b->st, b->n, v);
}

static void b_text(struct binder *b, const char *v, size_t len)
{
	b->n++;
	if (b->rc == SQLITE_OK)
		b->rc = sqlite3_bind_text64(b->st, b->n, v ? v : "", v ? len : 0, SQLITE_STATIC, SQLITE_UTF8);
}

static void b_str(struct binder *b, const char *v)
{
	b_text(b, v, v ? strlen(v) : 0);
}

static void b_blob(struct binder *b, const void *v, size_t len)
{
	b->n++;
	if (b->rc != SQLITE_OK)
		return;
	b->rc = v && len ? sqlite3_bind_blob64(b->st, b->n, v, len, SQLITE_STATIC) : sqlite3_bind_null(b->st, b->n);
}

/* Bind, step to the end, and put ST back. */
static int run(struct pdi_store *s, enum query q, sqlite3_stmt *st, const struct binder *b)
{
	int r = b->rc != SQLITE_OK ? db_err(s, b->rc) : row(s, st);

	unprep(s, q, st);
	return r < 0 ? r : 0;
}

/* Is the fixed-size field V (SIZE bytes) a terminated string? Its length then, or -EINVAL. */
static int field_len(const char *v, size_t size, size_t *len)
{
	*len = strnlen(v, size);
	return *len < size ? 0 : -EINVAL;
}

static void col_field(sqlite3_stmt *st, int i, char *dst, size_t size)
{
	const unsigned char *v = sqlite3_column_text(st, i);
	size_t n = v ? (size_t)sqlite3_column_bytes(st, i) : 0;

	if (n >= size)
		n = size - 1; /* only a hand-edited database holds longer ones */
	memcpy(dst, v ? (const char *)v : "", n);
	dst[n] = 0;
}

static const char *col_str(sqlite3_stmt *st, int i)
{
	const unsigned char *v = sqlite3_column_text(st, i);

	return v ? (const char *)v : "";
}

static int pragma_int(struct pdi_store *s, const char *sql, int64_t *ret)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL), r;

	if (rc != SQLITE_OK)
		return db_err(s, rc);
	r = row(s, st);
	if (r > 0)
		*ret = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return r < 0 ? r : r ? 0 : -EIO;
}

/* ---- transactions ---- */

/* A write of its own, or a savepoint within the caller's group so that its failure undoes
 * only itself. A lost group refuses further writes: they would not be part of anything. */
static int write_begin(struct pdi_store *s)
{
	if (s->group)
		return s->group_err ? s->group_err : exec(s, "SAVEPOINT op");
	return exec(s, "BEGIN IMMEDIATE");
}

/* End the write begun last with its result R; returns R or the commit's failure. Some
 * errors (SQLITE_FULL, I/O) roll SQLite's transaction back by themselves, hence the checks. */
static int write_end(struct pdi_store *s, int r)
{
	int e;

	if (s->group) {
		if (r >= 0 && (e = exec(s, "RELEASE op")) < 0)
			r = e;
		if (r < 0) {
			if (!sqlite3_get_autocommit(s->db)) {
				exec(s, "ROLLBACK TO op");
				exec(s, "RELEASE op");
			}
			s->group_err = r;
		}
		return r;
	}
	if (r >= 0 && (e = exec(s, "COMMIT")) < 0)
		r = e;
	if (r < 0 && !sqlite3_get_autocommit(s->db))
		exec(s, "ROLLBACK");
	return r;
}

int pdi_store_begin(struct pdi_store *s)
{
	int r;

	if (s->group)
		return -EINVAL;
	if ((r = exec(s, "BEGIN IMMEDIATE")) < 0)
		return r;
	s->group = true;
	s->group_err = 0;
	return 0;
}

void pdi_store_rollback(struct pdi_store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		exec(s, "ROLLBACK");
	s->group = false;
	s->group_err = 0;
}

int pdi_store_commit(struct pdi_store *s)
{
	int r;

	if (!s->group)
		return -EINVAL;
	r = s->group_err;
	if (!r && sqlite3_get_autocommit(s->db))
		r = -EIO; /* rolled back under us; cannot happen without a failed put */
	if (!r)
		r = exec(s, "COMMIT");
	if (r < 0)
		pdi_store_rollback(s);
	s->group = false;
	s->group_err = 0;
	return r;
}

/* ---- opening ---- */

/* The directory PATH is in, into DIR (PATH_MAX bytes). */
static void dir_of(const char *path, char *dir)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, PATH_MAX, ".");
	else if (slash == path)
		snprintf(dir, PATH_MAX, "/");
	else
		snprintf(dir, PATH_MAX, "%.*s", (int)(slash - path), path);
}

/* Create the directory and the file ourselves: SQLite would make the file world-readable
 * (job names, users and programs are nobody else's business) and, on a read-only file,
 * silently open it read-only; open(2) says clearly why we cannot write. */
static int prepare_file(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int fd;

	if (strlen(path) >= PATH_MAX)
		return pdi_errline(err, errlen, -ENAMETOOLONG, "%s: %s", path, strerror(ENAMETOOLONG));
	dir_of(path, dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return pdi_errline(err, errlen, -errno, "cannot create %s: %s", dir, strerror(errno));
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0)
		return pdi_errline(err, errlen, -errno, "cannot open %s for writing: %s", path, strerror(errno));
	close(fd);
	/* the WAL and its index are files next to the database */
	if (access(dir, W_OK) < 0)
		return pdi_errline(err, errlen, -errno, "cannot write in %s, which the database's WAL needs: %s", dir,
			    strerror(errno));
	return 0;
}

/* The first problem quick_check lists, on one line: its rows span several, and start with
 * the database's name. */
static void first_problem(const char *v, const char **ret, int *len)
{
	const char *nl;

	if (strncmp(v, "*** ", 4) == 0 && (nl = strchr(v, '\n')))
		v = nl + 1;
	*ret = v;
	*len = (int)strcspn(v, "\n");
}

static int quick_check(struct pdi_store *s, const char *path, char *err, size_t errlen)
{
	const char *problem;
	int len;

	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check", -1, &st, NULL), r;

	if (rc != SQLITE_OK) {
		r = db_err(s, rc);
		return pdi_errline(err, errlen, r, "%s %s: %s", path, r == -EBADMSG ? "is corrupt" : "cannot be read",
			    sqlite3_errmsg(s->db));
	}
	r = row(s, st);
	if (r > 0 && strcmp(col_str(st, 0), "ok") != 0) {
		first_problem(col_str(st, 0), &problem, &len);
		pdi_errline(err, errlen, -EBADMSG, "%s is corrupt: %.*s", path, len, problem);
		r = -EBADMSG;
	} else if (r < 0) {
		pdi_errline(err, errlen, r, "%s %s: %s", path, r == -EBADMSG ? "is corrupt" : "cannot be read",
		     sqlite3_errmsg(s->db));
	} else if (r == 0) {
		r = pdi_errline(err, errlen, -EIO, "%s: quick_check said nothing", path);
	}
	sqlite3_finalize(st);
	return r < 0 ? r : 0;
}

/* Ours, at a version we know, or new and empty? */
static int check_identity(struct pdi_store *s, const char *path, int64_t *version, char *err, size_t errlen)
{
	int64_t app, ntables;
	int r;

	if ((r = pragma_int(s, "PRAGMA application_id", &app)) < 0 || (r = pragma_int(s, "PRAGMA user_version", version)) < 0 ||
	    (r = pragma_int(s, "SELECT count(*) FROM sqlite_master", &ntables)) < 0)
		return pdi_errline(err, errlen, r, "%s cannot be read: %s", path, sqlite3_errmsg(s->db));
	if (app != APPLICATION_ID && (app != 0 || *version != 0 || ntables != 0))
		return pdi_errline(err, errlen, -EBADMSG, "%s is not a pdimon database (application_id %#llx, %lld tables)",
			    path, (unsigned long long)app, (long long)ntables);
	if (*version > SCHEMA_VERSION)
		return pdi_errline(err, errlen, -EPROTONOSUPPORT,
			    "%s was written by a newer pdimon (schema version %lld, this one knows up to %d)", path,
			    (long long)*version, SCHEMA_VERSION);
	return 0;
}

static int configure(struct pdi_store *s, const char *path, bool fresh, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int r;

	/* freed pages go back to the file system, so that retention by size can work; it can
	 * only be chosen before the first table */
	if (fresh && (r = exec(s, "PRAGMA auto_vacuum = INCREMENTAL")) < 0)
		return pdi_errline(err, errlen, r, "%s: cannot set auto_vacuum: %s", path, sqlite3_errmsg(s->db));
	if ((r = db_err(s, sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL))) < 0)
		return pdi_errline(err, errlen, r, "%s: cannot use WAL: %s", path, sqlite3_errmsg(s->db));
	r = row(s, st);
	if (r > 0 && strcmp(col_str(st, 0), "wal") != 0)
		r = pdi_errline(err, errlen, -EIO, "%s: cannot use WAL, journal mode stays %s", path, col_str(st, 0));
	else if (r <= 0)
		r = pdi_errline(err, errlen, r < 0 ? r : -EIO, "%s: cannot use WAL: %s", path, sqlite3_errmsg(s->db));
	sqlite3_finalize(st);
	if (r < 0)
		return r;
	/* NORMAL: a power cut may lose the last commits, never consistency; it spares an fsync
	 * per commit */
	if ((r = exec(s, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
			 "PRAGMA journal_size_limit = " WAL_SIZE_LIMIT)) < 0)
		return pdi_errline(err, errlen, r, "%s: cannot configure: %s", path, sqlite3_errmsg(s->db));
	return 0;
}

/* Take the database from version V to V + 1, or learn that it is there already (1). */
static int migrate_one(struct pdi_store *s, int64_t *v)
{
	char sql[64];
	int r;

	/* read again under the lock: another pdimond may have been quicker */
	if ((r = pragma_int(s, "PRAGMA user_version", v)) < 0)
		return r;
	if (*v >= SCHEMA_VERSION)
		return 1;
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %lld", (long long)*v + 1);
	if ((r = exec(s, migrations[*v])) < 0 || (r = exec(s, sql)) < 0)
		return r;
	return 0;
}

static int migrate(struct pdi_store *s, const char *path, char *err, size_t errlen)
{
	int64_t v = -1;
	int r;

	do {
		if ((r = exec(s, "BEGIN IMMEDIATE")) < 0)
			return pdi_errline(err, errlen, r, "%s: cannot lock it to update the schema: %s", path,
				    sqlite3_errmsg(s->db));
		r = migrate_one(s, &v);
		if (r < 0 || (r == 0 && (r = exec(s, "COMMIT")) < 0)) {
			pdi_errline(err, errlen, r, "%s: cannot update the schema to version %lld: %s", path, (long long)v + 1,
			     sqlite3_errmsg(s->db));
			if (!sqlite3_get_autocommit(s->db))
				exec(s, "ROLLBACK");
			return r;
		}
	} while (r == 0);
	exec(s, "ROLLBACK"); /* of the transaction that found nothing to do */
	if (v > SCHEMA_VERSION)
		return pdi_errline(err, errlen, -EPROTONOSUPPORT, "%s was updated by a newer pdimon meanwhile", path);
	return 0;
}

/* What every connection sets for itself, whoever opened the file first. */
static void connection_setup(struct pdi_store *s, unsigned busy_ms)
{
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, (int)busy_ms);
	/* a database file is input too: no schema tricks, no functions run from it */
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
#endif
}

static int setup(struct pdi_store *s, const char *path, char *err, size_t errlen)
{
	int64_t version;
	int r;

	connection_setup(s, BUSY_TIMEOUT_MS);
	if (sqlite3_db_readonly(s->db, "main") == 1)
		return pdi_errline(err, errlen, -EACCES, "%s: SQLite opened it read-only", path);
	if ((r = quick_check(s, path, err, errlen)) < 0 || (r = check_identity(s, path, &version, err, errlen)) < 0 ||
	    (r = configure(s, path, version == 0, err, errlen)) < 0)
		return r;
	return version < SCHEMA_VERSION ? migrate(s, path, err, errlen) : 0;
}

int pdi_store_open(const char *path, struct pdi_store **ret, char *ret_err, size_t errlen)
{
	struct pdi_store *s;
	int rc, r;

	if (errlen)
		ret_err[0] = 0;
	if (!path || !*path)
		return pdi_errline(ret_err, errlen, -EINVAL, "no database path");
	if ((r = prepare_file(path, ret_err, errlen)) < 0)
		return r;
	if (!(s = calloc(1, sizeof(*s))))
		return pdi_errline(ret_err, errlen, -ENOMEM, "%s: %s", path, strerror(ENOMEM));
	rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		r = pdi_errline(ret_err, errlen, sql_errno(s->db, rc), "cannot open %s: %s", path,
			 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		pdi_store_close(s);
		return r;
	}
	if ((r = setup(s, path, ret_err, errlen)) < 0) {
		pdi_store_close(s);
		return r;
	}
	*ret = s;
	return 0;
}

int pdi_store_attach(const char *path, unsigned busy_ms, struct pdi_store **ret)
{
	struct pdi_store *s = calloc(1, sizeof(*s));
	int rc, r;

	if (!s)
		return -ENOMEM;
	rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	r = rc == SQLITE_OK ? 0 : sql_errno(s->db, rc);
	if (r == 0) {
		connection_setup(s, busy_ms);
		/* per connection: pdi_store_open's configure() set the file's own (WAL, auto_vacuum) */
		r = exec(s, "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
			    "PRAGMA journal_size_limit = " WAL_SIZE_LIMIT);
	}
	if (r < 0) {
		pdi_store_close(s);
		return r;
	}
	*ret = s;
	return 0;
}

void pdi_store_set_busy_timeout(struct pdi_store *s, unsigned busy_ms)
{
	sqlite3_busy_timeout(s->db, (int)busy_ms);
}

void pdi_store_close(struct pdi_store *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < Q_COUNT; i++)
		sqlite3_finalize(s->stmt[i]);
	sqlite3_close(s->db); /* rolls back an unfinished group */
	free(s);
}

int pdi_store_limit(struct pdi_store *s, uint64_t max_bytes)
{
	char sql[64];
	int64_t page;
	uint64_t pages;
	int r;

	if ((r = pragma_int(s, "PRAGMA page_size", &page)) < 0)
		return r;
	if (page <= 0)
		return -EIO;
	pages = max_bytes ? max_bytes / (uint64_t)page : MAX_PAGE_COUNT;
	if (pages == 0)
		pages = 1; /* clamped to the current size anyway */
	if (pages > MAX_PAGE_COUNT)
		pages = MAX_PAGE_COUNT;
	snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %llu", (unsigned long long)pages);
	return pragma_int(s, sql, &page);
}

/* ---- steps ---- */

static int find_step(struct pdi_store *s, const char *name, int64_t *id)
{
	struct binder b = {.rc = SQLITE_OK};
	int r;

	if (!name)
		return -EINVAL;
	if ((r = prep(s, Q_STEP_ID, &b.st)) < 0)
		return r;
	b_str(&b, name);
	r = b.rc != SQLITE_OK ? db_err(s, b.rc) : row(s, b.st);
	if (r > 0)
		*id = sqlite3_column_int64(b.st, 0);
	unprep(s, Q_STEP_ID, b.st);
	return r < 0 ? r : r ? 0 : -ENOENT;
}

static int put_step(struct pdi_store *s, const struct pdi_store_step *st)
{
	size_t name, state, exe, build, verdict;
	struct binder b = {.rc = SQLITE_OK};
	int r;

	if (field_len(st->name, sizeof(st->name), &name) < 0 || !name ||
	    field_len(st->state, sizeof(st->state), &state) < 0 ||
	    field_len(st->executable, sizeof(st->executable), &exe) < 0 ||
	    field_len(st->build, sizeof(st->build), &build) < 0 ||
	    field_len(st->verdict, sizeof(st->verdict), &verdict) < 0 || st->input_size > INT64_MAX)
		return -EINVAL;
	if ((r = prep(s, Q_STEP_PUT, &b.st)) < 0)
		return r;
	b_text(&b, st->name, name);
	b_int(&b, st->job_id);
	b_int(&b, st->step_id);
	b_int(&b, st->uid);
	b_text(&b, st->state, state);
	b_int(&b, st->started);
	b_int(&b, st->ended);
	b_text(&b, st->executable, exe);
	b_int(&b, st->ntasks);
	b_text(&b, st->build, build);
	b_int(&b, (int64_t)st->input_size);
	b_int(&b, st->total_tasks);
	b_text(&b, st->verdict, verdict);
	return run(s, Q_STEP_PUT, b.st, &b);
}

int pdi_store_put_step(struct pdi_store *s, const struct pdi_store_step *st)
{
	int r = write_begin(s);

	return r < 0 ? r : write_end(s, put_step(s, st));
}

static void read_step(sqlite3_stmt *q, struct pdi_store_step *st)
{
	col_field(q, 0, st->name, sizeof(st->name));
	st->job_id = (uint32_t)sqlite3_column_int64(q, 1);
	st->step_id = (uint32_t)sqlite3_column_int64(q, 2);
	st->uid = (uint32_t)sqlite3_column_int64(q, 3);
	col_field(q, 4, st->state, sizeof(st->state));
	st->started = sqlite3_column_int64(q, 5);
	st->ended = sqlite3_column_int64(q, 6);
	col_field(q, 7, st->executable, sizeof(st->executable));
	st->ntasks = (uint32_t)sqlite3_column_int64(q, 8);
	col_field(q, 9, st->build, sizeof(st->build));
	st->input_size = (uint64_t)sqlite3_column_int64(q, 10);
	st->total_tasks = (uint32_t)sqlite3_column_int64(q, 11);
	col_field(q, 12, st->verdict, sizeof(st->verdict));
}

int pdi_store_get_step(struct pdi_store *s, const char *name, struct pdi_store_step *ret)
{
	struct binder b = {.rc = SQLITE_OK};
	int r;

	if (!name)
		return -EINVAL;
	if ((r = prep(s, Q_STEP_GET, &b.st)) < 0)
		return r;
	b_str(&b, name);
	r = b.rc != SQLITE_OK ? db_err(s, b.rc) : row(s, b.st);
	if (r > 0)
		read_step(b.st, ret);
	unprep(s, Q_STEP_GET, b.st);
	return r < 0 ? r : r ? 0 : -ENOENT;
}

int pdi_store_list_steps(struct pdi_store *s, bool running_only, int (*cb)(void *ctx, const struct pdi_store_step *),
			 void *ctx)
{
	enum query q = running_only ? Q_STEPS_RUNNING : Q_STEPS;
	sqlite3_stmt *st;
	int r;

	if ((r = prep(s, q, &st)) < 0)
		return r;
	while ((r = row(s, st)) > 0) {
		struct pdi_store_step x;

		read_step(st, &x);
		if ((r = cb(ctx, &x)) < 0)
			break;
	}
	unprep(s, q, st);
	return r < 0 ? r : 0;
}

/* ---- sites ---- */

static int put_site(struct pdi_store *s, int64_t step, const struct pdi_store_site *v)
{
	struct binder b = {.rc = SQLITE_OK};
	int r;

	if (v->fn >= pdi_mpi_nfuncs)
		return -EINVAL;
	if ((r = prep(s, Q_SITE_PUT, &b.st)) < 0)
		return r;
	b_int(&b, step);
	b_int(&b, v->index);
	b_str(&b, pdi_mpi_funcs[v->fn].name);
	b_str(&b, v->name);
	b_str(&b, v->caller);
	b_str(&b, v->file);
	b_int(&b, v->line);
	b_int(&b, (int64_t)v->key);
	return run(s, Q_SITE_PUT, b.st, &b);
}

static int put_sites(struct pdi_store *s, const char *step, const struct pdi_store_site *v, size_t n)
{
	int64_t id;
	int r = find_step(s, step, &id);

	for (size_t i = 0; r >= 0 && i < n; i++)
		r = put_site(s, id, &v[i]);
	return r;
}

int pdi_store_put_sites(struct pdi_store *s, const char *step, const struct pdi_store_site *v, size_t n)
{
	int r = write_begin(s);

	return r < 0 ? r : write_end(s, put_sites(s, step, v, n));
}

static int read_site(sqlite3_stmt *q, struct pdi_store_site *v)
{
	int fn = pdi_mpi_func_find(col_str(q, 1));

	if (fn < 0)
		return -EPROTONOSUPPORT; /* a function only a newer pdimon probes */
	v->index = (uint32_t)sqlite3_column_int64(q, 0);
	v->fn = (uint16_t)fn;
	v->name = col_str(q, 2);
	v->caller = col_str(q, 3);
	v->file = col_str(q, 4);
	v->line = sqlite3_column_int(q, 5);
	v->key = (uint64_t)sqlite3_column_int64(q, 6);
	return 0;
}

/* Hand each row of Q for STEP's id to EACH. */
static int list_children(struct pdi_store *s, enum query q, const char *step, int (*each)(sqlite3_stmt *, void *),
			 void *arg)
{
	struct binder b = {.rc = SQLITE_OK};
	int64_t id;
	int r;

	if ((r = find_step(s, step, &id)) < 0 || (r = prep(s, q, &b.st)) < 0)
		return r;
	b_int(&b, id);
	r = b.rc != SQLITE_OK ? db_err(s, b.rc) : 0;
	while (r >= 0 && (r = row(s, b.st)) > 0)
		r = each(b.st, arg);
	unprep(s, q, b.st);
	return r < 0 ? r : 0;
}

struct site_list {
	int (*cb)(void *, const struct pdi_store_site *);
	void *ctx;
};

static int each_site(sqlite3_stmt *q, void *arg)
{
	struct site_list *l = arg;
	struct pdi_store_site v;
	int r = read_site(q, &v);

	return r < 0 ? r : l->cb(l->ctx, &v);
}

int pdi_store_list_sites(struct pdi_store *s, const char *step, int (*cb)(void *, const struct pdi_store_site *),
			 void *ctx)
{
	struct site_list l = {cb, ctx};

	return list_children(s, Q_SITES, step, each_site, &l);
}

/* ---- tasks ---- */

static int put_task(struct pdi_store *s, const char *step, const struct pdi_store_task *t)
{
	struct binder b = {.rc = SQLITE_OK};
	size_t state, ended_in, boot_id;
	int64_t id;
	int r;

	if (field_len(t->state, sizeof(t->state), &state) < 0 ||
	    field_len(t->ended_in, sizeof(t->ended_in), &ended_in) < 0 ||
	    field_len(t->boot_id, sizeof(t->boot_id), &boot_id) < 0 || (t->model_len && !t->model))
		return -EINVAL;
	if ((r = find_step(s, step, &id)) < 0 || (r = prep(s, Q_TASK_PUT, &b.st)) < 0)
		return r;
	b_int(&b, id);
	b_int(&b, t->rank);
	b_int(&b, t->pid);
	b_text(&b, t->state, state);
	b_int(&b, (int64_t)t->events_lost);
	b_text(&b, t->ended_in, ended_in);
	b_blob(&b, t->model, t->model_len);
	b_int(&b, (int64_t)t->start_ticks);
	b_text(&b, t->boot_id, boot_id);
	return run(s, Q_TASK_PUT, b.st, &b);
}

int pdi_store_put_task(struct pdi_store *s, const char *step, const struct pdi_store_task *t)
{
	int r = write_begin(s);

	return r < 0 ? r : write_end(s, put_task(s, step, t));
}

static int forget_watched(struct pdi_store *s, const char *step)
{
	struct binder b = {.rc = SQLITE_OK};
	int64_t id;
	int r;

	if ((r = find_step(s, step, &id)) < 0 || (r = prep(s, Q_TASKS_UNWATCH, &b.st)) < 0)
		return r;
	b_int(&b, id);
	return run(s, Q_TASKS_UNWATCH, b.st, &b);
}

int pdi_store_forget_watched(struct pdi_store *s, const char *step)
{
	int r = write_begin(s);

	return r < 0 ? r : write_end(s, forget_watched(s, step));
}

static void read_task(sqlite3_stmt *q, struct pdi_store_task *t)
{
	t->rank = sqlite3_column_int(q, 0);
	t->pid = sqlite3_column_int(q, 1);
	col_field(q, 2, t->state, sizeof(t->state));
	t->events_lost = (uint64_t)sqlite3_column_int64(q, 3);
	col_field(q, 4, t->ended_in, sizeof(t->ended_in));
	t->model = sqlite3_column_blob(q, 5);
	t->model_len = t->model ? (size_t)sqlite3_column_bytes(q, 5) : 0;
	t->start_ticks = (uint64_t)sqlite3_column_int64(q, 6);
	col_field(q, 7, t->boot_id, sizeof(t->boot_id));
}

struct task_list {
	int (*cb)(void *, const struct pdi_store_task *);
	void *ctx;
};

static int each_task(sqlite3_stmt *q, void *arg)
{
	struct task_list *l = arg;
	struct pdi_store_task t;

	read_task(q, &t);
	return l->cb(l->ctx, &t);
}

int pdi_store_list_tasks(struct pdi_store *s, const char *step, int (*cb)(void *, const struct pdi_store_task *),
			 void *ctx)
{
	struct task_list l = {cb, ctx};

	return list_children(s, Q_TASKS, step, each_task, &l);
}

/* ---- per-site totals ---- */

static int put_totals(struct pdi_store *s, const char *step, const struct pdi_store_site_total *v, size_t n)
{
	int64_t id;
	int r = find_step(s, step, &id);

	for (size_t i = 0; r >= 0 && i < n; i++) {
		struct binder b = {.rc = SQLITE_OK};

		if (v[i].calls > INT64_MAX || v[i].bytes > INT64_MAX || v[i].time_ns > INT64_MAX)
			return -EINVAL;
		if ((r = prep(s, Q_TOTAL_PUT, &b.st)) < 0)
			return r;
		b_int(&b, id);
		b_int(&b, v[i].index);
		b_int(&b, (int64_t)v[i].calls);
		b_int(&b, (int64_t)v[i].bytes);
		b_int(&b, (int64_t)v[i].time_ns);
		r = run(s, Q_TOTAL_PUT, b.st, &b);
	}
	return r;
}

int pdi_store_put_site_totals(struct pdi_store *s, const char *step, const struct pdi_store_site_total *v, size_t n)
{
	int r = write_begin(s);

	return r < 0 ? r : write_end(s, put_totals(s, step, v, n));
}

struct total_list {
	int (*cb)(void *, const struct pdi_store_site_total *);
	void *ctx;
};

static int each_total(sqlite3_stmt *q, void *arg)
{
	struct total_list *l = arg;
	struct pdi_store_site_total t = {
		.index = (uint32_t)sqlite3_column_int64(q, 0), .name = col_str(q, 1),
		.calls = (uint64_t)sqlite3_column_int64(q, 2), .bytes = (uint64_t)sqlite3_column_int64(q, 3),
		.time_ns = (uint64_t)sqlite3_column_int64(q, 4)};

	return l->cb(l->ctx, &t);
}

int pdi_store_list_site_totals(struct pdi_store *s, const char *step,
			       int (*cb)(void *, const struct pdi_store_site_total *), void *ctx)
{
	struct total_list l = {cb, ctx};

	return list_children(s, Q_TOTALS, step, each_total, &l);
}

/* ---- what the site store does not have yet ---- */

static int set_pending(struct pdi_store *s, const char *step, bool pending)
{
	struct binder b = {.rc = SQLITE_OK};
	int64_t id;
	int r;

	if ((r = find_step(s, step, &id)) < 0 || (r = prep(s, Q_PENDING_SET, &b.st)) < 0)
		return r;
	b_int(&b, id);
	b_int(&b, pending);
	return run(s, Q_PENDING_SET, b.st, &b);
}

int pdi_store_set_site_pending(struct pdi_store *s, const char *step, bool pending)
{
	int r = write_begin(s);

	return r < 0 ? r : write_end(s, set_pending(s, step, pending));
}

int pdi_store_list_site_pending(struct pdi_store *s, int (*cb)(void *ctx, const char *step), void *ctx)
{
	sqlite3_stmt *st;
	int r;

	if ((r = prep(s, Q_PENDING, &st)) < 0)
		return r;
	while ((r = row(s, st)) > 0)
		if ((r = cb(ctx, col_str(st, 0))) < 0)
			break;
	unprep(s, Q_PENDING, st);
	return r < 0 ? r : 0;
}

/* ---- reports ---- */

static int put_report(struct pdi_store *s, const char *step, const char *json)
{
	struct binder b = {.rc = SQLITE_OK};
	int64_t id;
	int r;

	if (!json)
		return -EINVAL;
	if ((r = find_step(s, step, &id)) < 0 || (r = prep(s, Q_REPORT_PUT, &b.st)) < 0)
		return r;
	b_int(&b, id);
	b_str(&b, json);
	return run(s, Q_REPORT_PUT, b.st, &b);
}

int pdi_store_put_report(struct pdi_store *s, const char *step, const char *json)
{
	int r = write_begin(s);

	return r < 0 ? r : write_end(s, put_report(s, step, json));
}

int pdi_store_get_report(struct pdi_store *s, const char *step, char **ret_json)
{
	struct binder b = {.rc = SQLITE_OK};
	int64_t id;
	int r;

	if ((r = find_step(s, step, &id)) < 0 || (r = prep(s, Q_REPORT_GET, &b.st)) < 0)
		return r;
	b_int(&b, id);
	r = b.rc != SQLITE_OK ? db_err(s, b.rc) : row(s, b.st);
	if (r > 0) {
		const char *v = col_str(b.st, 0);
		size_t n = (size_t)sqlite3_column_bytes(b.st, 0);
		char *json = malloc(n + 1);

		if (json) {
			memcpy(json, v, n);
			json[n] = 0;
			*ret_json = json;
		}
		r = json ? 1 : -ENOMEM;
	}
	unprep(s, Q_REPORT_GET, b.st);
	return r < 0 ? r : r ? 0 : -ENOENT;
}

/* ---- retention ---- */

static int delete_ended_before(struct pdi_store *s, int64_t cutoff, int *deleted)
{
	struct binder b = {.rc = SQLITE_OK};
	int r;

	if ((r = prep(s, Q_EXPIRE_AGE, &b.st)) < 0)
		return r;
	b_int(&b, cutoff);
	if ((r = run(s, Q_EXPIRE_AGE, b.st, &b)) < 0)
		return r;
	*deleted += sqlite3_changes(s->db); /* the steps alone: cascaded rows do not count */
	return 0;
}

/* Delete the ended step that ended first: 1, or 0 if none is left. */
static int delete_oldest(struct pdi_store *s)
{
	struct binder b = {.rc = SQLITE_OK};
	int r;

	if ((r = prep(s, Q_EXPIRE_OLDEST, &b.st)) < 0 || (r = run(s, Q_EXPIRE_OLDEST, b.st, &b)) < 0)
		return r;
	return sqlite3_changes(s->db) > 0;
}

static int db_size(struct pdi_store *s, uint64_t *total, uint64_t *free_bytes)
{
	sqlite3_stmt *st;
	int r;

	if ((r = prep(s, Q_SIZE, &st)) < 0)
		return r;
	r = row(s, st);
	if (r > 0) {
		*total = (uint64_t)sqlite3_column_int64(st, 0);
		*free_bytes = (uint64_t)sqlite3_column_int64(st, 1);
	}
	unprep(s, Q_SIZE, st);
	return r < 0 ? r : r ? 0 : -EIO;
}

/* Deleting frees pages inside the file; incremental_vacuum gives them back. Vacuum once
 * the live pages fit (or nothing is left to delete), and delete more if the file still
 * does not fit. */
static int shrink_to(struct pdi_store *s, uint64_t max_bytes, int *deleted)
{
	bool vacuumed = false, more = true;
	uint64_t total, free_bytes;
	int r;

	for (;;) {
		if ((r = db_size(s, &total, &free_bytes)) < 0)
			return r;
		if (total < max_bytes)
			return 0;
		if (free_bytes && !vacuumed && (total - free_bytes < max_bytes || !more)) {
			if ((r = exec(s, "PRAGMA incremental_vacuum")) < 0)
				return r;
			vacuumed = true;
			continue;
		}
		if (!more)
			return 0; /* only running steps left: they stay, whatever the size */
		if ((r = delete_oldest(s)) < 0)
			return r;
		more = r > 0;
		*deleted += r;
		vacuumed = vacuumed && !r;
	}
}

static int expire(struct pdi_store *s, int64_t now, int64_t max_age_s, uint64_t max_bytes, int *deleted)
{
	int64_t cutoff;
	int r = 0;

	if (max_age_s && !__builtin_sub_overflow(now, max_age_s, &cutoff))
		r = delete_ended_before(s, cutoff, deleted);
	if (r >= 0 && max_bytes)
		r = shrink_to(s, max_bytes, deleted);
	return r;
}

int pdi_store_expire(struct pdi_store *s, int64_t now, int64_t max_age_s, uint64_t max_bytes)
{
	int deleted = 0, r;

	if (max_age_s < 0)
		return -EINVAL;
	if ((r = write_begin(s)) < 0)
		return r;
	if ((r = write_end(s, expire(s, now, max_age_s, max_bytes, &deleted))) < 0)
		return r;
	/* copy the WAL back now, so that the file shrinks on disk too; a reader may delay it */
	if (deleted && !s->group)
		sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	return deleted;
}

/* ---- the overhead budget's levels learned per program ---- */

static int put_learned(struct pdi_store *s, const struct pdi_store_learned *v, size_t n, unsigned keep)
{
	int r = 0;

	for (size_t i = 0; i < n && r >= 0; i++) {
		struct binder b = {.rc = SQLITE_OK};

		if ((r = prep(s, Q_LEARNED_PUT, &b.st)) < 0)
			break;
		b_int(&b, (int64_t)v[i].program);
		b_int(&b, v[i].used);
		b_str(&b, v[i].levels);
		r = run(s, Q_LEARNED_PUT, b.st, &b);
	}
	if (r >= 0) {
		struct binder b = {.rc = SQLITE_OK};

		if ((r = prep(s, Q_LEARNED_TRIM, &b.st)) < 0)
			return r;
		b_int(&b, keep);
		r = run(s, Q_LEARNED_TRIM, b.st, &b);
	}
	return r;
}

int pdi_store_put_learned(struct pdi_store *s, const struct pdi_store_learned *v, size_t n, unsigned keep)
{
	int r = write_begin(s);

	return r < 0 ? r : write_end(s, put_learned(s, v, n, keep));
}

int pdi_store_list_learned(struct pdi_store *s, int (*cb)(void *, const struct pdi_store_learned *), void *ctx)
{
	sqlite3_stmt *st;
	int r;

	if ((r = prep(s, Q_LEARNED, &st)) < 0)
		return r;
	while ((r = row(s, st)) > 0) {
		struct pdi_store_learned x = {.program = (uint64_t)sqlite3_column_int64(st, 0),
					      .used = sqlite3_column_int64(st, 1), .levels = col_str(st, 2)};

		if ((r = cb(ctx, &x)) < 0)
			break;
	}
	unprep(s, Q_LEARNED, st);
	return r < 0 ? r : 0;
}

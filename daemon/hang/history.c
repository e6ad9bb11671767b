/* SPDX-License-Identifier: GPL-2.0-only */
/* history.c -- the quiet episodes of every run of a program, and each step's announced
 * health, in the store (hang.h): what the judge of a new run of the program starts from,
 * and what a restarted pdimond takes over from the one before (no second alarm for the
 * same episode).
 *
 * One table of its own in the store's database, pdi_hang_history, created when first
 * needed (it depends on no other table, so it needs no step of the store's schema): a row
 * per run, keyed by its step name and start, with its record (lib/health/health.h) as bytes. Read
 * and written by jobs on workers with their own connection (worker.h): the loop never waits
 * for SQLite. A job's writes carry a sequence number, so that an older one finishing late
 * never overwrites a newer one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "daemon.h"
#include "history.h"
#include "log.h"
#include "wire.h"
#include "worker.h"

#define BUSY_MS 3000
/* runs of a program merged into its history: the recent ones */
#define HISTORY_RUNS 64
/* rows kept in all, newest first */
#define HISTORY_ROWS 20000

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS pdi_hang_history ("
	"  step TEXT NOT NULL, started INTEGER NOT NULL, executable TEXT NOT NULL,"
	"  ended INTEGER NOT NULL, seq INTEGER NOT NULL, record BLOB NOT NULL,"
	"  health INTEGER NOT NULL, since INTEGER NOT NULL, first_hung INTEGER NOT NULL,"
	"  cancelled INTEGER NOT NULL, PRIMARY KEY (step, started));"
	"CREATE INDEX IF NOT EXISTS pdi_hang_history_by_program ON pdi_hang_history (executable, ended);";

struct history_job {
	struct pdi_job job;
	struct pdi_daemon *d;
	bool save;
	pdi_hang_loaded_fn loaded;      /* load: whom the answer goes to */
	char *database, *step, *executable;
	int64_t started, ended;
	uint64_t seq;
	struct pdi_health_saved saved;  /* save: what to write; load: the step's own row */
	bool has_own;
	struct pdi_health_record history; /* load: the program's earlier runs */
	unsigned runs;
	unsigned retention_days;
	char why[200];                  /* what failed, "" when nothing did */
};

static void job_free(struct history_job *j)
{
	free(j->database);
	free(j->step);
	free(j->executable);
	free(j);
}

/* The store's database, if pdimond's store made it (never a database of our own making). */
static sqlite3 *open_db(struct history_job *j)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int version = 0;

	if (sqlite3_open_v2(j->database, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(j->why, sizeof(j->why), "cannot open %s: %s", j->database, db ? sqlite3_errmsg(db) : "?");
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db, BUSY_MS);
	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version <= 0 || sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(j->why, sizeof(j->why), "%s: %s", j->database,
			 version <= 0 ? "not set up by pdimond's store" : sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

static void load(struct history_job *j, sqlite3 *db)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db,
			       "SELECT record, step = ?2 AND started = ?3, health, since, first_hung, cancelled "
			       "FROM pdi_hang_history WHERE executable = ?1 OR (step = ?2 AND started = ?3) "
			       "ORDER BY ended = 0, ended DESC LIMIT ?4",
			       -1, &st, NULL) != SQLITE_OK) {
		snprintf(j->why, sizeof(j->why), "cannot read the history: %s", sqlite3_errmsg(db));
		return;
	}
	sqlite3_bind_text(st, 1, j->executable ? j->executable : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, j->step, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, j->started);
	sqlite3_bind_int(st, 4, HISTORY_RUNS + 1);
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct pdi_health_record rec;
		const void *blob = sqlite3_column_blob(st, 0);

		/* a row that is not a record (written by a newer pdimon, or damaged) is skipped */
		if (!blob || pdi_health_record_decode(blob, (size_t)sqlite3_column_bytes(st, 0), &rec) < 0)
			continue;
		if (sqlite3_column_int(st, 1)) {
			j->has_own = true;
			j->saved = (struct pdi_health_saved){.run = rec, .health = (enum pdi_health)sqlite3_column_int(st, 2),
							     .since = sqlite3_column_int64(st, 3),
							     .first_hung = sqlite3_column_int64(st, 4),
							     .cancelled = sqlite3_column_int64(st, 5)};
			if (j->saved.health > PDI_HEALTH_HUNG)
				j->saved.health = PDI_HEALTH_OK;
		} else if (j->runs < HISTORY_RUNS) {
			pdi_health_record_merge(&j->history, &rec);
			j->runs++;
		}
	}
	sqlite3_finalize(st);
}

static void save(struct history_job *j, sqlite3 *db)
{
	struct pdi_wire_writer w = {0};
	sqlite3_stmt *st = NULL;
	int rc;

	if (pdi_health_record_encode(&j->saved.run, &w) < 0) {
		snprintf(j->why, sizeof(j->why), "out of memory");
		pdi_wire_writer_done(&w);
		return;
	}
	rc = sqlite3_prepare_v2(db,
				"INSERT INTO pdi_hang_history VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
				"ON CONFLICT (step, started) DO UPDATE SET executable = excluded.executable, "
				"ended = excluded.ended, seq = excluded.seq, record = excluded.record, "
				"health = excluded.health, since = excluded.since, first_hung = excluded.first_hung, "
				"cancelled = excluded.cancelled WHERE excluded.seq > pdi_hang_history.seq",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, j->step, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, j->started);
		sqlite3_bind_text(st, 3, j->executable ? j->executable : "", -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, j->ended);
		sqlite3_bind_int64(st, 5, (sqlite3_int64)j->seq);
		sqlite3_bind_blob(st, 6, w.buf, (int)w.len, SQLITE_STATIC);
		sqlite3_bind_int(st, 7, (int)j->saved.health);
		sqlite3_bind_int64(st, 8, j->saved.since);
		sqlite3_bind_int64(st, 9, j->saved.first_hung);
		sqlite3_bind_int64(st, 10, j->saved.cancelled);
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE)
		snprintf(j->why, sizeof(j->why), "cannot write the history: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	pdi_wire_writer_done(&w);
	/* bounded: rows of runs ended past the retention, and the oldest beyond the cap */
	if (j->ended && j->retention_days) {
		char sql[160];

		snprintf(sql, sizeof(sql), "DELETE FROM pdi_hang_history WHERE ended > 0 AND ended < %lld",
			 (long long)j->ended - (long long)j->retention_days * 86400);
		(void)sqlite3_exec(db, sql, NULL, NULL, NULL);
	}
	if (j->ended) {
		char sql[200];

		snprintf(sql, sizeof(sql),
			 "DELETE FROM pdi_hang_history WHERE rowid IN (SELECT rowid FROM pdi_hang_history "
			 "ORDER BY ended = 0 DESC, ended DESC LIMIT -1 OFFSET %d)", HISTORY_ROWS);
		(void)sqlite3_exec(db, sql, NULL, NULL, NULL);
	}
}

static void job_run(struct pdi_job *pj)
{
	struct history_job *j = pdi_job_of(pj, struct history_job, job);
	sqlite3 *db = open_db(j);

	if (!db)
		return;
	if (j->save)
		save(j, db);
	else
		load(j, db);
	sqlite3_close(db);
}

static void job_done(struct pdi_job *pj, bool cancelled)
{
	struct history_job *j = pdi_job_of(pj, struct history_job, job);
	struct pdi_step *s = pdi_registry_find_step(&j->d->reg, j->step);

	if (j->why[0])
		log_warning_limited(0, "Step %s: %s, ignoring: hang thresholds start from what the step shows", j->step,
				    j->why);
	/* the step may be gone, or be another one by now */
	if (!j->save && s && s->started == j->started)
		j->loaded(j->d, s, cancelled ? NULL : &j->history, j->has_own && !cancelled ? &j->saved : NULL,
			  j->runs);
	job_free(j);
}

static struct history_job *job_new(struct pdi_daemon *d, struct pdi_step *s, bool save, pdi_hang_loaded_fn loaded)
{
	struct history_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->job = (struct pdi_job){.run = job_run, .done = job_done};
	j->d = d;
	j->save = save;
	j->loaded = loaded;
	j->started = s->started;
	j->ended = s->ended;
	j->retention_days = d->cfg.retention_days;
	j->database = strdup(d->cfg.database);
	j->step = strdup(s->name);
	j->executable = s->executable ? strdup(s->executable) : NULL;
	if (!j->database || !j->step || (s->executable && !j->executable)) {
		job_free(j);
		return NULL;
	}
	return j;
}

static void submit(struct pdi_daemon *d, struct pdi_step *s, struct history_job *j)
{
	int r = j ? pdi_workers_submit(d->workers, &j->job) : -ENOMEM;

	if (r < 0) {
		log_warning_errno_limited(0, r, "Step %s: cannot %s its hang history, ignoring: %m", s->name,
					  j && j->save ? "save" : "load");
		if (j && !j->save)
			j->loaded(d, s, NULL, NULL, 0);
		if (j)
			job_free(j);
	}
}

void pdi_hang_history_load(struct pdi_daemon *d, struct pdi_step *s, pdi_hang_loaded_fn loaded)
{
	if (!d->store || !d->cfg.database || !d->workers) {
		loaded(d, s, NULL, NULL, 0);
		return;
	}
	submit(d, s, job_new(d, s, false, loaded));
}

void pdi_hang_history_save(struct pdi_daemon *d, struct pdi_step *s)
{
	struct history_job *j;

	if (!d->store || !d->cfg.database || !d->workers)
		return;
	j = job_new(d, s, true, NULL);
	if (j) {
		j->seq = ++d->hang.history_seq;
		pdi_step_health_get_saved(s, &j->saved);
	}
	submit(d, s, j);
}

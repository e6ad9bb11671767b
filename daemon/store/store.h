/* SPDX-License-Identifier: GPL-2.0-only */
/* store.h -- pdimond's persistent store: steps, their call sites, tasks (with their models)
 * and reports, in an embedded SQLite database, so that they outlive the daemon and the jobs.
 *
 * Every function returns 0 (or a count) or a negative errno: -ENOSPC (disk or size limit full;
 * what was committed before is intact), -EROFS (read-only), -EBADMSG (corrupt), -EBUSY (locked
 * by another process past the busy timeout), -ENOMEM, -EINVAL (bad argument), -ENOENT,
 * -EIO (anything else; pdi_store_errmsg() says what). A connection is for one thread. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pdi_store;

/* Open or create PATH (its directory too, one level, mode 0700; the file is created 0600),
 * and bring its schema up to date, one transaction per version. Refuses, with a negative
 * errno and a one-line reason in RET_ERR (ERRLEN bytes, may be 0):
 *   -EBADMSG          not a database, fails PRAGMA quick_check, or another program's database
 *   -EPROTONOSUPPORT  written by a newer pdimon
 *   -EACCES, -EROFS   the file or its directory is not writable
 * Uses WAL, synchronous=NORMAL, a busy timeout and foreign keys. */
int pdi_store_open(const char *path, struct pdi_store **ret, char *ret_err, size_t errlen);
void pdi_store_close(struct pdi_store *s);

/* Another connection to PATH, which pdi_store_open() has opened (checked, brought up to date)
 * in this process: for another thread (a connection is for one thread at a time). Waits up
 * to BUSY_MS for a lock another connection or process holds. 0, or a negative errno. */
int pdi_store_attach(const char *path, unsigned busy_ms, struct pdi_store **ret);
/* How long S waits for a lock before -EBUSY (pdi_store_open: 5 s). */
void pdi_store_set_busy_timeout(struct pdi_store *s, unsigned busy_ms);

/* SQLite's description of the last error on S, for logs. */
const char *pdi_store_errmsg(struct pdi_store *s);

/* Refuse to grow the database past MAX_BYTES (rounded down to pages, never below its current
 * size; 0 = no limit): writes past it fail with -ENOSPC as on a full disk. A hard cap next to
 * pdi_store_expire()'s retention. */
int pdi_store_limit(struct pdi_store *s, uint64_t max_bytes);

/* A step is "running" while ended == 0. */
struct pdi_store_step {
	char name[129];           /* "JOB.STEP" for Slurm steps, or a pdimon run/attach name */
	uint32_t job_id, step_id; /* 0 when not a Slurm step */
	uint32_t uid;
	char state[16];           /* "running", "ended", "cancelled", "hung"... free text */
	int64_t started, ended;   /* unix seconds, ended 0 while running */
	char executable[256];     /* program path, for "prior runs of the same program" */
	uint32_t ntasks;          /* on this node */
	char build[80];           /* the program's identity (program.h): "" when unknown */
	uint64_t input_size;      /* the user's --pdi-monitor=size=N; 0 when not given */
	uint32_t total_tasks;     /* on all the step's nodes, as Slurm counts them; 0: ntasks */
	char verdict[16];         /* the report's kind once it ended ("completed", "hang"...); "" */
};

/* In listings, the strings point into the store and live until the callback returns. */
struct pdi_store_site {
	uint32_t index;
	uint16_t fn; /* index into pdi_mpi_funcs; stored by name */
	const char *name, *caller, *file; /* NULL is stored as "" */
	int line;
	uint64_t key;
};

/* In listings, MODEL (NULL when MODEL_LEN is 0) lives until the callback returns. */
struct pdi_store_task {
	int32_t rank;
	int32_t pid;
	char state[16];
	uint64_t events_lost;
	const void *model;
	size_t model_len;
	char ended_in[64];
	uint64_t start_ticks; /* the process's start time, with BOOT_ID: who PID was (0: unknown) */
	char boot_id[40];
};

/* Upserts. Strings are stored byte for byte (any bytes but NUL). Sites, tasks and reports
 * belong to a step put before: -ENOENT otherwise. Sites go in all or none. */
int pdi_store_put_step(struct pdi_store *s, const struct pdi_store_step *st);   /* by name */
int pdi_store_put_sites(struct pdi_store *s, const char *step, const struct pdi_store_site *v, size_t n);
int pdi_store_put_task(struct pdi_store *s, const char *step, const struct pdi_store_task *t); /* by (rank, pid) */
int pdi_store_put_report(struct pdi_store *s, const char *step, const char *json); /* the latest */
/* Delete the step's tasks in state "watched" (processes that were to join it): a record of
 * the step lists those that still are. */
int pdi_store_forget_watched(struct pdi_store *s, const char *step);

/* Listings, in order of start, site index, (rank, pid). The callback returns <0 to stop with
 * that error; it may call the store, listings included. -ENOENT for an unknown step;
 * -EPROTONOSUPPORT for a site whose MPI function this pdimon does not know. */
int pdi_store_list_steps(struct pdi_store *s, bool running_only,
			 int (*cb)(void *ctx, const struct pdi_store_step *), void *ctx);
int pdi_store_get_step(struct pdi_store *s, const char *name, struct pdi_store_step *ret);
int pdi_store_list_sites(struct pdi_store *s, const char *step, int (*cb)(void *, const struct pdi_store_site *),
			 void *ctx);
int pdi_store_list_tasks(struct pdi_store *s, const char *step, int (*cb)(void *, const struct pdi_store_task *),
			 void *ctx);
int pdi_store_get_report(struct pdi_store *s, const char *step, char **ret_json); /* malloc'd */

/* What each call site of a step did, summed over the step's tasks on this node and all their
 * phases: what trends fit (trends.h). NAME (listings only) lives until the callback returns. */
struct pdi_store_site_total {
	uint32_t index;    /* the site's index, as pdi_store_put_sites() stored it */
	const char *name;
	uint64_t calls, bytes, time_ns;
};
int pdi_store_put_site_totals(struct pdi_store *s, const char *step, const struct pdi_store_site_total *v, size_t n);
int pdi_store_list_site_totals(struct pdi_store *s, const char *step,
			       int (*cb)(void *, const struct pdi_store_site_total *), void *ctx);

/* The ended steps the site store (site_store.h) does not have yet: marked when stored ended,
 * cleared once the site store committed them; listed oldest end first. Retention by age
 * spares them; retention by size deletes them last. */
int pdi_store_set_site_pending(struct pdi_store *s, const char *step, bool pending);
int pdi_store_list_site_pending(struct pdi_store *s, int (*cb)(void *ctx, const char *step), void *ctx);

/* The overhead budget's levels learned per program (probe/budget_learn.h), kept across restarts:
 * LEVELS names each degraded function with its level ("MPI_Test=3 MPI_Iprobe=5"; "" once none
 * is), USED orders them. A put adds or replaces V's N rows, then keeps the KEEP most recently
 * used ones only (budget_programs). Listed least recently used first; LEVELS lives until the
 * callback returns. */
struct pdi_store_learned {
	uint64_t program; /* pdi_program_hash() */
	int64_t used;     /* wall-clock ns of its last note */
	const char *levels;
};
int pdi_store_put_learned(struct pdi_store *s, const struct pdi_store_learned *v, size_t n, unsigned keep);
int pdi_store_list_learned(struct pdi_store *s, int (*cb)(void *, const struct pdi_store_learned *), void *ctx);

/* Retention: delete the ended steps that ended more than MAX_AGE_S before NOW (0 = keep) and
 * that the site store has, then, oldest end first (those it has first), ended steps until page_count * page_size is under MAX_BYTES (0 = no
 * limit), giving the freed pages back. Running steps are never deleted, whatever the size.
 * Returns the number of steps deleted. */
int pdi_store_expire(struct pdi_store *s, int64_t now, int64_t max_age_s, uint64_t max_bytes);

/* Group puts atomically: all or nothing. Once a put in the group has failed, the group is
 * lost: later puts and pdi_store_commit() return that error, and pdi_store_rollback() ends
 * it. Groups do not nest (-EINVAL). */
int pdi_store_begin(struct pdi_store *s);
int pdi_store_commit(struct pdi_store *s);
void pdi_store_rollback(struct pdi_store *s);

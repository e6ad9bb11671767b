/* SPDX-License-Identifier: GPL-2.0-only */
/* persist.c -- between the registry and the store: steps written when they end and at
 * checkpoints, read back after a restart or when an old step is asked for.
 *
 * A task registered by Slurm that has not reached MPI_Init yet is stored with no model
 * and the state "watched", so that a restart can watch it again. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon.h"
#include "ingest.h"
#include "ident.h"
#include "log.h"
#include "model_io.h"
#include "mpi_funcs.h"
#include "persist.h"
#include "samples.h"
#include "site_totals.h"
#include "store.h"
#include "tracer.h"
#include "worker.h"

/* How long the loop's own connection waits for a lock: its reads are short, and a database
 * that another process holds locked must not stand the loop still */
#define LOOP_BUSY_MS 50
/* The store lane's connection may wait longer: nothing waits for it but the next write */
#define LANE_BUSY_MS 5000

int pdi_persist_open(struct pdi_daemon *d)
{
	char why[256] = "";
	int r;

	if (!d->cfg.database || !*d->cfg.database)
		return 0; /* database = (empty): nothing persists, by choice */
	r = pdi_store_open(d->cfg.database, &d->store, why, sizeof(why));
	if (r < 0)
		return log_error_errno(r, "Cannot use the database %s: %s; refusing to run rather than "
					  "lose data (move it away to start afresh)", d->cfg.database, why[0] ? why : "%m");
	/* writes go through one lane, in order, on a connection of their own (no thread yet) */
	r = pdi_workers_new("store", 1, 0, &d->store_lane);
	if (r == 0)
		r = pdi_store_attach(d->cfg.database, LANE_BUSY_MS, &d->store_writer);
	if (r < 0)
		return log_error_errno(r, "Cannot open a second connection to %s for writing: %m", d->cfg.database);
	/* a hard cap beside retention: what users' jobs write (sites, models) cannot fill the disk
	 * (a connection's own setting: the one that writes) */
	r = pdi_store_limit(d->store_writer, (uint64_t)d->cfg.database_max_mib << 20);
	if (r < 0)
		log_warning_errno(r, "Cannot limit the database to %u MiB, ignoring: %s", d->cfg.database_max_mib,
				  pdi_store_errmsg(d->store_writer));
	return 0;
}

void pdi_persist_loop_reads(struct pdi_daemon *d)
{
	if (d->store)
		pdi_store_set_busy_timeout(d->store, LOOP_BUSY_MS);
}

int pdi_persist_lane_fd(struct pdi_daemon *d)
{
	return d->store_lane ? pdi_workers_fd(d->store_lane) : -1;
}

void pdi_persist_dispatch(struct pdi_daemon *d)
{
	if (d->store_lane)
		(void)pdi_workers_dispatch(d->store_lane);
}

void pdi_persist_close(struct pdi_daemon *d)
{
	/* every write queued is written: the lane is bounded by its busy timeout per write */
	if (d->store_lane)
		pdi_workers_wait_idle(d->store_lane);
	pdi_workers_free(d->store_lane);
	d->store_lane = NULL;
	pdi_store_close(d->store_writer);
	d->store_writer = NULL;
	pdi_store_close(d->store);
	d->store = NULL;
}

/* ---- writing: a step copied on the loop, written on the store's lane ---- */

struct record {
	struct pdi_job job;
	struct pdi_daemon *d;          /* for done() on the loop only */
	struct pdi_store *store;       /* the lane's connection: only the lane's jobs use it */
	pdi_persist_fn done;
	uint32_t end_gen;
	struct pdi_store_step st;
	struct pdi_store_site *sites;  /* strings owned */
	uint32_t nsites;
	struct pdi_store_task *tasks;  /* models owned */
	unsigned ntasks;
	uint32_t *final_ids;           /* the tasks written ended: once committed, never again */
	unsigned nfinal;
	uint32_t sites_upto;           /* sites [0, sites_upto) are in the store once committed */
	char *report;                  /* the report's JSON, NULL if none (yet) */
	struct pdi_store_site_total *totals; /* an ended step's: what trends fit */
	uint32_t ntotals;
	bool site_pending;             /* an ended step the site store is to collect */
	int status;
	char why[256];
};

static void record_free(struct record *rec)
{
	for (uint32_t i = 0; rec->sites && i < rec->nsites; i++) {
		free((char *)rec->sites[i].name);
		free((char *)rec->sites[i].caller);
		free((char *)rec->sites[i].file);
	}
	free(rec->sites);
	for (unsigned i = 0; rec->tasks && i < rec->ntasks; i++)
		free((void *)rec->tasks[i].model);
	free(rec->tasks);
	free(rec->final_ids);
	free(rec->report);
	free(rec->totals);
	free(rec);
}

static int write_record(struct record *rec)
{
	int r = pdi_store_put_step(rec->store, &rec->st);

	if (r >= 0)
		r = pdi_store_put_sites(rec->store, rec->st.name, rec->sites, rec->nsites);
	/* the processes still to join are those of this record: no stale ones (an ended step's
	 * tasks are its ranks only, as sample runs expect) */
	if (r >= 0)
		r = pdi_store_forget_watched(rec->store, rec->st.name);
	for (unsigned i = 0; i < rec->ntasks && r >= 0; i++)
		r = pdi_store_put_task(rec->store, rec->st.name, &rec->tasks[i]);
	if (r >= 0 && rec->report)
		r = pdi_store_put_report(rec->store, rec->st.name, rec->report);
	if (r >= 0 && rec->totals)
		r = pdi_store_put_site_totals(rec->store, rec->st.name, rec->totals, rec->ntotals);
	if (r >= 0 && rec->site_pending)
		r = pdi_store_set_site_pending(rec->store, rec->st.name, true);
	return r;
}

static void record_run(struct pdi_job *j)
{
	struct record *rec = pdi_job_of(j, struct record, job);
	int r = pdi_store_begin(rec->store);

	if (r >= 0)
		r = write_record(rec);
	if (r >= 0)
		r = pdi_store_commit(rec->store);
	if (r < 0) {
		snprintf(rec->why, sizeof(rec->why), "%s", r == -ENOSPC ? "the disk (or the database's size limit) is full"
						: r == -EBUSY ? "the database is locked by another process"
							      : pdi_store_errmsg(rec->store));
		pdi_store_rollback(rec->store);
	}
	rec->status = r < 0 ? r : 0;
}

static void record_done(struct pdi_job *j, bool cancelled)
{
	struct record *rec = pdi_job_of(j, struct record, job);
	struct pdi_step *s = pdi_registry_find_step(&rec->d->reg, rec->st.name);

	if (cancelled)
		rec->status = -ECANCELED;
	if (rec->status < 0)
		log_error("Cannot store step %s: %s; what was stored before is intact%s", rec->st.name,
			  cancelled ? "pdimond is stopping" : rec->why, rec->done ? ", trying again later" : "");
	if (s && s->store_pending)
		s->store_pending--;
	/* what this record wrote is stored only once it committed */
	if (s && rec->status == 0) {
		for (unsigned i = 0; i < s->ntasks; i++)
			for (unsigned k = 0; k < rec->nfinal; k++)
				s->tasks[i]->stored_final |= s->tasks[i]->id == rec->final_ids[k];
		if (rec->sites_upto > s->nsites_stored && rec->sites_upto <= s->nsites)
			s->nsites_stored = rec->sites_upto;
	}
	if (rec->done)
		rec->done(rec->d, rec->st.name, rec->end_gen, rec->status);
	record_free(rec);
}

static const char *task_state_name(const struct pdi_task *t)
{
	return t->state == PDI_TASK_RUNNING ? "running" : "ended";
}

static int copy_task(struct pdi_daemon *d, const struct pdi_task *t, struct pdi_store_task *st)
{
	void *blob = NULL;
	size_t len = 0;
	int r = pdi_model_encode(&t->model, &blob, &len);

	if (r < 0)
		return r;
	*st = (struct pdi_store_task){.rank = t->rank, .pid = t->pid, .start_ticks = t->start_ticks, .model = blob,
				      .model_len = len};
	snprintf(st->state, sizeof(st->state), "%s", task_state_name(t));
	st->events_lost = t->state == PDI_TASK_RUNNING ? pdi_tracer_lost(d->tracer, t->pid) : t->lost;
	snprintf(st->ended_in, sizeof(st->ended_in), "%s", t->ended_in ? t->ended_in : "");
	snprintf(st->boot_id, sizeof(st->boot_id), "%s", pdi_boot_id());
	return 0;
}

/* The sites new since the last committed write: a site never changes once named, and a step
 * may have hundreds of thousands, which every checkpoint would rewrite. */
static int copy_sites(const struct pdi_step *s, struct record *rec)
{
	uint32_t from = s->nsites_stored <= s->nsites ? s->nsites_stored : 0;

	rec->sites = calloc(s->nsites - from + 1, sizeof(*rec->sites));
	if (!rec->sites)
		return -ENOMEM;
	rec->sites_upto = s->nsites;
	for (; rec->nsites < s->nsites - from; rec->nsites++) {
		const struct pdi_site *x = &s->sites[from + rec->nsites];
		struct pdi_store_site *y = &rec->sites[rec->nsites];

		*y = (struct pdi_store_site){.index = from + rec->nsites, .fn = x->fn, .line = x->line, .key = x->key,
					     .name = strdup(x->name ? x->name : ""), .caller = strdup(x->caller ? x->caller : ""),
					     .file = strdup(x->file ? x->file : "")};
		if (!y->name || !y->caller || !y->file) {
			rec->nsites++;
			return -ENOMEM;
		}
	}
	return 0;
}

/* What each site of ended step S did, over its tasks here (what trends fit), and whether the
 * site store is to collect it. */
static int copy_end(struct pdi_daemon *d, const struct pdi_step *s, struct record *rec)
{
	struct pdi_site_total *t = calloc(s->nsites + 1, sizeof(*t));

	rec->totals = calloc(s->nsites + 1, sizeof(*rec->totals));
	if (!t || !rec->totals) {
		free(t);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < s->ntasks; i++)
		pdi_site_totals_add(t, s->nsites, &s->tasks[i]->model);
	for (uint32_t i = 0; i < s->nsites; i++)
		rec->totals[i] = (struct pdi_store_site_total){.index = i, .calls = t[i].calls, .bytes = t[i].bytes,
							       .time_ns = t[i].time_ns};
	rec->ntotals = s->nsites;
	rec->site_pending = d->cfg.site_store != NULL;
	free(t);
	return 0;
}

/* STEP as the store will hold it: its row, sites, tasks with their models, the registered
 * tasks still to come and the commands of pdimon run (no model, but a restart must watch
 * them again), and its report once it has one. */
static int copy_step(struct pdi_daemon *d, const struct pdi_step *s, struct record *rec)
{
	unsigned nwatched = 0;
	int r;

	rec->st = (struct pdi_store_step){.job_id = s->job_id, .step_id = s->step_id, .uid = s->uid,
					  .started = s->started, .ended = s->ended, .ntasks = s->ntasks,
					  .input_size = s->input_size, .total_tasks = s->total_tasks};
	snprintf(rec->st.name, sizeof(rec->st.name), "%s", s->name);
	snprintf(rec->st.state, sizeof(rec->st.state), "%s", s->ended ? "ended" : "running");
	snprintf(rec->st.executable, sizeof(rec->st.executable), "%s", s->executable ? s->executable : "");
	snprintf(rec->st.build, sizeof(rec->st.build), "%s", s->build);
	if ((r = copy_sites(s, rec)) < 0)
		return r;
	for (unsigned i = 0; i < d->reg.nwatches; i++)
		nwatched += d->reg.watches[i].step == s;
	rec->tasks = calloc(s->ntasks + nwatched + 1, sizeof(*rec->tasks));
	rec->final_ids = calloc(s->ntasks + 1, sizeof(*rec->final_ids));
	if (!rec->tasks || !rec->final_ids)
		return -ENOMEM;
	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct pdi_task *t = s->tasks[i];

		/* an ended task written once has nothing new */
		if (t->stored_final)
			continue;
		if ((r = copy_task(d, t, &rec->tasks[rec->ntasks])) < 0)
			return r;
		rec->ntasks++;
		if (t->state == PDI_TASK_ENDED)
			rec->final_ids[rec->nfinal++] = t->id;
	}
	for (unsigned i = 0; i < d->reg.nwatches; i++) {
		const struct pdi_watch *w = &d->reg.watches[i];
		struct pdi_store_task *st = &rec->tasks[rec->ntasks];

		if (w->step != s)
			continue;
		*st = (struct pdi_store_task){.rank = w->rank, .pid = w->root, .start_ticks = w->ident.start_ticks};
		snprintf(st->state, sizeof(st->state), "watched");
		snprintf(st->boot_id, sizeof(st->boot_id), "%s", pdi_boot_id());
		rec->ntasks++;
	}
	if (s->report_json && !(rec->report = strdup(s->report_json)))
		return -ENOMEM;
	if (s->report_json)
		pdi_report_verdict(s->report_json, rec->st.verdict, sizeof(rec->st.verdict));
	return s->ended ? copy_end(d, s, rec) : 0;
}

int pdi_persist_step(struct pdi_daemon *d, struct pdi_step *s, pdi_persist_fn done)
{
	struct record *rec;
	int r;

	if (!d->store)
		return -ENOENT;
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->job = (struct pdi_job){.run = record_run, .done = record_done};
	rec->d = d;
	rec->store = d->store_writer;
	rec->done = done;
	rec->end_gen = s->end_gen;
	r = copy_step(d, s, rec);
	if (r == 0)
		r = pdi_workers_submit(d->store_lane, &rec->job);
	if (r < 0) {
		log_error_errno(r, "Cannot store step %s: %m; trying again later", s->name);
		record_free(rec);
		return r;
	}
	s->store_pending++;
	return 0;
}

void pdi_persist_checkpoint(struct pdi_daemon *d)
{
	if (!d->store)
		return;
	(void)pdi_tracer_drain(d->tracer);
	for (unsigned i = 0; i < d->reg.nsteps; i++) {
		struct pdi_step *s = d->reg.steps[i];

		/* one record of a step in the lane at a time: a locked database must not pile them up */
		if (pdi_step_running(s) && !s->store_pending)
			(void)pdi_persist_step(d, s, NULL);
	}
}

/* Retention, on the lane: it deletes. */
struct expiry {
	struct pdi_job job;
	struct pdi_store *store;
	int64_t now, max_age_s;
	uint64_t max_bytes;
	int n;
	char why[256];
};

static void expiry_run(struct pdi_job *j)
{
	struct expiry *e = pdi_job_of(j, struct expiry, job);

	e->n = pdi_store_expire(e->store, e->now, e->max_age_s, e->max_bytes);
	if (e->n < 0)
		snprintf(e->why, sizeof(e->why), "%s", pdi_store_errmsg(e->store));
}

static void expiry_done(struct pdi_job *j, bool cancelled)
{
	struct expiry *e = pdi_job_of(j, struct expiry, job);

	if (!cancelled && e->n > 0)
		log_info("Expired %d stored steps", e->n);
	else if (!cancelled && e->n < 0)
		log_warning_errno(e->n, "Cannot expire old steps, ignoring: %s", e->why);
	free(e);
}

void pdi_persist_expire(struct pdi_daemon *d)
{
	struct expiry *e;

	if (!d->store || !(e = calloc(1, sizeof(*e))))
		return;
	*e = (struct expiry){.job = {.run = expiry_run, .done = expiry_done}, .store = d->store_writer,
			     .now = time(NULL), .max_age_s = (int64_t)d->cfg.retention_days * 86400,
			     .max_bytes = (uint64_t)d->cfg.retention_mib << 20};
	if (pdi_workers_submit(d->store_lane, &e->job) < 0)
		free(e);
}

/* Loading: the store's rows back into registry objects. */
struct load {
	struct pdi_daemon *d;
	struct pdi_step *s;
	bool resume; /* re-attach to live tasks (a restart), or keep everything ended (history) */
};

static int load_site(void *ctx, const struct pdi_store_site *x)
{
	struct load *l = ctx;
	struct pdi_step *s = l->s;
	struct pdi_site *v, site = {.key = x->key, .fn = x->fn, .line = x->line};

	if (x->index != s->nsites)
		return -EBADMSG; /* the indices are the names the models use: they must be dense */
	site.name = strdup(x->name);
	site.caller = strdup(x->caller);
	site.file = strdup(x->file);
	v = realloc(s->sites, sizeof(*v) * (s->nsites + 1));
	if (v)
		s->sites = v;
	if (!v || !site.name || !site.caller || !site.file || pdi_u64map_put(&s->site_idx, site.key, s->nsites) < 0) {
		free(site.name);
		free(site.caller);
		free(site.file);
		return -ENOMEM;
	}
	s->sites[s->nsites++] = site;
	return 0;
}

/* A task whose process is gone (or history): kept, ended, with its model. */
static int add_ended_task(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_store_task *x,
			  struct pdi_model *model)
{
	struct pdi_task *t;
	int r = pdi_registry_add_ended_task(&d->reg, s, x->pid, x->rank, &t);

	if (r < 0)
		return r;
	pdi_model_done(&t->model);
	t->model = *model;
	t->lost = x->events_lost;
	t->start_ticks = x->start_ticks;
	if (x->ended_in[0])
		t->ended_in = strdup(x->ended_in);
	return 0;
}

/* The stored task's process, pinned, if it still runs: the same boot, pid and start time. A
 * pid alone may be anyone's by now. */
static int pin_stored(const struct pdi_store_task *x, struct pdi_ident *ret)
{
	struct pdi_ident id;
	int r;

	if (!pdi_ident_matches(x->pid, x->start_ticks, x->boot_id))
		return -ESRCH;
	r = pdi_ident_pin(x->pid, &id);
	if (r < 0)
		return r;
	if (id.start_ticks != x->start_ticks) {
		pdi_ident_release(&id);
		return -ESRCH;
	}
	*ret = id;
	return 0;
}

static int load_task(void *ctx, const struct pdi_store_task *x)
{
	struct load *l = ctx;
	struct pdi_daemon *d = l->d;
	struct pdi_model model;
	struct pdi_ident id;
	struct pdi_task *t;
	int r;

	if (!strcmp(x->state, "watched")) {
		if (!l->resume || pin_stored(x, &id) < 0)
			return 0;
		/* it may have reached MPI_Init while we were away */
		if (pdi_tracer_check(d->objs, x->pid) == 0) {
			(void)pdi_task_begin(d, l->s, &id, x->rank, &t);
			pdi_ident_release(&id);
			return 0;
		}
		r = pdi_registry_add_watch(&d->reg, l->s, &id, x->rank);
		pdi_ident_release(&id);
		return r < 0 ? r : pdi_tracer_watch(d->tracer, x->pid);
	}
	r = x->model_len ? pdi_model_decode(x->model, x->model_len, &d->cfg.model, &model) : -ENODATA;
	if (r == -ENODATA) {
		pdi_model_init(&model, &d->cfg.model);
		r = 0;
	}
	if (r < 0) {
		log_warning_errno(r, "Step %s: the stored model of rank %d is unreadable, skipping it: %m",
				  l->s->name, x->rank);
		return 0;
	}
	if (l->resume && !strcmp(x->state, "running") && pin_stored(x, &id) == 0) {
		r = pdi_task_begin(d, l->s, &id, x->rank, &t);
		pdi_ident_release(&id);
	} else {
		r = -ESRCH;
	}
	if (r == 0) {
		pdi_model_done(&t->model);
		t->model = model;
		/* the calls made while we were down are lost: no transition across the gap */
		t->model.started = false;
		t->gap = true;
		/* nor can its collective count say where it is: no more automatic phases are cut */
		(void)pdi_unobserved_add(&t->model.unobserved, PDI_UNOBSERVED_ALL, PDI_UNOBS_GAP, t->model.last_exit,
					 pdi_now_ns());
		t->lost = x->events_lost;
		return 0;
	}
	r = add_ended_task(d, l->s, x, &model);
	if (r < 0)
		pdi_model_done(&model);
	return r;
}

/* Forget S, loaded in part: nothing half-loaded stays in the registry. */
static void unload(struct pdi_daemon *d, struct pdi_step *s)
{
	for (unsigned i = 0; i < d->reg.nwatches; i++)
		if (d->reg.watches[i].step == s)
			pdi_tracer_unwatch(d->tracer, d->reg.watches[i].root);
	pdi_registry_remove_step(&d->reg, s);
}

static int load_step(struct pdi_daemon *d, const struct pdi_store_step *st, bool resume, struct pdi_step **ret)
{
	struct load l = {.d = d, .resume = resume};
	int r;

	if (pdi_registry_find_step(&d->reg, st->name))
		return -EEXIST; /* in memory already: the store's copy is older */
	r = pdi_registry_get_step(&d->reg, st->name, st->uid, &l.s);
	if (r < 0)
		return r;
	l.s->job_id = st->job_id;
	l.s->step_id = st->step_id;
	l.s->started = st->started;
	l.s->ended = st->ended;
	/* a step that ended before it was stored was announced then, and is in the store whole */
	l.s->announced = l.s->stored = st->ended != 0;
	if (st->executable[0] && !(l.s->executable = strdup(st->executable)))
		r = -ENOMEM;
	if (r >= 0)
		r = pdi_store_list_sites(d->store, st->name, load_site, &l);
	l.s->input_size = st->input_size;
	l.s->total_tasks = st->total_tasks;
	snprintf(l.s->build, sizeof(l.s->build), "%s", st->build);
	if (r >= 0)
		r = pdi_store_list_tasks(d->store, st->name, load_task, &l);
	if (r < 0) {
		unload(d, l.s);
		return r;
	}
	if (!l.s->ended && !pdi_step_running(l.s))
		l.s->ended = time(NULL); /* everything ended while we were away */
	l.s->nsites_stored = l.s->nsites;
	*ret = l.s;
	return 0;
}

static int restore_one(void *ctx, const struct pdi_store_step *st)
{
	struct pdi_daemon *d = ctx;
	struct pdi_step *s;
	int r = load_step(d, st, true, &s);

	if (r < 0) {
		log_warning_errno(r, "Cannot restore step %s, leaving it in the store: %m", st->name);
		return 0;
	}
	log_info("Restored step %s: %u tasks, %u still running", s->name, s->ntasks, pdi_step_running_tasks(s));
	if (s->ended)
		d->up->step_ended(d, s);
	return 0;
}

int pdi_persist_restore(struct pdi_daemon *d)
{
	if (!d->store)
		return 0;
	return pdi_store_list_steps(d->store, true, restore_one, d);
}

/* The stored step NAME's row: -ENOENT without a store or without that step. */
static int stored_step(struct pdi_daemon *d, const char *name, struct pdi_store_step *ret)
{
	if (!d->store)
		return -ENOENT;
	return pdi_store_get_step(d->store, name, ret);
}

int pdi_persist_owner(struct pdi_daemon *d, const char *name, uid_t *ret_uid)
{
	struct pdi_store_step st;
	int r = stored_step(d, name, &st);

	if (r < 0)
		return r;
	*ret_uid = st.uid;
	return 0;
}

int pdi_persist_load(struct pdi_daemon *d, const char *name, struct pdi_step **ret)
{
	struct pdi_store_step st;
	int r = stored_step(d, name, &st);

	if (r < 0)
		return r;
	return load_step(d, &st, false, ret);
}

struct rows {
	struct pdi_daemon *d;
	struct pdi_step_row *v;
	size_t n;
};

static int add_row(void *ctx, const struct pdi_store_step *st)
{
	struct rows *rs = ctx;
	struct pdi_step_row *v;

	if (pdi_registry_find_step(&rs->d->reg, st->name))
		return 0; /* in memory, and listed from there */
	v = realloc(rs->v, sizeof(*v) * (rs->n + 1));
	if (!v)
		return -ENOMEM;
	rs->v = v;
	v[rs->n] = (struct pdi_step_row){.name = strdup(st->name), .state = strdup(st->state), .uid = st->uid,
					 .job_id = st->job_id, .step_id = st->step_id, .ntasks = st->ntasks,
					 .started = st->started, .ended = st->ended};
	if (!v[rs->n].name || !v[rs->n].state) {
		free((char *)v[rs->n].name);
		free((char *)v[rs->n].state);
		return -ENOMEM;
	}
	rs->n++;
	return 0;
}

int pdi_persist_rows(struct pdi_daemon *d, struct pdi_step_row **ret, size_t *ret_n)
{
	struct rows rs = {.d = d};
	int r = d->store ? pdi_store_list_steps(d->store, false, add_row, &rs) : 0;

	if (r < 0) {
		pdi_persist_rows_free(rs.v, rs.n);
		return r;
	}
	*ret = rs.v;
	*ret_n = rs.n;
	return 0;
}

void pdi_persist_rows_free(struct pdi_step_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)v[i].name);
		free((char *)v[i].state);
	}
	free(v);
}

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
#include "log.h"
#include "model_io.h"
#include "mpi_funcs.h"
#include "persist.h"
#include "report.h"
#include "samples.h"
#include "site_totals.h"
#include "store.h"
#include "tracer.h"

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
	/* a hard cap beside retention: what users' jobs write (sites, models) cannot fill the disk */
	r = pdi_store_limit(d->store, (uint64_t)d->cfg.database_max_mib << 20);
	if (r < 0)
		log_warning_errno(r, "Cannot limit the database to %u MiB, ignoring: %s", d->cfg.database_max_mib,
				  pdi_store_errmsg(d->store));
	return 0;
}

void pdi_persist_close(struct pdi_daemon *d)
{
	pdi_store_close(d->store);
	d->store = NULL;
}

static const char *task_state_name(const struct pdi_task *t)
{
	return t->state == PDI_TASK_RUNNING ? "running" : "ended";
}

static int put_task(struct pdi_daemon *d, const struct pdi_step *s, const struct pdi_task *t)
{
	struct pdi_store_task st = {.rank = t->rank, .pid = t->pid, .start_ticks = t->start_ticks};
	void *blob = NULL;
	size_t len = 0;
	int r;

	r = pdi_model_encode(&t->model, &blob, &len);
	if (r < 0)
		return r;
	snprintf(st.state, sizeof(st.state), "%s", task_state_name(t));
	st.events_lost = t->state == PDI_TASK_RUNNING ? pdi_tracer_lost(d->tracer, t->pid) : t->lost;
	st.model = blob;
	st.model_len = len;
	snprintf(st.ended_in, sizeof(st.ended_in), "%s", t->ended_in ? t->ended_in : "");
	snprintf(st.boot_id, sizeof(st.boot_id), "%s", pdi_boot_id());
	r = pdi_store_put_task(d->store, s->name, &st);
	free(blob);
	return r;
}

/* The sites new since the last write: a site never changes once named, and a step may have
 * hundreds of thousands, which every checkpoint would rewrite. */
static int put_sites(struct pdi_daemon *d, const struct pdi_step *s)
{
	uint32_t from = s->nsites_stored <= s->nsites ? s->nsites_stored : 0, n = s->nsites - from;
	struct pdi_store_site *v;
	int r;

	if (!n)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct pdi_site *x = &s->sites[from + i];

		v[i] = (struct pdi_store_site){.index = from + i, .fn = x->fn, .name = x->name, .caller = x->caller,
					       .file = x->file, .line = x->line, .key = x->key};
	}
	r = pdi_store_put_sites(d->store, s->name, v, n);
	free(v);
	return r;
}

/* What each site of ended step S did, over its tasks here: what trends fit. */
static int put_site_totals(struct pdi_daemon *d, const struct pdi_step *s)
{
	struct pdi_site_total *t = calloc(s->nsites ? s->nsites : 1, sizeof(*t));
	struct pdi_store_site_total *v = calloc(s->nsites ? s->nsites : 1, sizeof(*v));
	int r;

	if (!t || !v) {
		free(t);
		free(v);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < s->ntasks; i++)
		pdi_site_totals_add(t, s->nsites, &s->tasks[i]->model);
	for (uint32_t i = 0; i < s->nsites; i++)
		v[i] = (struct pdi_store_site_total){.index = i, .calls = t[i].calls, .bytes = t[i].bytes,
						     .time_ns = t[i].time_ns};
	r = pdi_store_put_site_totals(d->store, s->name, v, s->nsites);
	free(t);
	free(v);
	return r;
}

/* An ended step's report, verdict and site totals, and its place in the site store's outbox. */
static int write_end(struct pdi_daemon *d, struct pdi_step *s, struct pdi_store_step *st)
{
	char *json = NULL, *summary = NULL;
	int r = pdi_report_build(d, s, s->uid, &json, &summary);

	if (r >= 0)
		r = pdi_store_put_report(d->store, s->name, json);
	if (r >= 0) {
		pdi_report_verdict(json, st->verdict, sizeof(st->verdict));
		r = pdi_store_put_step(d->store, st);
	}
	if (r >= 0)
		r = put_site_totals(d, s);
	if (r >= 0 && d->cfg.site_store)
		r = pdi_store_set_site_pending(d->store, s->name, true);
	free(json);
	free(summary);
	return r;
}

static int write_step(struct pdi_daemon *d, struct pdi_step *s)
{
	struct pdi_store_step st = {.job_id = s->job_id, .step_id = s->step_id, .uid = s->uid,
				    .started = s->started, .ended = s->ended, .ntasks = s->ntasks,
				    .input_size = s->input_size, .total_tasks = s->total_tasks};
	int r;

	snprintf(st.name, sizeof(st.name), "%s", s->name);
	snprintf(st.state, sizeof(st.state), "%s", s->ended ? "ended" : "running");
	snprintf(st.executable, sizeof(st.executable), "%s", s->executable ? s->executable : "");
	snprintf(st.build, sizeof(st.build), "%s", s->build);
	r = pdi_store_put_step(d->store, &st);
	if (r >= 0)
		r = put_sites(d, s);
	for (unsigned i = 0; i < s->ntasks && r >= 0; i++) {
		struct pdi_task *t = s->tasks[i];

		/* an ended task written once has nothing new */
		if (t->stored_final)
			continue;
		r = put_task(d, s, t);
		t->store_pending = r >= 0 && t->state == PDI_TASK_ENDED;
	}
	/* registered tasks still to come, and the commands of pdimon run: no model, but a
	 * restart must watch them again */
	for (unsigned i = 0; i < d->reg.nwatches && r >= 0; i++) {
		const struct pdi_watch *w = &d->reg.watches[i];
		struct pdi_store_task st = {.rank = w->rank, .pid = w->root, .start_ticks = w->ident.start_ticks};

		if (w->step != s)
			continue;
		snprintf(st.state, sizeof(st.state), "watched");
		snprintf(st.boot_id, sizeof(st.boot_id), "%s", pdi_boot_id());
		r = pdi_store_put_task(d->store, s->name, &st);
	}
	if (r >= 0 && s->ended)
		r = write_end(d, s, &st);
	return r;
}

int pdi_persist_step(struct pdi_daemon *d, struct pdi_step *s)
{
	int r;

	if (!d->store)
		return 0;
	r = pdi_store_begin(d->store);
	if (r >= 0)
		r = write_step(d, s);
	if (r >= 0)
		r = pdi_store_commit(d->store);
	/* what this transaction wrote is stored only once it committed */
	for (unsigned i = 0; i < s->ntasks; i++) {
		s->tasks[i]->stored_final |= r >= 0 && s->tasks[i]->store_pending;
		s->tasks[i]->store_pending = false;
	}
	if (r >= 0)
		s->nsites_stored = s->nsites;
	if (r < 0) {
		pdi_store_rollback(d->store);
		return log_error_errno(r, "Cannot store step %s: %s; what was stored before is intact",
				       s->name, r == -ENOSPC ? "the disk (or the database's size limit) is full"
							     : pdi_store_errmsg(d->store));
	}
	return 0;
}

void pdi_persist_checkpoint(struct pdi_daemon *d)
{
	(void)pdi_tracer_drain(d->tracer);
	for (unsigned i = 0; i < d->reg.nsteps; i++)
		if (pdi_step_running(d->reg.steps[i]))
			(void)pdi_persist_step(d, d->reg.steps[i]);
}

void pdi_persist_expire(struct pdi_daemon *d)
{
	int n;

	if (!d->store)
		return;
	n = pdi_store_expire(d->store, time(NULL), (int64_t)d->cfg.retention_days * 86400,
			     (uint64_t)d->cfg.retention_mib << 20);
	if (n > 0)
		log_info("Expired %d stored steps", n);
	else if (n < 0)
		log_warning_errno(n, "Cannot expire old steps, ignoring: %s", pdi_store_errmsg(d->store));
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

static int load_step(struct pdi_daemon *d, const struct pdi_store_step *st, bool resume, struct pdi_step **ret)
{
	struct load l = {.d = d, .resume = resume};
	int r;

	r = pdi_registry_get_step(&d->reg, st->name, st->uid, &l.s);
	if (r < 0)
		return r;
	l.s->job_id = st->job_id;
	l.s->step_id = st->step_id;
	l.s->started = st->started;
	l.s->ended = st->ended;
	l.s->announced = st->ended != 0;
	l.s->input_size = st->input_size;
	l.s->total_tasks = st->total_tasks;
	snprintf(l.s->build, sizeof(l.s->build), "%s", st->build);
	if (st->executable[0])
		l.s->executable = strdup(st->executable);
	r = pdi_store_list_sites(d->store, st->name, load_site, &l);
	if (r >= 0)
		r = pdi_store_list_tasks(d->store, st->name, load_task, &l);
	if (r < 0)
		return r;
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
		pdi_step_ended(d, s);
	return 0;
}

int pdi_persist_restore(struct pdi_daemon *d)
{
	if (!d->store)
		return 0;
	return pdi_store_list_steps(d->store, true, restore_one, d);
}

int pdi_persist_load(struct pdi_daemon *d, const char *name, struct pdi_step **ret)
{
	struct pdi_store_step st;
	int r;

	if (!d->store)
		return -ENOENT;
	r = pdi_store_get_step(d->store, name, &st);
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

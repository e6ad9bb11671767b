/* SPDX-License-Identifier: GPL-2.0-only */
/* report.c -- a step's report and analysis, made on a worker (worker.h): from a copy of this
 * node's view of the step (snapshot.h) with its live stacks, or from the views gathered from
 * all of its nodes up a tree rooted here (the first node builds the step's report, any node
 * answers `pdimon analyze`, a node outside the step asks Slurm for its nodes first), then
 * analysed and rendered by render_json.c and render_text.c, or a suspected hang judged on it
 * (health_view.h). The loop only takes the copy. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "daemon.h"
#include "gather.h"
#include "gather_step.h"
#include "health_view.h"
#include "log.h"
#include "report.h"
#include "slurm_nodes.h"
#include "samples.h"
#include "snapshot.h"
#include "store.h"
#include "view_local.h"
#include "worker.h"

#define SAMPLES_BUSY_MS 5000 /* sample runs are worth waiting for a locked database, off the loop */
#define END_REGATHER_NS (200 * 1000000L) /* between two gathers of a step's end */

struct report_job {
	struct pdi_job job;
	struct pdi_daemon *d;          /* for done() on the loop only */
	pdi_report_fn done;
	void *ctx;
	/* what to make, all copies */
	enum pdi_report_what what;
	char format[8];
	char *name;
	uint32_t job_id, step_id;
	uid_t uid;
	struct pdi_snapshot *snap;     /* this node's part; NULL when it has none */
	bool gather;                   /* from all of NODES (this node roots the tree) */
	bool ask_slurm;                /* NODES from Slurm first */
	char **nodes;                  /* the step's nodes in Slurm's order */
	unsigned nnodes;
	uint32_t expected_tasks;       /* all the step's tasks, as Slurm counts them; 0: unknown */
	struct pdi_gather *g;          /* its thread-safe calls only */
	char *node_name, *database;
	unsigned sample_runs;          /* at most, from the store (pdimond.conf: sample_runs) */
	unsigned fanout, level_ms;
	struct pdi_health_judge *judge; /* PDI_HEALTH: the suspecting judge's copy */
	struct pdi_report_result res;
};

static void failf(struct pdi_report_result *res, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void failf(struct pdi_report_result *res, int status, const char *fmt, ...)
{
	va_list ap;

	res->status = status;
	va_start(ap, fmt);
	(void)vsnprintf(res->why, sizeof(res->why), fmt, ap);
	va_end(ap);
}

static void free_nodes(char **nodes, unsigned n)
{
	for (unsigned i = 0; nodes && i < n; i++)
		free(nodes[i]);
	free(nodes);
}

static void job_free(struct report_job *j)
{
	pdi_snapshot_free(j->snap);
	free_nodes(j->nodes, j->nnodes);
	free(j->name);
	free(j->node_name);
	free(j->database);
	free(j->judge);
	pdi_report_result_done(&j->res);
	free(j);
}

/* The view of the step on J's nodes, gathered up a tree rooted here (DESIGN "Across nodes").
 * This node may be one of them or not. */
static int gather_view(struct report_job *j, struct pdi_view *ret)
{
	const char **tree = calloc(j->nnodes + 2, sizeof(*tree));
	struct pdi_gather_result self = {0}, res = {0};
	unsigned n = 0, members;
	int r = 0;

	if (!tree)
		return -ENOMEM;
	/* this node roots the tree: position 0, then the others in Slurm's order */
	tree[n++] = j->node_name;
	for (unsigned i = 0; i < j->nnodes; i++)
		if (strcmp(j->nodes[i], j->node_name))
			tree[n++] = j->nodes[i];
	members = n - (n > j->nnodes);
	/* a node without the step roots the gather too: its own part is empty */
	if (j->snap)
		r = pdi_gather_step_part(j->g, j->snap, 0, &self);
	if (r == 0)
		r = pdi_gather_run(j->g, j->job_id, j->step_id, j->name, j->uid, tree, n, j->fanout, j->level_ms, &self,
				   &res);
	if (r == 0) {
		r = pdi_view_from_gather(&res, members, ret);
		pdi_gather_result_done(&res);
	}
	if (r == 0)
		ret->expected_tasks = j->expected_tasks;
	if (r < 0)
		log_warning("Step %s: gathering from its %u nodes failed: %s", j->name, members, strerror(-r));
	pdi_gather_result_done(&self);
	free(tree);
	return r;
}

/* The gathered view; for the report of this node's end, again while other nodes' tasks are
 * still seen running (they end a moment later, or their pdimonds see it later), for up to
 * one gather level: the report of a step's end is the whole step's end. */
static int gather_view_at_end(struct report_job *j, struct pdi_view *ret)
{
	uint64_t give_up = pdi_now_ns() + (uint64_t)j->level_ms * 1000000ull;
	bool ended_here = j->what == PDI_REPORT && j->snap && !j->snap->view.running;
	int r;

	for (;;) {
		r = gather_view(j, ret);
		/* held hung by this node's judge: the snapshot's view says so (pdi_view_mark_hung()
		 * on the loop), and the whole step's with it */
		if (r == 0 && j->snap && j->snap->view.hung && pdi_view_running(ret)) {
			ret->hung = true;
			ret->hung_for_ns = j->snap->view.hung_for_ns;
		}
		if (r < 0 || !ended_here || !pdi_view_running(ret) || pdi_now_ns() >= give_up)
			return r;
		pdi_view_done(ret);
		(void)nanosleep(&(struct timespec){0, END_REGATHER_NS}, NULL);
	}
}

static int ask_slurm(struct report_job *j)
{
	int r = pdi_slurm_step_nodes(j->job_id, j->step_id, j->level_ms, &j->nodes, &j->nnodes);

	if (r == -ETIMEDOUT)
		failf(&j->res, r, "Slurm did not say within %u ms which nodes run step %s (is slurmctld up?)",
		      j->level_ms, j->name);
	else if (r == -ENOMEM)
		failf(&j->res, r, "out of memory");
	else if (r < 0)
		failf(&j->res, -ENOENT, "Slurm knows no running step %s", j->name);
	return r;
}

/* The sample runs of J's step, for a view of this node's part only (the store holds this
 * node's parts of earlier steps; runs fetched from the site store travel with the snapshot),
 * read on a connection of the job's own. */
static void load_samples(struct report_job *j, struct pdi_samples *ret)
{
	struct pdi_store *store = NULL;

	if (!j->snap->step->executable || !j->sample_runs)
		return;
	if (j->database && pdi_store_attach(j->database, SAMPLES_BUSY_MS, &store) < 0)
		store = NULL; /* the analysis goes on without the local store's runs, and says so */
	if (store || j->snap->step->site_samples)
		(void)pdi_samples_load(store, j->snap->step, j->sample_runs, ret);
	pdi_store_close(store);
}

/* PDI_HEALTH: the suspected hang judged on A's view, and its line, into J's result. */
static int health_confirm(struct report_job *j, const struct pdi_analysis *a)
{
	char line[800];
	int r = pdi_health_confirm(j->judge, a, &j->res.health, line, sizeof(line));

	if (r == 0 && !(j->res.text = strdup(line)))
		r = -ENOMEM;
	return r;
}

/* The analysis of V rendered into J's result. */
static void analyse(struct report_job *j, const struct pdi_view *v)
{
	const struct pdi_model *const **runs = NULL;
	struct pdi_analysis_samples rows = {0};
	struct pdi_samples samples = {0};
	struct pdi_analysis a;
	int r;

	/* the sample runs tell normal from abnormal phases: nothing a hang's line says */
	if (j->snap && v == &j->snap->view && j->what != PDI_HEALTH)
		load_samples(j, &samples);
	if (samples.nruns && (runs = calloc(samples.nruns, sizeof(*runs)))) {
		for (unsigned k = 0; k < samples.nruns; k++)
			runs[k] = samples.runs[k].row;
		rows = (struct pdi_analysis_samples){.rows = runs, .nruns = samples.nruns};
	}
	r = pdi_analysis_build(v, &rows, &a);
	free(runs);
	pdi_samples_done(&samples);
	if (r < 0)
		return failf(&j->res, r, "cannot analyse step %s: %s", j->name, strerror(-r));
	r = j->what == PDI_HEALTH ? health_confirm(j, &a) : pdi_report_render(&a, j->what, j->format, &j->res);
	pdi_analysis_done(&a);
	if (r < 0)
		failf(&j->res, r, "out of memory");
}

static void job_run(struct pdi_job *pj)
{
	struct report_job *j = pdi_job_of(pj, struct report_job, job);
	struct pdi_view gathered = {0};
	const struct pdi_view *v = NULL;
	int r;

	if (j->ask_slurm && ask_slurm(j) < 0)
		return;
	if (j->snap && (r = pdi_snapshot_walk(j->snap)) < 0)
		return failf(&j->res, r, "out of memory");
	/* without the others' parts (the gather could not run at all), this node's own */
	if (j->gather && gather_view_at_end(j, &gathered) == 0)
		v = &gathered;
	else if (j->snap)
		v = &j->snap->view;
	if (!v)
		return failf(&j->res, -EIO, "cannot gather step %s from its nodes", j->name);
	/* no node gave its part: none has the step, or none lets the caller read it */
	if (j->ask_slurm && v->nodes_answered == 0)
		failf(&j->res, -ENOENT, "no node of step %s has it for this user", j->name);
	else
		analyse(j, v);
	pdi_view_done(&gathered);
}

static void job_done(struct pdi_job *pj, bool cancelled)
{
	struct report_job *j = pdi_job_of(pj, struct report_job, job);
	struct pdi_step *s = pdi_registry_find_step(&j->d->reg, j->name);

	if (cancelled) {
		pdi_report_result_done(&j->res);
		failf(&j->res, -ECANCELED, "pdimond is stopping");
	}
	/* what pdimond judged while it ran: when it first looked hung, when it was cancelled */
	if (j->what == PDI_REPORT && j->res.status == 0 && s && j->d->up->step_health_amend_report(s, &j->res.text) < 0) {
		pdi_report_result_done(&j->res);
		failf(&j->res, -ENOMEM, "out of memory");
	}
	j->done(j->d, j->ctx, &j->res);
	job_free(j);
}

static int job_new(struct pdi_daemon *d, const char *name, uid_t uid, enum pdi_report_what what, const char *format,
		   pdi_report_fn done, void *ctx, struct report_job **ret)
{
	struct report_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->job = (struct pdi_job){.run = job_run, .done = job_done};
	j->d = d;
	j->done = done;
	j->ctx = ctx;
	j->what = what;
	snprintf(j->format, sizeof(j->format), "%s", format ? format : "json");
	j->uid = uid;
	j->g = d->gather;
	j->fanout = d->cfg.gather_fanout;
	j->level_ms = d->cfg.gather_timeout_ms;
	j->name = strdup(name);
	j->node_name = d->cfg.node_name ? strdup(d->cfg.node_name) : NULL;
	j->database = d->store && d->cfg.database ? strdup(d->cfg.database) : NULL;
	j->sample_runs = d->cfg.sample_runs;
	if (!j->name || (d->cfg.node_name && !j->node_name) || (d->store && d->cfg.database && !j->database)) {
		job_free(j);
		return -ENOMEM;
	}
	*ret = j;
	return 0;
}

static int submit(struct pdi_daemon *d, struct report_job *j)
{
	int r = pdi_workers_submit(d->workers, &j->job);

	if (r < 0)
		job_free(j);
	return r;
}

/* Whether this node builds the whole step's report: the first of its nodes does (it is where
 * srun asks, and one gather per step end is enough); the others their own part. */
static bool reports_for_all(const struct pdi_daemon *d, const struct pdi_step *s)
{
	return s->nnodes > 1 && d->cfg.node_name && !strcmp(s->nodes[0], d->cfg.node_name);
}

/* WHAT of S for UID on a worker; JUDGE: PDI_HEALTH's, copied. */
static int start(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, enum pdi_report_what what, const char *format,
		 const struct pdi_health_judge *judge, pdi_report_fn done, void *ctx)
{
	struct report_job *j;
	int r = job_new(d, s->name, uid, what, format, done, ctx, &j);

	if (r < 0)
		return r;
	if (judge) {
		if (!(j->judge = malloc(sizeof(*j->judge)))) {
			job_free(j);
			return -ENOMEM;
		}
		*j->judge = *judge;
	}
	j->job_id = s->job_id;
	j->step_id = s->step_id;
	j->expected_tasks = s->total_tasks;
	j->gather = s->nnodes > 1 && d->gather && j->node_name &&
		    (what == PDI_ANALYSIS || what == PDI_HEALTH || reports_for_all(d, s));
	if (j->gather) {
		j->nodes = calloc(s->nnodes, sizeof(*j->nodes));
		for (; j->nodes && j->nnodes < s->nnodes; j->nnodes++)
			if (!(j->nodes[j->nnodes] = strdup(s->nodes[j->nnodes])))
				break;
		if (j->nnodes < s->nnodes) {
			job_free(j);
			return -ENOMEM;
		}
	}
	r = pdi_snapshot_take(d, s, &j->snap);
	if (r < 0) {
		job_free(j);
		return r;
	}
	return submit(d, j);
}

int pdi_report_start(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, enum pdi_report_what what,
		     const char *format, pdi_report_fn done, void *ctx)
{
	return start(d, s, uid, what, format, NULL, done, ctx);
}

int pdi_report_start_elsewhere(struct pdi_daemon *d, uint32_t job, uint32_t step, uid_t uid, const char *format,
			       pdi_report_fn done, void *ctx)
{
	struct report_job *j;
	char name[32];
	int r;

	if (!d->gather || !d->cfg.node_name)
		return -ENOENT;
	snprintf(name, sizeof(name), "%u.%u", job, step);
	r = job_new(d, name, uid, PDI_ANALYSIS, format, done, ctx, &j);
	if (r < 0)
		return r;
	j->job_id = job;
	j->step_id = step;
	j->gather = j->ask_slurm = true;
	return submit(d, j);
}

int pdi_report_start_health(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_health_judge *judge,
			    pdi_report_fn done, void *ctx)
{
	return start(d, s, s->uid, PDI_HEALTH, NULL, judge, done, ctx);
}

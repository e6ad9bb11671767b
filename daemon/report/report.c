/* SPDX-License-Identifier: GPL-2.0-only */
/* report.c -- a step's report and analysis: from this node's view of the step, or from the
 * view gathered from all of its nodes (the first node builds the step's report, any node
 * answers `pdimon analyze`), rendered by render_json.c and render_text.c; an ended step's
 * report is built once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "gather.h"
#include "log.h"
#include "render.h"
#include "report.h"
#include "samples.h"
#include "slurm_nodes.h"
#include "view_local.h"

#define PDI_SAMPLE_RUNS 3 /* earlier runs taken as AutomaDeD's sample runs */

/* The view of step JOB.STEP (NAME) on NODES, gathered up a tree rooted here (DESIGN "Across
 * nodes"), for UID. This node may be one of NODES or not. */
static int gather_view(struct pdi_daemon *d, uint32_t job, uint32_t step, const char *name, uid_t uid,
		       char *const *nodes, unsigned nnodes, uint32_t expected_tasks, struct pdi_view *v)
{
	const char **tree = calloc(nnodes + 2, sizeof(*tree));
	struct pdi_gather_result res = {0};
	unsigned n = 0, members = 0;
	int r;

	if (!tree)
		return -ENOMEM;
	/* this node roots the tree: position 0, then the others in Slurm's order */
	tree[n++] = d->cfg.node_name;
	for (unsigned i = 0; i < nnodes; i++)
		if (strcmp(nodes[i], d->cfg.node_name))
			tree[n++] = nodes[i];
	members = n - (n > nnodes);
	r = pdi_gather_run(d->gather, job, step, name, uid, tree, n, 0, &res);
	if (r == 0) {
		r = pdi_view_from_gather(&res, members, v);
		pdi_gather_result_done(&res);
	}
	if (r == 0)
		v->expected_tasks = expected_tasks;
	if (r < 0)
		log_warning("Step %s: gathering from its %u nodes failed: %s", name, members, strerror(-r));
	free(tree);
	return r;
}

/* The analysis of step S for UID: with GATHER and more than one node, of the view gathered
 * from all of them; otherwise (or when the gather could not run at all) of this node's, with
 * earlier runs of its program from this node's store as sample runs (the store holds this
 * node's part of earlier steps: sample runs of a one-node view only). */
static int analyse(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, bool gather, struct pdi_view *v,
		   struct pdi_analysis *a)
{
	struct pdi_samples samples = {0};
	struct pdi_analysis_samples rows = {0};
	const struct pdi_model *const **runs = NULL;
	int r = -ENOENT;

	if (gather && s->nnodes > 1 && d->gather && d->cfg.node_name &&
	    (r = gather_view(d, s->job_id, s->step_id, s->name, uid, s->nodes, s->nnodes, s->total_tasks, v)) == 0)
		pdi_view_mark_hung(s, v);
	if (r < 0) {
		if ((r = pdi_view_local(d, s, v)) < 0)
			return r;
		if (d->store && s->executable && pdi_samples_load(d->store, s, PDI_SAMPLE_RUNS, &samples) == 0 &&
		    samples.nruns && (runs = calloc(samples.nruns, sizeof(*runs)))) {
			for (unsigned k = 0; k < samples.nruns; k++)
				runs[k] = samples.runs[k].row;
			rows = (struct pdi_analysis_samples){.rows = runs, .nruns = samples.nruns};
		}
	}
	r = pdi_analysis_build(v, &rows, a);
	free(runs);
	pdi_samples_done(&samples);
	if (r < 0)
		pdi_view_done(v);
	return r;
}

/* Whether this node builds the whole step's report: the first of its nodes does (it is where
 * srun asks, and one gather per step end is enough); the others their own part. */
static bool reports_for_all(const struct pdi_daemon *d, const struct pdi_step *s)
{
	return s->nnodes > 1 && d->cfg.node_name && !strcmp(s->nodes[0], d->cfg.node_name);
}

static int build_once(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, char **ret_json, char **ret_summary)
{
	struct pdi_analysis a;
	struct pdi_view v;
	int r = analyse(d, s, uid, reports_for_all(d, s), &v, &a);

	if (r < 0)
		return r;
	*ret_json = pdi_render_json(&a);
	*ret_summary = pdi_render_summary(&a);
	/* what pdimond judged while it ran: when it first looked hung, when it was cancelled */
	if (*ret_json && pdi_step_health_amend_report(s, ret_json) < 0) {
		free(*ret_json);
		*ret_json = NULL;
	}
	pdi_analysis_done(&a);
	pdi_view_done(&v);
	if (!*ret_json || !*ret_summary) {
		free(*ret_json);
		free(*ret_summary);
		return -ENOMEM;
	}
	return 0;
}

int pdi_report_build(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, char **ret_json, char **ret_summary)
{
	int r;

	/* an ended step's report is built once: srun polls for it, and the analysis is not free
	 * (it is built for the step's owner: whoever may read the step reads the same report) */
	if (!s->report_json && !pdi_step_running(s)) {
		r = build_once(d, s, s->uid, &s->report_json, &s->report_summary);
		if (r < 0)
			return r;
	}
	if (s->report_json) {
		*ret_json = strdup(s->report_json);
		*ret_summary = strdup(s->report_summary);
		if (!*ret_json || !*ret_summary) {
			free(*ret_json);
			free(*ret_summary);
			return -ENOMEM;
		}
		return 0;
	}
	return build_once(d, s, uid, ret_json, ret_summary);
}

static char *render(const struct pdi_analysis *a, const char *format)
{
	return !strcmp(format, "json") ? pdi_render_json(a) : !strcmp(format, "dot") ? pdi_render_dot(a) : pdi_render_text(a);
}

int pdi_report_analyze_elsewhere(struct pdi_daemon *d, uint32_t job, uint32_t step, uid_t uid, const char *format,
				 char **ret_text)
{
	struct pdi_analysis a;
	struct pdi_view v;
	char name[32], **nodes;
	unsigned n;
	int r;

	if (!d->gather)
		return -ENOENT;
	snprintf(name, sizeof(name), "%u.%u", job, step);
	r = pdi_slurm_step_nodes(job, step, d->cfg.gather_timeout_ms, &nodes, &n);
	if (r < 0)
		return r == -ETIMEDOUT ? r : -ENOENT;
	r = gather_view(d, job, step, name, uid, nodes, n, 0, &v);
	for (unsigned i = 0; i < n; i++)
		free(nodes[i]);
	free(nodes);
	if (r < 0)
		return r;
	/* no node gave its part: none has the step, or none lets UID read it */
	if (v.nodes_answered == 0) {
		pdi_view_done(&v);
		return -ENOENT;
	}
	if ((r = pdi_analysis_build(&v, NULL, &a)) == 0) {
		*ret_text = render(&a, format);
		pdi_analysis_done(&a);
		r = *ret_text ? 0 : -ENOMEM;
	}
	pdi_view_done(&v);
	return r;
}

int pdi_report_analyze(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, const char *format, char **ret_text)
{
	struct pdi_analysis a;
	struct pdi_view v;
	char *summary;
	int r;

	/* the report is the whole step's on its first node, and on a step of one node */
	if (!strcmp(format, "json") && (s->nnodes <= 1 || reports_for_all(d, s))) {
		r = pdi_report_build(d, s, uid, ret_text, &summary);
		if (r == 0)
			free(summary);
		return r;
	}
	/* asked for by a user: the whole step, from whichever of its nodes */
	if ((r = analyse(d, s, uid, true, &v, &a)) < 0)
		return r;
	*ret_text = render(&a, format);
	pdi_analysis_done(&a);
	pdi_view_done(&v);
	return *ret_text ? 0 : -ENOMEM;
}

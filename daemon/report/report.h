/* SPDX-License-Identifier: GPL-2.0-only */
/* report.h -- a step's report and analysis: what each task did, where it was, and where the
 * step went wrong. Made off the loop (worker.h), from a copy of this node's part of the step
 * taken on the loop, or from the parts gathered from all of its nodes, and rendered. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "health.h"

struct pdi_daemon;
struct pdi_step;

struct pdi_report_result {
	int status;     /* 0, or a negative errno that WHY says in a line */
	char *text;     /* malloc'd: a report's JSON, or the analysis in the format asked */
	char *summary;  /* malloc'd: a report's few lines for srun, each "pdimon: ..."; NULL else */
	char why[256];
	struct pdi_health_verdict health; /* PDI_HEALTH: the verdict over all of the step's tasks
					     (TEXT: what its analysis found, in words) */
};

/* Called on the loop when the job is over (also at shutdown, with -ECANCELED); it may take
 * RES's strings (setting them NULL), the rest is freed after it. */
typedef void (*pdi_report_fn)(struct pdi_daemon *d, void *ctx, struct pdi_report_result *res);

enum pdi_report_what {
	PDI_REPORT,   /* the JSON report and its summary: the whole step's on its first node
			 (gathered from all its nodes), this node's own part on the others */
	PDI_ANALYSIS, /* the analysis in a format (json, text, dot): the whole step's, from
			 whichever of its nodes */
	PDI_HEALTH,   /* a hang this node suspected, judged on the whole step's view, and the
			 line that tells it: pdi_report_start_health() */
};

/* Start WHAT of step S for UID, FORMAT for an analysis: S is copied now, the rest runs on a
 * worker, and DONE(D, CTX, result) follows on the loop. 0; or -EBUSY (too much work waits),
 * -ENOMEM, and DONE is not called. */
int pdi_report_start(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, enum pdi_report_what what,
		     const char *format, pdi_report_fn done, void *ctx);

/* The analysis of Slurm step JOB.STEP, which has no task on this node: on a worker, its
 * nodes asked of Slurm (within gather_timeout_ms), then its parts gathered from them. The
 * result's status: -ENOENT when Slurm knows no such running step or no node gives its part
 * to UID, -ETIMEDOUT when Slurm did not answer in time. Returns as pdi_report_start(), and
 * -ENOENT when this node gathers nothing (no peer port). */
int pdi_report_start_elsewhere(struct pdi_daemon *d, uint32_t job, uint32_t step, uid_t uid, const char *format,
			       pdi_report_fn done, void *ctx);

/* The hang S's first node suspected, judged on a worker with JUDGE's record and parameters
 * (copied) on the view of the whole step (gathered from all of its nodes; this node's alone
 * when S has one node or the gather could not run), for S's owner: the result's health and
 * text (pdi_health_confirm()). Returns as pdi_report_start(). */
int pdi_report_start_health(struct pdi_daemon *d, struct pdi_step *s, const struct pdi_health_judge *judge,
			    pdi_report_fn done, void *ctx);

void pdi_report_result_done(struct pdi_report_result *res);

struct pdi_analysis;
/* A's rendering into RES: WHAT PDI_REPORT, its JSON and summary; PDI_ANALYSIS, FORMAT (json,
 * text, dot). RES's text and summary are set together, or (-ENOMEM) not touched at all. */
int pdi_report_render(const struct pdi_analysis *a, enum pdi_report_what what, const char *format,
		      struct pdi_report_result *res);

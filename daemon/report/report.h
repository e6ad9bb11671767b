/* SPDX-License-Identifier: GPL-2.0-only */
/* report.h -- a step's report and analysis: what each task did, where it was, and where the
 * step went wrong. Made off the loop (worker.h), from a copy of this node's part of the step
 * taken on the loop, or from the parts gathered from all of its nodes, and rendered. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "report_render.h"

struct pdi_daemon;
struct pdi_step;

/* Called on the loop when the job is over (also at shutdown, with -ECANCELED); it may take
 * RES's strings (setting them NULL), the rest is freed after it. */
typedef void (*pdi_report_fn)(struct pdi_daemon *d, void *ctx, struct pdi_report_result *res);

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

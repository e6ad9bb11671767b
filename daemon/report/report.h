/* SPDX-License-Identifier: GPL-2.0-only */
/* report.h -- a step's report and analysis, rendered: what each task did, where it was, and
 * where the step went wrong. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct pdi_daemon;
struct pdi_step;

/* The full report as JSON, and the few lines srun prints: what was found, where, which
 * ranks, for UID (whose uid a gather from the step's other nodes is made for). Both
 * malloc'd. 0, or -ENOMEM. */
int pdi_report_build(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, char **ret_json, char **ret_summary);

/* `pdimon analyze`: the report's JSON ("json"), the full analysis as text ("text"), or
 * the progress dependence graph and the prefix tree as Graphviz ("dot"). 0, or -ENOMEM. */
int pdi_report_analyze(struct pdi_daemon *d, struct pdi_step *s, uid_t uid, const char *format, char **ret_text);

/* The same for Slurm step JOB.STEP that has no task on this node: its nodes from Slurm, its
 * parts gathered from them. -ENOENT when Slurm knows no such running step, or no node gives
 * its part to UID; -ETIMEDOUT, -ENOMEM. */
int pdi_report_analyze_elsewhere(struct pdi_daemon *d, uint32_t job, uint32_t step, uid_t uid, const char *format,
				 char **ret_text);

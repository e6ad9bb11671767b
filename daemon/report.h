/* SPDX-License-Identifier: GPL-2.0-only */
/* report.h -- a step's report: what each task did and where it was when the step ended. */
#pragma once

struct pdi_daemon;
struct pdi_step;

/* The full report as JSON, and the few lines srun prints: what was found, where, which
 * ranks. Both malloc'd. 0, or -ENOMEM. */
int pdi_report_build(struct pdi_daemon *d, struct pdi_step *s, char **ret_json, char **ret_summary);

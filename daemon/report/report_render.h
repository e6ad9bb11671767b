/* SPDX-License-Identifier: GPL-2.0-only */
/* report_render.h -- what a report job gives back, and an analysis rendered into it
 * (report_render.c). */
#pragma once

#include "health.h"

struct pdi_report_result {
	int status;     /* 0, or a negative errno that WHY says in a line */
	char *text;     /* malloc'd: a report's JSON, or the analysis in the format asked */
	char *summary;  /* malloc'd: a report's few lines for srun, each "pdimon: ..."; NULL else */
	char why[256];
	struct pdi_health_verdict health; /* PDI_HEALTH: the verdict over all of the step's tasks
					     (TEXT: what its analysis found, in words) */
};

enum pdi_report_what {
	PDI_REPORT,   /* the JSON report and its summary: the whole step's on its first node
			 (gathered from all its nodes), this node's own part on the others */
	PDI_ANALYSIS, /* the analysis in a format (json, text, dot): the whole step's, from
			 whichever of its nodes */
	PDI_HEALTH,   /* a hang this node suspected, judged on the whole step's view, and the
			 line that tells it: pdi_report_start_health() */
};

void pdi_report_result_done(struct pdi_report_result *res);

struct pdi_analysis;
/* A's rendering into RES: WHAT PDI_REPORT, its JSON and summary; PDI_ANALYSIS, FORMAT (json,
 * text, dot). RES's text and summary are set together, or (-ENOMEM) not touched at all. */
int pdi_report_render(const struct pdi_analysis *a, enum pdi_report_what what, const char *format,
		      struct pdi_report_result *res);

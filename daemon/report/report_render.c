/* SPDX-License-Identifier: GPL-2.0-only */
/* report_render.c -- a report job's result: an analysis rendered into it, all or nothing: the
 * outputs are set together on success and untouched on failure (pdimon's review found a
 * report left pointing at freed memory when the second of two renderings failed). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "report_render.h"

void pdi_report_result_done(struct pdi_report_result *res)
{
	free(res->text);
	free(res->summary);
	res->text = res->summary = NULL;
}

int pdi_report_render(const struct pdi_analysis *a, enum pdi_report_what what, const char *format,
		      struct pdi_report_result *res)
{
	char *text, *summary = NULL;

	if (what == PDI_REPORT || !strcmp(format, "json"))
		text = pdi_render_json(a);
	else if (!strcmp(format, "dot"))
		text = pdi_render_dot(a);
	else
		text = pdi_render_text(a);
	if (what == PDI_REPORT)
		summary = pdi_render_summary(a);
	if (!text || (what == PDI_REPORT && !summary)) {
		free(text);
		free(summary);
		return -ENOMEM;
	}
	res->text = text;
	res->summary = summary;
	return 0;
}

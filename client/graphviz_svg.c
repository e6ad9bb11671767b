/* SPDX-License-Identifier: GPL-2.0-only */
/* graphviz_svg.c -- the HTML pages' graphs laid out by Graphviz's dot into SVG: the one place
 * libgvc is called. It runs in the process that writes the page (the CLI, or the CLI that srun
 * starts), never in pdimond: a layout may take a while and Graphviz's plugins are loaded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <graphviz/gvc.h>

#include "graphviz_svg.h"

/* Graphviz's own messages, which it would print as it goes: kept for one line of ours. */
static char last_error[256];

static int keep_error(char *msg)
{
	size_t n = strcspn(msg, "\n");

	if (!last_error[0])
		snprintf(last_error, sizeof(last_error), "%.*s", (int)n, msg);
	return 0;
}

struct GVC_s *pdi_graphviz_open(void)
{
	agseterr(AGERR);
	agseterrf(keep_error);
	return gvContext();
}

void pdi_graphviz_close(struct GVC_s *gvc)
{
	if (gvc)
		(void)gvFreeContext(gvc);
}

int pdi_graphviz_svg(void *ctx, struct Agraph_s *g, char **ret_svg)
{
	GVC_t *gvc = ctx;
	unsigned len = 0;
	char *data = NULL, *svg;

	last_error[0] = '\0';
	if (!gvc)
		return -ENOTSUP;
	if (gvLayout(gvc, g, "dot") != 0) {
		fprintf(stderr, "pdimon: Graphviz could not lay a graph out: %s\n",
			last_error[0] ? last_error : "its dot layout plugin is missing");
		return -EIO;
	}
	if (gvRenderData(gvc, g, "svg", &data, &len) != 0 || !data) {
		fprintf(stderr, "pdimon: Graphviz could not render a graph as SVG: %s\n",
			last_error[0] ? last_error : "its core plugin is missing");
		(void)gvFreeLayout(gvc, g);
		return -EIO;
	}
	svg = strndup(data, len);
	gvFreeRenderData(data);
	(void)gvFreeLayout(gvc, g);
	if (!svg)
		return -ENOMEM;
	*ret_svg = svg;
	return 0;
}

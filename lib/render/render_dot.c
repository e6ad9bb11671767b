/* SPDX-License-Identifier: GPL-2.0-only */
/* render_dot.c -- an analysis as Graphviz for `pdimon analyze --dot`: PDI's progress
 * dependence graph and the STAT prefix tree. */
#include <stdio.h>

#include "json.h"
#include "prefix_tree.h"
#include "ranges.h"
#include "render.h"

/* The progress dependence graph, then the prefix tree: two graphs `dot` draws one after
 * the other. */
char *pdi_render_dot(const struct pdi_analysis *a)
{
	struct pdi_json j;
	char ranks[4096];

	pdi_json_init(&j);
	if (a->has_pdg) {
		const struct pdi_pdg *g = &a->pdg;

		pdi_json_printf(&j, "digraph pdg {\n  label=\"progress dependence (PDI): an edge waits for its target\";\n");
		for (size_t k = 0; k < g->ngroups; k++) {
			pdi_ranges_format(g->groups[k].ranks, g->groups[k].n, ranks, sizeof(ranks));
			pdi_json_printf(&j, "  g%zu [label=\"%s\\n%s ", k, ranks, g->groups[k].inside ? "in" : "after");
			pdi_dot_escaped(&j, pdi_view_site_name(a->view, pdi_state_site(g->groups[k].state)));
			pdi_json_printf(&j, "\"%s];\n", g->groups[k].lp ? ", style=filled, fillcolor=salmon" : "");
		}
		for (size_t x = 0; x < g->ngroups; x++)
			for (size_t y = 0; y < g->ngroups; y++)
				if (g->dep[x * g->ngroups + y] == PDI_DEP_ON)
					pdi_json_printf(&j, "  g%zu -> g%zu;\n", x, y);
		pdi_json_printf(&j, "}\n");
	}
	if (a->tree)
		(void)pdi_ptree_render_dot(a->tree, &j);
	return pdi_json_steal(&j);
}

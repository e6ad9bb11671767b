/* SPDX-License-Identifier: GPL-2.0-only */
/* html_graphs.h -- a report's graphs as SVG sections of its page (html_graphs.c). */
#pragma once

#include "html_page.h"

/* The progress dependence graph and the prefix tree of report DOC, into P. */
void pdi_html_graph_pdg(struct pdi_html_page *p, const json_t *doc);
void pdi_html_graph_tree(struct pdi_html_page *p, const json_t *doc);

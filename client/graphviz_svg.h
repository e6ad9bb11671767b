/* SPDX-License-Identifier: GPL-2.0-only */
/* graphviz_svg.h -- the HTML pages' graphs laid out by Graphviz's dot into SVG (libgvc). */
#pragma once

struct Agraph_s;
struct GVC_s;

/* Graphviz with its plugins (dot layout, SVG output); NULL when they cannot be loaded. */
struct GVC_s *pdi_graphviz_open(void);
void pdi_graphviz_close(struct GVC_s *gvc);
/* A pdi_html_layout_fn (html.h): CTX is the struct GVC_s. 0, or -EIO when Graphviz failed
 * (its message on stderr, once), -ENOMEM. */
int pdi_graphviz_svg(void *ctx, struct Agraph_s *g, char **ret_svg);

/* SPDX-License-Identifier: GPL-2.0-only */
/* html.h -- pdimon's JSON documents as one self-contained HTML page each: a step's report or
 * analysis (`pdimon report|analyze --json`) and a program's trends (`pdimon trends --json`).
 *
 * The page opens anywhere, offline: its charts are drawn by Vega (inlined, see
 * html_assets.h) from data inlined with it, its graphs are SVG laid out by Graphviz, and a
 * Content-Security-Policy lets nothing load and no script run but the page's own (they carry
 * a nonce). Every name that came from a program (call sites, files, step names) is escaped
 * for where it lands: HTML text, attributes, the inlined JSON, Graphviz labels.
 *
 * Pure: the caller lays the graphs out (the CLI with libgvc, see client/graphviz_svg.c) and
 * supplies the nonce. A document that is valid but lacks something (no phases, one task, an
 * incomplete model, a hang without a PDG) still makes a valid page, which says what it could
 * not show and why. */
#pragma once

#include <stddef.h>

struct Agraph_s;

/* Lay graph G out and render it as SVG: a malloc'd, NUL-terminated document into *RET_SVG.
 * 0, or -errno (RET_SVG untouched). */
typedef int (*pdi_html_layout_fn)(void *ctx, struct Agraph_s *g, char **ret_svg);

struct pdi_html_env {
	pdi_html_layout_fn layout; /* NULL: the graphs are not drawn, and the page says so */
	void *layout_ctx;
	const char *nonce;         /* unguessable by whoever named the program: [A-Za-z0-9+/=]{16,} */
	const char *generator;     /* "pdimon 0.1.0" */
};

#define PDI_HTML_WHY_LEN 256

/* The page of the JSON document DOC (LEN bytes; invalid UTF-8 is read as U+FFFD) into
 * *RET_HTML (malloc'd, NUL-terminated). 0; -EBADMSG when DOC is not JSON, -EINVAL when it is
 * neither a report nor a trends document, or ENV's nonce is unfit (WHY, when not NULL, says
 * what, in one line); -ENOMEM. */
int pdi_html_render(const char *doc, size_t len, const struct pdi_html_env *env, char **ret_html,
		    char why[PDI_HTML_WHY_LEN]);

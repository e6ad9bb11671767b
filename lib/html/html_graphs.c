/* SPDX-License-Identifier: GPL-2.0-only */
/* html_graphs.c -- the progress dependence graph and the STAT prefix tree of a report, built
 * as Graphviz graphs through libcgraph's API and laid out by the caller's layout function into
 * SVG that the page inlines.
 *
 * No DOT text is written or parsed: names reach Graphviz as attribute values, where only its
 * label escapes (\N, \G, \n, ...) and entities act, so a backslash is doubled and & written
 * &amp;, and nothing else can change a graph's structure. Graphviz escapes the text it writes
 * into SVG. Every element gets an id of its graph's own ("pdg-n3"), so that two graphs in one
 * page never share one. A large tree is cut to its first PDI_HTML_TREE_NODES nodes, breadth
 * first, and says how much it left out. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <graphviz/cgraph.h>

#include "html_graphs.h"

#define PDI_HTML_TREE_NODES 150
#define LABEL_CHARS 60

/* TEXT as a Graphviz label: its escapes (\N, \G, \l, ...) disarmed by doubling backslashes,
 * and & written &amp; (Graphviz reads entities in any label, and would show "&lt;" as "<"). */
static char *label_escaped(const char *text)
{
	size_t n = 0;
	char *out, *o;

	for (const char *c = text; *c; c++)
		n += *c == '\\' ? 2 : *c == '&' ? 5 : 1;
	out = o = malloc(n + 1);
	if (!out)
		return NULL;
	for (const char *c = text; *c; c++) {
		if (*c == '&') {
			memcpy(o, "&amp;", 5);
			o += 5;
			continue;
		}
		if (*c == '\\')
			*o++ = '\\';
		*o++ = *c;
	}
	*o = '\0';
	return out;
}

static void set(void *obj, const char *key, const char *value)
{
	(void)agsafeset(obj, (char *)key, (char *)value, "");
}

/* Label and tooltip of OBJ: TEXT, escaped. */
static int set_label(void *obj, const char *text)
{
	char *l = label_escaped(text);

	if (!l)
		return -ENOMEM;
	set(obj, "label", l);
	set(obj, "tooltip", l);
	free(l);
	return 0;
}

static Agnode_t *node(Agraph_t *g, const char *prefix, size_t i)
{
	char id[48];
	Agnode_t *n;

	snprintf(id, sizeof(id), "%s-n%zu", prefix, i);
	n = agnode(g, id, 1);
	if (n)
		set(n, "id", id);
	return n;
}

static Agedge_t *edge(Agraph_t *g, const char *prefix, size_t i, Agnode_t *a, Agnode_t *b)
{
	char id[48];
	Agedge_t *e;

	snprintf(id, sizeof(id), "%s-e%zu", prefix, i);
	e = agedge(g, a, b, id, 1);
	if (e)
		set(e, "id", id);
	return e;
}

/* "[0-3,5] (5 tasks)", cut to fit a label */
static void ranks_label(const char *ranks, json_int_t count, char *buf, size_t len)
{
	char cut[256];

	snprintf(buf, len, "%s (%lld task%s)", pdi_html_shorten(ranks ? ranks : "?", 40, cut, sizeof(cut)),
		 (long long)count, count == 1 ? "" : "s");
}

/* G laid out and inlined as SVG in the body, from its <svg> element on; false when it could
 * not be (the page then says so). */
static bool inline_svg(struct pdi_html_page *p, Agraph_t *g, const char *what)
{
	char *svg = NULL, *start;
	int r = p->env->layout ? p->env->layout(p->env->layout_ctx, g, &svg) : -ENOTSUP;

	if (r < 0 || !(start = strstr(svg, "<svg"))) {
		pdi_html_note(p, "The %s could not be drawn: %s", what,
			      r == -ENOTSUP ? "no graph layout (Graphviz) was available" : "Graphviz failed to lay it out");
		free(svg);
		return false;
	}
	pdi_json_printf(&p->body, "<div class=\"graph\">");
	pdi_json_raw(&p->body, start, strlen(start));
	pdi_json_printf(&p->body, "</div>\n");
	free(svg);
	return true;
}

static Agraph_t *graph(const char *name, const char *rankdir)
{
	Agraph_t *g = agopen((char *)name, Agdirected, NULL);

	if (!g)
		return NULL;
	set(g, "id", name);
	set(g, "rankdir", rankdir);
	set(g, "bgcolor", "transparent");
	agattr(g, AGNODE, "shape", "box");
	agattr(g, AGNODE, "style", "rounded,filled");
	agattr(g, AGNODE, "fillcolor", "#eef3fb");
	agattr(g, AGNODE, "fontname", "DejaVu Sans Mono");
	agattr(g, AGNODE, "fontsize", "10");
	return g;
}

/* PDI's progress dependence graph: an edge from a group to the group it waits for. */
void pdi_html_graph_pdg(struct pdi_html_page *p, const json_t *doc)
{
	const json_t *v = pdi_jobj(doc, "verdict"), *pdg = pdi_jobj(v, "pdg"), *grp, *e;
	json_t *groups = pdi_jarr(pdg, "groups"), *edges = pdi_jarr(pdg, "edges");
	size_t ng = json_array_size(groups), i;
	Agnode_t **nodes;
	Agraph_t *g;

	pdi_json_printf(&p->body, "<section id=\"pdg\"><h2>Progress dependence graph (PDI)</h2>\n");
	if (!ng) {
		if (!strcmp(pdi_jstr(v, "kind") ?: "", "hang"))
			pdi_html_note(p, "No progress dependence graph: PDI could not order the blocked tasks");
		pdi_json_printf(&p->body, "<p class=\"missing\">%s</p></section>\n",
				strcmp(pdi_jstr(v, "kind") ?: "", "hang") ? "The step did not hang: PDI orders the tasks of a "
									     "hang only."
									   : "No graph: PDI could not order the blocked tasks.");
		return;
	}
	g = graph("pdg", "LR");
	nodes = calloc(ng, sizeof(*nodes));
	if (!g || !nodes) {
		p->failed = true;
		goto out;
	}
	json_array_foreach(groups, i, grp) {
		bool lp = pdi_jbool(grp, "least_progressed");
		char label[512], ranks[128], at[256];

		ranks_label(pdi_jstr(grp, "ranks"), (json_int_t)pdi_html_count_ranks(pdi_jstr(grp, "ranks")), ranks,
			    sizeof(ranks));
		snprintf(label, sizeof(label), "%s\n%s %s%s", ranks, pdi_jbool(grp, "inside") ? "in" : "after",
			 pdi_html_shorten(pdi_jstr(grp, "at") ?: "?", LABEL_CHARS, at, sizeof(at)),
			 lp ? "\nleast progressed" : "");
		if (!(nodes[i] = node(g, "pdg", i)) || set_label(nodes[i], label) < 0) {
			p->failed = true;
			goto out;
		}
		if (lp) {
			set(nodes[i], "class", "lp");
			set(nodes[i], "fillcolor", "#f4a582");
			set(nodes[i], "penwidth", "2.5");
		}
	}
	json_array_foreach(edges, i, e) {
		json_int_t a = pdi_jint(e, "from", -1), b = pdi_jint(e, "to", -1);
		Agedge_t *ed;

		if (a < 0 || b < 0 || (size_t)a >= ng || (size_t)b >= ng)
			continue;
		if (!(ed = edge(g, "pdg", i, nodes[a], nodes[b]))) {
			p->failed = true;
			goto out;
		}
		if (strcmp(pdi_jstr(e, "dependence") ?: "", "waits_for")) {
			set(ed, "style", "dashed");
			set(ed, "dir", "none");
			set(ed, "tooltip", "PDI cannot tell which waits for which");
		}
	}
	pdi_json_printf(&p->body, "<p class=\"hint\">An arrow points from a group to the group it waits for; the "
				  "least-progressed group is shaded; a dashed line joins groups PDI cannot order.</p>\n");
	(void)inline_svg(p, g, "progress dependence graph");
out:
	pdi_json_printf(&p->body, "</section>\n");
	free(nodes);
	if (g)
		agclose(g);
}

struct tree_item {
	const json_t *node;
	Agnode_t *parent;
};

/* STAT's prefix tree of where the tasks are, least progressed first, breadth first. */
void pdi_html_graph_tree(struct pdi_html_page *p, const json_t *doc)
{
	const json_t *root = pdi_jobj(doc, "prefix_tree");
	struct tree_item *queue = NULL;
	size_t head = 0, tail = 0, drawn = 0, left_out = 0, nedges = 0;
	Agraph_t *g = NULL;

	pdi_json_printf(&p->body, "<section id=\"tree\"><h2>Where the tasks are (STAT prefix tree)</h2>\n");
	if (!root) {
		pdi_html_note(p, "No prefix tree: the report has none (no task position could be taken)");
		pdi_json_printf(&p->body, "<p class=\"missing\">No prefix tree.</p></section>\n");
		return;
	}
	g = graph("tree", "TB");
	queue = calloc(PDI_HTML_TREE_NODES + 1, sizeof(*queue));
	if (!g || !queue) {
		p->failed = true;
		goto out;
	}
	queue[tail++] = (struct tree_item){root, NULL};
	while (head < tail) {
		struct tree_item it = queue[head++];
		json_t *children = pdi_jarr(it.node, "children"), *c;
		char label[512], frame[256], ranks[128];
		Agnode_t *n;
		size_t i;

		/* the root has no frame of its own: it stands for every task */
		pdi_html_shorten(it.parent ? pdi_jstr(it.node, "frame") ?: "?" : "all tasks", LABEL_CHARS, frame,
				 sizeof(frame));
		ranks_label(pdi_jstr(it.node, "ranks"), pdi_jint(it.node, "count", 0), ranks, sizeof(ranks));
		snprintf(label, sizeof(label), "%s\n%s", frame, ranks);
		if (!(n = node(g, "tree", drawn++)) || set_label(n, label) < 0 ||
		    (it.parent && !edge(g, "tree", nedges++, it.parent, n))) {
			p->failed = true;
			goto out;
		}
		json_array_foreach(children, i, c) {
			if (tail < PDI_HTML_TREE_NODES)
				queue[tail++] = (struct tree_item){c, n};
			else
				left_out++;
		}
	}
	if (left_out)
		pdi_html_note(p, "The prefix tree is cut to its first %d frames: %zu more branches are not drawn",
			      PDI_HTML_TREE_NODES, left_out);
	pdi_json_printf(&p->body, "<p class=\"hint\">Each box is a frame of the tasks' call paths, with the ranks "
				  "whose paths pass through it; siblings are ordered least progressed first.</p>\n");
	(void)inline_svg(p, g, "prefix tree");
out:
	pdi_json_printf(&p->body, "</section>\n");
	free(queue);
	if (g)
		agclose(g);
}

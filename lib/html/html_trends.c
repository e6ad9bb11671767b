/* SPDX-License-Identifier: GPL-2.0-only */
/* html_trends.c -- the page of a program's trends across runs (`pdimon trends --json`, from
 * ti-trend-prof): which call sites grow faster than the rest, then per call site its
 * measured points and fitted curve, log-log (report.js draws them), and the table. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_trends.h"

#define MAX_CHARTS 24 /* sites drawn, least scalable first; the table lists all */

static const char *feature_name(const json_t *doc)
{
	const char *f = pdi_jstr(doc, "feature");

	return f && !strcmp(f, "input_size") ? "input size" : "task count";
}

static char *verdict_sentence(const json_t *doc)
{
	json_t *sites = pdi_jarr(doc, "sites"), *s;
	size_t i, flagged = 0, shown = 0;
	struct pdi_json o;

	pdi_json_init(&o);
	pdi_json_printf(&o, "Program <strong>");
	pdi_html_text(&o, pdi_jstr(doc, "program"));
	pdi_json_printf(&o, "</strong>, %lld run%s at %zu size%s: ", (long long)pdi_jint(doc, "runs", 0),
			pdi_jint(doc, "runs", 0) == 1 ? "" : "s", json_array_size(pdi_jarr(doc, "sizes")),
			json_array_size(pdi_jarr(doc, "sizes")) == 1 ? "" : "s");
	json_array_foreach(sites, i, s)
		flagged += pdi_jbool(s, "flagged");
	if (json_array_size(pdi_jarr(doc, "sizes")) < 2) {
		pdi_json_printf(&o, "too few sizes to fit a trend (at least two are needed).");
		return pdi_json_steal(&o);
	}
	if (!flagged) {
		pdi_json_printf(&o, "no call site grows faster than the rest with the %s.", feature_name(doc));
		return pdi_json_steal(&o);
	}
	json_array_foreach(sites, i, s) {
		if (!pdi_jbool(s, "flagged") || shown == 3)
			continue;
		pdi_json_printf(&o, "%s<code>", shown++ ? "; " : "");
		pdi_html_text(&o, pdi_jstr(s, "site"));
		pdi_json_printf(&o, "</code>: ");
		if (pdi_jstr(s, "trend"))
			pdi_html_text(&o, pdi_jstr(s, "trend"));
		else
			pdi_html_textf(&o, "%s per task ∝ n^%.2f", pdi_jstr(s, "metric") ?: "?", pdi_jnum(s, "exponent", 0));
	}
	pdi_json_printf(&o, "%s — growing faster than the other call sites with the %s.",
			flagged > shown ? " and more" : "", feature_name(doc));
	return pdi_json_steal(&o);
}

/* The points of site S that a log-log chart can show (x, y > 0), as [[x, y], ...]. */
static json_t *positive_points(const json_t *s, size_t *ret_dropped)
{
	json_t *out = json_array(), *pt;
	size_t i;

	json_array_foreach(pdi_jarr(s, "points"), i, pt) {
		double x = pdi_jnum(pt, "x", NAN), y = pdi_jnum(pt, "y", NAN);

		if (x > 0 && y > 0 && isfinite(x) && isfinite(y))
			json_array_append_new(out, json_pack("[ff]", x, y));
		else
			(*ret_dropped)++;
	}
	return out;
}

int pdi_html_trends(struct pdi_html_page *p, const json_t *doc, char **ret)
{
	json_t *sites = pdi_jarr(doc, "sites"), *s, *charts = json_array();
	struct pdi_json *o = &p->body;
	char *verdict = verdict_sentence(doc), title[300], name[160];
	size_t i, dropped = 0, no_points = 0;
	int r;

	if (!verdict || !charts) {
		free(verdict);
		json_decref(charts);
		return -ENOMEM;
	}
	snprintf(title, sizeof(title), "pdimon: trends of %s",
		 pdi_html_shorten(pdi_jstr(doc, "program") ?: "?", 100, name, sizeof(name)));
	pdi_json_printf(o, "<section id=\"trend-charts\"><h2>Per call site: measured and fitted, log-log</h2>\n"
			   "<p class=\"hint\">Points are the stored runs (per task, against the %s); the line is the "
			   "fitted a + b·x<sup>c</sup>. Steeper than the others means it grows faster.</p>\n"
			   "<div class=\"chart\" id=\"trends-chart\"></div></section>\n",
			feature_name(doc));
	json_array_foreach(sites, i, s) {
		const json_t *fit = pdi_jobj(s, "fit");
		json_t *pts;

		if (json_array_size(charts) == MAX_CHARTS)
			break;
		pts = positive_points(s, &dropped);
		if (!json_array_size(pts)) {
			no_points++;
			json_decref(pts);
			continue;
		}
		if (json_array_append_new(charts, json_pack("{sssssbsos{sfsfsf}}", "site", pdi_jstr(s, "site") ?: "?",
							    "metric", pdi_jstr(s, "metric") ?: "?", "flagged",
							    pdi_jbool(s, "flagged"), "points", pts, "fit", "a",
							    pdi_jnum(fit, "a", 0), "b", pdi_jnum(fit, "b", 0), "c",
							    pdi_jnum(fit, "c", 1))) < 0)
			p->failed = true;
	}
	if (json_array_size(sites) > MAX_CHARTS)
		pdi_html_note(p, "Only the %d least scalable of %zu call-site series are drawn; the table lists all",
			      MAX_CHARTS, json_array_size(sites));
	if (no_points)
		pdi_html_note(p, "%zu series have no measured points in the document: only their fit is listed", no_points);
	if (dropped)
		pdi_html_note(p, "%zu measured points are zero or negative and cannot be drawn on a log scale", dropped);
	if (!json_array_size(sites))
		pdi_html_note(p, "No call site to show: the runs made no MPI call that pdimon saw");
	pdi_html_data_set(p, "trends", json_pack("{soso}", "sites", charts, "feature", json_string(feature_name(doc))));

	pdi_json_printf(o, "<section id=\"trend-table\"><h2>Call sites, least scalable first</h2>\n<table class=\"trends\">"
			   "<thead><tr><th>#</th><th>call site</th><th>metric</th><th>model</th><th>exponent</th>"
			   "<th>coefficient</th><th>r²</th><th></th></tr></thead><tbody>\n");
	json_array_foreach(sites, i, s) {
		pdi_json_printf(o, "<tr%s><td>%zu</td><td><code>", pdi_jbool(s, "flagged") ? " class=\"flagged\"" : "", i + 1);
		pdi_html_text(o, pdi_jstr(s, "site"));
		pdi_json_printf(o, "</code></td><td>");
		pdi_html_text(o, pdi_jstr(s, "metric"));
		pdi_json_printf(o, "</td><td>");
		pdi_html_text(o, pdi_jstr(s, "model"));
		pdi_json_printf(o, "</td><td>%.3g</td><td>%.3g</td><td>%.3f</td><td>%s</td></tr>\n", pdi_jnum(s, "exponent", 0),
				pdi_jnum(s, "coefficient", 0), pdi_jnum(pdi_jobj(s, "fit"), "r2", NAN),
				pdi_jbool(s, "flagged") ? "grows faster than the rest" : "");
	}
	pdi_json_printf(o, "</tbody></table></section>\n");
	r = pdi_html_page_finish(p, title, verdict, ret);
	free(verdict);
	return r;
}

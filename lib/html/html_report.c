/* SPDX-License-Identifier: GPL-2.0-only */
/* html_report.c -- the page of a step's report or analysis (`pdimon report|analyze --json`,
 * schema in pdimon(1)): the verdict in one sentence, then the phases on the step's time axis
 * with their deviation scores, ranks x phases, what each group of a hang is doing, the
 * progress dependence graph, the transitions that make the faulty phase differ with their
 * call sites, the prefix tree and the tasks. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "html_graphs.h"
#include "html_report.h"

#define MAX_TASK_ROWS 64 /* past this the tasks are shown by group, as rank ranges */

/* "rank [2]" or "ranks [0-1,3]" */
static void ranks_html(struct pdi_json *o, const char *ranks)
{
	pdi_json_printf(o, "%s <strong>", pdi_html_count_ranks(ranks) == 1 ? "rank" : "ranks");
	pdi_html_text(o, ranks);
	pdi_json_printf(o, "</strong>");
}

static void when(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t <= 0 || !localtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S %Z", &tm))
		snprintf(buf, len, "unknown");
}

static void seconds(double ns, char *buf, size_t len)
{
	if (ns < 1e6)
		snprintf(buf, len, "%.0f µs", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.0f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.1f s", ns / 1e9);
}

/* Phase P's wall-clock window in seconds after the step began, and its kind ("setup",
 * "steady", "teardown"; NULL when the document does not say), from the diagnosis's "phases".
 * false when P has none. */
static bool phase_window(const json_t *doc, size_t p, double *ret_start, double *ret_end, const char **ret_kind)
{
	const json_t *ph = json_array_get(pdi_jarr(doc, "phases"), p);

	if (!json_is_number(json_object_get(ph, "start_s")) || !json_is_number(json_object_get(ph, "end_s")))
		return false;
	*ret_start = json_number_value(json_object_get(ph, "start_s"));
	*ret_end = json_number_value(json_object_get(ph, "end_s"));
	*ret_kind = pdi_jstr(ph, "kind");
	return true;
}

/* How many phases have a window. */
static size_t phases_timed(const json_t *doc)
{
	size_t n = json_array_size(pdi_jarr(doc, "phases")), k;
	double a, b;
	const char *kind;

	for (k = 0; k < n && phase_window(doc, k, &a, &b, &kind); k++)
		;
	return k;
}

/* ", 16.1 s – 16.9 s after start" for phase P, or "" */
static void window_text(const json_t *doc, json_int_t p, char *buf, size_t len)
{
	const char *kind;
	double a, b;

	buf[0] = '\0';
	if (p >= 0 && phase_window(doc, (size_t)p, &a, &b, &kind))
		snprintf(buf, len, ", %.1f s – %.1f s after start", a, b);
}

static const char *confidence_words(double c)
{
	return c >= 0.8 ? "clear" : c >= 0.5 ? "likely" : "weak";
}

/* The first transition of the diagnosis, "FROM ⇒ TO" */
static void top_transition(struct pdi_json *o, const json_t *diag)
{
	json_t *t = json_array_get(pdi_jarr(diag, "transitions"), 0);

	if (!t)
		return;
	pdi_json_printf(o, ", at <code>");
	pdi_html_text(o, pdi_jstr(t, "from"));
	pdi_json_printf(o, "</code> ⇒ <code>");
	pdi_html_text(o, pdi_jstr(t, "to"));
	pdi_json_printf(o, "</code>");
}

static void verdict_automaded(struct pdi_json *o, const json_t *doc, const json_t *diag)
{
	const json_t *am = pdi_jobj(doc, "automaded");
	json_int_t phase = pdi_jint(diag, "faulty_phase", -1);
	const char *ranks = pdi_jstr(am, "faulty_ranks_text");
	char win[96];

	window_text(doc, phase, win, sizeof(win));
	if (!strcmp(pdi_jstr(diag, "effect") ? pdi_jstr(diag, "effect") : "", "permanent"))
		pdi_json_printf(o, "behaviour shifted in <strong>phase %" JSON_INTEGER_FORMAT "</strong>%s and stayed so",
				phase, win);
	else
		pdi_json_printf(o, "behaviour changed most in <strong>phase %" JSON_INTEGER_FORMAT "</strong>%s", phase,
				win);
	if (ranks && ranks[0]) {
		pdi_json_printf(o, ", in ");
		ranks_html(o, ranks);
	}
	top_transition(o, diag);
	pdi_json_printf(o, " (%s: confidence %.2f).", confidence_words(pdi_jnum(diag, "confidence", 0)),
			pdi_jnum(diag, "confidence", 0));
}

/* The group of tasks a hang's least-progressed rank waits with: the largest blocked one. */
static const json_t *largest_blocked(const json_t *groups)
{
	const json_t *best = NULL, *g;
	size_t i;

	json_array_foreach(groups, i, g)
		if (!strcmp(pdi_jstr(g, "status") ? pdi_jstr(g, "status") : "", "blocked") &&
		    (!best || pdi_jint(g, "count", 0) > pdi_jint(best, "count", 0)))
			best = g;
	return best;
}

static void verdict_hang(struct pdi_json *o, const json_t *doc, const json_t *diag)
{
	const json_t *v = pdi_jobj(doc, "verdict");
	const char *lp = pdi_jstr(v, "least_progressed");
	const json_t *waiting = largest_blocked(pdi_jarr(v, "groups"));
	const json_t *stopped = json_array_get(pdi_jarr(diag, "stopped_at"), 0);

	pdi_json_printf(o, "hung: ");
	if (waiting) {
		ranks_html(o, pdi_jstr(waiting, "ranks"));
		pdi_json_printf(o, " wait in <code>");
		pdi_html_text(o, pdi_jstr(waiting, "where"));
		pdi_json_printf(o, "</code>");
	} else {
		pdi_json_printf(o, "its tasks are blocked in MPI");
	}
	if (lp && lp[0]) {
		pdi_json_printf(o, "; the least progressed, ");
		ranks_html(o, lp);
		if (stopped && pdi_jstr(stopped, "where") && pdi_jstr(stopped, "where")[0]) {
			pdi_json_printf(o, ", is %s <code>", strcmp(pdi_jstr(stopped, "status") ? pdi_jstr(stopped, "status") : "",
									"computing") ? "in" : "computing");
			pdi_html_text(o, pdi_jstr(stopped, "where"));
			pdi_json_printf(o, "</code>");
		}
		pdi_json_printf(o, ", and the others wait for %s (PDI).", pdi_html_count_ranks(lp) == 1 ? "it" : "them");
	} else {
		pdi_json_printf(o, "; PDI could not tell which task the others wait for.");
	}
}

/* One sentence: what happened to the step, where and in which ranks. */
static char *verdict_sentence(const json_t *doc)
{
	const json_t *v = pdi_jobj(doc, "verdict"), *diag = pdi_jobj(doc, "diagnosis");
	const char *kind = pdi_jstr(v, "kind") ? pdi_jstr(v, "kind") : "", *name = pdi_jstr(doc, "step");
	size_t ntasks = json_array_size(pdi_jarr(doc, "tasks"));
	bool abnormal = pdi_jbool(diag, "abnormal") && !strcmp(pdi_jstr(diag, "method") ? pdi_jstr(diag, "method") : "",
								  "automaded");
	struct pdi_json o;

	pdi_json_init(&o);
	pdi_json_printf(&o, "Step <strong>");
	pdi_html_text(&o, name ? name : "?");
	pdi_json_printf(&o, "</strong> ");
	if (!strcmp(kind, "not_monitored") || ntasks == 0) {
		pdi_json_printf(&o, "had no monitored MPI task: there is nothing to diagnose.");
	} else if (!strcmp(kind, "hang")) {
		verdict_hang(&o, doc, diag);
	} else if (!strcmp(kind, "completed")) {
		pdi_json_printf(&o, "completed (%zu task%s)", ntasks, ntasks == 1 ? "" : "s");
		if (abnormal) {
			pdi_json_printf(&o, ", but ");
			verdict_automaded(&o, doc, diag);
		} else {
			pdi_json_printf(&o, ": nothing abnormal found.");
		}
	} else {
		pdi_json_printf(&o, "%s (%zu task%s)", !strcmp(kind, "running") ? "is still running" : "did not complete",
				ntasks, ntasks == 1 ? "" : "s");
		if (abnormal) {
			pdi_json_printf(&o, "; ");
			verdict_automaded(&o, doc, diag);
		} else {
			pdi_json_printf(&o, ": no task is blocked, and nothing abnormal was found so far.");
		}
	}
	return pdi_json_steal(&o);
}

static void section_begin(struct pdi_json *o, const char *id, const char *title)
{
	pdi_json_printf(o, "<section id=\"%s\"><h2>", id);
	pdi_html_text(o, title);
	pdi_json_printf(o, "</h2>\n");
}

/* What pdimond judged while the step ran (the report's "health"): when it first looked hung,
 * and when pdimond cancelled it. */
static void health_facts(struct pdi_json *o, const json_t *health)
{
	char at[64];

	if (pdi_jint(health, "first_judged_hung", 0)) {
		when(pdi_jint(health, "first_judged_hung", 0), at, sizeof(at));
		pdi_html_textf(o, " · first judged hung %s", at);
	}
	if (pdi_jint(health, "cancelled", 0)) {
		when(pdi_jint(health, "cancelled", 0), at, sizeof(at));
		pdi_html_textf(o, " · cancelled by pdimon %s", at);
	}
}

static void facts(struct pdi_html_page *p, const json_t *doc)
{
	struct pdi_json *o = &p->facts;
	const json_t *nodes = pdi_jobj(doc, "nodes");
	char started[64], ended[64];

	when(pdi_jint(doc, "started", 0), started, sizeof(started));
	if (pdi_jint(doc, "job_id", 0))
		pdi_json_printf(o, "Slurm job %" JSON_INTEGER_FORMAT ", step %" JSON_INTEGER_FORMAT " · ",
				pdi_jint(doc, "job_id", 0), pdi_jint(doc, "step_id", 0));
	pdi_html_textf(o, "%s · started %s", pdi_jstr(doc, "state") ? pdi_jstr(doc, "state") : "?", started);
	if (pdi_jint(doc, "ended", 0)) {
		when(pdi_jint(doc, "ended", 0), ended, sizeof(ended));
		pdi_html_textf(o, " · ended %s", ended);
	}
	pdi_html_textf(o, " · %zu task%s", json_array_size(pdi_jarr(doc, "tasks")),
		       json_array_size(pdi_jarr(doc, "tasks")) == 1 ? "" : "s");
	if (pdi_jint(nodes, "count", 0) > 1)
		pdi_html_textf(o, " on %" JSON_INTEGER_FORMAT " nodes (%" JSON_INTEGER_FORMAT " answered)",
			       pdi_jint(nodes, "count", 0), pdi_jint(nodes, "answered", 0));
	health_facts(o, pdi_jobj(doc, "health"));
}

/* The analysis's own limits: what it could not conclude, and why. */
static void limits(struct pdi_html_page *p, const json_t *doc)
{
	json_t *l = pdi_jarr(pdi_jobj(doc, "diagnosis"), "limits"), *v;
	size_t i;

	if (!json_array_size(l))
		return;
	section_begin(&p->body, "limits", "What the analysis could not conclude");
	pdi_json_printf(&p->body, "<ul>\n");
	json_array_foreach(l, i, v) {
		pdi_json_printf(&p->body, "<li>");
		pdi_html_text(&p->body, json_string_value(v));
		pdi_json_printf(&p->body, "</li>\n");
	}
	pdi_json_printf(&p->body, "</ul></section>\n");
}

/* The phase the diagnosis names, or -1. */
static json_int_t faulty_phase(const json_t *doc)
{
	const json_t *diag = pdi_jobj(doc, "diagnosis");

	if (!pdi_jbool(diag, "abnormal") && strcmp(pdi_jstr(pdi_jobj(doc, "verdict"), "kind") ?: "", "hang"))
		return -1;
	return pdi_jint(diag, "faulty_phase", -1);
}

/* Phases on the step's time axis, each with its deviation score; the faulty one marked. The
 * chart is report.js's, from p->data.timeline; the table is the same for those who read. */
static void timeline(struct pdi_html_page *p, const json_t *doc)
{
	const json_t *am = pdi_jobj(doc, "automaded");
	json_t *scores = pdi_jarr(am, "phase_scores"), *phases = json_array();
	json_int_t faulty = faulty_phase(doc), first = pdi_jint(am, "first_phase", 0), end = pdi_jint(am, "end_phase", 0);
	size_t ntimed = phases_timed(doc), n = json_array_size(scores) ? json_array_size(scores) : ntimed;
	struct pdi_json *o = &p->body;
	bool timed = ntimed >= n, hang = !strcmp(pdi_jstr(pdi_jobj(doc, "verdict"), "kind") ?: "", "hang");

	section_begin(o, "timeline", "Timeline: phases and their deviation");
	if (!n) {
		pdi_html_note(p, "No timeline: %s", am ? "the step has no phase to compare"
						     : "AutomaDeD did not run on this step (no phases, or no MPI call)");
		pdi_json_printf(o, "<p class=\"missing\">No phases to draw.</p></section>\n");
		json_decref(phases);
		return;
	}
	if (!timed)
		pdi_html_note(p, "The report has no wall-clock windows for its phases: they are drawn by number");
	if (!json_array_size(scores))
		pdi_html_note(p, "No deviation scores: AutomaDeD did not run on this step");
	pdi_json_printf(o, "<div class=\"chart\" id=\"timeline-chart\"></div>\n<table class=\"phases\">"
			   "<thead><tr><th>phase</th><th>window (s after start)</th><th>deviation score</th><th></th></tr>"
			   "</thead><tbody>\n");
	for (size_t k = 0; k < n; k++) {
		json_t *s = json_array_get(scores, k);
		bool compared = (json_int_t)k >= first && (json_int_t)k < end;
		double start = (double)k, stop = (double)k + 1;
		const char *kind = NULL;
		bool is_faulty = (json_int_t)k == faulty;

		if (timed)
			(void)phase_window(doc, k, &start, &stop, &kind);
		if (!kind)
			kind = (json_int_t)k < first ? "setup" : (json_int_t)k >= end ? "teardown" : "steady";

		pdi_json_printf(o, "<tr%s data-phase=\"%zu\"><td>%zu</td><td>", is_faulty ? " class=\"faulty\"" : "", k, k);
		if (timed)
			pdi_json_printf(o, "%.2f – %.2f", start, stop);
		pdi_json_printf(o, "</td><td>");
		if (json_is_number(s) && compared)
			pdi_json_printf(o, "%.3g", json_number_value(s));
		else
			pdi_json_printf(o, "%s", !strcmp(kind, "setup")      ? "set-up, not compared"
						  : !strcmp(kind, "teardown") ? "tear-down, not compared"
									      : "not compared");
		pdi_json_printf(o, "</td><td>%s</td></tr>\n", !is_faulty ? "" : hang ? "← where it hung" : "← faulty phase");
		if (json_array_append_new(phases, json_pack("{sisfsfsosbsb}", "index", (json_int_t)k, "start", start, "end",
							    stop, "score",
							    json_is_number(s) && compared ? json_real(json_number_value(s))
											   : json_null(),
							    "faulty", is_faulty, "compared", compared)) < 0)
			p->failed = true;
	}
	pdi_json_printf(o, "</tbody></table></section>\n");
	pdi_html_data_set(p, "timeline", json_pack("{sosIsbsbss}", "phases", phases, "faulty", faulty, "timed", timed,
						     "hang", hang,
						     "effect", pdi_jstr(am, "effect") ? pdi_jstr(am, "effect") : "none"));
}

/* For a hang, a last column "now": 1 for a row whose (first) rank sits in MPI, 0 computing,
 * null otherwise. The blocked call is in no phase yet (a call enters the model when it
 * returns), so without it the stuck rank would not stand out. */
static json_t *now_value(const json_t *doc, const char *ranks)
{
	long first = ranks ? strtol(ranks + strspn(ranks, "["), NULL, 10) : -1;
	json_t *t;
	size_t i;

	json_array_foreach(pdi_jarr(doc, "tasks"), i, t) {
		const char *st = pdi_jstr(t, "status") ?: "";

		if (pdi_jint(t, "rank", -2) != first)
			continue;
		if (!strcmp(st, "blocked") || !strcmp(st, "in_mpi"))
			return json_real(1);
		if (!strcmp(st, "computing"))
			return json_real(0);
		break;
	}
	return json_null();
}

/* Ranks x phases: the share of each phase a rank spent inside MPI (report.js draws it). */
static void heatmap(struct pdi_html_page *p, const json_t *doc)
{
	const json_t *rp = pdi_jobj(doc, "rank_phases");
	json_t *rows = pdi_jarr(rp, "rows"), *out = json_array(), *labels = json_array(), *row;
	bool now = !strcmp(pdi_jstr(pdi_jobj(doc, "verdict"), "kind") ?: "", "hang");
	size_t i, nphases = 0;
	char label[24];

	section_begin(&p->body, "heatmap", "Ranks × phases: share of time in MPI");
	json_array_foreach(rows, i, row)
		if (json_array_size(pdi_jarr(row, "mpi")) > nphases)
			nphases = json_array_size(pdi_jarr(row, "mpi"));
	json_array_foreach(rows, i, row) {
		json_t *mpi = json_deep_copy(pdi_jarr(row, "mpi") ?: json_array());

		while (mpi && json_array_size(mpi) < nphases)
			json_array_append_new(mpi, json_null());
		if (mpi && now)
			json_array_append_new(mpi, now_value(doc, pdi_jstr(row, "ranks")));
		if (!mpi || json_array_append_new(out, json_pack("{sssIso}", "ranks", pdi_jstr(row, "ranks") ?: "?", "count",
								  pdi_jint(row, "count", 1), "mpi", mpi)) < 0)
			p->failed = true;
	}
	for (size_t k = 0; k < nphases; k++) {
		snprintf(label, sizeof(label), "%zu", k);
		json_array_append_new(labels, json_string(label));
	}
	if (now)
		json_array_append_new(labels, json_string("now"));
	if (!json_array_size(out) || !nphases) {
		pdi_html_note(p, "No ranks × phases map: %s", rp ? "no task has a phase" : "this report has no per-rank phase "
												       "times (rank_phases)");
		pdi_json_printf(&p->body, "<p class=\"missing\">No per-rank phase times.</p></section>\n");
		json_decref(out);
		json_decref(labels);
		return;
	}
	pdi_json_printf(&p->body, "<p class=\"hint\">Each row is a rank, or ranks that behaved alike (their ranges "
				  "on the left)%s. A rank that waits little while the others wait much, or the "
				  "reverse, stands out as a line.%s</p>\n<div class=\"chart\" id=\"heatmap-chart\"></div>"
				  "</section>\n",
			pdi_jstr(rp, "aggregated") && strcmp(pdi_jstr(rp, "aggregated"), "none")
				? "; blocks of ranks show their most unusual member"
				: "",
			now ? " The last column, now, is where each row's first rank is: in MPI (1) or computing (0)." : "");
	pdi_html_data_set(p, "heatmap", json_pack("{sososI}", "rows", out, "labels", labels, "faulty", faulty_phase(doc)));
}

/* A hang: what each group of tasks is doing, and for how long. */
static void hang(struct pdi_html_page *p, const json_t *doc)
{
	const json_t *v = pdi_jobj(doc, "verdict");
	json_t *groups = pdi_jarr(v, "groups"), *tasks = pdi_jarr(doc, "tasks"), *g, *t;
	struct pdi_json *o = &p->body;
	double longest = 0;
	size_t i, k;

	if (strcmp(pdi_jstr(v, "kind") ?: "", "hang"))
		return;
	section_begin(o, "hang", "The hang: what each group is doing");
	json_array_foreach(tasks, k, t)
		if (!strcmp(pdi_jstr(t, "status") ?: "", "blocked") && pdi_jnum(t, "for_ns", 0) > longest)
			longest = pdi_jnum(t, "for_ns", 0);
	if (longest > 0) {
		char s[32];

		seconds(longest, s, sizeof(s));
		pdi_json_printf(o, "<p>Judged hung once no task had made progress for longer than the step's own "
				   "history makes plausible; the longest-blocked task had been waiting %s when this "
				   "report was made.</p>\n", s);
	} else {
		pdi_json_printf(o, "<p>The step ended with these tasks blocked in MPI.</p>\n");
	}
	pdi_json_printf(o, "<table class=\"groups\"><thead><tr><th>ranks</th><th>tasks</th><th>doing</th><th>where</th>"
			   "<th>for</th></tr></thead><tbody>\n");
	json_array_foreach(groups, i, g) {
		const char *status = pdi_jstr(g, "status") ?: "", *where = pdi_jstr(g, "where") ?: "";
		double lo = INFINITY, hi = 0;
		char a[32], b[32];

		json_array_foreach(tasks, k, t)
			if (!strcmp(pdi_jstr(t, "status") ?: "", status) && !strcmp(pdi_jstr(t, "where") ?: "", where)) {
				lo = fmin(lo, pdi_jnum(t, "for_ns", 0));
				hi = fmax(hi, pdi_jnum(t, "for_ns", 0));
			}
		pdi_json_printf(o, "<tr class=\"%s\"><td>", !strcmp(status, "blocked") ? "blocked" : "other");
		pdi_html_text(o, pdi_jstr(g, "ranks"));
		pdi_json_printf(o, "</td><td>%" JSON_INTEGER_FORMAT "</td><td>", pdi_jint(g, "count", 0));
		pdi_html_text(o, status);
		pdi_json_printf(o, "</td><td><code>");
		pdi_html_text(o, where);
		pdi_json_printf(o, "</code></td><td>");
		if (hi > 0) {
			seconds(lo, a, sizeof(a));
			seconds(hi, b, sizeof(b));
			pdi_html_textf(o, strcmp(a, b) ? "%s – %s" : "%s", a, b);
		}
		pdi_json_printf(o, "</td></tr>\n");
	}
	pdi_json_printf(o, "</tbody></table></section>\n");
}

/* "MPI_Barrier in main, ring.c:37" for a transition's site */
static void site_cell(struct pdi_json *o, const json_t *site)
{
	const char *caller = pdi_jstr(site, "caller"), *file = pdi_jstr(site, "file");

	if (!site) {
		pdi_json_printf(o, "<td></td>");
		return;
	}
	pdi_json_printf(o, "<td class=\"site\"><code>");
	pdi_html_text(o, pdi_jstr(site, "name"));
	pdi_json_printf(o, "</code>");
	if (caller && caller[0]) {
		pdi_json_printf(o, " in <code>");
		pdi_html_text(o, caller);
		pdi_json_printf(o, "</code>");
	}
	if (file && file[0])
		pdi_html_textf(o, ", %s:%" JSON_INTEGER_FORMAT, file, pdi_jint(site, "line", 0));
	pdi_json_printf(o, "</td>");
}

static void transitions_table(struct pdi_html_page *p, const char *id, const char *title, const json_t *list,
			      const char *score_key, const char *score_name)
{
	struct pdi_json *o = &p->body;
	json_t *t;
	size_t i;

	section_begin(o, id, title);
	pdi_json_printf(o, "<table class=\"transitions\"><thead><tr><th>#</th><th>from</th><th>to</th><th>ranks</th>"
			   "<th>%s</th><th>call site</th></tr></thead><tbody>\n", score_name);
	json_array_foreach(list, i, t) {
		pdi_json_printf(o, "<tr><td>%zu</td><td><code>", i + 1);
		pdi_html_text(o, pdi_jstr(t, "from"));
		pdi_json_printf(o, "</code></td><td><code>");
		pdi_html_text(o, pdi_jstr(t, "to"));
		pdi_json_printf(o, "</code></td><td>");
		pdi_html_text(o, pdi_jstr(t, "ranks"));
		pdi_json_printf(o, "</td><td>%.3g", pdi_jnum(t, score_key, 0));
		if (pdi_jnum(t, "lost_s", 0) > 0) /* where the faulty task lost its time (characteristic) */
			pdi_json_printf(o, "; %.2f s longer than on its peers", pdi_jnum(t, "lost_s", 0));
		pdi_json_printf(o, "</td>");
		site_cell(o, pdi_jobj(t, "site"));
		pdi_json_printf(o, "</tr>\n");
	}
	pdi_json_printf(o, "</tbody></table></section>\n");
}

static void transitions(struct pdi_html_page *p, const json_t *doc)
{
	const json_t *am = pdi_jobj(doc, "automaded");

	if (!am)
		return;
	if (json_array_size(pdi_jarr(am, "transitions")))
		transitions_table(p, "transitions", "Transitions that make the faulty phase differ (AutomaDeD)",
				  pdi_jarr(am, "transitions"), "score", "score");
	else
		pdi_html_note(p, "No characteristic transitions: AutomaDeD found none in the faulty phase");
	if (json_array_size(pdi_jarr(am, "unusual_transitions")))
		transitions_table(p, "unusual", "Transitions whose times were least probable",
				  pdi_jarr(am, "unusual_transitions"), "log10_probability", "log10 p");
}

static void tasks(struct pdi_html_page *p, const json_t *doc)
{
	json_t *list = pdi_jarr(doc, "tasks"), *t;
	struct pdi_json *o = &p->body;
	size_t i, incomplete = 0;

	json_array_foreach(list, i, t)
		incomplete += pdi_jbool(t, "incomplete");
	if (incomplete)
		pdi_html_note(p, "%zu task%s lost events or dropped states: %s model%s incomplete, and %s scores understate "
				 "%s", incomplete, incomplete == 1 ? "" : "s", incomplete == 1 ? "its" : "their",
			      incomplete == 1 ? " is" : "s are", incomplete == 1 ? "its" : "their",
			      incomplete == 1 ? "it" : "them");
	if (json_array_size(list) == 1)
		pdi_html_note(p, "A single task: its phases are compared with each other only, and there is no other task "
				 "to order it against");
	section_begin(o, "tasks", "Tasks");
	if (json_array_size(list) > MAX_TASK_ROWS) {
		pdi_json_printf(o, "<p>%zu tasks: too many to list one by one; the groups above and the prefix tree "
				   "name them by rank ranges.</p></section>\n", json_array_size(list));
		return;
	}
	pdi_json_printf(o, "<table class=\"tasks\"><thead><tr><th>rank</th><th>pid</th><th>state</th><th>doing</th>"
			   "<th>where</th><th>MPI calls</th><th>phases</th><th>events lost</th><th>model</th></tr>"
			   "</thead><tbody>\n");
	json_array_foreach(list, i, t) {
		pdi_json_printf(o, "<tr><td>%" JSON_INTEGER_FORMAT "</td><td>%" JSON_INTEGER_FORMAT "</td><td>",
				pdi_jint(t, "rank", -1), pdi_jint(t, "pid", 0));
		pdi_html_text(o, pdi_jstr(t, "state"));
		pdi_json_printf(o, "</td><td>");
		pdi_html_text(o, pdi_jstr(t, "status"));
		pdi_json_printf(o, "</td><td><code>");
		pdi_html_text(o, pdi_jstr(t, "where"));
		pdi_json_printf(o, "</code></td><td>%" JSON_INTEGER_FORMAT "</td><td>%" JSON_INTEGER_FORMAT
				   "</td><td>%" JSON_INTEGER_FORMAT "</td><td>%s</td></tr>\n",
				pdi_jint(t, "calls", 0), pdi_jint(t, "phases", 0), pdi_jint(t, "events_lost", 0),
				pdi_jbool(t, "incomplete") ? "incomplete" : "complete");
	}
	pdi_json_printf(o, "</tbody></table></section>\n");
}

int pdi_html_report(struct pdi_html_page *p, const json_t *doc, char **ret)
{
	char *verdict = verdict_sentence(doc), title[300], name[160];
	int r;

	if (!verdict)
		return -ENOMEM;
	snprintf(title, sizeof(title), "pdimon: step %s",
		 pdi_html_shorten(pdi_jstr(doc, "step") ?: "?", 100, name, sizeof(name)));
	facts(p, doc);
	limits(p, doc);
	timeline(p, doc);
	heatmap(p, doc);
	hang(p, doc);
	pdi_html_graph_pdg(p, doc);
	transitions(p, doc);
	pdi_html_graph_tree(p, doc);
	tasks(p, doc);
	r = pdi_html_page_finish(p, title, verdict, ret);
	free(verdict);
	return r;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* test-html.c -- HTML pages of reports and trends (lib/html), with Graphviz laying the graphs
 * out for real: what each kind of document shows, what a page says it could not show, and
 * that no name from a program can add markup or a script. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <graphviz/gvc.h>

#include "../../client/graphviz_svg.h"
#include "html.h"

#define NONCE "0123456789abcdef0123"

static const char hang_doc[] =
	"{\"step\":\"hung\",\"job_id\":7,\"step_id\":0,\"state\":\"running\",\"started\":1764130000,\"ended\":null,"
	"\"nodes\":{\"count\":1,\"answered\":1},\"verdict\":{\"kind\":\"hang\",\"pdg\":{\"groups\":["
	"{\"ranks\":\"[0-1,3]\",\"at\":\"MPI_Barrier@ring.c:37\",\"inside\":true,\"least_progressed\":false},"
	"{\"ranks\":\"[2]\",\"at\":\"MPI_Waitall@ring.c:33\",\"inside\":false,\"least_progressed\":true}],"
	"\"edges\":[{\"from\":0,\"to\":1,\"dependence\":\"waits_for\"}]},\"least_progressed\":\"[2]\",\"groups\":["
	"{\"status\":\"computing\",\"where\":\"after MPI_Waitall@ring.c:33\",\"ranks\":\"[2]\",\"count\":1},"
	"{\"status\":\"blocked\",\"where\":\"MPI_Barrier@ring.c:37\",\"ranks\":\"[0-1,3]\",\"count\":3}]},"
	"\"diagnosis\":{\"method\":\"pdi\",\"effect\":\"hang\",\"faulty_phase\":0,\"faulty_ranks\":[2],\"stopped_at\":"
	"[{\"rank\":2,\"status\":\"computing\",\"where\":\"after MPI_Waitall@ring.c:33\"}],\"abnormal\":true,\"limits\":[]},"
	"\"phases\":[{\"kind\":\"steady\",\"start_s\":0,\"end_s\":1.5}],\"rank_phases\":{\"aggregated\":\"none\",\"rows\":[{\"ranks\":\"[0]\",\"count\":1,\"mpi\":[0.9]},"
	"{\"ranks\":\"[2]\",\"count\":1,\"mpi\":[0.1]}]},"
	"\"prefix_tree\":{\"frame\":\"\",\"ranks\":\"[0-3]\",\"count\":4,\"children\":[{\"frame\":\"main@ring.c:20\","
	"\"ranks\":\"[0-3]\",\"count\":4}]},\"tasks\":[{\"rank\":0,\"pid\":1,\"state\":\"running\",\"status\":\"blocked\","
	"\"where\":\"MPI_Barrier@ring.c:37\",\"for_ns\":2500000000,\"incomplete\":false},{\"rank\":2,\"pid\":3,"
	"\"state\":\"running\",\"status\":\"computing\",\"where\":\"after MPI_Waitall@ring.c:33\",\"for_ns\":2600000000,"
	"\"incomplete\":false}]}";

static GVC_t *gvc;

static void setup(void)
{
	gvc = pdi_graphviz_open();
	cr_assert(gvc, "Graphviz loads its plugins");
}

static void teardown(void)
{
	pdi_graphviz_close(gvc);
}

static int render_env(const char *doc, size_t len, const struct pdi_html_env *env, char **ret, char *why)
{
	return pdi_html_render(doc, len, env, ret, why);
}

static char *render_ok(const char *doc)
{
	struct pdi_html_env env = {.layout = pdi_graphviz_svg, .layout_ctx = gvc, .nonce = NONCE, .generator = "pdimon test"};
	char why[PDI_HTML_WHY_LEN] = "", *page = NULL;
	int r = render_env(doc, strlen(doc), &env, &page, why);

	cr_assert_eq(r, 0, "rendered: %s", why);
	return page;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The page's only scripts: the data block and the two with the nonce; the data holds no '<'. */
static void assert_scripts_are_ours(const char *page)
{
	const char *data = strstr(page, "<script type=\"application/json\" id=\"pdimon-data\">"), *end;

	cr_assert_eq(count(page, "<script"), 3, "three scripts, no more");
	cr_assert_eq(count(page, "<script nonce=\"" NONCE "\">"), 2);
	cr_assert(data);
	end = strstr(data, "</script>");
	for (const char *c = data + 50; c < end; c++)
		cr_assert_neq(*c, '<', "no '<' in the chart data");
}

/* DOC with every "@@" replaced by TEXT (a JSON string's contents) */
static char *with(const char *doc, const char *text)
{
	size_t n = strlen(doc) + count(doc, "@@") * strlen(text) + 1;
	char *out = malloc(n), *o = out;

	for (const char *p = doc; *p;) {
		if (!strncmp(p, "@@", 2)) {
			o = stpcpy(o, text);
			p += 2;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

TestSuite(html, .init = setup, .fini = teardown);

Test(html, hang_verdict_pdg_and_groups)
{
	char *page = render_ok(hang_doc);

	cr_assert(strstr(page, "hung: ranks <strong>[0-1,3]</strong> wait in"), "%.2000s", strstr(page, "<section id=\"verdict\""));
	cr_assert(strstr(page, "the least progressed, rank <strong>[2]</strong>, is computing"));
	cr_assert(strstr(page, "class=\"node lp\""), "the least-progressed group marked in the PDG");
	cr_assert(strstr(page, "<svg"));
	cr_assert(strstr(page, "id=\"tree\""));
	cr_assert(strstr(page, "<tr class=\"faulty\" data-phase=\"0\">"));
	cr_assert(strstr(page, "Content-Security-Policy"));
	cr_assert(strstr(page, "script-src 'nonce-" NONCE "'"));
	cr_assert_eq(count(page, "id=\"pdg&#45;n1\""), 1, "ids of the graph's own");
	assert_scripts_are_ours(page);
	free(page);
}

Test(html, names_cannot_add_markup_or_scripts)
{
	static const char evil[] = "</script><script>alert(1)</script><b>&amp;\\\"q'\\n\\\\N";
	char *doc = with("{\"step\":\"@@\",\"verdict\":{\"kind\":\"hang\",\"pdg\":{\"groups\":[{\"ranks\":\"[0]\",\"at\":\"@@\","
			 "\"least_progressed\":true}],\"edges\":[]},\"least_progressed\":\"[0]\",\"groups\":[{\"status\":"
			 "\"blocked\",\"where\":\"@@\",\"ranks\":\"[0]\",\"count\":1}]},\"diagnosis\":{\"stopped_at\":"
			 "[{\"status\":\"blocked\",\"where\":\"@@\"}],\"limits\":[\"@@\"]},\"automaded\":{\"phase_scores\":"
			 "[1,2],\"first_phase\":0,\"end_phase\":2,\"transitions\":[{\"from\":\"@@\",\"to\":\"@@\",\"ranks\":"
			 "\"[0]\",\"score\":1,\"site\":{\"name\":\"@@\",\"caller\":\"@@\",\"file\":\"@@\",\"line\":3}}]},"
			 "\"prefix_tree\":{\"frame\":\"\",\"ranks\":\"[0]\",\"count\":1,\"children\":[{\"frame\":\"@@\","
			 "\"ranks\":\"[0]\",\"count\":1}]},\"tasks\":[{\"rank\":0,\"status\":\"blocked\",\"where\":\"@@\"}]}",
			 evil);
	char *page = render_ok(doc);

	assert_scripts_are_ours(page);
	cr_assert_eq(count(page, "<b>"), 0);
	cr_assert_eq(count(page, "alert(1)</script>"), 0);
	cr_assert_geq(count(page, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;&amp;amp;&quot;q&#39;"), 8,
		      "shown as text in the verdict, tables and limits");
	/* Graphviz: \N is not its escape, &amp; not an entity: both shown as they are */
	cr_assert(strstr(page, "&amp;amp;&quot;q&#39;"));
	cr_assert(strstr(page, "\\N"));
	free(page);
	free(doc);
}

Test(html, no_phases_says_so)
{
	char *page = render_ok("{\"step\":\"s\",\"verdict\":{\"kind\":\"completed\",\"groups\":[]},\"diagnosis\":{\"method\":"
			       "\"none\",\"abnormal\":false,\"limits\":[\"no MPI task was monitored\"]},\"tasks\":[]}");

	cr_assert(strstr(page, "What this page cannot show"));
	cr_assert(strstr(page, "No timeline: AutomaDeD did not run on this step"));
	cr_assert(strstr(page, "No ranks × phases map"));
	cr_assert(strstr(page, "No prefix tree"));
	cr_assert(strstr(page, "no monitored MPI task"));
	cr_assert(strstr(page, "no MPI task was monitored"), "the analysis's own limits listed");
	cr_assert_null(strstr(page, "id=\"timeline-chart\""));
	assert_scripts_are_ours(page);
	free(page);
}

Test(html, one_task_and_an_incomplete_model)
{
	char *page = render_ok("{\"step\":\"one\",\"verdict\":{\"kind\":\"completed\",\"groups\":[]},\"diagnosis\":{\"abnormal\":"
			       "false},\"tasks\":[{\"rank\":0,\"status\":\"finished\",\"incomplete\":true,\"events_lost\":12}]}");

	cr_assert(strstr(page, "A single task"));
	cr_assert(strstr(page, "1 task lost events or dropped states: its model is incomplete"));
	cr_assert(strstr(page, "completed (1 task): nothing abnormal found."));
	free(page);
}

Test(html, stall_marks_the_faulty_phase_in_time)
{
	char *page = render_ok("{\"step\":\"st\",\"verdict\":{\"kind\":\"completed\",\"groups\":[]},\"diagnosis\":{\"method\":"
			       "\"automaded\",\"effect\":\"temporary\",\"faulty_phase\":2,\"abnormal\":true,\"confidence\":0.9,"
			       "\"transitions\":[{\"from\":\"a\",\"to\":\"b\"}]},\"automaded\":{\"phase_scores\":[0,1,9,1],"
			       "\"first_phase\":1,\"end_phase\":4,\"faulty_ranks_text\":\"[1]\",\"effect\":\"temporary\"},"
			       "\"phases\":[{\"kind\":\"setup\",\"start_s\":0,\"end_s\":1},{\"start_s\":1,\"end_s\":2},"
			       "{\"start_s\":2,\"end_s\":3.5},{\"start_s\":3.5,\"end_s\":4}],\"rank_phases\":{\"rows\":[{\"ranks\":\"[0]\",\"mpi\":"
			       "[0.1,0.1,0.9,0.1]},{\"ranks\":\"[1]\",\"mpi\":[0.1,0.1,0.05,null]}]},\"tasks\":[{},{}]}");

	cr_assert(strstr(page, "behaviour changed most in <strong>phase 2</strong>, 2.0 s – 3.5 s after start, in rank "
			       "<strong>[1]</strong>"), "%.600s", strstr(page, "<p class=\"verdict\">"));
	cr_assert(strstr(page, "<tr class=\"faulty\" data-phase=\"2\">"));
	cr_assert(strstr(page, "set-up, not compared"));
	cr_assert(strstr(page, "\"faulty\":2"), "the chart data name it");
	cr_assert(strstr(page, "id=\"heatmap-chart\""));
	free(page);
}

Test(html, invalid_utf8_is_shown_as_replacement)
{
	char *page = render_ok("{\"step\":\"bad\xff\xfe name\",\"verdict\":{\"kind\":\"completed\"},\"tasks\":[]}");

	cr_assert(strstr(page, "bad\xef\xbf\xbd\xef\xbf\xbd name"));
	free(page);
}

Test(html, documents_it_cannot_render)
{
	struct pdi_html_env env = {.layout = pdi_graphviz_svg, .layout_ctx = gvc, .nonce = NONCE, .generator = "t"};
	char why[PDI_HTML_WHY_LEN] = "", *page = (char *)"untouched";

	cr_assert_eq(render_env("{\"step\":", 8, &env, &page, why), -EBADMSG);
	cr_assert(strstr(why, "not JSON"), "%s", why);
	cr_assert_eq(render_env("[1,2]", 5, &env, &page, why), -EINVAL);
	cr_assert(strstr(why, "neither a step's report"), "%s", why);
	env.nonce = "short";
	cr_assert_eq(render_env(hang_doc, strlen(hang_doc), &env, &page, why), -EINVAL);
	env.nonce = "\"><script>x</script>aaaaaaaaaaaa";
	cr_assert_eq(render_env(hang_doc, strlen(hang_doc), &env, &page, why), -EINVAL);
	cr_assert_str_eq(page, "untouched");
}

Test(html, graphs_without_graphviz_say_so)
{
	struct pdi_html_env env = {.nonce = NONCE, .generator = "t"};
	char why[PDI_HTML_WHY_LEN], *page;

	cr_assert_eq(render_env(hang_doc, strlen(hang_doc), &env, &page, why), 0);
	cr_assert(strstr(page, "The progress dependence graph could not be drawn: no graph layout (Graphviz)"));
	cr_assert_null(strstr(page, "<svg"));
	free(page);
}

Test(html, trends_flagged_sites_points_and_fits)
{
	char *page = render_ok("{\"program\":\"solver\",\"feature\":\"tasks\",\"runs\":6,\"sizes\":[2,4,8],\"sites\":["
			       "{\"site\":\"MPI_Allreduce@solver.c:88\",\"metric\":\"calls\",\"model\":\"power\",\"exponent\":1.01,"
			       "\"coefficient\":10,\"flagged\":true,\"trend\":\"calls per task grow as n^1.01\",\"fit\":{\"a\":0,"
			       "\"b\":10,\"c\":1.01,\"r2\":0.99},\"points\":[{\"x\":2,\"y\":20},{\"x\":4,\"y\":41},{\"x\":8,"
			       "\"y\":80},{\"x\":8,\"y\":0}]},{\"site\":\"MPI_Bcast@solver.c:12\",\"metric\":\"calls\",\"model\":"
			       "\"flat\",\"exponent\":0,\"coefficient\":0,\"flagged\":false,\"fit\":{\"a\":5,\"b\":0,\"c\":0,"
			       "\"r2\":1}}]}");

	cr_assert(strstr(page, "<code>MPI_Allreduce@solver.c:88</code>: calls per task grow as n^1.01"));
	cr_assert(strstr(page, "<tr class=\"flagged\">"));
	cr_assert(strstr(page, "1 measured points are zero or negative"));
	cr_assert(strstr(page, "1 series have no measured points"));
	cr_assert(strstr(page, "\"trends\":{"));
	assert_scripts_are_ours(page);
	free(page);
}

/* A 10,000-rank step: rank ranges, aggregated rows, a cut tree, and a small page. */
Test(html, ten_thousand_ranks_stay_small)
{
	size_t cap = 8 << 20, len = 0;
	char *doc = malloc(cap), *page;

	len += (size_t)sprintf(doc + len, "{\"step\":\"big\",\"verdict\":{\"kind\":\"hang\",\"least_progressed\":\"[4242]\","
					  "\"pdg\":{\"groups\":[{\"ranks\":\"[0-4241,4243-9999]\",\"at\":\"MPI_Allreduce@a.c:1\","
					  "\"inside\":true},{\"ranks\":\"[4242]\",\"at\":\"MPI_Send@a.c:2\",\"least_progressed\":true}],"
					  "\"edges\":[{\"from\":0,\"to\":1,\"dependence\":\"waits_for\"}]},\"groups\":[]},"
					  "\"diagnosis\":{\"faulty_phase\":64},\"automaded\":{\"phase_scores\":[");
	for (int p = 0; p < 65; p++)
		len += (size_t)sprintf(doc + len, "%s%d.5", p ? "," : "", p % 7);
	len += (size_t)sprintf(doc + len, "],\"first_phase\":1,\"end_phase\":64},\"phases\":[");
	for (int p = 0; p < 65; p++)
		len += (size_t)sprintf(doc + len, "%s{\"start_s\":%d.25,\"end_s\":%d.75}", p ? "," : "", p, p);
	len += (size_t)sprintf(doc + len, "],\"rank_phases\":{\"aggregated\":\"blocks\",\"rows\":[");
	for (int r = 0; r < 256; r++) {
		len += (size_t)sprintf(doc + len, "%s{\"ranks\":\"[%d-%d]\",\"count\":40,\"mpi\":[", r ? "," : "", r * 40, r * 40 + 39);
		for (int p = 0; p < 65; p++)
			len += (size_t)sprintf(doc + len, "%s0.%03d", p ? "," : "", (r * 7 + p) % 1000);
		len += (size_t)sprintf(doc + len, "]}");
	}
	len += (size_t)sprintf(doc + len, "]},\"prefix_tree\":{\"frame\":\"\",\"ranks\":\"[0-9999]\",\"count\":10000,"
					  "\"children\":[");
	for (int c = 0; c < 400; c++)
		len += (size_t)sprintf(doc + len, "%s{\"frame\":\"f%d@a.c:%d\",\"ranks\":\"[%d-%d]\",\"count\":25}", c ? "," : "",
				       c, c, c * 25, c * 25 + 24);
	len += (size_t)sprintf(doc + len, "]},\"tasks\":[");
	for (int t = 0; t < 10000; t++)
		len += (size_t)sprintf(doc + len, "%s{\"rank\":%d,\"pid\":%d,\"state\":\"running\",\"status\":\"blocked\","
						  "\"where\":\"MPI_Allreduce@a.c:1\",\"for_ns\":5000000000,\"calls\":100000,"
						  "\"phases\":65,\"incomplete\":false}", t ? "," : "", t, 1000 + t);
	len += (size_t)sprintf(doc + len, "]}");
	cr_assert_lt(len, cap);
	page = render_ok(doc);
	fprintf(stderr, "test-html: a 10,000-rank report (%zu bytes of JSON) makes a page of %zu bytes\n", len, strlen(page));
	cr_assert_lt(strlen(page), 2 << 20, "well under 5 MB: %zu bytes", strlen(page));
	cr_assert(strstr(page, "10000 tasks: too many to list one by one"));
	cr_assert(strstr(page, "The prefix tree is cut to its first 150 frames"));
	cr_assert(strstr(page, "blocks of ranks show their most unusual member"));
	free(page);
	free(doc);
}

/* A report whose step pdimond judged hung while it ran, then cancelled (its "health"). */
Test(html, first_judged_hung_and_cancelled)
{
	char *doc = strdup(hang_doc), *page, *end;
	static const char health[] = ",\"health\":{\"health\":\"hung\",\"since\":1764130100,\"first_judged_hung\":1764130100,"
				     "\"cancelled\":1764130400,\"actions\":[]}}";

	cr_assert(doc);
	doc = realloc(doc, strlen(doc) + sizeof(health));
	cr_assert(doc);
	end = strrchr(doc, '}');
	strcpy(end, health);
	page = render_ok(doc);
	cr_expect(strstr(page, "first judged hung "), "%.1500s", strstr(page, "facts"));
	cr_expect(strstr(page, "cancelled by pdimon "));
	free(page);
	free(doc);
	page = render_ok(hang_doc);
	cr_expect_null(strstr(page, "first judged hung"), "nothing said when the report has no health");
	free(page);
}

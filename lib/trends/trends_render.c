/* SPDX-License-Identifier: GPL-2.0-only */
/* trends_render.c -- ranked trends as `pdimon trends` prints them: the JSON document (the
 * interface other renderers, the HTML report among them, read), a text table after
 * ti-trend-prof's Table 1, and an SVG chart of the top series with their fitted curves. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "trends.h"

#define SVG_PANELS 8 /* series charted */
#define SVG_COLS 2
#define SVG_W 420
#define SVG_H 260
#define SVG_CURVE_STEPS 48

static double value_of(const struct pdi_trend_input *in, uint32_t site, size_t run, enum pdi_trend_metric m)
{
	return in->values[((size_t)site * in->nruns + run) * PDI_TREND_NMETRICS + (size_t)m];
}

/* The distinct sizes, ascending, and how many runs each; returns how many. */
static size_t distinct_sizes(const struct pdi_trend_input *in, double *sizes, unsigned *counts)
{
	size_t n = 0;

	for (size_t k = 0; k < in->nruns; k++) {
		size_t i = 0;

		while (i < n && sizes[i] != in->x[k])
			i++;
		if (i == n) {
			sizes[n] = in->x[k];
			counts[n++] = 0;
		}
		counts[i]++;
	}
	/* insertion sort: a handful of sizes */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) {
			double s = sizes[j];
			unsigned c = counts[j];

			sizes[j] = sizes[j - 1];
			counts[j] = counts[j - 1];
			sizes[j - 1] = s;
			counts[j - 1] = c;
		}
	return n;
}

/* "200n - 416", "41n^2.00 + 3", "12 (flat)": the fit in the feature's letter. */
static void formula(const struct pdi_trend_fit *f, char var, char *buf, size_t len)
{
	char term[64];

	if (f->model == PDI_TREND_FLAT) {
		snprintf(buf, len, "%.4g (flat)", f->a);
		return;
	}
	if (f->model == PDI_TREND_LINEAR)
		snprintf(term, sizeof(term), "%.4g%c", f->b, var);
	else
		snprintf(term, sizeof(term), "%.4g%c^%.2f", f->b, var, f->c);
	if (fabs(f->a) < 5e-5 * fabs(f->b))
		snprintf(buf, len, "%s", term);
	else
		snprintf(buf, len, "%s %c %.4g", term, f->a < 0 ? '-' : '+', fabs(f->a));
}

static char feature_var(const struct pdi_trend_report *r)
{
	return strcmp(r->feature, "tasks") ? 's' : 'n';
}

/* ---- JSON ---- */

static void json_fit(struct pdi_json *j, const char *key, double a, double b, double c, double r2, bool with_c)
{
	pdi_json_key(j, key);
	pdi_json_obj_begin(j);
	pdi_json_kv_double(j, "a", a);
	pdi_json_kv_double(j, "b", b);
	if (with_c)
		pdi_json_kv_double(j, "c", c);
	pdi_json_kv_double(j, "r2", r2);
	pdi_json_obj_end(j);
}

static void json_entry(struct pdi_json *j, const struct pdi_trend_report *r, const struct pdi_trend_entry *e,
		       size_t rank)
{
	const struct pdi_trend_input *in = r->in;
	const struct pdi_trend_fit *f = &e->fit;
	char buf[160];

	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "rank", rank);
	pdi_json_kv_str(j, "site", in->sites[e->site]);
	pdi_json_kv_str(j, "metric", pdi_trend_metric_names[e->metric]);
	pdi_json_kv_double(j, "exponent", f->c);
	pdi_json_kv_double(j, "coefficient", f->b);
	pdi_json_kv_str(j, "model", pdi_trend_model_names[f->model]);
	formula(f, feature_var(r), buf, sizeof(buf));
	pdi_json_kv_str(j, "trend", buf);
	pdi_json_kv_bool(j, "flagged", e->flagged);
	pdi_json_kv_double(j, "growth", e->growth); /* null: from nothing to something */
	json_fit(j, "fit", f->a, f->b, f->c, f->r2, true);
	json_fit(j, "linear", f->lin_a, f->lin_b, 1.0, f->lin_r2, false);
	if (f->pow_ok)
		json_fit(j, "power", f->pow_a, f->pow_b, f->pow_c, f->pow_r2, true);
	else {
		pdi_json_key(j, "power");
		pdi_json_null(j);
	}
	pdi_json_key(j, "points");
	pdi_json_arr_begin(j);
	for (size_t k = 0; k < in->nruns; k++) {
		pdi_json_obj_begin(j);
		pdi_json_kv_double(j, "x", in->x[k]);
		pdi_json_kv_double(j, "y", value_of(in, e->site, k, e->metric));
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
}

/* The members one feature's trends have; SIZES has room for the runs. */
static void json_report(struct pdi_json *j, const struct pdi_trend_report *r, double *sizes, unsigned *counts)
{
	size_t n = distinct_sizes(r->in, sizes, counts);

	pdi_json_kv_str(j, "feature", r->feature);
	if (!strcmp(r->feature, "tasks")) {
		pdi_json_key(j, "input_size");
		if (r->held > 0)
			pdi_json_double(j, r->held);
		else
			pdi_json_null(j);
	} else {
		pdi_json_kv_double(j, "tasks", r->held);
	}
	pdi_json_kv_uint(j, "runs", r->in->nruns);
	pdi_json_key(j, "sizes");
	pdi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++)
		pdi_json_double(j, sizes[i]);
	pdi_json_arr_end(j);
	pdi_json_key(j, "runs_per_size");
	pdi_json_arr_begin(j);
	for (size_t i = 0; i < n; i++)
		pdi_json_uint(j, counts[i]);
	pdi_json_arr_end(j);
	pdi_json_kv_uint(j, "flagged", r->trends->nflagged);
	pdi_json_key(j, "median_exponent");
	pdi_json_obj_begin(j);
	for (int m = 0; m < PDI_TREND_NMETRICS; m++)
		pdi_json_kv_double(j, pdi_trend_metric_names[m], r->trends->median_exponent[m]);
	pdi_json_obj_end(j);
	pdi_json_key(j, "sites");
	pdi_json_arr_begin(j);
	for (size_t i = 0; i < r->trends->n; i++)
		json_entry(j, r, &r->trends->v[i], i + 1);
	pdi_json_arr_end(j);
}

/* Room for the distinct sizes of D's reports and their run counts: 0, or -ENOMEM. */
static int sizes_new(const struct pdi_trend_doc *d, double **sizes, unsigned **counts)
{
	size_t n = 1;

	for (size_t i = 0; i < d->nreports; i++)
		if (d->reports[i].in->nruns > n)
			n = d->reports[i].in->nruns;
	*sizes = malloc(n * sizeof(**sizes));
	*counts = malloc(n * sizeof(**counts));
	if (*sizes && *counts)
		return 0;
	free(*sizes);
	free(*counts);
	return -ENOMEM;
}

char *pdi_trends_render_json(const struct pdi_trend_doc *d)
{
	unsigned *counts;
	struct pdi_json j;
	double *sizes;

	if (sizes_new(d, &sizes, &counts) < 0)
		return NULL;
	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_kv_str(&j, "program", d->program);
	pdi_json_kv_str(&j, "executable", d->executable);
	pdi_json_kv_str(&j, "build", d->build);
	pdi_json_kv_str(&j, "source", d->source);
	if (d->nreports)
		json_report(&j, &d->reports[0], sizes, counts);
	pdi_json_key(&j, "other_features");
	pdi_json_arr_begin(&j);
	for (size_t i = 1; i < d->nreports; i++) {
		pdi_json_obj_begin(&j);
		json_report(&j, &d->reports[i], sizes, counts);
		pdi_json_obj_end(&j);
	}
	pdi_json_arr_end(&j);
	pdi_json_key(&j, "notes");
	pdi_json_arr_begin(&j);
	for (size_t i = 0; i < d->nnotes; i++)
		pdi_json_str(&j, d->notes[i]);
	pdi_json_arr_end(&j);
	pdi_json_obj_end(&j);
	free(sizes);
	free(counts);
	return pdi_json_steal(&j);
}

/* ---- text ---- */

static void text_sizes(struct pdi_json *t, const struct pdi_trend_report *r, double *sizes, unsigned *counts)
{
	size_t n = distinct_sizes(r->in, sizes, counts);

	for (size_t i = 0; i < n; i++)
		pdi_json_printf(t, "%s%g", i == 0 ? "" : i + 1 == n ? " and " : ", ", sizes[i]);
}

static void text_report(struct pdi_json *t, const struct pdi_trend_report *r, double *sizes, unsigned *counts)
{
	bool tasks = !strcmp(r->feature, "tasks");
	char buf[160];

	pdi_json_printf(t, "\nBy %s: %zu runs at ", tasks ? "task count" : "input size", r->in->nruns);
	text_sizes(t, r, sizes, counts);
	pdi_json_printf(t, " %s", tasks ? "tasks" : "(input size)");
	if (tasks && r->held > 0)
		pdi_json_printf(t, ", input size %g", r->held);
	else if (!tasks)
		pdi_json_printf(t, ", %g tasks each", r->held);
	pdi_json_printf(t, "; %zu series, %zu growing faster than the rest\n", r->trends->n, r->trends->nflagged);
	pdi_json_printf(t, "%4s  %-44s %-6s %-28s %6s %8s\n", "rank", "call site", "metric",
			tasks ? "per task, n = tasks" : "per task, s = input size", "r2", "growth");
	for (size_t i = 0; i < r->trends->n; i++) {
		const struct pdi_trend_entry *e = &r->trends->v[i];
		char growth[32];

		formula(&e->fit, feature_var(r), buf, sizeof(buf));
		if (isfinite(e->growth))
			snprintf(growth, sizeof(growth), "%7.3gx", e->growth);
		else
			snprintf(growth, sizeof(growth), "from 0"); /* no call at the smallest size */
		pdi_json_printf(t, "%3zu%c  %-44.200s %-6s %-28s %6.3f %8s\n", i + 1, e->flagged ? '!' : ' ',
				r->in->sites[e->site], pdi_trend_metric_names[e->metric], buf, e->fit.r2, growth);
	}
	for (size_t i = 0; i < r->trends->n; i++) {
		const struct pdi_trend_entry *e = &r->trends->v[i];

		if (e->flagged)
			pdi_json_printf(t, "! %s: %s per task grows as %c^%.2f while the median site's grows as %c^%.2f\n",
					r->in->sites[e->site], pdi_trend_metric_names[e->metric], feature_var(r),
					e->fit.c, feature_var(r), r->trends->median_exponent[e->metric]);
	}
}

char *pdi_trends_render_text(const struct pdi_trend_doc *d)
{
	unsigned *counts;
	struct pdi_json t;
	double *sizes;

	if (sizes_new(d, &sizes, &counts) < 0)
		return NULL;
	pdi_json_init(&t);
	pdi_json_printf(&t, "Trends of %s (%s%s%s), from the %s\n", d->program, d->executable,
			d->build[0] ? ", build " : "", d->build, d->source);
	for (size_t i = 0; i < d->nreports; i++)
		text_report(&t, &d->reports[i], sizes, counts);
	for (size_t i = 0; i < d->nnotes; i++)
		pdi_json_printf(&t, "note: %s\n", d->notes[i]);
	free(sizes);
	free(counts);
	return pdi_json_steal(&t);
}

/* ---- SVG ---- */

static void svg_text(struct pdi_json *s, const char *v)
{
	for (; *v; v++) {
		switch (*v) {
		case '&': pdi_json_printf(s, "&amp;"); break;
		case '<': pdi_json_printf(s, "&lt;"); break;
		case '>': pdi_json_printf(s, "&gt;"); break;
		case '"': pdi_json_printf(s, "&quot;"); break;
		default:
			if ((unsigned char)*v >= 0x20)
				pdi_json_raw(s, v, 1);
		}
	}
}

/* One panel: the series' points and its fitted curve on linear axes from 0. */
static void svg_panel(struct pdi_json *s, const struct pdi_trend_report *r, const struct pdi_trend_entry *e,
		      size_t rank, double ox, double oy)
{
	const struct pdi_trend_input *in = r->in;
	const struct pdi_trends *t = r->trends;
	double pw = SVG_W - 70, ph = SVG_H - 80, ymax = 0, px = ox + 55, py = oy + 40;
	char buf[160];

	for (size_t k = 0; k < in->nruns; k++)
		ymax = fmax(ymax, value_of(in, e->site, k, e->metric));
	for (int k = 0; k <= SVG_CURVE_STEPS; k++)
		ymax = fmax(ymax, pdi_trend_eval(&e->fit, t->xmin + (t->xmax - t->xmin) * k / SVG_CURVE_STEPS));
	ymax = ymax > 0 ? ymax * 1.1 : 1;
	pdi_json_printf(s, "<g><text x=\"%.1f\" y=\"%.1f\" font-size=\"12\"%s>#%zu ", ox + 10, oy + 16,
			e->flagged ? " fill=\"#b00\"" : "", rank);
	svg_text(s, in->sites[e->site]);
	formula(&e->fit, feature_var(r), buf, sizeof(buf));
	pdi_json_printf(s, "</text><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s per task = ", ox + 10, oy + 31,
			pdi_trend_metric_names[e->metric]);
	svg_text(s, buf);
	pdi_json_printf(s, " (r\xc2\xb2 %.3f)</text>\n", e->fit.r2);
	pdi_json_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#999\"/>\n",
			px, py, pw, ph);
	pdi_json_printf(s, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.3g</text>"
			   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">0</text>"
			   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%g %s</text>\n",
			px - 4, py + 10, ymax, px - 4, py + ph, px + pw, py + ph + 14, t->xmax,
			strcmp(r->feature, "tasks") ? "(input size)" : "tasks");
	pdi_json_printf(s, "<polyline fill=\"none\" stroke=\"#36c\" points=\"");
	for (int k = 0; k <= SVG_CURVE_STEPS; k++) {
		double x = t->xmin + (t->xmax - t->xmin) * k / SVG_CURVE_STEPS, y = pdi_trend_eval(&e->fit, x);

		pdi_json_printf(s, "%.1f,%.1f ", px + pw * x / t->xmax, py + ph - ph * fmax(0, y) / ymax);
	}
	pdi_json_printf(s, "\"/>\n");
	for (size_t k = 0; k < in->nruns; k++)
		pdi_json_printf(s, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#000\"/>", px + pw * in->x[k] / t->xmax,
				py + ph - ph * value_of(in, e->site, k, e->metric) / ymax);
	pdi_json_printf(s, "</g>\n");
}

char *pdi_trends_render_svg(const struct pdi_trend_doc *d)
{
	const struct pdi_trend_report *r = d->nreports ? &d->reports[0] : NULL;
	size_t n = r ? r->trends->n : 0, rows;
	struct pdi_json s;

	if (n > SVG_PANELS)
		n = SVG_PANELS;
	rows = (n + SVG_COLS - 1) / SVG_COLS;
	pdi_json_init(&s);
	pdi_json_printf(&s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" "
			    "font-family=\"sans-serif\">\n<title>",
			SVG_W * SVG_COLS, 40 + rows * SVG_H);
	svg_text(&s, d->program);
	pdi_json_printf(&s, "</title>\n<text x=\"10\" y=\"24\" font-size=\"15\">Trends of ");
	svg_text(&s, d->program);
	if (r)
		pdi_json_printf(&s, " by %s, %zu runs: the %zu least scalable series",
				strcmp(r->feature, "tasks") ? "input size" : "task count", r->in->nruns, n);
	pdi_json_printf(&s, "</text>\n");
	for (size_t i = 0; i < n; i++)
		svg_panel(&s, r, &r->trends->v[i], i + 1, (double)(i % SVG_COLS) * SVG_W,
			  40 + (double)(i / SVG_COLS) * SVG_H);
	pdi_json_printf(&s, "</svg>\n");
	return pdi_json_steal(&s);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* html_page.c -- what the pages of every kind of document share: the page's head with its
 * Content-Security-Policy and inlined assets, escaping, the chart data, typed reads of the
 * JSON document (html.c reads it and picks the kind). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_assets.h"
#include "html_page.h"

void pdi_html_text(struct pdi_json *o, const char *s)
{
	for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
		switch (*c) {
		case '&': pdi_json_raw(o, "&amp;", 5); break;
		case '<': pdi_json_raw(o, "&lt;", 4); break;
		case '>': pdi_json_raw(o, "&gt;", 4); break;
		case '"': pdi_json_raw(o, "&quot;", 6); break;
		case '\'': pdi_json_raw(o, "&#39;", 5); break;
		default:
			if ((*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f)
				pdi_json_raw(o, PDI_HTML_REPLACEMENT, 3);
			else
				pdi_json_raw(o, (const char *)c, 1);
		}
	}
}

void pdi_html_textf(struct pdi_json *o, const char *fmt, ...)
{
	char *text;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		o->failed = true;
		return;
	}
	pdi_html_text(o, text);
	free(text);
}

void pdi_html_note(struct pdi_html_page *p, const char *fmt, ...)
{
	char *text;
	va_list ap;

	if (p->nnotes == PDI_HTML_MAX_NOTES)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		p->failed = true;
	else
		p->notes[p->nnotes++] = text;
	va_end(ap);
}

void pdi_html_data_set(struct pdi_html_page *p, const char *key, json_t *v)
{
	if (!v || json_object_set_new(p->data, key, v) < 0)
		p->failed = true;
}

size_t pdi_html_count_ranks(const char *ranks)
{
	size_t n = 0;
	long a, b;

	for (const char *p = ranks ? ranks : ""; *p;) {
		char *end;

		if (*p < '0' || *p > '9') {
			p++;
			continue;
		}
		a = strtol(p, &end, 10);
		b = *end == '-' ? strtol(end + 1, &end, 10) : a;
		n += b >= a ? (size_t)(b - a + 1) : 1;
		p = end;
	}
	return n;
}

const char *pdi_html_shorten(const char *s, size_t max, char *buf, size_t len)
{
	size_t chars = 0, i = 0;

	s = s ? s : "";
	/* count characters, not bytes: continuation bytes are 10xxxxxx */
	while (s[i] && (chars < max || ((unsigned char)s[i] & 0xc0) == 0x80)) {
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			chars++;
		i++;
	}
	if (!s[i] || i + sizeof("…") > len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	snprintf(buf, len, "%.*s…", (int)i, s);
	return buf;
}

/* The chart data inlined in a <script type="application/json">: nothing in it may close the
 * element or open a comment, so <, > and & are written as JSON escapes. */
static void data_block(struct pdi_json *o, const json_t *data)
{
	char *text = json_dumps(data, JSON_COMPACT);

	if (!text) {
		o->failed = true;
		return;
	}
	pdi_json_printf(o, "<script type=\"application/json\" id=\"pdimon-data\">");
	for (const char *c = text; *c; c++) {
		switch (*c) {
		case '<': pdi_json_raw(o, "\\u003c", 6); break;
		case '>': pdi_json_raw(o, "\\u003e", 6); break;
		case '&': pdi_json_raw(o, "\\u0026", 6); break;
		default: pdi_json_raw(o, c, 1);
		}
	}
	pdi_json_printf(o, "</script>\n");
	free(text);
}

int pdi_html_page_finish(struct pdi_html_page *p, const char *title, const char *verdict_html, char **ret)
{
	const char *nonce = p->env->nonce;
	struct pdi_json o;
	char *page;

	if (p->failed || pdi_json_failed(&p->body) || pdi_json_failed(&p->facts))
		return -ENOMEM;
	pdi_json_init(&o);
	pdi_json_printf(&o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
	/* nothing is fetched, and only the page's own scripts run: an injected one has no nonce */
	pdi_json_printf(&o, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
			    "script-src 'nonce-%s'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
			    "form-action 'none'\">\n", nonce);
	pdi_json_printf(&o, "<meta name=\"generator\" content=\"");
	pdi_html_text(&o, p->env->generator);
	pdi_json_printf(&o, "\">\n<title>");
	pdi_html_text(&o, title);
	pdi_json_printf(&o, "</title>\n<style>\n");
	pdi_json_raw(&o, pdi_html_report_css, pdi_html_report_css_len);
	pdi_json_printf(&o, "</style>\n</head>\n<body>\n<header><h1>");
	pdi_html_text(&o, title);
	pdi_json_printf(&o, "</h1></header>\n<section id=\"verdict\"><p class=\"verdict\">%s</p>", verdict_html);
	if (p->facts.len)
		pdi_json_printf(&o, "<p class=\"facts\">%.*s</p>", (int)p->facts.len, p->facts.buf);
	pdi_json_printf(&o, "</section>\n");
	if (p->nnotes) {
		pdi_json_printf(&o, "<section id=\"notes\"><h2>What this page cannot show</h2><ul>\n");
		for (size_t i = 0; i < p->nnotes; i++) {
			pdi_json_printf(&o, "<li>");
			pdi_html_text(&o, p->notes[i]);
			pdi_json_printf(&o, "</li>\n");
		}
		pdi_json_printf(&o, "</ul></section>\n");
	}
	pdi_json_raw(&o, p->body.buf ? p->body.buf : "", p->body.len);
	pdi_json_printf(&o, "<footer><p>Made by ");
	pdi_html_text(&o, p->env->generator);
	pdi_json_printf(&o, ". Charts drawn by Vega %s (BSD-3-Clause; its notice is in this page's source), "
			    "graphs laid out by Graphviz.</p></footer>\n", pdi_html_vega_version);
	data_block(&o, p->data);
	pdi_json_printf(&o, "<script nonce=\"%s\">\n", nonce);
	pdi_json_raw(&o, pdi_html_vega_js, pdi_html_vega_js_len);
	pdi_json_printf(&o, "\n</script>\n<script nonce=\"%s\">\n", nonce);
	pdi_json_raw(&o, pdi_html_report_js, pdi_html_report_js_len);
	pdi_json_printf(&o, "\n</script>\n</body>\n</html>\n");
	page = pdi_json_steal(&o);
	if (!page)
		return -ENOMEM;
	*ret = page;
	return 0;
}

void pdi_html_page_done(struct pdi_html_page *p)
{
	pdi_json_free(&p->body);
	pdi_json_free(&p->facts);
	json_decref(p->data);
	for (size_t i = 0; i < p->nnotes; i++)
		free(p->notes[i]);
	*p = (struct pdi_html_page){0};
}

const char *pdi_jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

double pdi_jnum(const json_t *o, const char *key, double def)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : def;
}

json_int_t pdi_jint(const json_t *o, const char *key, json_int_t def)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

bool pdi_jbool(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

json_t *pdi_jarr(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_array(v) ? v : NULL;
}

json_t *pdi_jobj(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_object(v) ? v : NULL;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* html_page.h -- what the report, trends and graph renderers share: the page being written
 * (its head with the inlined assets and security policy, its sections, the data its charts
 * read), escaping for HTML, and typed reads of the JSON document. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "html.h"
#include "json.h"

#define PDI_HTML_MAX_NOTES 16
#define PDI_HTML_REPLACEMENT "\xef\xbf\xbd" /* U+FFFD: what stands for a character that is not one */

struct pdi_html_page {
	const struct pdi_html_env *env;
	struct pdi_json facts;   /* a line of facts under the verdict (when, where, how many) */
	struct pdi_json body;    /* the sections, after the verdict and the notes */
	json_t *data;            /* inlined as JSON for report.js: {"timeline": ..., "heatmap": ...} */
	char *notes[PDI_HTML_MAX_NOTES]; /* what the page could not show, and why */
	size_t nnotes;
	bool failed;             /* out of memory somewhere */
};

/* HTML text or attribute value: & < > " ' escaped, control characters but tab and newline
 * replaced by U+FFFD (the document's strings are valid UTF-8: jansson checks). */
void pdi_html_text(struct pdi_json *o, const char *s);
/* The same for a printf-style text. */
void pdi_html_textf(struct pdi_json *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Say in the page what could not be shown, and why (printf-style). */
void pdi_html_note(struct pdi_html_page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Set KEY of the page's chart data to V (stolen). */
void pdi_html_data_set(struct pdi_html_page *p, const char *key, json_t *v);

/* The whole page into *RET: head (title, policy, style), VERDICT_HTML (already escaped), the
 * notes, the body, the chart data and the scripts. 0 or -ENOMEM. */
int pdi_html_page_finish(struct pdi_html_page *p, const char *title, const char *verdict_html, char **ret);
void pdi_html_page_done(struct pdi_html_page *p);

/* Typed reads of object O's member KEY: NULL / DEF when missing or of another type. */
const char *pdi_jstr(const json_t *o, const char *key);
double pdi_jnum(const json_t *o, const char *key, double def);
json_int_t pdi_jint(const json_t *o, const char *key, json_int_t def);
bool pdi_jbool(const json_t *o, const char *key);
json_t *pdi_jarr(const json_t *o, const char *key);
json_t *pdi_jobj(const json_t *o, const char *key);

/* How many ranks "[0-3,5]" names. */
size_t pdi_html_count_ranks(const char *ranks);
/* A label cut to MAX characters (UTF-8 aware) with "…", into BUF. */
const char *pdi_html_shorten(const char *s, size_t max, char *buf, size_t len);

/* SPDX-License-Identifier: GPL-2.0-only */
/* html.c -- one HTML page of a JSON document: the document read (any bytes: invalid UTF-8
 * becomes U+FFFD, since a file name in a report may be in any encoding), its kind told by its
 * members, and its page made by that kind's renderer (html_report.c, html_trends.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_page.h"
#include "html_report.h"
#include "html_trends.h"

/* The length of the valid UTF-8 sequence at P (N bytes left), 0 when it is not one. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t len;
	unsigned min;
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		len = 2, min = 0x80, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		len = 3, min = 0x800, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		len = 4, min = 0x10000, cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* DOC with every invalid UTF-8 byte replaced by U+FFFD, NUL-terminated; NULL when out of memory. */
static char *utf8_sanitized(const char *doc, size_t n, size_t *ret_len)
{
	const unsigned char *p = (const unsigned char *)doc;
	char *out = malloc(n * 3 + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(p + i, n - i);

		if (len) {
			memcpy(out + o, p + i, len);
			o += len;
			i += len;
		} else {
			memcpy(out + o, PDI_HTML_REPLACEMENT, 3);
			o += 3;
			i++;
		}
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}

static bool nonce_fit(const char *n)
{
	size_t len = n ? strlen(n) : 0;

	if (len < 16 || len > 128)
		return false;
	return strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == len;
}

int pdi_html_render(const char *doc, size_t len, const struct pdi_html_env *env, char **ret_html,
		    char why[PDI_HTML_WHY_LEN])
{
	struct pdi_html_page p = {.env = env};
	json_error_t err;
	json_t *root;
	size_t n;
	char *text;
	int r;

	if (!nonce_fit(env->nonce)) {
		if (why)
			snprintf(why, PDI_HTML_WHY_LEN, "the page's script nonce must be 16 to 128 base64 characters");
		return -EINVAL;
	}
	text = utf8_sanitized(doc, len, &n);
	if (!text)
		return -ENOMEM;
	root = json_loadb(text, n, 0, &err);
	free(text);
	if (!root) {
		if (why)
			snprintf(why, PDI_HTML_WHY_LEN, "not JSON: %s (line %d, column %d)", err.text, err.line, err.column);
		return -EBADMSG;
	}
	p.data = json_object();
	if (!p.data) {
		json_decref(root);
		return -ENOMEM;
	}
	pdi_json_init(&p.body);
	pdi_json_init(&p.facts);
	if (json_is_object(root) && pdi_jobj(root, "verdict"))
		r = pdi_html_report(&p, root, ret_html);
	else if (json_is_object(root) && pdi_jstr(root, "program") && pdi_jarr(root, "sites"))
		r = pdi_html_trends(&p, root, ret_html);
	else {
		if (why)
			snprintf(why, PDI_HTML_WHY_LEN, "neither a step's report (no \"verdict\") nor a program's trends "
						       "(no \"program\" and \"sites\")");
		r = -EINVAL;
	}
	pdi_html_page_done(&p);
	json_decref(root);
	return r;
}

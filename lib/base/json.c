/* SPDX-License-Identifier: GPL-2.0-only */
/* json.c -- streaming JSON writer. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

void pdi_json_init(struct pdi_json *j)
{
	*j = (struct pdi_json){0};
}

void pdi_json_free(struct pdi_json *j)
{
	free(j->buf);
	*j = (struct pdi_json){0};
}

bool pdi_json_failed(const struct pdi_json *j)
{
	return j->failed;
}

char *pdi_json_steal(struct pdi_json *j)
{
	char *s;

	pdi_json_raw(j, "", 1); /* the terminating NUL */
	if (j->failed) {
		pdi_json_free(j);
		return NULL;
	}
	s = j->buf;
	*j = (struct pdi_json){0};
	return s;
}

void pdi_json_raw(struct pdi_json *j, const char *s, size_t n)
{
	if (j->failed)
		return;
	if (j->len + n > j->cap) {
		size_t cap = j->cap ? j->cap : 256;
		char *b;

		while (cap < j->len + n)
			cap *= 2;
		b = realloc(j->buf, cap);
		if (!b) {
			j->failed = true;
			return;
		}
		j->buf = b;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	if (n && s[n - 1] == '\0')
		j->len--; /* keep the NUL out of len so steal() can be followed by nothing else */
}

void pdi_json_printf(struct pdi_json *j, const char *fmt, ...)
{
	char *text;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		j->failed = true;
		return;
	}
	pdi_json_raw(j, text, (size_t)n);
	free(text);
}

static void put(struct pdi_json *j, const char *s)
{
	pdi_json_raw(j, s, strlen(s));
}

/* Separate this value from the previous one at the same level. */
static void value_prefix(struct pdi_json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->need_comma[j->depth])
		put(j, ",");
	j->need_comma[j->depth] = true;
}

static void open_level(struct pdi_json *j, const char *c)
{
	value_prefix(j);
	put(j, c);
	if (j->depth + 1 >= PDI_JSON_MAX_DEPTH) {
		j->failed = true;
		return;
	}
	j->need_comma[++j->depth] = false;
}

static void close_level(struct pdi_json *j, const char *c)
{
	if (j->depth > 0)
		j->depth--;
	put(j, c);
}

void pdi_json_obj_begin(struct pdi_json *j)
{
	open_level(j, "{");
}

void pdi_json_obj_end(struct pdi_json *j)
{
	close_level(j, "}");
}

void pdi_json_arr_begin(struct pdi_json *j)
{
	open_level(j, "[");
}

void pdi_json_arr_end(struct pdi_json *j)
{
	close_level(j, "]");
}

/* The length of the well-formed UTF-8 sequence at P (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF), 0 when P does not start one. P is NUL-terminated, and
 * NUL is never a continuation byte, so reading ahead stops in time. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, lo = p[0] == 0xe0 ? 0xa0 : 0x80, hi = p[0] == 0xed ? 0x9f : 0xbf;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, lo = p[0] == 0xf0 ? 0x90 : 0x80, hi = p[0] == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/* S as a JSON string. Names come from monitored programs (call sites, files), so bytes that
 * are not UTF-8 become U+FFFD: the document stays valid JSON whatever a program is called. */
static void put_string(struct pdi_json *j, const char *s)
{
	char esc[8];

	put(j, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_len(p);

		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			pdi_json_raw(j, esc, 2);
		} else if (*p < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			put(j, esc);
		} else if (n == 0) {
			put(j, "\\ufffd");
			n = 1;
		} else {
			pdi_json_raw(j, (const char *)p, n);
		}
		p += n ? n : 1;
	}
	put(j, "\"");
}

void pdi_json_key(struct pdi_json *j, const char *key)
{
	value_prefix(j);
	put_string(j, key);
	put(j, ":");
	j->after_key = true;
}

void pdi_json_str(struct pdi_json *j, const char *s)
{
	value_prefix(j);
	put_string(j, s ? s : "");
}

void pdi_json_int(struct pdi_json *j, int64_t v)
{
	char b[32];

	value_prefix(j);
	snprintf(b, sizeof(b), "%" PRId64, v);
	put(j, b);
}

void pdi_json_uint(struct pdi_json *j, uint64_t v)
{
	char b[32];

	value_prefix(j);
	snprintf(b, sizeof(b), "%" PRIu64, v);
	put(j, b);
}

void pdi_json_double(struct pdi_json *j, double v)
{
	char b[40];

	value_prefix(j);
	if (!isfinite(v)) { /* JSON has no NaN or infinity */
		put(j, "null");
		return;
	}
	snprintf(b, sizeof(b), "%.15g", v);
	put(j, b);
}

void pdi_json_bool(struct pdi_json *j, bool v)
{
	value_prefix(j);
	put(j, v ? "true" : "false");
}

void pdi_json_null(struct pdi_json *j)
{
	value_prefix(j);
	put(j, "null");
}

void pdi_json_kv_str(struct pdi_json *j, const char *key, const char *v)
{
	pdi_json_key(j, key);
	pdi_json_str(j, v);
}

void pdi_json_kv_int(struct pdi_json *j, const char *key, int64_t v)
{
	pdi_json_key(j, key);
	pdi_json_int(j, v);
}

void pdi_json_kv_uint(struct pdi_json *j, const char *key, uint64_t v)
{
	pdi_json_key(j, key);
	pdi_json_uint(j, v);
}

void pdi_json_kv_double(struct pdi_json *j, const char *key, double v)
{
	pdi_json_key(j, key);
	pdi_json_double(j, v);
}

void pdi_json_kv_bool(struct pdi_json *j, const char *key, bool v)
{
	pdi_json_key(j, key);
	pdi_json_bool(j, v);
}

void pdi_dot_escaped(struct pdi_json *j, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			pdi_json_raw(j, "\\", 1);
		pdi_json_raw(j, s, 1);
	}
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* json.h -- a small streaming JSON writer into a growable buffer.
 *
 * Commas and nesting are tracked here so callers write values in order and never
 * glue strings by hand. Allocation failure is sticky: check pdi_json_failed() once
 * at the end. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PDI_JSON_MAX_DEPTH 32

struct pdi_json {
	char *buf;
	size_t len, cap;
	bool failed;
	int depth;
	bool need_comma[PDI_JSON_MAX_DEPTH];
	bool after_key;
};

void pdi_json_init(struct pdi_json *j);
void pdi_json_free(struct pdi_json *j);
bool pdi_json_failed(const struct pdi_json *j);
/* Hand over the NUL-terminated text (caller frees); NULL if anything failed. */
char *pdi_json_steal(struct pdi_json *j);

void pdi_json_obj_begin(struct pdi_json *j);
void pdi_json_obj_end(struct pdi_json *j);
void pdi_json_arr_begin(struct pdi_json *j);
void pdi_json_arr_end(struct pdi_json *j);
void pdi_json_key(struct pdi_json *j, const char *key);
void pdi_json_str(struct pdi_json *j, const char *s);
void pdi_json_int(struct pdi_json *j, int64_t v);
void pdi_json_uint(struct pdi_json *j, uint64_t v);
void pdi_json_double(struct pdi_json *j, double v);
void pdi_json_bool(struct pdi_json *j, bool v);
void pdi_json_null(struct pdi_json *j);

/* "key": value pairs, the common case of an object's member */
void pdi_json_kv_str(struct pdi_json *j, const char *key, const char *v);
void pdi_json_kv_int(struct pdi_json *j, const char *key, int64_t v);
void pdi_json_kv_uint(struct pdi_json *j, const char *key, uint64_t v);
void pdi_json_kv_double(struct pdi_json *j, const char *key, double v);
void pdi_json_kv_bool(struct pdi_json *j, const char *key, bool v);

/* Raw bytes appended as they are (already valid JSON, or plain text output). */
void pdi_json_raw(struct pdi_json *j, const char *s, size_t n);
/* Formatted text appended as it is: the buffer doubles as a text builder. */
void pdi_json_printf(struct pdi_json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* S inside a DOT (Graphviz) double-quoted string: a quote or backslash in a name must not end
 * the label. The one escaping of DOT text. */
void pdi_dot_escaped(struct pdi_json *j, const char *s);

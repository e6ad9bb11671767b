/* SPDX-License-Identifier: GPL-2.0-only */
/* test-json.c -- the streaming JSON writer: commas, nesting, escaping, numbers, steal. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Steal the text, compare it with WANT, free it. */
static void expect(struct pdi_json *j, const char *want)
{
	char *s;

	cr_assert_not(pdi_json_failed(j));
	s = pdi_json_steal(j);
	cr_assert_not_null(s);
	cr_assert_str_eq(s, want);
	free(s);
}

Test(json, empty_containers)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_obj_end(&j);
	expect(&j, "{}");

	pdi_json_init(&j);
	pdi_json_arr_begin(&j);
	pdi_json_arr_begin(&j);
	pdi_json_arr_end(&j);
	pdi_json_obj_begin(&j);
	pdi_json_obj_end(&j);
	pdi_json_arr_begin(&j);
	pdi_json_arr_end(&j);
	pdi_json_arr_end(&j);
	expect(&j, "[[],{},[]]");
}

Test(json, nested_objects_and_arrays)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_key(&j, "a");
	pdi_json_int(&j, 1);
	pdi_json_key(&j, "b");
	pdi_json_arr_begin(&j);
	pdi_json_int(&j, 1);
	pdi_json_int(&j, 2);
	pdi_json_obj_begin(&j);
	pdi_json_key(&j, "c");
	pdi_json_null(&j);
	pdi_json_key(&j, "d");
	pdi_json_arr_begin(&j);
	pdi_json_arr_end(&j);
	pdi_json_obj_end(&j);
	pdi_json_arr_begin(&j);
	pdi_json_bool(&j, true);
	pdi_json_bool(&j, false);
	pdi_json_arr_end(&j);
	pdi_json_arr_end(&j);
	pdi_json_key(&j, "e");
	pdi_json_obj_begin(&j);
	pdi_json_key(&j, "f");
	pdi_json_obj_begin(&j);
	pdi_json_obj_end(&j);
	pdi_json_key(&j, "g");
	pdi_json_str(&j, "h");
	pdi_json_obj_end(&j);
	pdi_json_key(&j, "i");
	pdi_json_uint(&j, 0);
	pdi_json_obj_end(&j);
	expect(&j, "{\"a\":1,\"b\":[1,2,{\"c\":null,\"d\":[]},[true,false]],\"e\":{\"f\":{},\"g\":\"h\"},\"i\":0}");
}

Test(json, array_of_objects)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_arr_begin(&j);
	for (int i = 0; i < 3; i++) {
		pdi_json_obj_begin(&j);
		pdi_json_key(&j, "k");
		pdi_json_int(&j, i);
		pdi_json_key(&j, "v");
		pdi_json_arr_begin(&j);
		for (int k = 0; k < i; k++)
			pdi_json_int(&j, k);
		pdi_json_arr_end(&j);
		pdi_json_obj_end(&j);
	}
	pdi_json_arr_end(&j);
	expect(&j, "[{\"k\":0,\"v\":[]},{\"k\":1,\"v\":[0]},{\"k\":2,\"v\":[0,1]}]");
}

Test(json, string_escaping)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_arr_begin(&j);
	pdi_json_str(&j, "say \"hi\"");
	pdi_json_str(&j, "C:\\path\\");
	pdi_json_str(&j, "a\nb\tc\rd\x01\x1f");
	pdi_json_str(&j, "\x7f/\xc3\xa9"); /* DEL, slash and UTF-8 pass through */
	pdi_json_str(&j, "");
	pdi_json_str(&j, NULL);
	pdi_json_arr_end(&j);
	expect(&j, "[\"say \\\"hi\\\"\",\"C:\\\\path\\\\\",\"a\\u000ab\\u0009c\\u000dd\\u0001\\u001f\","
		   "\"\x7f/\xc3\xa9\",\"\",\"\"]");
}

/* Names come from monitored programs: bytes that are not UTF-8 must not make the document
 * invalid JSON. Each bad byte becomes U+FFFD; well-formed sequences of 2, 3 and 4 bytes pass. */
Test(json, invalid_utf8_replaced)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_arr_begin(&j);
	pdi_json_str(&j, "a\xff" "b");          /* never valid */
	pdi_json_str(&j, "\xc3");               /* truncated at the end */
	pdi_json_str(&j, "\xc0\xaf");           /* overlong '/' */
	pdi_json_str(&j, "\xed\xa0\x80");       /* a surrogate */
	pdi_json_str(&j, "\xf4\x90\x80\x80");   /* past U+10FFFF */
	pdi_json_str(&j, "\xe2\x82\xac\xf0\x9f\x98\x80"); /* euro sign, an emoji */
	pdi_json_arr_end(&j);
	expect(&j, "[\"a\\ufffdb\",\"\\ufffd\",\"\\ufffd\\ufffd\",\"\\ufffd\\ufffd\\ufffd\","
		   "\"\\ufffd\\ufffd\\ufffd\\ufffd\",\"\xe2\x82\xac\xf0\x9f\x98\x80\"]");
}

Test(json, key_escaping)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_key(&j, "q\"b\\\n");
	pdi_json_str(&j, "v");
	pdi_json_obj_end(&j);
	expect(&j, "{\"q\\\"b\\\\\\u000a\":\"v\"}");
}

Test(json, numbers)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_arr_begin(&j);
	pdi_json_int(&j, INT64_MIN);
	pdi_json_int(&j, -1);
	pdi_json_int(&j, INT64_MAX);
	pdi_json_uint(&j, UINT64_MAX);
	pdi_json_double(&j, 0.5);
	pdi_json_double(&j, 0.1);
	pdi_json_double(&j, 3);
	pdi_json_double(&j, -2.25);
	pdi_json_double(&j, 1e300);
	pdi_json_double(&j, 123456789012.5);
	pdi_json_arr_end(&j);
	expect(&j, "[-9223372036854775808,-1,9223372036854775807,18446744073709551615,0.5,0.1,3,-2.25,"
		   "1e+300,123456789012.5]");
}

Test(json, non_finite_doubles_become_null)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_key(&j, "nan");
	pdi_json_double(&j, NAN);
	pdi_json_key(&j, "inf");
	pdi_json_double(&j, INFINITY);
	pdi_json_key(&j, "-inf");
	pdi_json_double(&j, -INFINITY);
	pdi_json_key(&j, "x");
	pdi_json_double(&j, 1.5);
	pdi_json_obj_end(&j);
	expect(&j, "{\"nan\":null,\"inf\":null,\"-inf\":null,\"x\":1.5}");
}

Test(json, raw_is_verbatim)
{
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_raw(&j, "plain text\n", 11);
	pdi_json_raw(&j, "", 0);
	pdi_json_raw(&j, "more", 4);
	expect(&j, "plain text\nmore");
}

Test(json, steal_returns_nul_terminated_text_and_resets)
{
	struct pdi_json j;
	char *s;

	pdi_json_init(&j);
	pdi_json_arr_begin(&j);
	pdi_json_int(&j, 12);
	pdi_json_arr_end(&j);
	cr_assert_eq(j.len, 4);
	s = pdi_json_steal(&j);
	cr_assert_not_null(s);
	cr_assert_eq(strlen(s), 4);
	cr_assert_eq(s[4], '\0');
	cr_assert_str_eq(s, "[12]");
	cr_assert_null(j.buf, "the writer no longer owns the text");
	cr_assert_eq(j.len, 0);
	cr_assert_eq(j.depth, 0);
	free(s);

	/* the writer is reusable after a steal */
	pdi_json_int(&j, 5);
	expect(&j, "5");

	/* an empty writer gives an empty string, not NULL */
	pdi_json_init(&j);
	s = pdi_json_steal(&j);
	cr_assert_not_null(s);
	cr_assert_str_eq(s, "");
	free(s);
}

Test(json, large_output_grows_buffer)
{
	struct pdi_json j;
	char *want = malloc(200000), *p = want, *s;

	cr_assert_not_null(want);
	pdi_json_init(&j);
	pdi_json_arr_begin(&j);
	*p++ = '[';
	for (int i = 0; i < 20000; i++) {
		pdi_json_int(&j, i * 7);
		p += sprintf(p, "%s%d", i ? "," : "", i * 7);
	}
	pdi_json_arr_end(&j);
	*p++ = ']';
	*p = '\0';
	cr_assert_eq(j.len, strlen(want));
	s = pdi_json_steal(&j);
	cr_assert_not_null(s);
	cr_assert_str_eq(s, want);
	free(s);
	free(want);
}

Test(json, max_depth)
{
	struct pdi_json j;
	char want[2 * PDI_JSON_MAX_DEPTH + 1];
	int n = PDI_JSON_MAX_DEPTH - 1; /* the deepest nesting that fits */

	pdi_json_init(&j);
	for (int i = 0; i < n; i++)
		pdi_json_arr_begin(&j);
	for (int i = 0; i < n; i++)
		pdi_json_arr_end(&j);
	memset(want, '[', (size_t)n);
	memset(want + n, ']', (size_t)n);
	want[2 * n] = '\0';
	expect(&j, want);

	/* one level deeper fails, and the failure is sticky */
	pdi_json_init(&j);
	for (int i = 0; i < n + 1; i++)
		pdi_json_arr_begin(&j);
	cr_assert(pdi_json_failed(&j));
	pdi_json_int(&j, 1);
	cr_assert(pdi_json_failed(&j));
	cr_assert_null(pdi_json_steal(&j));
	cr_assert_null(j.buf);
}

Test(json, value_after_key_takes_no_comma)
{
	/* after a key, the next value takes no comma; the one after it does */
	struct pdi_json j;

	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_key(&j, "a");
	pdi_json_arr_begin(&j);
	pdi_json_str(&j, "x");
	pdi_json_arr_end(&j);
	pdi_json_key(&j, "b");
	pdi_json_obj_begin(&j);
	pdi_json_key(&j, "c");
	pdi_json_int(&j, 1);
	pdi_json_obj_end(&j);
	pdi_json_key(&j, "d");
	pdi_json_str(&j, "y");
	pdi_json_obj_end(&j);
	expect(&j, "{\"a\":[\"x\"],\"b\":{\"c\":1},\"d\":\"y\"}");
}

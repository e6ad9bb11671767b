/* SPDX-License-Identifier: GPL-2.0-only */
/* ranges.c -- compressing sorted rank lists into ranges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ranges.h"

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* snprintf that keeps counting once the buffer is full */
static size_t append(char *buf, size_t len, size_t at, const char *fmt, int a, int b)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), fmt, a, b);

	if (at < len)
		snprintf(buf + at, len - at, "%s", tmp);
	return at + (size_t)n;
}

size_t pdi_ranges_format(const int *ranks, size_t n, char *buf, size_t len)
{
	int *v = n ? malloc(n * sizeof(*v)) : NULL;
	size_t at = 0;

	if (len)
		buf[0] = '\0';
	if (n && !v)
		return 0;
	if (n) {
		memcpy(v, ranks, n * sizeof(*v));
		qsort(v, n, sizeof(*v), cmp_int);
	}
	at = append(buf, len, at, "[", 0, 0);
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j + 1 < n && (v[j + 1] == v[j] || v[j + 1] == v[j] + 1))
			j++;
		if (i)
			at = append(buf, len, at, ",", 0, 0);
		at = v[j] == v[i] ? append(buf, len, at, "%d", v[i], 0) : append(buf, len, at, "%d-%d", v[i], v[j]);
		i = j + 1;
	}
	at = append(buf, len, at, "]", 0, 0);
	free(v);
	return at;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* errline.c -- one-line failure reasons. */
#include <stdarg.h>
#include <stdio.h>

#include "errline.h"

int pdi_errline(char *buf, size_t len, int r, const char *fmt, ...)
{
	va_list ap;

	if (!len)
		return r;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = p[1] ? ' ' : '\0';
	return r;
}

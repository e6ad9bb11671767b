/* SPDX-License-Identifier: GPL-2.0-only */
/* log.c -- the daemon's log: one line per message on stderr, prefixed by its level. */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

int pdi_log_level = PDI_LOG_INFO;

void pdi_log(int level, const char *fmt, ...)
{
	static const char *const names[] = {[PDI_LOG_ERR] = "error", [PDI_LOG_WARNING] = "warning",
					    [PDI_LOG_INFO] = "info", [PDI_LOG_DEBUG] = "debug"};
	int saved = errno;
	va_list ap;

	if (level > pdi_log_level)
		return;
	/* <N> is what journald reads as the priority when stderr goes to the journal */
	fprintf(stderr, "<%d>pdimond: %s: ", level, names[level] ? names[level] : "log");
	errno = saved;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	errno = saved;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* log.c -- the daemon's log: one line per message on stderr, prefixed by its level. */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

int pdi_log_level = PDI_LOG_INFO;
bool pdi_log_to_syslog;

void pdi_log(int level, const char *fmt, ...)
{
	static const char *const names[] = {[PDI_LOG_ERR] = "error", [PDI_LOG_WARNING] = "warning",
					    [PDI_LOG_INFO] = "info", [PDI_LOG_DEBUG] = "debug"};
	int saved = errno;
	va_list ap;

	if (level > pdi_log_level)
		return;
	if (pdi_log_to_syslog) {
		va_start(ap, fmt);
		vsyslog(LOG_DAEMON | level, fmt, ap);
		va_end(ap);
		errno = saved;
		return;
	}
	/* one line per message, whichever threads log at once (workers do) */
	flockfile(stderr);
	/* <N> is how journald reads the priority off stderr; a terminal gets plain lines */
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "pdimond: %s: ", names[level] ? names[level] : "log");
	else
		fprintf(stderr, "<%d>pdimond: %s: ", level, names[level] ? names[level] : "log");
	errno = saved;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
	errno = saved;
}

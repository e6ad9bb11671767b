/* SPDX-License-Identifier: GPL-2.0-only */
/* log.h -- logging with a level: stderr in the foreground, syslog once daemonized. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { PDI_LOG_ERR = 3, PDI_LOG_WARNING = 4, PDI_LOG_INFO = 6, PDI_LOG_DEBUG = 7 };

extern int pdi_log_level;
extern bool pdi_log_to_syslog; /* once daemonized, stderr goes nowhere */

void pdi_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Log and return R (a negative errno), so callers can write: return log_errno(r, ...); */
#define pdi_log_errno(level, r, ...) ({ errno = -(r); pdi_log(level, __VA_ARGS__); (r); })
#define log_error_errno(r, ...) pdi_log_errno(PDI_LOG_ERR, r, __VA_ARGS__)
#define log_warning_errno(r, ...) pdi_log_errno(PDI_LOG_WARNING, r, __VA_ARGS__)
#define log_error(...) pdi_log(PDI_LOG_ERR, __VA_ARGS__)
#define log_warning(...) pdi_log(PDI_LOG_WARNING, __VA_ARGS__)
#define log_info(...) pdi_log(PDI_LOG_INFO, __VA_ARGS__)
#define log_debug(...) pdi_log(PDI_LOG_DEBUG, __VA_ARGS__)

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* SPDX-License-Identifier: GPL-2.0-only */
/* errline.h -- the one line a failing call hands back with its negative errno: what is wrong
 * and what to do, for a log or a user's terminal. */
#pragma once

#include <stddef.h>

/* Format into BUF (LEN bytes; nothing when 0) on one line (line breaks inside become spaces, a
 * trailing one is dropped: libraries' messages span lines), and return R. */
int pdi_errline(char *buf, size_t len, int r, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* SPDX-License-Identifier: GPL-2.0-only */
/* file_replace.h -- a file written whole or not at all: a temporary file beside it, renamed
 * over it, so that a reader never sees half of it and the earlier one survives a full disk. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* LEN bytes of BUF to FD, across short writes and EINTR. 0, or negative errno. */
int pdi_write_all(int fd, const char *buf, size_t len);
/* TEXT (LEN bytes) replaces PATH: PATH.tmpPID written (O_NOFOLLOW), synced when DURABLE, then
 * renamed over PATH; the temporary file is removed on failure. 0, or negative errno. */
int pdi_file_replace(const char *path, const char *text, size_t len, bool durable);

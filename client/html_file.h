/* SPDX-License-Identifier: GPL-2.0-only */
/* html_file.h -- `--html FILE`: a pdimon JSON document as a self-contained HTML page on disk. */
#pragma once

#include <stddef.h>

/* Render DOC (LEN bytes: a report, an analysis or trends) and write it to PATH ("-": standard
 * output) whole or not at all. On failure one line on stderr says what went wrong. 0 or -errno. */
int pdi_html_file_write(const char *doc, size_t len, const char *path);

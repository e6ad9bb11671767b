/* SPDX-License-Identifier: GPL-2.0-only */
/* ranges.h -- task sets printed as rank ranges, "[0-3,5,7-9]" (PDI 5.3, STAT). */
#pragma once

#include <stddef.h>

/* Write RANKS (any order, duplicates allowed) as "[a-b,c]" into BUF. Returns the length
 * the full text needs (like snprintf); the text is cut to fit LEN. */
size_t pdi_ranges_format(const int *ranks, size_t n, char *buf, size_t len);

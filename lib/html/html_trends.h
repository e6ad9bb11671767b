/* SPDX-License-Identifier: GPL-2.0-only */
/* html_trends.h -- the page of a program's trends across runs (html_trends.c). */
#pragma once

#include "html_page.h"

/* DOC's sections into P, and the whole page into *RET. 0 or -ENOMEM. */
int pdi_html_trends(struct pdi_html_page *p, const json_t *doc, char **ret);

/* SPDX-License-Identifier: GPL-2.0-only */
/* html_report.h -- the page of a step's report or analysis (html_report.c). */
#pragma once

#include "html_page.h"

/* DOC's sections into P, and the whole page into *RET. 0 or -ENOMEM. */
int pdi_html_report(struct pdi_html_page *p, const json_t *doc, char **ret);

/* SPDX-License-Identifier: GPL-2.0-only */
/* html_assets.h -- what every HTML report inlines, generated at build time by assets.py:
 * Vega (from Debian's libjs-vega, with its copyright notice), and the page's own script and
 * style (report.js, report.css). */
#pragma once

#include <stddef.h>

extern const char pdi_html_vega_js[];
extern const size_t pdi_html_vega_js_len;
extern const char pdi_html_report_js[];
extern const size_t pdi_html_report_js_len;
extern const char pdi_html_report_css[];
extern const size_t pdi_html_report_css_len;
extern const char pdi_html_vega_version[]; /* Debian's version of libjs-vega */

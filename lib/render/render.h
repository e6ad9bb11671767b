/* SPDX-License-Identifier: GPL-2.0-only */
/* render.h -- an analysis (analysis.h) rendered: malloc'd text, NULL when out of memory. */
#pragma once

#include "analysis.h"

char *pdi_render_json(const struct pdi_analysis *a);
/* The verdict as the few lines srun prints, each starting "pdimon: ". */
char *pdi_render_summary(const struct pdi_analysis *a);
char *pdi_render_text(const struct pdi_analysis *a);
/* The progress dependence graph, then the prefix tree: two graphs for dot(1). */
char *pdi_render_dot(const struct pdi_analysis *a);

const char *pdi_effect_name(enum pdi_effect e);
/* 1 - next/best: 0 when nothing stands out, towards 1 when one thing does. */
double pdi_confidence(double margin);

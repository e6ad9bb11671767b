/* SPDX-License-Identifier: GPL-2.0-only */
/* site_totals.h -- what each call site did in a task, from its model: calls, bytes, and the
 * time spent inside the call, summed over the model's phases. A step's per-site summary is
 * these added over its tasks; trends (trends.h) fit them across runs. */
#pragma once

#include <stdint.h>

#include "model.h"

struct pdi_site_total {
	uint64_t calls;
	uint64_t bytes;   /* where the call's datatype size is known */
	uint64_t time_ns; /* inside the call: its state's outgoing edges' time, the last call of the
			     task (which has none) excepted */
};

/* Add M's communication states into V, indexed by site (NSITES entries); a state naming a site
 * at or past NSITES is skipped. Sums saturate instead of wrapping. */
void pdi_site_totals_add(struct pdi_site_total *v, uint32_t nsites, const struct pdi_model *m);

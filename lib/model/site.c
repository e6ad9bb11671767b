/* SPDX-License-Identifier: GPL-2.0-only */
/* site.c -- the names of call sites and states, and what makes a model incomplete (site.h). */
#include <stdio.h>

#include "model.h"
#include "site.h"

const char *pdi_site_name(const struct pdi_site *sites, uint64_t n, uint64_t i)
{
	return i < n && sites[i].name ? sites[i].name : "?";
}

void pdi_state_name(const struct pdi_site *sites, uint64_t n, uint64_t key, char *buf, size_t len)
{
	if (pdi_state_is_comp(key))
		snprintf(buf, len, "%s -> %s", pdi_site_name(sites, n, pdi_state_prev_site(key)),
			 pdi_site_name(sites, n, pdi_state_site(key)));
	else
		snprintf(buf, len, "%s", pdi_site_name(sites, n, pdi_state_site(key)));
}

bool pdi_model_incomplete(const struct pdi_model *m, uint64_t events_lost)
{
	return events_lost || m->dropped_states || m->dropped_edges;
}

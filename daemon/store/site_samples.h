/* SPDX-License-Identifier: GPL-2.0-only */
/* site_samples.h -- sample runs fetched from the site store, kept with a step: a sample source
 * (samples.h) over the runs site_pg.c fetched. */
#pragma once

#include <stddef.h>

#include "samples.h"
#include "site_pg.h"

/* A step's site samples over RUNS (N of them; taken over, array included, even on failure),
 * fetched for NTASKS tasks. NULL when out of memory. */
struct pdi_site_samples *pdi_site_samples_new(struct pdi_site_step **runs, size_t n, unsigned ntasks);

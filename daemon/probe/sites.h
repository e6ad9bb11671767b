/* SPDX-License-Identifier: GPL-2.0-only */
/* sites.h -- naming call sites: from a return address in one process to a site its step shares. */
#pragma once

#include <stdint.h>

#include "registry.h"

struct pdi_objcache;

/* The step-wide site index of the call of FN that returns to ADDR in task T. Resolves
 * symbols and source lines the first time a site is seen, and never again. */
int pdi_site_lookup(struct pdi_task *t, struct pdi_objcache *objs, uint64_t addr, uint16_t fn,
		    uint32_t *ret_site);

/* The site of that call if task T has seen it before, without resolving anything: 0, or
 * -ENOENT for a call site T never made a call from. */
int pdi_site_cached(const struct pdi_task *t, uint64_t addr, uint16_t fn, uint32_t *ret_site);

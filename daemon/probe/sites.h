/* SPDX-License-Identifier: GPL-2.0-only */
/* sites.h -- naming call sites: from a return address in one process to a site its step shares. */
#pragma once

#include <stdint.h>

#include "callchain.h"
#include "registry.h"

struct pdi_objcache;

/* The step-wide site index of the call of FN whose chain in task T is CH: the application's
 * call site CH->caller, and the library function CH->via returns into. Resolves symbols and
 * source lines the first time a site is seen, and never again; a new site, and a new address in
 * T's cache, are charged to T's max_task_memory (-ENOSPC past it). Names:
 *   MPI_Barrier@solver.f90:37                           (DWARF)
 *   MPI_Barrier@solver+0x1a2b                           (no DWARF: object and ELF address)
 *   MPI_Send in pdgemr2d_ called from solver.f90:412    (through a library) */
int pdi_site_lookup(struct pdi_task *t, struct pdi_objcache *objs, const struct pdi_chain *ch, uint16_t fn,
		    uint32_t *ret_site);

/* What pdi_site_lookup() of CH would read that may take long, as mappings of T (valid until T's
 * maps are next reread) into RET_MAPS: the objects of its places the cache has not read (opening
 * one indexes its symbols), or, for a site new to the step, the object whose DWARF names its line
 * if that DWARF is not loaded yet or the line table of the line's compile unit not read: then
 * *RET_LINE_AT is the line's ELF address in it (0 otherwise). How many (0: the lookup is quick; a
 * worker reads them first otherwise, site_warm.h). Reads T's maps again if the places are not in
 * them. */
unsigned pdi_site_cold(struct pdi_task *t, struct pdi_objcache *objs, const struct pdi_chain *ch, uint16_t fn,
		       const struct pdi_mapping *ret_maps[2], uint64_t *ret_line_at);

/* The site T's own cache gives the call of FN with chain CH (T called from there before: one
 * lookup, nothing resolved or read), or PDI_U64MAP_NONE. */
uint32_t pdi_site_known(const struct pdi_task *t, const struct pdi_chain *ch, uint16_t fn);

/* The chain of a call that returns straight to ADDR (nothing hopped over). */
static inline struct pdi_chain pdi_chain_direct(uint64_t addr)
{
	return (struct pdi_chain){.callsite = addr, .caller = addr, .end = PDI_CHAIN_DONE};
}

/* The site of in-flight call F of task T if T has made a call from there before, without
 * resolving or reading anything: 0, or -ENOENT (a site T never called from, or a chain the
 * BPF side could not finish). What the hang judge asks once a second. */
int pdi_site_cached(const struct pdi_task *t, const struct pdi_inflight *f, uint32_t *ret_site);

/* The chain and function of the call thread TID of task T is in (F, from pdi_tracer_inflight()),
 * completed as its return would complete them: what its site is named by. 0, or -EINVAL if F's
 * function is not one pdimon knows. */
int pdi_inflight_chain(struct pdi_task *t, const struct pdi_inflight *f, pid_t tid, struct pdi_chain *ret_ch,
		       uint16_t *ret_fn);

/* The site of the call thread TID of task T is in (F, from pdi_tracer_inflight()), named like
 * the same call once it has returned. -EINVAL if F's function is not one pdimon knows. */
int pdi_site_of_inflight(struct pdi_task *t, struct pdi_objcache *objs, const struct pdi_inflight *f, pid_t tid,
			 uint32_t *ret_site);

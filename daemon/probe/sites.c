/* SPDX-License-Identifier: GPL-2.0-only */
/* sites.c -- naming call sites, cached per task (by address) and per step (by object).
 *
 * A site is the application's call (the chain's caller, callchain.c) and, when the call went
 * through a library such as ScaLAPACK, the library function it entered. The per-event cost is
 * one hash lookup in the task's cache. A miss maps the addresses to (object, address in the
 * object) so that position-independent code loaded at different addresses in different tasks
 * still names one site; only a site new to the step is symbolized (ELF symbols, DWARF lines). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "log.h"
#include "mpi_funcs.h"
#include "objcache.h"
#include "sites.h"

static uint64_t mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* An address of task T as (object, ELF address); see locate(). */
struct code_addr {
	uint64_t dev, ino;
	char object[128]; /* the object's file name, "?" when none maps the address */
	struct pdi_elfobj *obj;
	uint64_t vaddr;
	uint64_t ident; /* (dev, ino, vaddr) hashed: one value per code address in every task */
};

/* "solver.f90:37", or "solver+0x1a2b" without DWARF; LOC from describing A. */
static void place_name(const struct code_addr *a, const struct pdi_srcloc *loc, char *buf, size_t len)
{
	if (loc->file[0] && loc->line > 0)
		snprintf(buf, len, "%s:%d", basename(loc->file), loc->line);
	else
		snprintf(buf, len, "%s+0x%llx", a->object, (unsigned long long)a->vaddr);
}

/* What a site costs, and one more entry of a u64map (key, value, the free slots around it). */
#define MAP_ENTRY_BYTES 24
static size_t site_bytes(const struct pdi_site *site)
{
	return sizeof(*site) + strlen(site->name) + strlen(site->caller) + strlen(site->file) + 3 + MAP_ENTRY_BYTES;
}

/* Charge BYTES to task T's memory (max_task_memory, shared with its model): a user decides how
 * many distinct return addresses its program has (generated code, or a JIT), and the daemon's
 * memory must not follow. -ENOSPC when they do not fit. */
static int charge(struct pdi_task *t, size_t bytes)
{
	if (t->model.bytes + bytes > t->model.cfg.max_bytes)
		return -ENOSPC;
	t->model.bytes += bytes;
	return 0;
}

static int new_site(struct pdi_task *t, uint64_t key, uint16_t fn, const struct code_addr *at,
		    const struct code_addr *via, bool partial, uint32_t *ret)
{
	struct pdi_step *s = t->step;
	struct pdi_srcloc loc = {0}, vloc = {0};
	struct pdi_site *v, site = {.key = key, .fn = fn};
	char name[512], place[300];
	/* a chain that stops inside a library (its stack was lost with a full ring buffer, or no
	 * frame rule could be followed) names a place the application did not write: say so */
	const char *mark = partial ? " (call chain unresolved)" : "";
	int r;

	/* a return address follows the call: the call's own line is one byte earlier */
	if (at->obj && at->vaddr > 0)
		(void)pdi_elfobj_describe(at->obj, at->vaddr - 1, &loc);
	place_name(at, &loc, place, sizeof(place));
	if (via) {
		/* the library function's name only: its DWARF is never read for it */
		if (via->obj && via->vaddr > 0)
			(void)pdi_elfobj_symbol_at(via->obj, via->vaddr - 1, &vloc);
		snprintf(name, sizeof(name), "%s in %s called from %s%s", pdi_mpi_funcs[fn].name,
			 vloc.func[0] ? vloc.func : via->object, place, mark);
	} else {
		snprintf(name, sizeof(name), "%s@%s%s", pdi_mpi_funcs[fn].name, place, mark);
	}
	site.name = strdup(name);
	site.caller = strdup(loc.func);
	site.file = strdup(loc.file);
	site.line = loc.line;
	if (site.name && site.caller && site.file && charge(t, site_bytes(&site)) < 0) {
		free(site.name);
		free(site.caller);
		free(site.file);
		return -ENOSPC;
	}
	v = realloc(s->sites, sizeof(*v) * (s->nsites + 1));
	if (v)
		s->sites = v;
	if (!v || !site.name || !site.caller || !site.file ||
	    (r = pdi_u64map_put(&s->site_idx, key, s->nsites)) < 0) {
		free(site.name);
		free(site.caller);
		free(site.file);
		return -ENOMEM;
	}
	s->sites[s->nsites] = site;
	*ret = s->nsites++;
	return 0;
}

/* The mapping of task T that holds ADDR, or NULL. Rereads the maps once if ADDR is not in them:
 * the program may have loaded a library since. */
static const struct pdi_mapping *mapping_of(struct pdi_task *t, uint64_t addr)
{
	const struct pdi_mapping *m = t->maps.n ? pdi_maps_find(&t->maps, addr) : NULL;

	if (!m) {
		pdi_maps_free(&t->maps);
		if (pdi_maps_read(t->pid, &t->maps) < 0)
			return NULL;
		m = pdi_maps_find(&t->maps, addr);
	}
	return m;
}

/* Map ADDR of task T to (object, ELF address). Anonymous or vanished code keeps its address as
 * its identity. */
static void locate(struct pdi_task *t, struct pdi_objcache *objs, uint64_t addr, struct code_addr *ret)
{
	const struct pdi_mapping *m = mapping_of(t, addr);
	uint64_t off;

	*ret = (struct code_addr){.vaddr = addr, .ident = mix64(0, addr), .object = "?"};
	if (!m || !m->path)
		return;
	ret->dev = m->dev;
	ret->ino = m->ino;
	snprintf(ret->object, sizeof(ret->object), "%s", basename(m->path));
	off = addr - m->start + m->pgoff;
	ret->vaddr = off;
	if (pdi_objcache_get(objs, t->pid, m, &ret->obj) == 0)
		(void)pdi_elfobj_offset_to_vaddr(ret->obj, off, &ret->vaddr);
	else
		ret->obj = NULL;
	ret->ident = mix64(mix64(mix64(0, m->dev), m->ino), ret->vaddr);
}

/* The key of T's cache of the sites of its chains. */
static uint64_t chain_key(uint64_t caller, uint64_t via, unsigned fn)
{
	return mix64(mix64(mix64(0, caller), via), fn);
}

uint32_t pdi_site_known(const struct pdi_task *t, const struct pdi_chain *ch, uint16_t fn)
{
	return pdi_u64map_get(&t->site_cache, chain_key(ch->caller, ch->via, fn));
}

int pdi_site_cached(const struct pdi_task *t, const struct pdi_inflight *f, uint32_t *ret_site)
{
	unsigned fn = PDI_COOKIE_FN(f->cookie);
	uint32_t i;

	if (fn >= pdi_mpi_nfuncs || f->chain != PDI_CHAIN_DONE)
		return -ENOENT;
	i = pdi_site_known(t, &(struct pdi_chain){.caller = f->caller, .via = f->via}, (uint16_t)fn);
	if (i == PDI_U64MAP_NONE)
		return -ENOENT;
	*ret_site = i;
	return 0;
}

/* The step-wide key of the site of FN's call with chain CH in T, its places AT and VIA (if CH has
 * one) located; the objects are the cache's (symbols only: no DWARF is read). */
static uint64_t site_key(struct pdi_task *t, struct pdi_objcache *objs, const struct pdi_chain *ch, uint16_t fn,
			 struct code_addr *at, struct code_addr *via)
{
	uint64_t key;

	locate(t, objs, ch->caller, at);
	key = mix64(at->ident, fn | (ch->end != PDI_CHAIN_DONE ? 1u << 16 : 0));
	if (ch->via) {
		struct pdi_srcloc vloc;

		/* the library function, not the place inside it: one library routine called from
		 * one line is one state, whatever path it takes to MPI inside */
		locate(t, objs, ch->via, via);
		if (via->obj && pdi_elfobj_symbol_at(via->obj, via->vaddr - 1, &vloc) == 0 && vloc.func[0])
			via->ident = mix64(mix64(mix64(0, via->dev), via->ino), via->vaddr - 1 - vloc.func_off);
		key = mix64(key, via->ident);
	}
	return key;
}

int pdi_site_lookup(struct pdi_task *t, struct pdi_objcache *objs, const struct pdi_chain *ch, uint16_t fn,
		    uint32_t *ret_site)
{
	uint64_t ckey = chain_key(ch->caller, ch->via, fn), key;
	struct code_addr at, via;
	struct pdi_step *s = t->step;
	uint32_t i = pdi_site_known(t, ch, fn);
	int r;

	if (i != PDI_U64MAP_NONE) {
		*ret_site = i;
		return 0;
	}
	key = site_key(t, objs, ch, fn, &at, &via);
	i = pdi_u64map_get(&s->site_idx, key);
	if (i == PDI_U64MAP_NONE) {
		r = new_site(t, key, fn, &at, ch->via ? &via : NULL, ch->end != PDI_CHAIN_DONE, &i);
		if (r < 0)
			return r;
	} else if ((r = charge(t, MAP_ENTRY_BYTES)) < 0) {
		return r; /* a known site at a new address: the task's cache is charged too */
	}
	r = pdi_u64map_put(&t->site_cache, ckey, i);
	if (r < 0)
		return r;
	*ret_site = i;
	return 0;
}

unsigned pdi_site_cold(struct pdi_task *t, struct pdi_objcache *objs, const struct pdi_chain *ch, uint16_t fn,
		       const struct pdi_mapping *ret_maps[2], uint64_t *ret_line_at)
{
	const struct pdi_mapping *m[2];
	struct code_addr at, via;
	unsigned n = 0;

	*ret_line_at = 0;

	if (pdi_site_known(t, ch, fn) != PDI_U64MAP_NONE)
		return 0;
	/* the maps reread for either place (which frees the earlier ones), then both found in them */
	if (mapping_of(t, ch->caller) && ch->via)
		(void)mapping_of(t, ch->via);
	m[0] = pdi_maps_find(&t->maps, ch->caller);
	m[1] = ch->via ? pdi_maps_find(&t->maps, ch->via) : NULL;
	/* an object not read yet: opening it indexes its symbols (a 65 MB executable's, NWChem's) */
	m[1] = m[1] && m[0] && m[1]->dev == m[0]->dev && m[1]->ino == m[0]->ino ? NULL : m[1];
	for (unsigned i = 0; i < 2; i++)
		if (m[i] && m[i]->path && !pdi_objcache_holds(objs, m[i]))
			ret_maps[n++] = m[i];
	if (n)
		return n;
	/* all read: a site the step knows needs their symbols only; a new one is named by its line,
	 * from the DWARF of the object it is in, which may not be loaded yet (a big program's), and
	 * from its compile unit's line table, read whole at the unit's first site */
	if (pdi_u64map_get(&t->step->site_idx, site_key(t, objs, ch, fn, &at, &via)) != PDI_U64MAP_NONE)
		return 0;
	if (at.obj && at.vaddr > 0 && !pdi_elfobj_line_ready(at.obj, at.vaddr - 1) &&
	    (m[0] = pdi_maps_find(&t->maps, ch->caller))) {
		ret_maps[n++] = m[0];
		*ret_line_at = at.vaddr - 1; /* as new_site() describes it */
	}
	return n;
}

int pdi_inflight_chain(struct pdi_task *t, const struct pdi_inflight *f, pid_t tid, struct pdi_chain *ret_ch,
		       uint16_t *ret_fn)
{
	struct pdi_chain ch = {.callsite = f->callsite, .caller = f->caller, .via = f->via, .end = f->chain};
	unsigned fn = PDI_COOKIE_FN(f->cookie);

	if (fn >= pdi_mpi_nfuncs)
		return -EINVAL;
	(void)pdi_chains_complete(t, tid, f->t_enter, &ch);
	*ret_ch = ch;
	*ret_fn = (uint16_t)fn;
	return 0;
}

int pdi_site_of_inflight(struct pdi_task *t, struct pdi_objcache *objs, const struct pdi_inflight *f, pid_t tid,
			 uint32_t *ret_site)
{
	struct pdi_chain ch;
	uint16_t fn;
	int r = pdi_inflight_chain(t, f, tid, &ch, &fn);

	return r < 0 ? r : pdi_site_lookup(t, objs, &ch, fn, ret_site);
}

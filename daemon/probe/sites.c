/* SPDX-License-Identifier: GPL-2.0-only */
/* sites.c -- call-site resolution, cached per task (by address) and per step (by object).
 *
 * The per-event cost is one hash lookup in the task's cache. A miss maps the address to
 * (object, address in the object) so that position-independent code loaded at different
 * addresses in different tasks still names one site; only a site new to the step is
 * symbolized (ELF symbols, DWARF lines). */
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

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static int new_site(struct pdi_step *s, uint64_t key, uint16_t fn, struct pdi_elfobj *obj,
		    const char *objpath, uint64_t vaddr, uint32_t *ret)
{
	struct pdi_srcloc loc = {0};
	struct pdi_site *v, site = {.key = key, .fn = fn};
	char name[512];
	int r;

	/* a return address follows the call: the call's own line is one byte earlier */
	if (obj && vaddr > 0)
		(void)pdi_elfobj_describe(obj, vaddr - 1, &loc);
	if (loc.file[0] && loc.line > 0)
		snprintf(name, sizeof(name), "%s@%s:%d", pdi_mpi_funcs[fn].name, base_name(loc.file), loc.line);
	else
		snprintf(name, sizeof(name), "%s@%s+0x%llx", pdi_mpi_funcs[fn].name,
			 objpath ? base_name(objpath) : "?", (unsigned long long)vaddr);
	site.name = strdup(name);
	site.caller = strdup(loc.func);
	site.file = strdup(loc.file);
	site.line = loc.line;
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

/* Map ADDR of task T to (object, ELF address). Rereads the maps once if ADDR is not in
 * them: the program may have loaded a library since. */
static int locate(struct pdi_task *t, struct pdi_objcache *objs, uint64_t addr,
		  const struct pdi_mapping **ret_map, struct pdi_elfobj **ret_obj, uint64_t *ret_vaddr)
{
	const struct pdi_mapping *m = t->maps.n ? pdi_maps_find(&t->maps, addr) : NULL;
	uint64_t off;
	int r;

	if (!m) {
		pdi_maps_free(&t->maps);
		r = pdi_maps_read(t->pid, &t->maps);
		if (r < 0)
			return r;
		m = pdi_maps_find(&t->maps, addr);
		if (!m || !m->path)
			return -ENOENT;
	}
	*ret_map = m;
	off = addr - m->start + m->pgoff;
	*ret_obj = NULL;
	*ret_vaddr = off;
	if (pdi_objcache_get(objs, t->pid, m, ret_obj) == 0)
		(void)pdi_elfobj_offset_to_vaddr(*ret_obj, off, ret_vaddr);
	return 0;
}

int pdi_site_cached(const struct pdi_task *t, uint64_t addr, uint16_t fn, uint32_t *ret_site)
{
	uint32_t i = pdi_u64map_get(&t->site_cache, addr | (uint64_t)fn << 48);

	if (i == PDI_U64MAP_NONE)
		return -ENOENT;
	*ret_site = i;
	return 0;
}

int pdi_site_lookup(struct pdi_task *t, struct pdi_objcache *objs, uint64_t addr, uint16_t fn,
		    uint32_t *ret_site)
{
	uint64_t ckey = addr | (uint64_t)fn << 48, key, vaddr = addr;
	const struct pdi_mapping *m = NULL;
	struct pdi_elfobj *obj = NULL;
	struct pdi_step *s = t->step;
	uint32_t i;
	int r;

	if (pdi_site_cached(t, addr, fn, ret_site) == 0)
		return 0;
	r = locate(t, objs, addr, &m, &obj, &vaddr);
	if (r < 0) /* anonymous or vanished code: still one site per address */
		key = mix64(mix64(0, addr), fn);
	else
		key = mix64(mix64(mix64(m->dev, m->ino), vaddr), fn);
	i = pdi_u64map_get(&s->site_idx, key);
	if (i == PDI_U64MAP_NONE) {
		r = new_site(s, key, fn, obj, m ? m->path : NULL, vaddr, &i);
		if (r < 0)
			return r;
	}
	r = pdi_u64map_put(&t->site_cache, ckey, i);
	if (r < 0)
		return r;
	*ret_site = i;
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* objcache.c -- opened ELF objects shared between processes, keyed by (dev, ino).
 *
 * The ranks of a job all map the same libmpi and application binary; indexing their symbols
 * once per node instead of once per rank is the point. The key is the inode the kernel says
 * is mapped, not the path: a path can name another file by the time we open it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "objcache.h"

struct entry {
	uint64_t dev, ino;
	struct pdi_elfobj *obj; /* NULL: free slot */
};

struct pdi_objcache {
	struct entry *slots; /* open addressing, linear probing; capacity a power of two */
	size_t cap, n;
};

int pdi_objcache_new(struct pdi_objcache **ret)
{
	struct pdi_objcache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->cap = 64;
	c->slots = calloc(c->cap, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void pdi_objcache_free(struct pdi_objcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		pdi_elfobj_free(c->slots[i].obj);
	free(c->slots);
	free(c);
}

static size_t hash_key(uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino ^ (dev << 32 | dev >> 32)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h ^ h >> 29);
}

/* The slot holding (dev, ino), or the free slot where it belongs. */
static struct entry *lookup(struct entry *slots, size_t cap, uint64_t dev, uint64_t ino)
{
	size_t i = hash_key(dev, ino) & (cap - 1);

	while (slots[i].obj && (slots[i].dev != dev || slots[i].ino != ino))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int grow(struct pdi_objcache *c)
{
	size_t ncap = c->cap * 2;
	struct entry *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].obj)
			*lookup(ns, ncap, c->slots[i].dev, c->slots[i].ino) = c->slots[i];
	free(c->slots);
	c->slots = ns;
	c->cap = ncap;
	return 0;
}

/* Only the inode number is compared: on btrfs and overlayfs, st_dev of the path differs from
 * the device /proc/PID/maps shows for the same file. */
static bool is_mapped_file(struct pdi_elfobj *o, const struct pdi_mapping *m)
{
	struct stat st;

	return fstat(pdi_elfobj_fd(o), &st) == 0 && (uint64_t)st.st_ino == m->ino;
}

static int open_mapped(pid_t pid, const struct pdi_mapping *m, struct pdi_elfobj **ret)
{
	struct pdi_elfobj *o;
	char fn[4096];
	int r;

	/* pid 0: a file of the daemon's own mount namespace, such as a library to trap */
	if (pid <= 0)
		return pdi_elfobj_open(m->path, ret);
	if (snprintf(fn, sizeof(fn), "/proc/%d/root%s", (int)pid, m->path) < (int)sizeof(fn)) {
		r = pdi_elfobj_open(fn, &o);
		if (r == 0 && is_mapped_file(o, m)) {
			*ret = o;
			return 0;
		}
		if (r == 0)
			pdi_elfobj_free(o);
	}
	/* the exact file mapped, even if deleted or replaced; needs CAP_CHECKPOINT_RESTORE */
	snprintf(fn, sizeof(fn), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start,
		 m->end);
	return pdi_elfobj_open(fn, ret);
}

int pdi_objcache_get(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *m,
		     struct pdi_elfobj **ret)
{
	struct pdi_elfobj *o;
	struct entry *e;
	int r;

	if (!m->path)
		return -EINVAL;
	e = lookup(c->slots, c->cap, m->dev, m->ino);
	if (e->obj) {
		*ret = e->obj;
		return 0;
	}
	/* a failure is not cached: the next process may be able to show us the file */
	r = open_mapped(pid, m, &o);
	if (r < 0)
		return r;
	if ((c->n + 1) * 2 > c->cap) {
		r = grow(c);
		if (r < 0) {
			pdi_elfobj_free(o);
			return r;
		}
		e = lookup(c->slots, c->cap, m->dev, m->ino);
	}
	*e = (struct entry){.dev = m->dev, .ino = m->ino, .obj = o};
	c->n++;
	*ret = o;
	return 0;
}

/* Maps are in address order, so the executable (mapped low) is tried before any library; among
 * libraries this is not the dynamic linker's search order, which does not matter as long as
 * only one of them defines NAME. */
int pdi_objcache_find_func(struct pdi_objcache *c, pid_t pid, const struct pdi_maps *maps,
			   const char *name, const struct pdi_mapping **ret_map,
			   struct pdi_elfobj **ret_obj)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct pdi_mapping *m = &maps->v[i];
		struct pdi_elfobj *o;
		uint64_t vaddr;

		if (!m->exec || !m->path || pdi_objcache_get(c, pid, m, &o) < 0)
			continue;
		if (pdi_elfobj_func_vaddr(o, name, &vaddr) == 0) {
			*ret_map = m;
			*ret_obj = o;
			return 0;
		}
	}
	return -ENOENT;
}

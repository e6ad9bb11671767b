/* SPDX-License-Identifier: GPL-2.0-only */
/* objcache.c -- opened ELF objects shared between processes, keyed by (dev, ino).
 *
 * The ranks of a job all map the same libmpi and application binary; indexing their symbols
 * once per node instead of once per rank is the point. The key is the inode the kernel says
 * is mapped, not the path: a path can name another file by the time we open it.
 *
 * Users decide how many files their processes map (a thousand copies of one library, or a
 * program rebuilt every day for months): the cache keeps the most recently used ones within a
 * count, which bounds the fds held, and within a sum of file sizes, which bounds what reading
 * them may cost (an object's size counts the copies of its file it keeps for what a worker read
 * in them, pdi_elfobj_take_lines()); the least recently used object is closed first. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "log.h"
#include "objcache.h"
#include "objopen.h"

struct entry {
	uint64_t dev, ino;
	bool used;              /* false: a free slot */
	int refused;            /* negative errno: the file may not be read (see objopen.h) */
	struct pdi_elfobj *obj; /* NULL when refused */
	uint64_t bytes;         /* the file's size: what its reading may cost */
	uint64_t last_use;      /* the cache's clock at its last use: the oldest goes first */
};

/* Files a worker could not read for a reason that may pass (objwarm.h): not worth a worker's
 * trip at every join, but opened again when a join or a site needs them. */
#define UNREAD_KEPT 16

struct pdi_objcache {
	struct {
		uint64_t dev, ino;
	} unread[UNREAD_KEPT];
	unsigned next_unread;
	struct entry *slots; /* open addressing, linear probing; capacity a power of two */
	size_t cap, n;
	size_t max_objects;
	uint64_t bytes, max_bytes, clock, evicted;
};

int pdi_objcache_new(struct pdi_objcache **ret)
{
	struct pdi_objcache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->cap = 64;
	c->max_objects = PDI_OBJCACHE_MAX_OBJECTS;
	c->max_bytes = PDI_OBJCACHE_MAX_BYTES;
	c->slots = calloc(c->cap, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void pdi_objcache_set_limits(struct pdi_objcache *c, size_t max_objects, uint64_t max_bytes)
{
	c->max_objects = max_objects < 2 ? 2 : max_objects;
	c->max_bytes = max_bytes;
}

void pdi_objcache_stats(const struct pdi_objcache *c, struct pdi_objcache_stats *ret)
{
	*ret = (struct pdi_objcache_stats){.objects = c->n, .bytes = c->bytes, .evicted = c->evicted,
					   .max_objects = c->max_objects, .max_bytes = c->max_bytes};
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

	while (slots[i].used && (slots[i].dev != dev || slots[i].ino != ino))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

/* The table again at capacity NCAP: to grow, and after an eviction left a hole in a chain. */
static int rehash(struct pdi_objcache *c, size_t ncap)
{
	struct entry *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].used)
			*lookup(ns, ncap, c->slots[i].dev, c->slots[i].ino) = c->slots[i];
	free(c->slots);
	c->slots = ns;
	c->cap = ncap;
	return 0;
}

/* Close the least recently used object (or forget the oldest refusal). Objects are only ever
 * used between two calls of the cache, so none is in use here. */
static int evict_oldest(struct pdi_objcache *c)
{
	struct entry *old = NULL;

	for (size_t i = 0; i < c->cap; i++)
		if (c->slots[i].used && (!old || c->slots[i].last_use < old->last_use))
			old = &c->slots[i];
	if (!old)
		return -ENOENT;
	pdi_elfobj_free(old->obj);
	c->bytes -= old->bytes;
	c->n--;
	c->evicted++;
	*old = (struct entry){0};
	return rehash(c, c->cap);
}

/* The object read from FD, which it takes (objopen.h's). */
static int open_fd(int fd, struct pdi_elfobj **ret)
{
	char name[96];

	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	return pdi_elfobj_open_fd(fd, name, ret);
}

int pdi_objcache_open(pid_t pid, const struct pdi_mapping *m, struct pdi_elfobj **ret)
{
	int fd, r;

	if (!m->path)
		return -EINVAL;
	/* pid 0: a file of the daemon's own mount namespace, such as a library to trap */
	if (pid <= 0)
		r = pdi_objopen_path(m->path, m->ino, &fd);
	else
		r = pdi_objopen_mapped(pid, m, &fd);
	if (r < 0)
		return r;
	return open_fd(fd, ret);
}

int pdi_objcache_open_fd(int fd, struct pdi_elfobj **ret)
{
	return open_fd(fd, ret);
}

int pdi_objcache_dup_held(const struct pdi_objcache *c, const struct pdi_mapping *m, int *ret_fd)
{
	const struct entry *e = lookup(c->slots, c->cap, m->dev, m->ino);
	int fd;

	if (!e->used || !e->obj)
		return -ENOENT;
	fd = fcntl(pdi_elfobj_fd(e->obj), F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

/* Worth remembering: the file itself is unfit, whichever process maps it. Not a vanished
 * process or a transient error: the next process may show us the file. */
static bool refusal_lasts(int r)
{
	return r == PDI_EOBJ_NOT_REGULAR || r == PDI_EOBJ_TOO_BIG || r == -ENOEXEC;
}

static int put(struct pdi_objcache *c, const struct pdi_mapping *m, struct pdi_elfobj *o, int refused)
{
	uint64_t bytes = o ? pdi_elfobj_bytes_held(o) : 0;
	struct entry *e;
	int r;

	/* room first: within the count (fds) and the bytes (what reading them may cost) */
	while (c->n && (c->n >= c->max_objects || c->bytes + bytes > c->max_bytes))
		if ((r = evict_oldest(c)) < 0)
			return r;
	if ((c->n + 1) * 2 > c->cap && (r = rehash(c, c->cap * 2)) < 0)
		return r;
	e = lookup(c->slots, c->cap, m->dev, m->ino);
	*e = (struct entry){.dev = m->dev, .ino = m->ino, .used = true, .refused = refused, .obj = o,
			    .bytes = bytes, .last_use = ++c->clock};
	c->n++;
	c->bytes += bytes;
	return 0;
}

/* E's object takes what the worker's copy O read (pdi_elfobj_take_lines()), and counts the
 * copy's file if it keeps it. */
static void take_lines(struct pdi_objcache *c, struct entry *e, struct pdi_elfobj *o)
{
	uint64_t bytes;

	pdi_elfobj_take_lines(e->obj, o);
	bytes = pdi_elfobj_bytes_held(e->obj);
	c->bytes += bytes - e->bytes;
	e->bytes = bytes;
}

/* Does C hold M's object, or its refusal? */
static bool held(const struct pdi_objcache *c, const struct pdi_mapping *m)
{
	return lookup(c->slots, c->cap, m->dev, m->ino)->used;
}

bool pdi_objcache_holds(const struct pdi_objcache *c, const struct pdi_mapping *m)
{
	for (unsigned i = 0; i < UNREAD_KEPT; i++)
		if (c->unread[i].ino == m->ino && c->unread[i].dev == m->dev && m->ino)
			return true;
	return held(c, m);
}

int pdi_objcache_adopt(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *m, int opened,
		       struct pdi_elfobj *o, struct pdi_elfobj **ret)
{
	struct entry *e = lookup(c->slots, c->cap, m->dev, m->ino);
	int r;

	if (e->used) {
		struct pdi_elfobj *held_obj = e->obj;

		/* held already (or opened twice: on a worker while the loop opened it too): the cache's
		 * copy stays, and takes what the worker's read of DWARF and frames that it had not */
		if (e->obj)
			take_lines(c, e, o);
		else
			pdi_elfobj_free(o);
		e->last_use = ++c->clock;
		if (e->refused)
			return e->refused;
		/* the copy it keeps counts in the bytes: older objects make room (E may move) */
		while (c->n > 1 && c->bytes > c->max_bytes && evict_oldest(c) == 0)
			;
		if (ret)
			*ret = held_obj;
		return 0;
	}
	if (opened < 0 && !refusal_lasts(opened) && !ret) {
		/* a worker's (pdi_objcache_get() passes RET) */
		c->unread[c->next_unread].dev = m->dev;
		c->unread[c->next_unread].ino = m->ino;
		c->next_unread = (c->next_unread + 1) % UNREAD_KEPT;
	}
	if (opened == 0 && !o)
		return -EINVAL; /* nothing to adopt */
	if (opened < 0) {
		if (refusal_lasts(opened) && put(c, m, NULL, opened) == 0 && opened != -ENOEXEC)
			log_warning_limited((uint64_t)pid, "pid %d maps %s: %s, not reading it", (int)pid, m->path,
					    pdi_objopen_strerror(opened));
		return opened;
	}
	r = put(c, m, o, 0);
	if (r < 0) {
		pdi_elfobj_free(o);
		return r;
	}
	if (ret)
		*ret = o;
	return 0;
}

/* The object behind M, opened from PID's maps, or from a copy of PINNED (>= 0) if not held. */
static int get(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *m, int pinned, struct pdi_elfobj **ret)
{
	struct pdi_elfobj *o = NULL;
	int r = 0, fd;

	if (!m->path)
		return -EINVAL;
	if (!held(c, m))
		r = pinned < 0 ? pdi_objcache_open(pid, m, &o)
			       : (fd = fcntl(pinned, F_DUPFD_CLOEXEC, 3)) < 0 ? -errno : open_fd(fd, &o);
	return pdi_objcache_adopt(c, pid, m, r, r < 0 ? NULL : o, ret);
}

int pdi_objcache_get(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *m,
		     struct pdi_elfobj **ret)
{
	return get(c, pid, m, -1, ret);
}

int pdi_objcache_get_pinned(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *m, int fd,
			    struct pdi_elfobj **ret)
{
	return get(c, pid, m, fd, ret);
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

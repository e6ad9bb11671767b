/* SPDX-License-Identifier: GPL-2.0-only */
/* objcache.h -- opened ELF objects keyed by (dev, ino), so the processes of a job that map the
 * same library share one pdi_elfobj. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "elfobj.h"
#include "procmaps.h"

struct pdi_objcache;

/* Defaults of the limits: each object holds one or two fds (the file, its debug file). */
#define PDI_OBJCACHE_MAX_OBJECTS 256
#define PDI_OBJCACHE_MAX_BYTES (1ull << 30)

struct pdi_objcache_stats {
	size_t objects;    /* held now, refusals included */
	uint64_t bytes;    /* their file sizes, with the copies they keep (pdi_elfobj_bytes_held()) */
	uint64_t evicted;  /* closed to stay within the limits, since start */
	size_t max_objects; /* the limits (pdi_objcache_set_limits()) */
	uint64_t max_bytes;
};

int pdi_objcache_new(struct pdi_objcache **ret);
/* At most MAX_OBJECTS objects (at least 2) whose files add up to at most MAX_BYTES (a larger
 * file is still read, alone). */
void pdi_objcache_set_limits(struct pdi_objcache *c, size_t max_objects, uint64_t max_bytes);
void pdi_objcache_stats(const struct pdi_objcache *c, struct pdi_objcache_stats *ret);
/* Frees every object the cache handed out. NULL ok. */
void pdi_objcache_free(struct pdi_objcache *c);

/* Opens (once) the object behind mapping M of process PID, pinned to the very file mapped
 * (objopen.h: never a FIFO, a device, a symlink or a replaced file). The object belongs to the
 * cache and lives until the next call of pdi_objcache_get() or pdi_objcache_find_func() may
 * evict it: use it, never keep it. Its path is "/proc/self/fd/N". A file that may
 * not be read is refused once with a log line, and then every time without one. -EINVAL if M
 * maps no file. */
int pdi_objcache_get(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *m,
		     struct pdi_elfobj **ret);

/* The same for a process that may be gone: if the cache lacks the object, it is read from FD
 * (pdi_objopen_mapped()'s for M, taken while the process lived; the caller keeps it). */
int pdi_objcache_get_pinned(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *m, int fd,
			    struct pdi_elfobj **ret);

/* Whether the cache holds the object behind mapping M (or its refusal), or a worker lately
 * failed to read it: a hash lookup, for the loop to tell what a worker should read first
 * (objwarm.h). */
bool pdi_objcache_holds(const struct pdi_objcache *c, const struct pdi_mapping *m);
/* The object behind mapping M of process PID opened and indexed as pdi_objcache_get() opens it,
 * without the cache: touches nothing shared, so a worker may call it. -EINVAL if M maps no file. */
int pdi_objcache_open(pid_t pid, const struct pdi_mapping *m, struct pdi_elfobj **ret);
/* The object read from FD (taken), a file pdi_objcache_dup_held() or objopen.h gave: touches
 * nothing shared, so a worker may call it. */
int pdi_objcache_open_fd(int fd, struct pdi_elfobj **ret);
/* On the loop: a descriptor of its own of the file of the object C holds for mapping M (the very
 * file that was read), for a worker to read it again, whatever the process that maps it does
 * meanwhile (it may have exited). -ENOENT if C holds none. */
int pdi_objcache_dup_held(const struct pdi_objcache *c, const struct pdi_mapping *m, int *ret_fd);
/* On the loop: hand the cache what pdi_objcache_open(PID, M) returned (OPENED, and O if it is
 * 0), as pdi_objcache_get() would have kept it: O is taken (if the cache holds M already, its
 * object takes the DWARF and frame information O read and it lacks, pdi_elfobj_take_lines()),
 * a lasting refusal remembered. *RET (if RET) the cache's object for M; without RET (a worker's
 * read) another failure is remembered too, for pdi_objcache_holds() only. */
int pdi_objcache_adopt(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *m, int opened,
		       struct pdi_elfobj *o, struct pdi_elfobj **ret);

/* The first executable file mapping of PID (as listed in MAPS) whose object defines NAME as a
 * function: which object a process takes its MPI symbols from. Objects that cannot be opened
 * are skipped. -ENOENT if none. RET_MAP points into MAPS. */
int pdi_objcache_find_func(struct pdi_objcache *c, pid_t pid, const struct pdi_maps *maps,
			   const char *name, const struct pdi_mapping **ret_map,
			   struct pdi_elfobj **ret_obj);

/* SPDX-License-Identifier: GPL-2.0-only */
/* objcache.h -- opened ELF objects keyed by (dev, ino), so the processes of a job that map the
 * same library share one pdi_elfobj. */
#pragma once

#include <sys/types.h>

#include "elfobj.h"
#include "procmaps.h"

struct pdi_objcache;

int pdi_objcache_new(struct pdi_objcache **ret);
/* Frees every object the cache handed out. NULL ok. */
void pdi_objcache_free(struct pdi_objcache *c);

/* Opens (once) the object behind mapping M of process PID, via "/proc/PID/root" + M->path (so
 * containers work), falling back to /proc/PID/map_files/START-END if that fails or reaches
 * another file than the one mapped (replaced on disk, or " (deleted)"). The object belongs to
 * the cache and lives until pdi_objcache_free(); its path may outlive PID's /proc entry only as
 * "/proc/self/fd/N" (see pdi_elfobj_fd()). -EINVAL if M maps no file. */
int pdi_objcache_get(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *m,
		     struct pdi_elfobj **ret);

/* The first executable file mapping of PID (as listed in MAPS) whose object defines NAME as a
 * function: which object a process takes its MPI symbols from. Objects that cannot be opened
 * are skipped. -ENOENT if none. RET_MAP points into MAPS. */
int pdi_objcache_find_func(struct pdi_objcache *c, pid_t pid, const struct pdi_maps *maps,
			   const char *name, const struct pdi_mapping **ret_map,
			   struct pdi_elfobj **ret_obj);

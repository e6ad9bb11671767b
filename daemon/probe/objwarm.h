/* SPDX-License-Identifier: GPL-2.0-only */
/* objwarm.h -- the objects a joining process maps, read into the object cache on a worker.
 *
 * The first process of a program to join after pdimond starts (or after the cache let its
 * objects go) found the cache cold: locating its MPI library and classifying its libraries for
 * the call chains opened and indexed every object it maps, 10-25 ms on the loop for NWChem, and
 * the first call from each site read the object's DWARF index. The loop now only lists what the
 * cache lacks (a hash lookup per mapping); a worker opens and indexes it, DWARF and frame
 * information included; the loop hands the results to the cache. Nothing here touches the
 * daemon's state but in pdi_objwarm_plan() and pdi_objwarm_commit(), on the loop. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

struct pdi_maps;
struct pdi_objcache;
struct pdi_objwarm;

/* On the loop: the executable file mappings in MAPS (of process PID) that cache C lacks, copied
 * for a worker. 0 and *RET NULL when there are none (nothing to wait for), or negative errno. */
int pdi_objwarm_plan(struct pdi_objcache *c, pid_t pid, const struct pdi_maps *maps, struct pdi_objwarm **ret);
/* On the loop: the objects behind MAPS[0..N) of process PID, which a call site's first name needs
 * (sites.h: the cache lacks them, their DWARF, or a compile unit's line table), copied for a worker
 * that reads each with its DWARF, and, if LINE_AT is not 0, the line table of the compile unit at
 * that ELF address of MAPS[0]'s object; pdi_objwarm_commit() gives the cache what its own objects
 * lack. 0 and *RET NULL when N is 0, or negative errno. */
int pdi_objwarm_plan_lines(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *const *maps, unsigned n,
			   uint64_t line_at, struct pdi_objwarm **ret);
/* What plan copied, nothing read handed to the cache (a job not submitted). NULL ok. */
void pdi_objwarm_free(struct pdi_objwarm *w);
/* Does A read every object B lists? Reads only what plan wrote (a worker may be running A). */
bool pdi_objwarm_covers(const struct pdi_objwarm *a, const struct pdi_objwarm *b);
/* On a worker: open and index them, touching W only. */
void pdi_objwarm_run(struct pdi_objwarm *w);
/* On the loop: hand what was read to C (whatever it holds already stays, and takes the DWARF and
 * frame information it lacked), and free W. How many objects were read. NULL ok. */
unsigned pdi_objwarm_commit(struct pdi_objcache *c, struct pdi_objwarm *w);

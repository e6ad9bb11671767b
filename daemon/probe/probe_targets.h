/* SPDX-License-Identifier: GPL-2.0-only */
/* probe_targets.h -- where in a process to put the MPI probes: which object, which offsets. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "datatypes.h"
#include "entry_place.h"

struct pdi_objcache;
struct pdi_elfobj;

#define PDI_MAX_PROBES 256

struct pdi_probe_targets {
	char path[PATH_MAX];  /* the object as the daemon reaches it: /proc/PID/root/... */
	char object[256];     /* the object as the process maps it */
	dev_t dev;            /* its inode, as the process maps it */
	ino_t ino;
	struct pdi_elfobj *obj;
	bool int_handles;     /* MPICH-style integer MPI handles */
	struct pdi_dtypes dtypes;
	unsigned n;
	uint64_t offsets[PDI_MAX_PROBES];
	uint64_t cookies[PDI_MAX_PROBES]; /* PDI_COOKIE_MAKE(function, request arg, ...) */
	uint32_t skipped[PDI_MAX_PROBES]; /* bytes past the function's start (entry_place.h) */
	uint8_t kinds[PDI_MAX_PROBES];    /* enum pdi_insn_kind of the probed instruction */
	uint8_t first_kinds[PDI_MAX_PROBES]; /* and of the function's first instruction */
	const char *why[PDI_MAX_PROBES];  /* why a probe stays on a single-stepped instruction */
};

enum pdi_targets_flags {
	PDI_TARGETS_AT_START = 1 << 0, /* every probe on its function's first byte: no placement */
};

/* The probes for PID: every probed MPI function its MPI object defines, each on the first
 * instruction the kernel emulates where that is safe (entry_place.h), unless FLAGS has
 * PDI_TARGETS_AT_START. -ESRCH: no such process; -ENOENT: it maps no MPI library. */
int pdi_probe_targets_find(struct pdi_objcache *objs, pid_t pid, unsigned flags, struct pdi_probe_targets *ret);

/* The part of pdi_probe_targets_find() that depends on the process: which object it takes its
 * MPI symbols from (obj, object, path, dev, ino, int_handles) and its datatypes. */
int pdi_probe_targets_locate(struct pdi_objcache *objs, pid_t pid, struct pdi_probe_targets *ret);
/* The part that depends on the object O alone: n, offsets, cookies, placement, int_handles.
 * -ENOENT when O defines none of the probed functions. */
int pdi_probe_targets_of(struct pdi_elfobj *o, unsigned flags, struct pdi_probe_targets *ret);

/* Place the entry probe of function NAME (file offset OFF) in object O; PDI_TARGETS_AT_START
 * in FLAGS keeps it at OFF. Returns the offset to probe. */
uint64_t pdi_probe_place(struct pdi_elfobj *o, const char *name, uint64_t off, unsigned flags,
			 struct pdi_entry_place *ret);

/* File offsets of NAME and of P+NAME when that is not an alias at the same address.
 * Returns how many (0-2) were stored in OFF. */
unsigned pdi_func_offsets(struct pdi_elfobj *o, const char *name, uint64_t off[2]);

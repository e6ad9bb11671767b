/* SPDX-License-Identifier: GPL-2.0-only */
/* probe_targets.h -- where in a process to put the MPI probes: which object, which offsets. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "datatypes.h"

struct pdi_objcache;
struct pdi_elfobj;

#define PDI_MAX_PROBES 256

struct pdi_probe_targets {
	char path[PATH_MAX];  /* the object as the daemon reaches it: /proc/PID/root/... */
	char object[256];     /* the object as the process maps it */
	struct pdi_elfobj *obj;
	bool int_handles;     /* MPICH-style integer MPI handles */
	struct pdi_dtypes dtypes;
	unsigned n;
	uint64_t offsets[PDI_MAX_PROBES];
	uint64_t cookies[PDI_MAX_PROBES]; /* PDI_COOKIE_MAKE(function, request arg, ...) */
};

/* The probes for PID: every probed MPI function its MPI object defines.
 * -ESRCH: no such process; -ENOENT: it maps no MPI library. */
int pdi_probe_targets_find(struct pdi_objcache *objs, pid_t pid, struct pdi_probe_targets *ret);

/* File offsets of NAME and of P+NAME when that is not an alias at the same address.
 * Returns how many (0-2) were stored in OFF. */
unsigned pdi_func_offsets(struct pdi_elfobj *o, const char *name, uint64_t off[2]);

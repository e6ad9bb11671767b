/* SPDX-License-Identifier: GPL-2.0-only */
/* procmaps.h -- the memory mappings of a process, as /proc/PID/maps lists them. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

struct pdi_mapping {
	uint64_t start, end; /* [start, end) in the process */
	uint64_t pgoff;      /* file offset mapped at start */
	uint64_t dev;        /* makedev(major, minor), encoded like st_dev */
	uint64_t ino;
	bool exec;
	bool deleted; /* the file was unlinked: PATH names another file, or none */
	/* malloc'd; NULL for anonymous and "[heap]"-like mappings. A " (deleted)" suffix is
	 * stripped (and DELETED set): the file is still reachable through /proc/PID/map_files. */
	char *path;
};

struct pdi_maps {
	struct pdi_mapping *v; /* sorted by start, as the kernel lists them */
	size_t n;
};

/* Negative errno; -ESRCH if the process is gone (or is a zombie, which maps nothing). */
int pdi_maps_read(pid_t pid, struct pdi_maps *ret);
/* Accepts a zeroed struct; leaves it zeroed. */
void pdi_maps_free(struct pdi_maps *m);
/* The first mapping of the file (DEV, INO) in M, or NULL. */
const struct pdi_mapping *pdi_maps_of_file(const struct pdi_maps *m, uint64_t dev, uint64_t ino);
/* The identity of the file PID executes (/proc/PID/exe): -ESRCH if it is gone. */
int pdi_exe_identity(pid_t pid, dev_t *ret_dev, ino_t *ret_ino);
/* The mapping that contains ADDR, or NULL. */
const struct pdi_mapping *pdi_maps_find(const struct pdi_maps *m, uint64_t addr);

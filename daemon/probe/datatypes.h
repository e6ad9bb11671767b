/* SPDX-License-Identifier: GPL-2.0-only */
/* datatypes.h -- the size of an MPI datatype from its handle, for the predefined types:
 * what "bytes" costs nothing to know. Derived types count as unknown (0). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <sys/types.h>

struct pdi_elfobj;
struct pdi_maps;
struct pdi_mapping;
struct pdi_objcache;

#define PDI_MAX_DTYPES 40

struct pdi_dtypes {
	bool int_handles;               /* MPICH family: the size is in the handle itself */
	unsigned n;
	uint64_t handle[PDI_MAX_DTYPES]; /* Open MPI: the address of ompi_mpi_<type> in the process */
	uint32_t size[PDI_MAX_DTYPES];
	uint64_t comm_world;            /* MPI_COMM_WORLD's handle in the process, 0 when unknown */
};

/* Learn the datatype handles and MPI_COMM_WORLD's of process PID, whose MPI library is MPI (mapped as MPI_MAP in MAPS).
 * With INT_HANDLES (MPICH's family) they are the same in every process: nothing else is read. */
void pdi_dtypes_load(struct pdi_dtypes *dt, bool int_handles, struct pdi_objcache *objs, pid_t pid,
		     const struct pdi_maps *maps, struct pdi_elfobj *mpi, const struct pdi_mapping *mpi_map);

/* The same for process PID, which may be gone since MAPS were read (at its MPI_Init): from the
 * objects the cache holds, its executable read from EXE_FD (pinned then; -1 if not) if the cache
 * lacks it, and its MPI library the file (MPI_DEV, MPI_INO). Open MPI's handles are addresses in
 * the process: a rank that ended before it joined would otherwise lose its calls' bytes.
 * Unknown without MAPS. */
void pdi_dtypes_load_read(struct pdi_dtypes *dt, bool int_handles, struct pdi_objcache *objs, pid_t pid,
			  const struct pdi_maps *maps, int exe_fd, uint64_t mpi_dev, uint64_t mpi_ino);

/* Bytes per element of the type with HANDLE, 0 when unknown. */
uint32_t pdi_dtype_size(const struct pdi_dtypes *dt, uint64_t handle);

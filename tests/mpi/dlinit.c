/* SPDX-License-Identifier: GPL-2.0-only */
/* dlinit.c -- an MPI program that loads its MPI library with dlopen, as Python's mpi4py does:
 * nothing in its ELF says it links MPI, so pdimond cannot attach its probes when it starts, and
 * it is held at MPI_Init until they are (daemon/probe/ahead_attach.h).
 *
 *   dlinit LIBRARY      e.g. libmpi.so.40 (Open MPI) or libmpich.so.12 (MPICH)
 *
 * Calls MPI_Init, MPI_Barrier and MPI_Finalize, once each. */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*init_fn)(int *, char ***);
typedef int (*barrier_fn)(void *);
typedef int (*finalize_fn)(void);

int main(int argc, char **argv)
{
	void *lib, *world;
	init_fn init;
	barrier_fn barrier;
	finalize_fn finalize;

	if (argc != 2) {
		fprintf(stderr, "usage: dlinit LIBRARY\n");
		return 2;
	}
	/* global: Open MPI's components resolve their symbols in it */
	lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "dlinit: %s\n", dlerror());
		return 1;
	}
	init = (init_fn)dlsym(lib, "MPI_Init");
	barrier = (barrier_fn)dlsym(lib, "MPI_Barrier");
	finalize = (finalize_fn)dlsym(lib, "MPI_Finalize");
	/* MPI_COMM_WORLD: Open MPI's is the address of ompi_mpi_comm_world, MPICH's the constant */
	world = dlsym(lib, "ompi_mpi_comm_world");
	if (!world)
		world = (void *)(long)0x44000000;
	if (!init || !barrier || !finalize) {
		fprintf(stderr, "dlinit: %s is not an MPI library\n", argv[1]);
		return 1;
	}
	if (init(&argc, &argv) != 0 || barrier(world) != 0)
		return 1;
	return finalize() != 0;
}

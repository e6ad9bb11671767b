/* SPDX-License-Identifier: GPL-2.0-only */
/* ring.c -- a ring exchange: each iteration is Irecv, Isend, Waitall, Barrier, one call per
 * line so that tests can check call sites by the "@site" markers.
 *
 * Usage: ring ITERATIONS [COMPUTE_US] [STALL_RANK] [STALL_ITER] [before|STALL_US]
 * The optional stall makes STALL_RANK sleep forever in compute at iteration STALL_ITER:
 * after its Waitall (the others then wait in the Barrier), or with "before", before its
 * Irecv (its right neighbour then waits in Waitall for its message). With STALL_US the
 * stall is transient: that many microseconds after the Waitall. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void compute(long us)
{
	if (us > 0)
		usleep((useconds_t)us);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 10, us = argc > 2 ? atol(argv[2]) : 0;
	int stall_rank = argc > 3 ? atoi(argv[3]) : -1;
	long stall_iter = argc > 4 ? atol(argv[4]) : -1;
	int stall_before = argc > 5 && strcmp(argv[5], "before") == 0;
	long stall_us = argc > 5 && !stall_before ? atol(argv[5]) : 0;
	int rank, size, in = 0, out;
	MPI_Request reqs[2];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (long i = 0; i < iters; i++) {
		out = rank;
		while (rank == stall_rank && i == stall_iter && stall_before)
			pause();
		MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 7, MPI_COMM_WORLD, &reqs[0]); /* @irecv */
		MPI_Isend(&out, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD, &reqs[1]); /* @isend */
		MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE); /* @waitall */
		compute(us);
		if (rank == stall_rank && i == stall_iter && stall_us > 0)
			compute(stall_us);
		while (rank == stall_rank && i == stall_iter && !stall_before && stall_us == 0)
			pause();
		MPI_Barrier(MPI_COMM_WORLD); /* @barrier */
	}
	if (rank == 0)
		printf("ring: %ld iterations on %d ranks\n", iters, size);
	MPI_Finalize();
	return 0;
}

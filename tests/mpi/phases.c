/* SPDX-License-Identifier: GPL-2.0-only */
/* phases.c -- a program with MPI_Pcontrol phase markers: PHASES phases, each of ITERS
 * iterations of Allreduce then Sendrecv with the neighbours.
 *
 * Usage: phases PHASES ITERS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int phases = argc > 1 ? atoi(argv[1]) : 3, iters = argc > 2 ? atoi(argv[2]) : 20;
	int rank, size;
	double x = 1, sum, got;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (int p = 0; p < phases; p++) {
		MPI_Pcontrol(1); /* @pcontrol */
		for (int i = 0; i < iters; i++) {
			MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* @allreduce */
			int right = (rank + 1) % size, left = (rank + size - 1) % size;

			MPI_Sendrecv(&x, 1, MPI_DOUBLE, right, 3, &got, 1, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @sendrecv */
		}
	}
	if (rank == 0)
		printf("phases: %d phases of %d iterations\n", phases, iters);
	MPI_Finalize();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* grow.c -- a program with known trends (ti-trend-prof): per iteration, one Allreduce and one
 * Barrier per task whatever the task count; an exchange with every other task (n - 1 Sendrecv
 * per task: calls and bytes per task grow as n^1); and SIZE / 64 Bcasts (per task growing with
 * the input size as s^1, not with n). Built without the exchange (-DNO_GROWTH, "flat"): every
 * site's calls per task then stay the same at any task count.
 *
 * Usage: grow ITERATIONS [SIZE] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define SIZE_UNIT 64

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 20, size = argc > 2 ? atol(argv[2]) : SIZE_UNIT;
	int rank, n;
	double x = 1, sum;
#ifndef NO_GROWTH
	double out[16] = {0}, in[16];
#endif

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	for (long i = 0; i < iters; i++) {
		MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* @allreduce */
#ifndef NO_GROWTH
		for (int p = 1; p < n; p++) {
			int to = (rank + p) % n, from = (rank + n - p) % n;
			MPI_Sendrecv(out, 16, MPI_DOUBLE, to, 3, in, 16, MPI_DOUBLE, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @exchange */
		}
#endif
		for (long k = 0; k < size / SIZE_UNIT; k++)
			MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* @bcast */
		MPI_Barrier(MPI_COMM_WORLD); /* @barrier */
	}
	if (rank == 0)
		printf("grow: %ld iterations, size %ld, on %d ranks\n", iters, size, n);
	MPI_Finalize();
	return 0;
}

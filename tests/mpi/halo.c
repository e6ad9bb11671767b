/* SPDX-License-Identifier: GPL-2.0-only */
/* halo.c -- a 2-D nearest-neighbour halo exchange (Jacobi sweeps on a periodic process grid):
 * each iteration posts four Irecv and four Isend, waits for them all, sweeps its block, and
 * every CHECK iterations sums the residual with an Allreduce. One MPI call per line, marked
 * "@site" for the tests; faults come from the environment (fault.h).
 *
 * Usage: halo ITERATIONS [N (block side, 192)] [SWEEPS (2)] [CHECK (2)] */
#include "fault.h"

#include <math.h>

enum { EAST, WEST, NORTH, SOUTH };

static const int opposite[4] = {WEST, EAST, SOUTH, NORTH};

#define U(i, j) u[(size_t)(i) * (n + 2) + (j)]
#define V(i, j) v[(size_t)(i) * (n + 2) + (j)]

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 800;
	int n = argc > 2 ? atoi(argv[2]) : 192, sweeps = argc > 3 ? atoi(argv[3]) : 2;
	long check = argc > 4 ? atol(argv[4]) : 2;
	int rank, size, dims[2] = {0, 0}, nbr[4];
	double *u, *v, *sbuf[4], *rbuf[4], res = 0, gres = 0;
	MPI_Request reqs[8];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	fault_init(rank);
	MPI_Dims_create(size, 2, dims);
	{
		int x = rank % dims[0], y = rank / dims[0];

		nbr[EAST] = y * dims[0] + (x + 1) % dims[0];
		nbr[WEST] = y * dims[0] + (x + dims[0] - 1) % dims[0];
		nbr[NORTH] = ((y + 1) % dims[1]) * dims[0] + x;
		nbr[SOUTH] = ((y + dims[1] - 1) % dims[1]) * dims[0] + x;
	}
	u = calloc((size_t)(n + 2) * (n + 2), sizeof(double));
	v = calloc((size_t)(n + 2) * (n + 2), sizeof(double));
	for (int d = 0; d < 4; d++) {
		sbuf[d] = calloc((size_t)n, sizeof(double));
		rbuf[d] = calloc((size_t)n, sizeof(double));
	}
	if (!u || !v)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = 1; i <= n; i++)
		for (int j = 1; j <= n; j++)
			U(i, j) = (double)((rank * 7 + i * 3 + j) % 11);

	for (long it = 0; it < iters; it++) {
		/* a message travelling in direction d carries tag d */
		FAULT_MPI(it, "irecv"); for (int d = 0; d < 4; d++) MPI_Irecv(rbuf[d], n, MPI_DOUBLE, nbr[d], opposite[d], MPI_COMM_WORLD, &reqs[d]); /* @irecv */
		for (int k = 0; k < n; k++) {
			sbuf[EAST][k] = U(k + 1, n);
			sbuf[WEST][k] = U(k + 1, 1);
			sbuf[NORTH][k] = U(n, k + 1);
			sbuf[SOUTH][k] = U(1, k + 1);
		}
		FAULT_MPI(it, "isend"); FAULT_EXTRA(it, "isend", sbuf[EAST], n, MPI_DOUBLE, nbr[EAST], EAST); for (int d = 0; d < 4; d++) if (d == EAST && FAULT_DROP(it, "isend", nbr[EAST])) reqs[4 + d] = MPI_REQUEST_NULL; else MPI_Isend(sbuf[d], n, MPI_DOUBLE, nbr[d], d, MPI_COMM_WORLD, &reqs[4 + d]); /* @isend */
		FAULT_MPI(it, "waitall"); MPI_Waitall(8, reqs, MPI_STATUSES_IGNORE); /* @waitall */
		for (int k = 0; k < n; k++) {
			U(k + 1, n + 1) = rbuf[EAST][k];
			U(k + 1, 0) = rbuf[WEST][k];
			U(n + 1, k + 1) = rbuf[NORTH][k];
			U(0, k + 1) = rbuf[SOUTH][k];
		}
		FAULT_COMPUTE(it, "waitall", it % check == 0 ? "allreduce" : "irecv");
		res = 0;
		for (int s = 0; s < sweeps; s++) {
			for (int i = 1; i <= n; i++)
				for (int j = 1; j <= n; j++)
					V(i, j) = 0.25 * (U(i - 1, j) + U(i + 1, j) + U(i, j - 1) + U(i, j + 1));
			for (int i = 1; i <= n; i++)
				for (int j = 1; j <= n; j++) {
					res += fabs(V(i, j) - U(i, j));
					U(i, j) = V(i, j);
				}
		}
		if (it % check == 0) {
			FAULT_MPI(it, "allreduce"); MPI_Allreduce(&res, &gres, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* @allreduce */
			FAULT_COMPUTE(it, "allreduce", "irecv");
		}
	}
	if (rank == 0)
		printf("halo: %ld iterations on %d ranks (%dx%d), residual %g\n", iters, size, dims[0], dims[1], gres);
	MPI_Finalize();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* solver.c -- a collective-heavy iterative solver: conjugate gradients on a 1-D Poisson
 * problem split over the ranks. Each iteration exchanges one ghost value with each neighbour
 * (blocking Send/Recv), takes two dot products with MPI_Allreduce, and rank 0 broadcasts
 * whether to restart; every 4 iterations an MPI_Allgather collects the ranks' residuals.
 * One MPI call per line, marked "@site" for the tests; faults come from the environment
 * (fault.h).
 *
 * Usage: solver ITERATIONS [N (unknowns per rank, 60000)] */
#include "fault.h"

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 300;
	long n = argc > 2 ? atol(argv[2]) : 60000;
	int rank, size, left, right, restart = 0;
	double *x, *r, *p, *q, *norms, rr = 0, rr_new, pq, lrr, lpq, alpha, beta;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	fault_init(rank);
	left = rank > 0 ? rank - 1 : -1;
	right = rank < size - 1 ? rank + 1 : -1;
	x = calloc((size_t)n + 2, sizeof(double));
	r = calloc((size_t)n + 2, sizeof(double));
	p = calloc((size_t)n + 2, sizeof(double)); /* p[0] and p[n + 1] are the ghosts */
	q = calloc((size_t)n + 2, sizeof(double));
	norms = calloc((size_t)size, sizeof(double));
	if (!x || !r || !p || !q || !norms)
		MPI_Abort(MPI_COMM_WORLD, 1);

	for (long it = 0; it < iters; it++) {
		if (it == 0 || restart) { /* b = 1, x = 0: r = p = b */
			for (long k = 1; k <= n; k++) {
				x[k] = 0;
				r[k] = p[k] = 1.0 + (double)((k + rank) % 5) * 0.1;
			}
			lrr = 0;
			for (long k = 1; k <= n; k++)
				lrr += r[k] * r[k];
			FAULT_MPI(it, "allreduce_init"); MPI_Allreduce(&lrr, &rr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* @allreduce_init */
		}
		/* q = A p, A = tridiag(-1, 2.001, -1): the ghosts come from the neighbours */
		FAULT_MPI(it, "send_right"); FAULT_EXTRA(it, "send_right", &p[n], 1, MPI_DOUBLE, right < 0 ? left : right, 0); if (right >= 0 && !FAULT_DROP(it, "send_right", right)) MPI_Send(&p[n], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD); /* @send_right */
		FAULT_MPI(it, "recv_left"); if (left >= 0) MPI_Recv(&p[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @recv_left */
		FAULT_MPI(it, "send_left"); if (left >= 0 && !FAULT_DROP(it, "send_left", left)) MPI_Send(&p[1], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD); /* @send_left */
		FAULT_MPI(it, "recv_right"); if (right >= 0) MPI_Recv(&p[n + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @recv_right */
		FAULT_COMPUTE(it, "recv_right", "allreduce_pq");
		lpq = 0;
		for (long k = 1; k <= n; k++) {
			q[k] = 2.001 * p[k] - p[k - 1] - p[k + 1];
			lpq += p[k] * q[k];
		}
		FAULT_MPI(it, "allreduce_pq"); MPI_Allreduce(&lpq, &pq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* @allreduce_pq */
		FAULT_COMPUTE(it, "allreduce_pq", "allreduce_rr");
		alpha = pq != 0 ? rr / pq : 0;
		lrr = 0;
		for (long k = 1; k <= n; k++) {
			x[k] += alpha * p[k];
			r[k] -= alpha * q[k];
			lrr += r[k] * r[k];
		}
		FAULT_MPI(it, "allreduce_rr"); MPI_Allreduce(&lrr, &rr_new, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* @allreduce_rr */
		beta = rr != 0 ? rr_new / rr : 0;
		rr = rr_new;
		for (long k = 1; k <= n; k++)
			p[k] = r[k] + beta * p[k];
		if (it % 4 == 3) {
			FAULT_MPI(it, "allgather"); MPI_Allgather(&lrr, 1, MPI_DOUBLE, norms, 1, MPI_DOUBLE, MPI_COMM_WORLD); /* @allgather */
		}
		restart = rank == 0 && rr < 1e-200; /* converged: start again */
		FAULT_MPI(it, "bcast"); MPI_Bcast(&restart, 1, MPI_INT, 0, MPI_COMM_WORLD); /* @bcast */
	}
	if (rank == 0)
		printf("solver: %ld iterations on %d ranks, residual %g\n", iters, size, rr);
	MPI_Finalize();
	return 0;
}

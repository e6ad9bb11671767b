/* SPDX-License-Identifier: GPL-2.0-only */
/* poll.c -- a program that overlaps communication with computation by polling: MPI_Test and
 * MPI_Iprobe called between short slices of computation, as codes that overlap do.
 *
 * Usage: poll phases QUIET_S BURST_S QUIET_S   a quiet phase (a ring exchange every 10 ms),
 *                                              a polling burst, a quiet phase again
 *        poll lopsided QUIET_S BURST_S QUIET_S  the same, but in the burst only rank 0 polls
 *                                              flat out; the others poll once a millisecond
 *        poll work ITERS SLICE                 ITERS slices of computation (SLICE inner steps
 *                                              each), a Test and an Iprobe after each
 * Each rank's polling waits on a receive its left neighbour completes only at the end of its
 * own polling, so every Test of the burst finds the request pending. Rank 0 prints
 *   poll_s=S polls=N calls_per_s_per_rank=R */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile double sink;

static void compute(long steps)
{
	double x = sink;

	for (long i = 0; i < steps; i++)
		x = x * 1.0000001 + 1e-9;
	sink = x;
}

static void quiet(double seconds, int rank, int size)
{
	const struct timespec pause = {.tv_nsec = 10 * 1000 * 1000};
	double end = MPI_Wtime() + seconds;
	int in, out = rank, go = 1;

	/* every rank runs the same number of exchanges: rank 0 decides when to stop */
	while (go) {
		MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 1, &in, 1, MPI_INT, (rank + size - 1) % size, 1,
			     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		nanosleep(&pause, NULL);
		go = rank == 0 ? MPI_Wtime() < end : 0;
		MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
}

/* Poll for SECONDS (when > 0) or ITERS slices of SLICE steps (a millisecond's sleep when SLICE
 * is 0); returns the polls made. */
static long poll_phase(double seconds, long iters, long slice, int rank, int size)
{
	const struct timespec ms = {.tv_nsec = 1000 * 1000};
	double end = MPI_Wtime() + seconds;
	MPI_Request req;
	int in = 0, out = rank, flag = 0, probed;
	long n = 0;

	MPI_Irecv(&in, 1, MPI_INT, (rank + size - 1) % size, 2, MPI_COMM_WORLD, &req);
	while (seconds > 0 ? MPI_Wtime() < end : n < iters) {
		if (slice)
			compute(slice);
		else
			nanosleep(&ms, NULL);
		MPI_Iprobe(MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &probed, MPI_STATUS_IGNORE);
		if (!flag)
			MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
		n++;
	}
	MPI_Send(&out, 1, MPI_INT, (rank + 1) % size, 2, MPI_COMM_WORLD);
	if (!flag)
		MPI_Wait(&req, MPI_STATUS_IGNORE);
	return n;
}

int main(int argc, char **argv)
{
	int rank, size;
	double t0, t1;
	long polls;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc == 5 && (!strcmp(argv[1], "phases") || !strcmp(argv[1], "lopsided"))) {
		quiet(atof(argv[2]), rank, size);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		polls = poll_phase(atof(argv[3]), 0, rank == 0 || !strcmp(argv[1], "phases") ? 200 : 0, rank, size);
		t1 = MPI_Wtime();
		MPI_Barrier(MPI_COMM_WORLD);
		quiet(atof(argv[4]), rank, size);
	} else if (argc == 4 && !strcmp(argv[1], "work")) {
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		polls = poll_phase(0, atol(argv[2]), atol(argv[3]), rank, size);
		t1 = MPI_Wtime();
		MPI_Barrier(MPI_COMM_WORLD);
	} else {
		if (rank == 0)
			fprintf(stderr, "usage: poll phases|lopsided QUIET_S BURST_S QUIET_S | poll work ITERS SLICE\n");
		MPI_Finalize();
		return 2;
	}
	if (rank == 0) {
		printf("poll_s=%.6f polls=%ld calls_per_s_per_rank=%.0f\n", t1 - t0, polls, 2.0 * (double)polls / (t1 - t0));
		fflush(stdout);
	}
	MPI_Finalize();
	return 0;
}

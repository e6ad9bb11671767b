/* SPDX-License-Identifier: GPL-2.0-only */
/* pingpong.c -- times MPI calls short enough that a probe's cost shows: 8-byte ping-pongs, barriers.
 *
 * Usage: pingpong ITERS WAITFILE
 * Every rank waits (at most 60 s) for WAITFILE to exist, so that probes can be attached
 * after MPI_Init and before the timed calls. Then ranks 0 and 1 do 100 untimed and ITERS
 * timed ping-pongs (MPI_Send + MPI_Recv: two calls per rank per round trip) while the other
 * ranks idle, all ranks do ITERS timed MPI_Barrier, then ITERS MPI_Iprobe for a message that
 * never comes: a probed call that waits for no other rank, so its cost is the probes' alone
 * plus the library's few tens of ns. Rank 0 prints
 *   pingpong_ns_per_call=N barrier_ns_per_call=M iprobe_ns_per_call=K */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#define WARMUP 100

static int wait_file(const char *path)
{
	const struct timespec step = {.tv_nsec = 10 * 1000 * 1000};
	struct stat st;

	for (int i = 0; i < 6000; i++) { /* 60 s in 10 ms steps */
		if (stat(path, &st) == 0)
			return 0;
		nanosleep(&step, NULL);
	}
	return -1;
}

static void pingpong(int rank, long iters, char *buf)
{
	for (long i = 0; i < iters; i++) {
		if (rank == 0) {
			MPI_Send(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			MPI_Recv(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
}

int main(int argc, char **argv)
{
	char buf[8] = {0};
	double t0, t1, t2, t3;
	long iters;
	int rank, size, flag;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 3 || (iters = atol(argv[1])) <= 0 || size < 2) {
		if (rank == 0)
			fprintf(stderr, "usage: mpirun -np N (N >= 2) pingpong ITERS WAITFILE\n");
		MPI_Finalize();
		return 2;
	}
	if (wait_file(argv[2]) < 0) {
		fprintf(stderr, "pingpong: rank %d: %s did not appear within 60 s\n", rank, argv[2]);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	pingpong(rank, WARMUP, buf);

	t0 = MPI_Wtime();
	pingpong(rank, iters, buf);
	t1 = MPI_Wtime();
	for (long i = 0; i < iters; i++)
		MPI_Barrier(MPI_COMM_WORLD);
	t2 = MPI_Wtime();
	for (long i = 0; i < iters; i++)
		MPI_Iprobe(MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
	t3 = MPI_Wtime();
	MPI_Barrier(MPI_COMM_WORLD);

	if (rank == 0) {
		printf("pingpong_ns_per_call=%.1f barrier_ns_per_call=%.1f iprobe_ns_per_call=%.1f\n",
		       (t1 - t0) * 1e9 / (2.0 * (double)iters), (t2 - t1) * 1e9 / (double)iters,
		       (t3 - t2) * 1e9 / (double)iters);
		fflush(stdout);
	}
	MPI_Finalize();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* startup.c -- the MPI program of bench/startup.py: how long MPI_Init takes, per rank.
 *
 * Each rank reads CLOCK_MONOTONIC (the clock of pdimond's BPF timestamps) just before and
 * just after MPI_Init, makes one barrier so that every rank really joined, and rank 0 prints
 * one line per rank: "init RANK PID T_BEFORE_NS T_AFTER_NS". Nothing else: the step is all
 * start-up, which is what the benchmark measures.
 *
 * With PDI_STARTUP_WAIT=FILE in its environment a rank first waits (at most 120 s) until FILE
 * exists: tests/integration/test_startup.py holds the ranks between their exec and MPI_Init.
 * With PDI_STARTUP_STAMP=1 a rank first prints "main PID NS" on stderr, NS the clock at main:
 * its exec, ld.so's mapping of the MPI library and the constructors are done by then
 * (bench/attach_scale.py --order times them). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void wait_for_file(const char *path)
{
	const struct timespec tick = {.tv_nsec = 10 * 1000 * 1000};

	for (int i = 0; i < 12000 && access(path, F_OK) != 0; i++)
		nanosleep(&tick, NULL);
}

int main(int argc, char **argv)
{
	const char *wait = getenv("PDI_STARTUP_WAIT");
	uint64_t mine[3], *all = NULL;
	int rank, size;

	if (getenv("PDI_STARTUP_STAMP")) {
		fprintf(stderr, "main %d %llu\n", (int)getpid(), (unsigned long long)now_ns());
		fflush(stderr);
	}
	if (wait)
		wait_for_file(wait);
	mine[0] = now_ns();
	MPI_Init(&argc, &argv);
	mine[1] = now_ns();
	mine[2] = (uint64_t)getpid();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rank == 0 && !(all = malloc(sizeof(mine) * (size_t)size)))
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Gather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (int r = 0; r < size; r++)
			printf("init %d %llu %llu %llu\n", r, (unsigned long long)all[3 * r + 2],
			       (unsigned long long)all[3 * r], (unsigned long long)all[3 * r + 1]);
		fflush(stdout);
	}
	free(all);
	MPI_Finalize();
	return 0;
}

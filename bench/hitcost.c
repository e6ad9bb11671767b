/* SPDX-License-Identifier: GPL-2.0-only */
/* hitcost.c -- ns per call of single MPI functions, one at a time, on one rank: what a probe
 * hit adds to each probed function shows as the difference with an unprobed run.
 *
 * Timed in the calling thread's CPU time (a probe's trap, single step and BPF program run in
 * the thread that hit it, and are charged to it), so that what other processes do on a shared
 * machine hardly moves the figures, unlike wall time.
 *
 * Usage: hitcost CALLS WAITFILE   (waits up to 60 s for WAITFILE after MPI_Init, so that probes
 * can be attached first). Prints one line per function: "hitcost FUNCTION NS_PER_CALL".
 * The calls complete at once: MPI_PROC_NULL peers, MPI_COMM_SELF collectives, a request that
 * never completes for MPI_Test, empty request arrays for the others. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static int wait_file(const char *path)
{
	const struct timespec step = {.tv_nsec = 10 * 1000 * 1000};
	struct stat st;

	for (int i = 0; i < 6000; i++) {
		if (stat(path, &st) == 0)
			return 0;
		nanosleep(&step, NULL);
	}
	return -1;
}

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define TIME(name, call)                                                                                \
	do {                                                                                            \
		double t0 = cpu_ns();                                                                   \
		for (long i = 0; i < n; i++)                                                            \
			call;                                                                           \
		printf("hitcost %s %.1f\n", name, (cpu_ns() - t0) / (double)n);                         \
	} while (0)

int main(int argc, char **argv)
{
	MPI_Request pending, none = MPI_REQUEST_NULL, reqs[1];
	int flag, idx, outcount, in = 1, out, buf = 0, indices[1];
	long n;

	MPI_Init(&argc, &argv);
	if (argc != 3 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: hitcost CALLS WAITFILE\n");
		MPI_Finalize();
		return 2;
	}
	if (wait_file(argv[2]) < 0) {
		fprintf(stderr, "hitcost: %s did not appear within 60 s\n", argv[2]);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Irecv(&buf, 1, MPI_INT, 0, 99, MPI_COMM_SELF, &pending);
	TIME("MPI_Test", MPI_Test(&pending, &flag, MPI_STATUS_IGNORE));
	TIME("MPI_Testall", MPI_Testall(0, reqs, &flag, MPI_STATUSES_IGNORE));
	TIME("MPI_Testany", MPI_Testany(0, reqs, &idx, &flag, MPI_STATUS_IGNORE));
	TIME("MPI_Testsome", MPI_Testsome(0, reqs, &outcount, indices, MPI_STATUSES_IGNORE));
	TIME("MPI_Iprobe", MPI_Iprobe(MPI_ANY_SOURCE, 98, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE));
	TIME("MPI_Wait", (none = MPI_REQUEST_NULL, MPI_Wait(&none, MPI_STATUS_IGNORE)));
	TIME("MPI_Waitall", MPI_Waitall(0, reqs, MPI_STATUSES_IGNORE));
	TIME("MPI_Waitany", MPI_Waitany(0, reqs, &idx, MPI_STATUS_IGNORE));
	TIME("MPI_Waitsome", MPI_Waitsome(0, reqs, &outcount, indices, MPI_STATUSES_IGNORE));
	TIME("MPI_Send", MPI_Send(&in, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_SELF));
	TIME("MPI_Recv", MPI_Recv(&out, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE));
	TIME("MPI_Sendrecv", MPI_Sendrecv(&in, 1, MPI_INT, MPI_PROC_NULL, 1, &out, 1, MPI_INT, MPI_PROC_NULL, 1,
					  MPI_COMM_SELF, MPI_STATUS_IGNORE));
	TIME("MPI_Barrier", MPI_Barrier(MPI_COMM_SELF));
	TIME("MPI_Bcast", MPI_Bcast(&in, 1, MPI_INT, 0, MPI_COMM_SELF));
	TIME("MPI_Allreduce", MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF));
	TIME("MPI_Reduce", MPI_Reduce(&in, &out, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_SELF));
	TIME("MPI_Allgather", MPI_Allgather(&in, 1, MPI_INT, &out, 1, MPI_INT, MPI_COMM_SELF));
	MPI_Cancel(&pending);
	MPI_Wait(&pending, MPI_STATUS_IGNORE);
	fflush(stdout);
	MPI_Finalize();
	return 0;
}

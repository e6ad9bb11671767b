/* SPDX-License-Identifier: GPL-2.0-only */
/* waits.c -- a steady loop (a slice of computation, an MPI_Allreduce) with the waits that make
 * hang detection hard, for the hang tests and the hang benchmark: legitimately long ones and
 * real hangs. Every decision is taken on the time rank 0 has measured, shared by the
 * Allreduce, so that all ranks agree on it however loaded the machine is.
 *
 * Usage: waits SECONDS (the loop's length, 20 by default); from the environment:
 *   WAITS_LONG_S=S        a legitimate long wait: one rank works S seconds alone while the
 *                         others wait for it in an MPI_Bcast (default 0: none)
 *   WAITS_LONG_AT=T       first at T seconds (default 5), then
 *   WAITS_LONG_EVERY=E    every E seconds (default 0: once)
 *   WAITS_LONG_RANK=R     the rank that works (default 0)
 *   WAITS_LONG_KIND=K     compute (default), io (writes a file all along) or barrier (every
 *                         rank but R waits in an MPI_Barrier before a checkpoint R writes)
 *   WAITS_STUCK_AT=T      at T seconds, rank WAITS_STUCK_RANK (default 1) blocks for ever in a
 *                         read(2) of a pipe nobody writes to: a rank stuck in I/O
 *   WAITS_DIR=DIR         where the io kind writes (default /tmp)
 *   WAITS_SLICE=sleep     the loop's 2 ms slice is slept rather than computed: a code whose
 *                         ranks mostly wait on something else (a GPU, a device), costing little
 *                         CPU, so that many steps can run at once on a small machine
 *   WAITS_THREAD=1        the loop runs in a second thread (MPI_THREAD_MULTIPLE) while the main
 *                         thread waits for it in pthread_join(): a rank whose MPI thread is not
 *                         its main one
 * and fault.h's PDIMON_FAULT (hang, drop...) at iteration PDIMON_FAULT_ITER. Rank 0 prints
 * "waits: N iterations in S s" at the end. */
#include "fault.h" /* first: it asks for _GNU_SOURCE */

#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

static double env_double(const char *name, double dflt)
{
	const char *v = getenv(name);

	return v && *v ? atof(v) : dflt;
}

static double now_s(void)
{
	return (double)fault_now_ns() / 1e9;
}

static void compute_for(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end)
		for (int i = 0; i < 10000; i++)
			fault.sink = fault.sink * 3 + 1;
}

/* SECONDS of writing 64 KiB blocks to a file of DIR: I/O all along. */
static void write_for(double seconds, const char *dir, int rank)
{
	static char block[65536];
	char path[4096];
	double end = now_s() + seconds;
	int fd;

	snprintf(path, sizeof(path), "%s/waits-%d-%d.dat", dir, (int)getpid(), rank);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		compute_for(seconds);
		return;
	}
	while (now_s() < end) {
		if (write(fd, block, sizeof(block)) < 0 || lseek(fd, 0, SEEK_CUR) > (64 << 20))
			(void)lseek(fd, 0, SEEK_SET);
		compute_for(0.001);
	}
	close(fd);
	unlink(path);
}

static void stuck_in_io(void)
{
	int fds[2];
	char c;

	if (pipe(fds) == 0)
		while (read(fds[0], &c, 1) != 0) /* its writer is this process: never EOF */
			;
}

static int rank, size;
static double seconds;

/* The loop, on whichever thread calls MPI. */
static void *run(void *unused)
{
	double t0, elapsed = 0, mine;
	double long_s = env_double("WAITS_LONG_S", 0), long_at = env_double("WAITS_LONG_AT", 5);
	double long_every = env_double("WAITS_LONG_EVERY", 0), stuck_at = env_double("WAITS_STUCK_AT", -1);
	int long_rank = (int)env_double("WAITS_LONG_RANK", 0), stuck_rank = (int)env_double("WAITS_STUCK_RANK", 1);
	const char *kind = getenv("WAITS_LONG_KIND"), *dir = getenv("WAITS_DIR"), *slice = getenv("WAITS_SLICE");
	bool sleep_slice = slice && !strcmp(slice, "sleep");
	const struct timespec two_ms = {0, 2000000};
	int flag = 0;
	long it;

	(void)unused;
	kind = kind ? kind : "compute";
	dir = dir ? dir : "/tmp";
	t0 = now_s();
	for (it = 0;; it++) {
		FAULT_COMPUTE(it, "allreduce", "allreduce");
		if (sleep_slice)
			(void)nanosleep(&two_ms, NULL);
		else
			compute_for(0.002);
		mine = rank == 0 ? now_s() - t0 : 0;
		FAULT_MPI(it, "allreduce"); MPI_Allreduce(&mine, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); /* @allreduce */
		if (elapsed >= seconds)
			break;
		if (stuck_at >= 0 && elapsed >= stuck_at && rank == stuck_rank)
			stuck_in_io();
		if (long_s > 0 && elapsed >= long_at) {
			long_at = long_every > 0 ? long_at + long_every : 1e300;
			if (!strcmp(kind, "barrier")) {
				/* the others wait in a barrier before a checkpoint the long rank writes */
				if (rank == long_rank)
					write_for(long_s, dir, rank);
				MPI_Barrier(MPI_COMM_WORLD); /* @checkpoint_barrier */
			} else {
				MPI_Barrier(MPI_COMM_WORLD); /* @before_long */
				if (rank == long_rank && !strcmp(kind, "io"))
					write_for(long_s, dir, rank);
				else if (rank == long_rank)
					compute_for(long_s);
				MPI_Bcast(&flag, 1, MPI_INT, long_rank, MPI_COMM_WORLD); /* @after_long */
			}
		}
	}
	if (rank == 0)
		printf("waits: %ld iterations in %.1f s\n", it, now_s() - t0);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *thread = getenv("WAITS_THREAD");
	bool in_thread = thread && !strcmp(thread, "1");
	int provided = MPI_THREAD_SINGLE;
	pthread_t th;

	seconds = argc > 1 ? atof(argv[1]) : 20;
	if (in_thread)
		MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	else
		MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	fault_init(rank);
	if (!in_thread) {
		run(NULL);
	} else if (provided == MPI_THREAD_MULTIPLE && pthread_create(&th, NULL, run, NULL) == 0) {
		pthread_join(th, NULL);
	} else {
		fprintf(stderr, "waits: no MPI thread (MPI_THREAD_MULTIPLE %s)\n",
			provided == MPI_THREAD_MULTIPLE ? "given" : "refused");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Finalize();
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* held.c -- ranks held in a collective while the overhead budget turns its probes off, then let
 * go: a call in flight across the switch must still end with its return, or be found by its
 * stack (tests/integration/test_budget.py, BudgetHeld).
 *
 * Usage: held SECONDS, at 4 ranks. Rank 0 waits in an MPI_Allreduce with rank 1, rank 3 in one
 * with rank 2. On SIGUSR2 ranks 1 and 2 call MPI_Allreduce between themselves flat out (a rate
 * that makes a small max_overhead_pct detach the function for the step's ranks). On SIGUSR1 to
 * rank 1, rank 1 joins rank 0's Allreduce and goes on with the loop (so the function stays
 * detached); on SIGUSR1 to rank 2 the loop ends and rank 2 joins rank 3's. A rank let go computes,
 * with no MPI call, until SECONDS have passed since the start; then every rank ends. The handlers
 * are in place once rank 0 prints "held: waiting". */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t go_hot, let_go;
static volatile double sink;

static void on_signal(int sig)
{
	if (sig == SIGUSR2)
		go_hot = 1;
	else
		let_go = 1;
}

/* Sleep in steps of a millisecond until FLAG is set or END (MPI_Wtime) has passed. */
static void wait_for_flag(volatile sig_atomic_t *flag, double end)
{
	const struct timespec ms = {.tv_nsec = 1000 * 1000};

	while (!*flag && MPI_Wtime() < end)
		nanosleep(&ms, NULL);
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	double end;
	int rank, size, in = 0, out = 0;
	MPI_Comm hot, held;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	end = MPI_Wtime() + (argc > 1 ? atof(argv[1]) : 60);
	if (size != 4) {
		if (rank == 0)
			fprintf(stderr, "held: run it at 4 ranks\n");
		MPI_Finalize();
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	/* hot: ranks 1 and 2; held: ranks 0 and 1, ranks 2 and 3 */
	MPI_Comm_split(MPI_COMM_WORLD, rank == 1 || rank == 2 ? 0 : MPI_UNDEFINED, rank, &hot);
	MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &held);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("held: waiting\n");
		fflush(stdout);
	}
	if (rank == 0 || rank == 3) {
		MPI_Allreduce(&out, &in, 1, MPI_INT, MPI_MAX, held);
		while (MPI_Wtime() < end)
			for (int i = 0; i < 100000; i++)
				sink = sink * 1.0000001 + 1e-9;
	} else {
		int stop = 0, released = 0;

		wait_for_flag(&go_hot, end);
		/* rank 2's signal ends both ranks' loop at the same call */
		while (!stop && MPI_Wtime() < end) {
			if (rank == 1 && let_go && !released) {
				MPI_Allreduce(&out, &in, 1, MPI_INT, MPI_MAX, held);
				released = 1;
			}
			out = rank == 2 && let_go;
			MPI_Allreduce(&out, &stop, 1, MPI_INT, MPI_MAX, hot);
		}
		if (!released)
			MPI_Allreduce(&out, &in, 1, MPI_INT, MPI_MAX, held);
		/* nothing more: sleep until the end */
		go_hot = 0;
		wait_for_flag(&go_hot, end);
	}
	if (hot != MPI_COMM_NULL)
		MPI_Comm_free(&hot);
	MPI_Comm_free(&held);
	MPI_Finalize();
	return 0;
}

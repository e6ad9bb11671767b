/* SPDX-License-Identifier: GPL-2.0-only */
/* master_worker.c -- a task farm in rounds: rank 0 broadcasts the round's parameter, hands
 * out work items one at a time with MPI_Send, takes each result with an MPI_Recv from
 * MPI_ANY_SOURCE and answers its sender with the next item (or -1: the round is done);
 * workers compute each item and return the result; a Reduce ends the round. One MPI call
 * per line, marked "@site" for the tests; faults come from the environment (fault.h).
 *
 * Usage: master_worker ROUNDS [ITEMS_PER_WORKER (2)] [WORK (items of compute per work item, 60000)] */
#include "fault.h"

#define TAG_WORK 1
#define TAG_RESULT 2

static double work(long item, double param, long size)
{
	double x = param + (double)item, acc = 0;

	for (long k = 0; k < size; k++) {
		x = x * 1.0000001 + 0.5;
		if (x > 1e6)
			x -= 1e6;
		acc += x * 1e-6;
	}
	return acc;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200, per = argc > 2 ? atol(argv[2]) : 2;
	long size_work = argc > 3 ? atol(argv[3]) : 60000;
	int rank, size;
	double param = 0, local = 0, total = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	fault_init(rank);
	if (size < 2)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (long r = 0; r < rounds; r++) {
		if (rank == 0)
			param = (double)r * 0.5;
		FAULT_MPI(r, "bcast"); MPI_Bcast(&param, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* @bcast */
		local = 0;
		if (rank == 0) {
			long nitems = per * (size - 1), next = 0, done = 0, item;
			double res;
			MPI_Status st;

			for (int w = 1; w < size; w++) {
				item = next++;
				FAULT_MPI(r, "send_work"); MPI_Send(&item, 1, MPI_LONG, w, TAG_WORK, MPI_COMM_WORLD); /* @send_work */
			}
			while (done < nitems) {
				FAULT_MPI(r, "recv_result"); MPI_Recv(&res, 1, MPI_DOUBLE, MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st); /* @recv_result */
				done++;
				FAULT_COMPUTE(r, "recv_result", "reply");
				local += work(done, res, size_work / 8); /* the master's bookkeeping */
				item = next < nitems ? next++ : -1;
				FAULT_MPI(r, "reply"); MPI_Send(&item, 1, MPI_LONG, st.MPI_SOURCE, TAG_WORK, MPI_COMM_WORLD); /* @reply */
			}
		} else {
			for (;;) {
				long item;
				double res;

				FAULT_MPI(r, "recv_work"); MPI_Recv(&item, 1, MPI_LONG, 0, TAG_WORK, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @recv_work */
				if (item < 0)
					break;
				FAULT_COMPUTE(r, "recv_work", "send_result");
				res = work(item, param, size_work);
				local += res;
				FAULT_MPI(r, "send_result"); FAULT_EXTRA(r, "send_result", &res, 1, MPI_DOUBLE, 0, TAG_RESULT); if (!FAULT_DROP(r, "send_result", 0)) MPI_Send(&res, 1, MPI_DOUBLE, 0, TAG_RESULT, MPI_COMM_WORLD); /* @send_result */
			}
		}
		FAULT_MPI(r, "reduce"); MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); /* @reduce */
	}
	if (rank == 0)
		printf("master_worker: %ld rounds on %d ranks, total %g\n", rounds, size, total);
	MPI_Finalize();
	return 0;
}

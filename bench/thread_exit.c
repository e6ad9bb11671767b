/* SPDX-License-Identifier: GPL-2.0-only */
/* thread_exit.c -- what pdimond's thread-exit program (bpf/mpitrace.bpf.c, thread_exit) costs
 * every thread of the node: threads created and joined, with the program attached and without,
 * alternated, medians. The threads make no MPI call: the node's common case (one hash lookup
 * that finds nothing). Needs root (it loads BPF). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "mpitrace.skel.h"

#define ROUNDS 21
#define THREADS 2000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *nothing(void *arg)
{
	return arg;
}

/* ns per thread created, run and joined */
static double churn(void)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < THREADS; i++) {
		pthread_t th;

		if (pthread_create(&th, NULL, nothing, NULL) == 0)
			pthread_join(th, NULL);
	}
	return (double)(now_ns() - t0) / THREADS;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(void)
{
	struct mpitrace_bpf *skel = mpitrace_bpf__open_and_load();
	double off[ROUNDS], on[ROUNDS];

	if (!skel) {
		fprintf(stderr, "bench-thread-exit: cannot load the BPF programs (root?): %d\n", -errno);
		return 1;
	}
	for (int r = 0; r < ROUNDS; r++) {
		struct bpf_link *l;

		off[r] = churn();
		l = bpf_program__attach(skel->progs.thread_exit);
		if (!l) {
			fprintf(stderr, "bench-thread-exit: cannot attach: %d\n", -errno);
			return 1;
		}
		on[r] = churn();
		bpf_link__destroy(l);
	}
	qsort(off, ROUNDS, sizeof(*off), cmp);
	qsort(on, ROUNDS, sizeof(*on), cmp);
	printf("thread create+join, %d threads x %d rounds, medians: without %.0f ns, with thread_exit %.0f ns "
	       "(+%.0f ns, ratio %.3f)\n", THREADS, ROUNDS, off[ROUNDS / 2], on[ROUNDS / 2], on[ROUNDS / 2] - off[ROUNDS / 2],
	       on[ROUNDS / 2] / off[ROUNDS / 2]);
	mpitrace_bpf__destroy(skel);
	return 0;
}

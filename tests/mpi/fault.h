/* SPDX-License-Identifier: GPL-2.0-only */
/* fault.h -- fault injection for the MPI test programs, driven by the environment, for the
 * fault-injection campaign (tests/faults/campaign.py). Without PDIMON_FAULT it does nothing.
 *
 *   PDIMON_FAULT        hang | stall | cpu | mem | drop | extra | deadlock
 *   PDIMON_FAULT_RANK   the rank that misbehaves
 *   PDIMON_FAULT_ITER   the iteration (round) in which it starts
 *   PDIMON_FAULT_WHERE  compute (default) | mpi: hang, stall, cpu and mem fire in the
 *                       computation after a call, or at an MPI call site (drop and extra
 *                       are always at a send)
 *   PDIMON_FAULT_SITE   optional: the "@marker" of the call site to fire at (the first
 *                       one reached at or after that iteration otherwise)
 *   PDIMON_FAULT_US     stall length in microseconds (default 2000000)
 *   PDIMON_FAULT_TRUTH  file that receives the ground truth, one JSON object:
 *                       {"fault", "where", "rank", "iter", "t_ns" (CLOCK_MONOTONIC, the
 *                       clock of the BPF timestamps), "site" and "next" (the "@marker" names
 *                       of the call the fault is at or follows, and of the next call),
 *                       "peer" (drop and extra: the rank the message was for)}
 *
 * What each fault does:
 *   hang   compute: an endless busy loop; mpi: an MPI_Recv from MPI_ANY_SOURCE with a tag no
 *          one sends, on the line of the call site
 *   stall  compute: a busy loop of PDIMON_FAULT_US; mpi: as long in a progress loop of
 *          MPI_Iprobe calls on the line of the call site (a rank spinning in MPI; no thread
 *          can complete a blocking call on time without MPI_THREAD_MULTIPLE)
 *   cpu    a thread that spins, pinned with the rank to the CPU the rank was on, for the
 *          rest of the run
 *   mem    the same with a thread that writes through a 256 MiB buffer
 *   drop   the rank skips one send (FAULT_DROP); its peer waits for it forever
 *   extra  the rank sends one more message than the program expects (FAULT_EXTRA), with the
 *          tag of the real ones: the receiver's later receives take the wrong messages
 *   deadlock  the rank and the next one (rank + 1 mod size) each post a blocking MPI_Recv
 *          from the other at the same call site (FAULT_MPI): a real deadlock of two ranks;
 *          "peer" in the truth is the other one
 *
 * The FAULT_* macros expand on the line of the MPI call they stand beside, so that a call
 * they make has that call site's file:line. */
#pragma once

#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAULT_TAG 32123 /* no program sends with it */

enum fault_kind { FAULT_NONE, FAULT_HANG, FAULT_STALL, FAULT_CPU, FAULT_MEM, FAULT_DROP, FAULT_EXTRA, FAULT_DEADLOCK };

static struct {
	enum fault_kind kind;
	const char *name;
	int mpi;   /* fires at an MPI call site, not in computation */
	int rank;  /* the faulty rank, -1 for none */
	int partner; /* a deadlock's other rank */
	long iter;
	long us;
	const char *site; /* NULL: any */
	const char *truth;
	int me;
	int fired;
	volatile uint64_t sink;
} fault = {.rank = -1};

static inline uint64_t fault_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reads the environment; call after MPI_Comm_rank. */
static void fault_init(int rank)
{
	static const char *const names[] = {"", "hang", "stall", "cpu", "mem", "drop", "extra", "deadlock"};
	int size = 1;
	const char *k = getenv("PDIMON_FAULT"), *w = getenv("PDIMON_FAULT_WHERE");

	fault.me = rank;
	if (!k || !*k)
		return;
	for (int i = 1; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(k, names[i]))
			fault.kind = (enum fault_kind)i;
	if (fault.kind == FAULT_NONE) {
		fprintf(stderr, "fault.h: unknown PDIMON_FAULT=%s\n", k);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	fault.name = names[fault.kind];
	fault.mpi = w && !strcmp(w, "mpi");
	fault.rank = getenv("PDIMON_FAULT_RANK") ? atoi(getenv("PDIMON_FAULT_RANK")) : 0;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	fault.partner = (fault.rank + 1) % size;
	fault.iter = getenv("PDIMON_FAULT_ITER") ? atol(getenv("PDIMON_FAULT_ITER")) : 0;
	fault.us = getenv("PDIMON_FAULT_US") ? atol(getenv("PDIMON_FAULT_US")) : 2000000;
	fault.truth = getenv("PDIMON_FAULT_TRUTH");
	fault.site = getenv("PDIMON_FAULT_SITE") && *getenv("PDIMON_FAULT_SITE") ? getenv("PDIMON_FAULT_SITE") : NULL;
}

/* Is the fault of KIND due here, at call site SITE of iteration ITER on this rank? The
 * first chance at or after the fault's iteration takes it. Marks it fired. */
static inline int fault_due(enum fault_kind kind, int at_mpi, long iter, const char *site)
{
	int at_any = kind == FAULT_DROP || kind == FAULT_EXTRA;

	if (fault.fired || fault.kind != kind ||
	    (fault.me != fault.rank && !(kind == FAULT_DEADLOCK && fault.me == fault.partner)) || iter < fault.iter ||
	    (!at_any && fault.mpi != at_mpi) || (fault.site && strcmp(fault.site, site)))
		return 0;
	fault.fired = 1;
	return 1;
}

static void fault_truth(long iter, const char *site, const char *next, int peer)
{
	uint64_t t = fault_now_ns();
	FILE *f;

	if (!fault.truth)
		return;
	f = fopen(fault.truth, "w");
	if (!f) {
		perror(fault.truth);
		return;
	}
	fprintf(f, "{\"fault\": \"%s\", \"where\": \"%s\", \"rank\": %d, \"iter\": %ld, \"t_ns\": %llu, "
		   "\"site\": \"%s\", \"next\": \"%s\", \"peer\": %d}\n",
		fault.name, fault.kind == FAULT_DROP || fault.kind == FAULT_EXTRA ? "mpi" : fault.mpi ? "mpi" : "compute",
		fault.me, iter, (unsigned long long)t, site, next ? next : "", peer);
	fclose(f);
}

static void fault_busy_us(long us)
{
	uint64_t end = fault_now_ns() + (uint64_t)us * 1000;

	while (fault_now_ns() < end)
		fault.sink++;
}

static void *fault_cpu_thread(void *arg)
{
	(void)arg;
	for (;;)
		fault.sink++;
	return NULL;
}

static void *fault_mem_thread(void *arg)
{
	size_t n = (size_t)256 << 20, stride = 4096 + 64;
	volatile unsigned char *buf = malloc(n);

	(void)arg;
	if (!buf)
		return NULL;
	for (size_t i = 0;; i = (i + stride) % n)
		buf[i] += 1; /* every page, a different cache line each pass */
	return NULL;
}

/* Starts the interference thread, pinned with the rank to the CPU the rank is on. */
static void fault_interfere(void *(*fn)(void *))
{
	cpu_set_t set;
	pthread_t th;
	int cpu = sched_getcpu();

	CPU_ZERO(&set);
	CPU_SET(cpu < 0 ? 0 : cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
	if (pthread_create(&th, NULL, fn, NULL) == 0) {
		(void)pthread_setaffinity_np(th, sizeof(set), &set);
		(void)pthread_detach(th);
	}
}

/* The faults that fire in computation (hang, stall, cpu, mem) or, with mpi set, at the call
 * site: SITE names the call the code follows (compute) or the call it stands beside (mpi),
 * NEXT the call after. The MPI calls are in the macros, on the caller's line. */
static inline int fault_local(long iter, int at_mpi, const char *site, const char *next)
{
	enum fault_kind k = fault.kind;

	if (k != FAULT_HANG && k != FAULT_STALL && k != FAULT_CPU && k != FAULT_MEM && !(k == FAULT_DEADLOCK && at_mpi))
		return 0;
	if (!fault_due(k, at_mpi, iter, site))
		return 0;
	if (fault.me == fault.rank)
		fault_truth(iter, site, next, k == FAULT_DEADLOCK ? fault.partner : -1);
	if (k == FAULT_CPU)
		fault_interfere(fault_cpu_thread);
	else if (k == FAULT_MEM)
		fault_interfere(fault_mem_thread);
	else if (!at_mpi && k == FAULT_STALL)
		fault_busy_us(fault.us);
	else if (!at_mpi && k == FAULT_HANG)
		for (;;)
			fault.sink++;
	return k; /* at_mpi: the macro does the hang or stall in MPI */
}

/* In computation after call SITE, before call NEXT. */
#define FAULT_COMPUTE(iter, site, next) ((void)fault_local((iter), 0, (site), (next)))

/* Beside the MPI call SITE, on its line: a hang or stall inside MPI at that call site. */
#define FAULT_MPI(iter, site)                                                                       \
	do {                                                                                        \
		int fault_k_ = fault.kind == FAULT_NONE ? 0 : fault_local((iter), 1, (site), NULL); \
		if (fault_k_ == FAULT_HANG) {                                                       \
			int fault_x_;                                                               \
			MPI_Recv(&fault_x_, 1, MPI_INT, MPI_ANY_SOURCE, FAULT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE); \
		} else if (fault_k_ == FAULT_DEADLOCK) {                                            \
			int fault_x_, fault_other_ = fault.me == fault.rank ? fault.partner : fault.rank; \
			MPI_Recv(&fault_x_, 1, MPI_INT, fault_other_, FAULT_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE); \
		} else if (fault_k_ == FAULT_STALL) {                                               \
			uint64_t fault_end_ = fault_now_ns() + (uint64_t)fault.us * 1000;           \
			int fault_flag_;                                                            \
			while (fault_now_ns() < fault_end_)                                         \
				MPI_Iprobe(MPI_ANY_SOURCE, FAULT_TAG, MPI_COMM_WORLD, &fault_flag_, MPI_STATUS_IGNORE); \
		}                                                                                   \
	} while (0)

/* True when this send, to PEER at call site SITE, is the one to drop. */
#define FAULT_DROP(iter, site, peer) \
	(fault.kind == FAULT_DROP && fault_due(FAULT_DROP, 1, (iter), (site)) && (fault_truth((iter), (site), NULL, (peer)), 1))

/* Beside the send at SITE: one more message like it, BUF/COUNT/TYPE to PEER with TAG. */
#define FAULT_EXTRA(iter, site, buf, count, type, peer, tag)                                     \
	do {                                                                                     \
		if (fault.kind == FAULT_EXTRA && fault_due(FAULT_EXTRA, 1, (iter), (site))) {            \
			fault_truth((iter), (site), NULL, (peer));                               \
			MPI_Send((buf), (count), (type), (peer), (tag), MPI_COMM_WORLD);         \
		}                                                                                \
	} while (0)

/* SPDX-License-Identifier: GPL-2.0-only */
/* clock.h -- pdimond's one clock: CLOCK_MONOTONIC, for every deadline, duration and rate
 * limit in the daemon (the loop, workers, the peer port, gathers, MUNGE calls, the log).
 * Header-only, so that the files the tests and benchmarks build on their own (peer.c,
 * gather.c, peer_auth.c, stackwalk.c, log.c) read the same clock without linking pdimond.c.
 * Event times from BPF (bpf_ktime_get_ns) are on this clock too. Costs are measured in CPU
 * time (pdi_thread_cpu_ns), never compared with times on this clock. */
#ifndef PDI_CLOCK_H
#define PDI_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Now, in nanoseconds since an arbitrary point (boot): never jumps with the wall clock. */
static inline uint64_t pdi_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same clock in milliseconds. */
static inline uint64_t pdi_now_ms(void)
{
	return pdi_now_ns() / 1000000u;
}

/* The CPU time the calling thread has used, in nanoseconds: what a cost is measured in where the
 * node is loaded (the wall time of a stretch also counts whatever else ran meanwhile). */
static inline uint64_t pdi_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The CPU time the whole process has used (every thread, those ended too), in nanoseconds. */
static inline uint64_t pdi_process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC now: add it to a time on this clock for the wall clock. */
static inline int64_t pdi_wall_offset_ns(void)
{
	struct timespec rt, mono;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	return ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000 + ((int64_t)rt.tv_nsec - mono.tv_nsec);
}

#endif

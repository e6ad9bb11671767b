/* SPDX-License-Identifier: GPL-2.0-only */
/* spin_agent.c -- an LD_PRELOAD agent the real-application campaign (bench/apps.py) puts in
 * every rank: on SIGRTMIN+7 the rank spins in compute, in the signal handler, for
 * PDIMON_SPIN_MS milliseconds (-1: for good). No MPI call is made and none is wrapped: from
 * outside MPI, the program unchanged, like a rank stuck in a loop of its own. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static long spin_ms;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin(int sig)
{
	uint64_t end = now_ns() + (uint64_t)spin_ms * 1000000u;

	(void)sig;
	while (spin_ms < 0 || now_ns() < end)
		sink++;
}

__attribute__((constructor)) static void spin_agent_init(void)
{
	const char *ms = getenv("PDIMON_SPIN_MS");
	struct sigaction sa = {.sa_handler = spin, .sa_flags = SA_RESTART};

	if (!ms)
		return;
	spin_ms = atol(ms);
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGRTMIN + 7, &sa, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* spin_agent.c -- an LD_PRELOAD agent the real-application campaign (bench/apps.py) puts in
 * every rank: on SIGRTMIN+7 the rank spins in compute, in the signal handler, for
 * PDIMON_SPIN_MS milliseconds (-1: for good), outside MPI. No MPI call is made and none is
 * wrapped, the program is unchanged: like a rank stuck in a loop of its own.
 *
 * Outside MPI: when the signal lands while the rank runs code of the MPI library or its
 * transports (the interrupted instruction, or a caller on its stack, is in an object whose
 * name says so: MPI's progress loops also run in libc and the vDSO), the agent does not
 * spin there but tries again 1 ms later, until the rank is in its own code. The
 * campaign sends the signal to the main thread (tgkill), which runs the program. The time
 * the spin began (CLOCK_MONOTONIC ns) goes to the file PDIMON_SPIN_TRUTH names.
 *
 * With PDIMON_SPIN_IO set (not empty), the rank does not spin but blocks in a read(2) that never returns
 * (of a pipe whose only writer is itself): a rank stuck in I/O, for the hang benchmark
 * (bench/hang.py). When PDIMON_SPIN_IO names a file (a path), the read is of that file: on a
 * file system that does not answer (tests/faults/stallfs.c) the rank waits in uninterruptible
 * sleep, as on a hung network file system (bench/apps.py's hang-io). */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static long spin_ms;
static int stuck_io; /* PDIMON_SPIN_IO: block in a read for good instead of spinning */
static const char *stuck_path; /* ... of this file when it names one, else of a pipe of its own */
static const char *truth; /* PDIMON_SPIN_TRUTH: where to write when the spin began */
static timer_t retry;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Is the instruction at PC in MPI: the library, its run time or a transport? */
static int in_mpi(void *pc)
{
	static const char *const libs[] = {"libmpi", "libopen-pal", "libopen-rte", "libmpich", "libpmix", "libucp",
					   "libucs", "libuct", "libfabric", "libpsm", "mca_", "libhwloc"};
	Dl_info info;

	if (!dladdr(pc, &info) || !info.dli_fname)
		return 0;
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (strstr(info.dli_fname, libs[i]))
			return 1;
	return 0;
}

static void spin(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	void *frames[48];
	int n = backtrace(frames, 48), inside = in_mpi((void *)uc->uc_mcontext.gregs[REG_RIP]);
	uint64_t end;

	(void)sig;
	(void)si;
	for (int i = 0; i < n && !inside; i++)
		inside = in_mpi(frames[i]);
	if (inside) {
		struct itimerspec again = {.it_value = {.tv_nsec = 1000000}};

		(void)timer_settime(retry, 0, &again, NULL);
		return;
	}
	end = now_ns();
	if (truth) { /* when the spin began: the ground truth of its time (apps.py) */
		char line[32];
		int fd = open(truth, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), len;

		len = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)end);
		if (fd >= 0) {
			(void)!write(fd, line, (size_t)len);
			close(fd);
		}
	}
	if (stuck_io && stuck_path) {
		int fd = open(stuck_path, O_RDONLY | O_CLOEXEC);
		char c;

		if (fd >= 0)
			(void)!read(fd, &c, 1); /* returns when the file system lets go (an error) */
	} else if (stuck_io) {
		int fds[2];
		char c;

		if (pipe(fds) == 0)
			while (read(fds[0], &c, 1) != 0)
				;
	}
	end += (uint64_t)spin_ms * 1000000u;
	while (spin_ms < 0 || now_ns() < end)
		sink++;
}

__attribute__((constructor)) static void spin_agent_init(void)
{
	const char *ms = getenv("PDIMON_SPIN_MS");
	struct sigaction sa = {.sa_sigaction = spin, .sa_flags = SA_RESTART | SA_SIGINFO};
	/* the retries go to the main thread, where the campaign sends the first signal */
	struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN + 7};
	void *frames[1];

	if (!ms)
		return;
	(void)backtrace(frames, 1); /* loads the unwinder now, not in the signal handler */
	ev._sigev_un._tid = gettid(); /* sigev_notify_thread_id: glibc 2.36 names no macro for it */
	spin_ms = atol(ms);
	truth = getenv("PDIMON_SPIN_TRUTH");
	stuck_io = getenv("PDIMON_SPIN_IO") && getenv("PDIMON_SPIN_IO")[0]; /* set and not empty */
	stuck_path = stuck_io && getenv("PDIMON_SPIN_IO")[0] == '/' ? getenv("PDIMON_SPIN_IO") : NULL;
	sigemptyset(&sa.sa_mask);
	if (timer_create(CLOCK_MONOTONIC, &ev, &retry) < 0)
		return;
	(void)sigaction(SIGRTMIN + 7, &sa, NULL);
}

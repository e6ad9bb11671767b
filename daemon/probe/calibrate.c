/* SPDX-License-Identifier: GPL-2.0-only */
/* calibrate.c -- the per-hit cost of pdimond's probes on this node, measured at start-up, and
 * pdimond's own CPU per call, measured while tasks run.
 *
 * A trap costs about 0.3-0.5 us on bare metal and several us in some VMs (7 us here, a PVM
 * guest); a single-stepped instruction adds a second trap. The overhead budget multiplies
 * call rates by these figures, so they are measured, never assumed: pdimond probes two tiny
 * functions of its own with its real programs and times calls to them with and without.
 * Timed in the thread's CPU time, which the trap, the single step and the programs are charged
 * to: wall time counts whatever else the node runs meanwhile (on a loaded 2-core VM it made a
 * full probe 0.8 us and an entry-only one 32 us), and the budget would act on that noise.
 *
 * A hit also pays for every other process probed on the same library: a uprobe belongs to the
 * library's inode and the kernel visits each link on it, whatever its pid filter (25-55 ns per
 * process measured here; at 64 ranks a node that is as much as the trap). And pdimond takes each
 * call in on a core the job could use: 100-350 ns here. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"
#include "clock.h"
#include "close_together.h"
#include "event.h"
#include "log.h"
#include "mpi_funcs.h"
#include "tracer.h"

#define CALLS 400
#define ROUNDS 5
#define OTHER_TASKS 8 /* links of other processes put on the probe to see what each adds */

/* The two functions, in assembly so that their first instructions are what they must be:
 * a push (emulated by the kernel) and a RIP-relative load (single-stepped). */
extern void pdi_calib_emulated(void);
extern void pdi_calib_stepped(void);
__attribute__((used)) static volatile uint64_t pdi_calib_word;
__asm__(".pushsection .text\n"
	".globl pdi_calib_emulated\n.type pdi_calib_emulated,@function\n"
	"pdi_calib_emulated:\n\tpush %rbp\n\tpop %rbp\n\tret\n"
	".size pdi_calib_emulated, .-pdi_calib_emulated\n"
	".globl pdi_calib_stepped\n.type pdi_calib_stepped,@function\n"
	"pdi_calib_stepped:\n\tmov pdi_calib_word(%rip), %rax\n\tpush %rbp\n\tpop %rbp\n\tret\n"
	".size pdi_calib_stepped, .-pdi_calib_stepped\n"
	".popsection\n");

static double time_calls(void (*volatile fn)(void))
{
	uint64_t t0 = pdi_thread_cpu_ns();

	for (int i = 0; i < CALLS; i++)
		fn();
	return (double)(pdi_thread_cpu_ns() - t0) / CALLS;
}

/* File offset of FN in our executable, from our own mappings. */
static int self_offset(void (*fn)(void), uint64_t *ret)
{
	uintptr_t a = (uintptr_t)fn;
	unsigned long start, end, off;
	char line[512], perms[8];
	FILE *f = fopen("/proc/self/maps", "re");
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s %lx", &start, &end, perms, &off) == 4 && a >= start && a < end) {
			*ret = a - start + off;
			r = 0;
			break;
		}
	fclose(f);
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A child of ours that only waits to be killed: the pid filter of links that stand for other
 * monitored processes (it maps our executable, so the kernel keeps it among the probe's
 * consumers, and it never calls the probed function). Async-signal-safe calls only: pdimond may
 * have threads by now. */
static pid_t idle_child(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (;;)
			pause();
	}
	return pid;
}

/* The median over ROUNDS of FN's CPU time per call. The ring is emptied every round: past
 * behind_bytes of backlog every submit would wake the consumer (several us each), a cost the
 * budget would then count for every call. */
static double median_calls(struct pdi_tracer *t, void (*fn)(void))
{
	double d[ROUNDS];

	for (int k = 0; k < ROUNDS; k++) {
		d[k] = time_calls(fn);
		pdi_tracer_discard(t);
	}
	qsort(d, ROUNDS, sizeof(d[0]), cmp_double);
	return d[ROUNDS / 2];
}

/* (probed - plain) ns per call of FN with the probes COOKIE asks for. Attached once and closed
 * once: a close waits for an RCU grace period (tens of ms, more on a loaded node), and one per
 * round made a second of every start. */
static int measure(struct pdi_tracer *t, void (*fn)(void), uint64_t cookie, bool with_return, double *ret)
{
	double plain, probed;
	uint64_t off;
	int fds[2], r = self_offset(fn, &off);

	if (r < 0)
		return r;
	plain = median_calls(t, fn);
	r = pdi_tracer_attach_offsets(t, getpid(), "/proc/self/exe", &off, &cookie, 1, with_return, fds);
	if (r < 0)
		return r;
	probed = median_calls(t, fn);
	pdi_links_close_pair(fds);
	*ret = probed > plain ? probed - plain : 0;
	return 0;
}

/* What each other process probed on FN adds to a hit of ours, in ns: FN probed for us (entry and
 * return), timed; then with the links of OTHER_TASKS more (pid filter: an idle child of ours),
 * timed again. The links are made once, not every round: closing one waits for an RCU grace
 * period (tens of ms, more on a loaded node). */
static int measure_crowd(struct pdi_tracer *t, void (*fn)(void), uint64_t cookie, double *ret)
{
	int links[OTHER_TASKS + 1][2], *own = links[0], (*others)[2] = links + 1, n = 0, r;
	pid_t other = idle_child();
	double alone, crowded = 0;
	uint64_t off;

	if (other < 0)
		return -errno;
	r = self_offset(fn, &off);
	if (r == 0)
		r = pdi_tracer_attach_offsets(t, getpid(), "/proc/self/exe", &off, &cookie, 1, true, own);
	if (r == 0) {
		alone = median_calls(t, fn);
		for (; n < OTHER_TASKS && r == 0; n++)
			r = pdi_tracer_attach_offsets(t, other, "/proc/self/exe", &off, &cookie, 1, true, others[n]);
		if (r < 0)
			n--; /* that one attached nothing */
		else
			crowded = median_calls(t, fn);
		pdi_links_close_together(&links[0][0], 2 * (unsigned)(n + 1), NULL, 0);
		if (r == 0)
			*ret = crowded > alone ? (crowded - alone) / OTHER_TASKS : 0;
	}
	(void)kill(other, SIGKILL);
	(void)waitpid(other, NULL, 0);
	return r;
}

int pdi_probe_calibrate(struct pdi_tracer *t, struct pdi_probe_costs *ret)
{
	/* an MPI_Iprobe: no request to read, the commonest polling call */
	int fn = pdi_mpi_func_find("MPI_Iprobe");
	uint64_t cookie = PDI_COOKIE_MAKE(fn < 0 ? 0 : fn, 0, PDI_REQ_NONE, 0);
	struct pdi_probe_costs c = {.full_emulated = 8000, .full_stepped = 24000, .entry_only_emulated = 5000,
				    .entry_only_stepped = 21000, .per_other_task = 100};
	int r;

	if ((r = measure(t, pdi_calib_emulated, cookie, true, &c.full_emulated)) == 0 &&
	    (r = measure(t, pdi_calib_stepped, cookie, true, &c.full_stepped)) == 0 &&
	    (r = measure(t, pdi_calib_emulated, cookie | PDI_COOKIE_ENTRY_ONLY, false, &c.entry_only_emulated)) == 0) {
		c.entry_only_stepped = c.entry_only_emulated +
				       (c.full_stepped > c.full_emulated ? c.full_stepped - c.full_emulated : 0);
		r = measure_crowd(t, pdi_calib_emulated, cookie, &c.per_other_task);
	}
	pdi_tracer_forget(t, getpid());
	/* Our probed calls fill the ring buffer without waking anyone (NO_WAKEUP): left there,
	 * they would leave no room for the first MPI_Init trap until the first timed drain,
	 * and a trap that cannot report does not stop its process, which then goes unseen. */
	pdi_tracer_discard(t);
	/* on failure the caller gets conservative defaults, and R says why */
	*ret = c;
	return r;
}

#define INGEST_EVERY_NS 1000000000ull
#define INGEST_MIN_EVENTS 10000 /* fewer calls a second: the loop's other work would be counted as
                                 * theirs, and at that rate their cost does not matter */
/* fewer switches a second: the workers' other work (a step's start-up attaches, a stack walk, a
 * report) would be counted as theirs */
#define SWITCH_MIN 8

/* The mean of the last figure LAST (0: none yet) and the new one S: one second of a step's end (its
 * report is taken off the loop, but the registry's work is not) must not degrade the others' probes. */
static double smoothed(double last, double s)
{
	return last > 0 ? (last + s) / 2 : s;
}

void pdi_probe_costs_sample_ingest(struct pdi_probe_costs *c, uint64_t events, uint64_t now)
{
	uint64_t cpu, off_loop;
	bool recent = c->sample_ns && now - c->sample_ns < 2 * INGEST_EVERY_NS;

	if (c->sample_ns && now - c->sample_ns < INGEST_EVERY_NS)
		return;
	cpu = pdi_thread_cpu_ns();
	off_loop = pdi_process_cpu_ns() - cpu;
	if (recent && events - c->sample_events >= INGEST_MIN_EVENTS && cpu > c->sample_cpu_ns) {
		double s = (double)(cpu - c->sample_cpu_ns) / (double)(events - c->sample_events);

		c->ingest_per_event = smoothed(c->ingest_per_event, s);
		log_debug("pdimond took %" PRIu64 " calls in over the last second, %.0f ns of its CPU each: a hit is "
			  "charged %.0f ns for it", events - c->sample_events, s, c->ingest_per_event);
	}
	if (recent && c->switches - c->sample_switches >= SWITCH_MIN && off_loop > c->sample_off_loop_ns) {
		double s = (double)(off_loop - c->sample_off_loop_ns) / (double)(c->switches - c->sample_switches);

		c->switch_cost = smoothed(c->switch_cost, s);
		log_debug("pdimond switched %" PRIu64 " functions' probes over the last second, %.0f us of its other "
			  "threads' CPU each: a switch is charged %.0f us", c->switches - c->sample_switches, s / 1e3,
			  c->switch_cost / 1e3);
	}
	c->sample_ns = now;
	c->sample_cpu_ns = cpu;
	c->sample_events = events;
	c->sample_off_loop_ns = off_loop;
	c->sample_switches = c->switches;
}

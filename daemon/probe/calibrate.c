/* SPDX-License-Identifier: GPL-2.0-only */
/* calibrate.c -- the per-hit cost of pdimond's probes on this node, measured at start-up.
 *
 * A trap costs about 0.3-0.5 us on bare metal and several us in some VMs (7 us here, a PVM
 * guest); a single-stepped instruction adds a second trap. The overhead budget multiplies
 * call rates by these figures, so they are measured, never assumed: pdimond probes two tiny
 * functions of its own with its real programs and times calls to them with and without. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "calibrate.h"
#include "clock.h"
#include "event.h"
#include "log.h"
#include "mpi_funcs.h"
#include "tracer.h"

#define CALLS 400
#define ROUNDS 5

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
	uint64_t t0 = pdi_now_ns();

	for (int i = 0; i < CALLS; i++)
		fn();
	return (double)(pdi_now_ns() - t0) / CALLS;
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

/* Median over ROUNDS of (probed - plain) ns per call of FN with the probes COOKIE asks for. */
static int measure(struct pdi_tracer *t, void (*fn)(void), uint64_t cookie, bool with_return, double *ret)
{
	double d[ROUNDS];
	uint64_t off;
	int r = self_offset(fn, &off);

	if (r < 0)
		return r;
	for (int k = 0; k < ROUNDS; k++) {
		double plain = time_calls(fn), probed;
		int fds[2];

		r = pdi_tracer_attach_offsets(t, getpid(), "/proc/self/exe", &off, &cookie, 1, with_return, fds);
		if (r < 0)
			return r;
		probed = time_calls(fn);
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		d[k] = probed > plain ? probed - plain : 0;
	}
	qsort(d, ROUNDS, sizeof(d[0]), cmp_double);
	*ret = d[ROUNDS / 2];
	return 0;
}

int pdi_probe_calibrate(struct pdi_tracer *t, struct pdi_probe_costs *ret)
{
	/* an MPI_Iprobe: no request to read, the commonest polling call */
	int fn = pdi_mpi_func_find("MPI_Iprobe");
	uint64_t cookie = PDI_COOKIE_MAKE(fn < 0 ? 0 : fn, 0, PDI_REQ_NONE, 0);
	struct pdi_probe_costs c = {.full_emulated = 8000, .full_stepped = 24000, .entry_only_emulated = 5000,
				    .entry_only_stepped = 21000};
	int r;

	if ((r = measure(t, pdi_calib_emulated, cookie, true, &c.full_emulated)) == 0 &&
	    (r = measure(t, pdi_calib_stepped, cookie, true, &c.full_stepped)) == 0 &&
	    (r = measure(t, pdi_calib_emulated, cookie | PDI_COOKIE_ENTRY_ONLY, false, &c.entry_only_emulated)) == 0)
		c.entry_only_stepped = c.entry_only_emulated +
				       (c.full_stepped > c.full_emulated ? c.full_stepped - c.full_emulated : 0);
	pdi_tracer_forget(t, getpid());
	/* Our probed calls fill the ring buffer without waking anyone (NO_WAKEUP): left there,
	 * they would leave no room for the first MPI_Init trap until the first timed drain,
	 * and a trap that cannot report does not stop its process, which then goes unseen. */
	pdi_tracer_discard(t);
	/* on failure the caller gets conservative defaults, and R says why */
	*ret = c;
	return r;
}

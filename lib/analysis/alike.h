/* SPDX-License-Identifier: GPL-2.0-only */
/* alike.h -- every rank of the step lost CPU alike, and a process of the job's own, not one of
 * its ranks, took it: interference in the job's group.
 *
 * Where ranks are not bound to CPUs, a hog in the job's scheduling group (a stray process of the
 * job, a helper it started) takes from every rank alike: the load balancer moves the ranks
 * through its CPU and the group's time is shared among all its runnable tasks (interf15: every
 * rank alike in 3-6 of 20 unpinned runs). No comparison of the ranks then singles one out
 * (starved.h finds nothing), and from the ranks' own counts such a run looks like a node busier
 * for everyone, which is no fault: the same fall happened in a fault-free NWChem run at a load of
 * 14 (interf15, z 10.5 by this file's rule). The node's count of runnable tasks does not tell
 * them apart either (interf16). What does is the CPU the job's own group (its cgroup: the ranks,
 * mpirun, anything the job started) used beyond its ranks: a busier node adds nothing there, a
 * process of the job adds what it took (interf16: 0.14-0.26 CPUs, 0.45-1.45 of what the ranks
 * lost, against 0.00 for every burst of other sessions' work and every hog in a session of its
 * own). So no threshold is tuned on noise: the fault is what the group says.
 *
 * The run: the units (slots of phases, starved.h) in a row where the ranks' median fall below
 * their own usual share (the share each reached its best tenth of the step) was at least
 * PDI_STARVED_JOIN times, once PDI_STARVED_RATIO times, lasting PDI_STARVED_MIN_S or more, the
 * one that fell furthest (fall times length); its strength as starved.h's run_z() makes it (its
 * mean fall above the highest of as many units in a row elsewhere, robust sds). It is the job's
 * group's doing when the group's other members (the group's CPU less the ranks') used, over the
 * run, PDI_ALIKE_TOOK of what the ranks lost or more beyond what they used before it, and at least
 * PDI_ALIKE_MIN_CPUS. Its first phase is the faulty one; no rank is named. The verdict's strength
 * is the others' gain against their own spread over the rest of the step (group_z): a hog in
 * the group, not the ranks' fall, is what it reports, and a node busier at other moments of the
 * step too (interf17: bursts of other sessions' work every 20 s) leaves the fall's own z at 0-3.
 *
 * Only where pdimond read the group (pdi_usage.group_ns: a step whose tasks have a cgroup of
 * their own, daemon/probe/step_group.h); elsewhere, and for models of format 9 or before, the rule
 * is silent. On a step over several nodes each node's group holds its own ranks only: the group's
 * CPU less every rank's is then below zero and the rule stays silent (a rule per node would need
 * the node in the model). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The share of the ranks' loss the group's other members must have taken, and the least CPU
 * (CPUs) they must have used beyond what they did before: the campaign's in-group hogs took
 * 0.45-1.45 of it, 0.14-0.26 CPUs (interf16); without a hog in the group, 0.00-0.02 CPUs. */
#define PDI_ALIKE_TOOK 0.25
#define PDI_ALIKE_MIN_CPUS 0.05
/* The least spread taken for what the group's others use per slot (CPUs): a quarter of a second
 * at 0.005 CPUs is 1.25 ms of CPU, about what reading the counters a few us apart and placing
 * them by interpolation blurs. */
#define PDI_ALIKE_NOISE_CPUS 0.005

struct pdi_alike {
	bool read;           /* the group's CPU was read beside every model's counts in some unit */
	bool fell;           /* a run where every rank fell alike (whatever the group says) */
	bool found;          /* ... and the group's other members took what it lost: the finding */
	uint32_t onset, last; /* the run's first and last phase */
	double run_s;        /* its length (s) */
	double fall;         /* the ranks' median fall below their usual share over it (times) */
	double z;            /* its mean log fall above the step's other rows of as many units, robust sds */
	double behind;       /* how far the ranks fell (log fall x s) over the run */
	double other_behind; /* the most they fell in one phase outside it */
	double ranks_before, ranks_during;   /* the ranks' CPU (CPUs) before the run and over it */
	double others_before, others_during; /* the group's other members' CPU (CPUs); NAN not read */
	double took;         /* the others' gain over the ranks' loss (0 when not read) */
	double group_z;      /* the others' gain above their own spread outside the run (robust sds): the
				verdict's strength, since the group, not the fall, tells the fault (the fall's
				own z is low where the node got busier elsewhere in the step too) */
};

/* What the finding says, into BUF: "a process of the job's own, not one of its ranks, took 0.21
 * CPUs from every rank alike from phase 11 to 16 (5.5 s): the ranks got 4.0 times less CPU than
 * usual (1.60 -> 0.40 CPUs) while the job's group used 0.50 CPUs beyond them (0.01 before)";
 * where every rank fell but the group did not take it, why it is not called ("" when no fall). */
void pdi_alike_text(const struct pdi_alike *a, char *buf, size_t len);

/* SPDX-License-Identifier: GPL-2.0-only */
/* usage_log.h -- the kernel's counts for a task's MPI thread (/proc/PID/task/TID/schedstat),
 * read through the step: where its share of the CPU changed inside a long phase.
 *
 * A phase's share (struct pdi_phase.usage, read as it begins) says what the task got over the
 * phase. A process that came to share its CPU late in a phase, or for 6 s of a 6.6 s one,
 * shows there only in part or diluted (issue 9: MPB's 6.6 s phase at 0.46 of its peers' share,
 * HPCC's hog in the last part of a 1 s phase); readings inside the phase show where it began
 * (lib/analysis/starved.h compares the tasks in slots of a phase).
 *
 * Bounded: readings at least gap_ns apart; when the log is full every other one goes and the
 * gap doubles, so a long step keeps readings evenly spread over all of it.
 *
 * pdimond reads the counts on a timer of its own, tens of ms apart (usage_interval_ms), and
 * keeps the latest readings (struct pdi_usage_recent) until the phases they bound are placed: a
 * phase's counts are those at its first call, interpolated between the readings either side
 * (model.h, pdi_model_usage_add()). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the node's kernel counted for a task's MPI thread at one moment: from two of them, the
 * time it ran, waited for a CPU, and was neither running nor runnable (stopped, sleeping, in
 * I/O) in between. The call timings cannot tell these apart: a rank stopped inside MPI and the
 * ranks busy-polling for it all sit in the same call, and interference only stretches times.
 * The daemon reads them (the model does no I/O); all zero when not read. */
struct pdi_usage {
	uint64_t at_ns;   /* CLOCK_MONOTONIC of the reading */
	uint64_t cpu_ns;  /* time on a CPU so far */
	uint64_t wait_ns; /* time runnable but waiting for a CPU so far */
	uint64_t group_ns; /* the CPU the step's own group (its cgroup: its ranks and any process of the
			      job beside them) used so far, read at the same tick; 0 when not read (no
			      group of its own, or a model of format 9 or before): what other members of
			      the job's group took (lib/analysis/alike.h) */
};

#define PDI_USAGE_LOG_MAX 256          /* readings per task: 6 KiB */
#define PDI_USAGE_LOG_GAP_NS 50000000ull /* the first gap between readings: pdimond's timer's default
					    period (usage_interval_ms), so that where a process came
					    to share the CPU is known within 50 ms for the step's first
					    12.8 s, 0.1 s to 25.6 s, and so on (a phase is compared in
					    slots of 0.25 s or more all the same: starved.h) */

struct pdi_usage_log {
	struct pdi_usage v[PDI_USAGE_LOG_MAX]; /* oldest first */
	uint32_t n;
	uint64_t gap_ns; /* the least time between two readings kept; 0: PDI_USAGE_LOG_GAP_NS */
};

#define PDI_USAGE_RECENT 64 /* the latest readings kept to place phases: 3.2 s at 50 ms apart */

/* The latest readings, oldest first. A phase's first call reaches pdimond a batch of the ring
 * buffer after it was made (drain_interval_ms, longer on a loaded node), by when readings on both
 * sides of it have been taken. Live only, never stored: what they place is in the phases. */
struct pdi_usage_recent {
	struct pdi_usage v[PDI_USAGE_RECENT];
	uint32_t n;
};

/* Whether B is a reading no earlier than A on every count (a later reading of the same thread). */
bool pdi_usage_after(const struct pdi_usage *a, const struct pdi_usage *b);

/* The gap the log keeps between its readings now. */
uint64_t pdi_usage_log_gap(const struct pdi_usage_log *l);

/* Is a reading at NOW (CLOCK_MONOTONIC ns) one the log would keep? */
bool pdi_usage_log_due(const struct pdi_usage_log *l, uint64_t now);

/* Keep reading U when it is at least the gap after the last one and no earlier on any count;
 * when full, every other reading goes and the gap doubles. */
void pdi_usage_log_add(struct pdi_usage_log *l, const struct pdi_usage *u);

/* Keep reading U as the latest (the oldest goes when full). The caller keeps them in order. */
void pdi_usage_recent_add(struct pdi_usage_recent *r, const struct pdi_usage *u);

/* The counts at T (at_ns T), linear between the readings R[0..K) (K >= 1, in order) either side of
 * it; the first or the last reading itself (its own at_ns) when T is before or after them all. The
 * group's count is 0 where either reading lacks it or it went back (the group's file was lost). */
struct pdi_usage pdi_usage_at(const struct pdi_usage *r, size_t k, uint64_t t);

/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_seen.h -- what a task's live stack said while its probes could not: the hang judge
 * reads the stack of a task still for a second whose probes the overhead budget thinned
 * (daemon/hang/stack_look.c), and each answer -- computing outside MPI, or inside MPI_X -- is
 * kept here with the task's model, so that the ended step's diagnosis, and a re-analysis from
 * the store, can tell a rank that computed while its peers waited (lib/analysis/stack_evidence.h).
 *
 * Bounded: readings of one still episode (the same answer, one look after another) are one
 * record; past PDI_STACK_SEEN_MAX records the oldest goes. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PDI_STACK_SEEN_MAX 16          /* records per task */
#define PDI_STACK_SEEN_STILL_NS 1000000000ull /* the judge looks at a task that showed no call
						 (no progress) for this long */
#define PDI_STACK_SEEN_OUTSIDE 0xffff   /* fn of a record: computing outside MPI */
#define PDI_STACK_SEEN_SAME_NS 4500000000ull /* a look at most this long after the last of a record
						 with the same answer continues it (looks come every 3 s) */

struct pdi_stack_seen {
	uint64_t t_first, t_last; /* CLOCK_MONOTONIC ns of the first and last look that said so */
	uint16_t fn;              /* the MPI function it was in (pdi_mpi_funcs), or PDI_STACK_SEEN_OUTSIDE */
	uint16_t looks;           /* how many looks said so */
};

struct pdi_stack_seen_log {
	struct pdi_stack_seen v[PDI_STACK_SEEN_MAX]; /* oldest first */
	uint32_t n;
	uint64_t dropped; /* records that went to make room */
};

/* A look at T found the task in MPI function FN (or PDI_STACK_SEEN_OUTSIDE). */
void pdi_stack_seen_add(struct pdi_stack_seen_log *l, uint16_t fn, uint64_t t);

/* Since when the looks of L have found the task inside polling MPI calls (pdi_fn_polls():
 * MPI_Test, MPI_Iprobe, ...) look after look, the last of them at most PDI_STACK_SEEN_SAME_NS
 * before NOW and each at most that long after the one before: a task the hang judge found still
 * and polling at every look has waited in its polling loop since the first of them, at least, as
 * a task its probes saw polling has since it reached its loop. 0 when the last look is older or
 * found it elsewhere. */
uint64_t pdi_stack_seen_polling_since(const struct pdi_stack_seen_log *l, uint64_t now);

/* Record R in words into BUF: "computing outside MPI" or "in MPI_Allreduce"; FN_NAME names
 * functions. */
void pdi_stack_seen_text(const struct pdi_stack_seen *r, const char *(*fn_name)(unsigned fn), char *buf, size_t len);

struct pdi_json;
/* "stack_seen": [{doing, from_ns, to_ns, looks}, ...] as one member of the object J is
 * writing (the times on the task's CLOCK_MONOTONIC, as "unobserved"'s). */
void pdi_stack_seen_json(const struct pdi_stack_seen_log *l, struct pdi_json *j, const char *(*fn_name)(unsigned fn));

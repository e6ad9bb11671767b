/* SPDX-License-Identifier: GPL-2.0-only */
/* unobserved.h -- what a task's model did not see, and from when: the overhead budget's marks.
 *
 * The semi-Markov models are built from the calls the probes saw. When pdimond's overhead
 * budget (daemon/probe/budget.c) thins a hot function's probes, the calls it misses leave no
 * trace in the states and edges; these records say which function was seen how much, from
 * when to when, and why, so that readers (pdimon show, report, analyze, the analysis) know
 * which parts of a model stand for fewer calls than were made. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define PDI_UNOBSERVED_ALL 0xffff /* fn of a record that concerns every function */
#define PDI_UNOBSERVED_MAX 256    /* records per task; past it the last one is stretched */

enum pdi_unobserved_level {
	PDI_UNOBS_ENTRY_ONLY = 1, /* every call seen, not its end: the call's time counts as computation */
	PDI_UNOBS_SAMPLED = 2,    /* calls seen only in time slices, 1/2^duty_log2 of the time */
	PDI_UNOBS_DETACHED = 3,   /* no call seen, but in a short re-measuring slice now and then */
	PDI_UNOBS_GAP = 4,        /* no call of any function seen: the probes were being moved */
	PDI_UNOBS_LOST = 5,       /* calls lost in between: the ring buffer was full (fn: all) */
};

struct pdi_unobserved {
	uint64_t t_start;  /* CLOCK_MONOTONIC ns */
	uint64_t t_end;    /* 0 while it lasts */
	uint16_t fn;       /* index into pdi_mpi_funcs, or PDI_UNOBSERVED_ALL */
	uint8_t level;     /* enum pdi_unobserved_level */
	uint8_t duty_log2; /* PDI_UNOBS_SAMPLED: seen 1/2^duty_log2 of the time */
	uint32_t rate;     /* the calls per second that made it so (0: not a rate) */
	uint32_t cost_ppm; /* what the probes would have cost the task, parts per million of its time */
	uint8_t from_earlier_runs; /* 1: degraded from the task's start because earlier runs of its
				    * program needed it (budget_learn.h), before any rate of this run */
};

struct pdi_unobserved_log {
	struct pdi_unobserved *v;
	uint32_t n, cap;
	uint64_t stretched; /* records that did not fit and were folded into the last one */
};

/* From T, FN is seen only as LEVEL (and DUTY_LOG2) says; the record FN had open ends at T.
 * 0 or -ENOMEM (the log is intact). */
int pdi_unobserved_begin(struct pdi_unobserved_log *l, uint16_t fn, uint8_t level, uint8_t duty_log2,
			 uint32_t rate, uint32_t cost_ppm, uint64_t t);
/* FN's open record (if any) was begun as earlier runs of the task's program needed, not by a
 * rate of this run. */
void pdi_unobserved_from_earlier_runs(struct pdi_unobserved_log *l, uint16_t fn);
/* FN is fully seen again from T (its open record, if any, ends). */
void pdi_unobserved_end(struct pdi_unobserved_log *l, uint16_t fn, uint64_t t);
/* A finished interval [T_START, T_END] (e.g. a gap). 0 or -ENOMEM. */
int pdi_unobserved_add(struct pdi_unobserved_log *l, uint16_t fn, uint8_t level, uint64_t t_start, uint64_t t_end);
/* Does a record overlap [FROM, TO]? (FN any: PDI_UNOBSERVED_ALL) */
bool pdi_unobserved_overlaps(const struct pdi_unobserved_log *l, uint16_t fn, uint64_t from, uint64_t to);
void pdi_unobserved_free(struct pdi_unobserved_log *l);
/* Could a call have begun unseen after T (a function sampled or detached, or a gap, at any time
 * since T, or still)? Then a task seen computing since T may as well be inside that call.
 * Entry-only functions are not: their calls are seen as they begin. */
bool pdi_unobserved_blind_since(const struct pdi_unobserved_log *l, uint64_t t);
/* Until when that could be: the latest end of such a record since T, UINT64_MAX while one
 * lasts, 0 when none (seen in full since T). A call still going on that no probe saw begin
 * began before it: it has lasted at least from then. */
uint64_t pdi_unobserved_blind_until(const struct pdi_unobserved_log *l, uint64_t t);

/* Could the task have made calls through [FROM, TO] with none seen? A function detached, or
 * sampled so thinly that its calls were seen less than once a second (or at a rate not
 * measured); or a gap or lost events. Then a task that showed no call for
 * that time may not have been still at all (under a tiny budget every rank looks still). */
bool pdi_unobserved_blind_through(const struct pdi_unobserved_log *l, uint64_t from, uint64_t to);
/* How long within [FROM, TO] the task could have made calls with none seen, as
 * pdi_unobserved_blind_through() judges a record (ns: the union of such records there). */
uint64_t pdi_unobserved_blind_ns(const struct pdi_unobserved_log *l, uint64_t from, uint64_t to);

/* What a mark from earlier runs says, for text and JSON alike. */
#define PDI_UNOBSERVED_EARLIER_RUNS "degraded from the start: earlier runs of this program needed it"
/* Has a record of L that? */
bool pdi_unobserved_any_from_earlier_runs(const struct pdi_unobserved_log *l);

/* "entry only", "sampled", "detached", "gap", "lost" */
const char *pdi_unobserved_level_name(unsigned level);

struct pdi_json;
/* "unobserved": [{function, level, duty, from_ns, to_ns (null while it lasts), rate_per_s,
 * full_cost_pct, from_earlier_runs}, ...] as one member of the object J is writing; FN_NAME
 * names functions. */
void pdi_unobserved_json(const struct pdi_unobserved_log *l, struct pdi_json *j, const char *(*fn_name)(unsigned fn));

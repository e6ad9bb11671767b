/* SPDX-License-Identifier: GPL-2.0-only */
/* quiet.h -- how long a step may go without progress before that is a hang, from its own
 * record: the quiet episodes (stretches with no task making progress) of its healthy time and
 * of its program's earlier runs, and a false-alarm rate, not a timeout.
 *
 * The threshold is the length a healthy quiet episode reaches less often than the rate
 * allows: with lambda(q) the rate (per step-hour) of healthy episodes lasting q or more, it
 * is the q* with lambda(q*) = RATE, so that alarming at q* (once per episode) raises at most
 * RATE false alarms per step-hour. lambda is extrapolated past what was seen, peaks over a
 * threshold: the longest episodes (at most PDI_QUIET_TAIL, only the cluster above a gap no
 * single tail would show) have exponential excesses over u, the shortest of them; their
 * scale and rate are taken at 95% upper confidence bounds (chi-square), and a prior scale
 * stands in for evidence a short record lacks. doc/design/hang-detection.md derives it.
 * Pure: no I/O, no clock. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the longest episodes kept exactly: the tail the threshold is fitted to */
#define PDI_QUIET_TOP 32
/* at most this many of them are the tail */
#define PDI_QUIET_TAIL 20

/* What a step (or a program over its runs) showed while healthy. */
struct pdi_quiet_record {
	double observed_s;          /* healthy step time judged */
	uint64_t episodes;          /* quiet episodes of at least the judging resolution */
	uint32_t ntop;
	float top[PDI_QUIET_TOP];   /* the longest episodes in seconds, longest first */
};

/* A healthy episode of EPISODE_S seconds ended. */
void pdi_quiet_record_add(struct pdi_quiet_record *r, double episode_s);
/* FROM's episodes and time added to INTO (another run of the program, another node). */
void pdi_quiet_record_merge(struct pdi_quiet_record *into, const struct pdi_quiet_record *from);
/* The longest healthy episode, 0 when none. */
double pdi_quiet_record_longest(const struct pdi_quiet_record *r);

struct pdi_wire_writer;
/* As bytes for the store. 0, or the writer's error. */
int pdi_quiet_record_encode(const struct pdi_quiet_record *r, struct pdi_wire_writer *w);
/* Bytes from the store or another host, checked: 0, -EBADMSG (R untouched). */
int pdi_quiet_record_decode(const void *p, size_t len, struct pdi_quiet_record *ret);

struct pdi_quiet_params {
	double rate_per_hour;  /* false alarms allowed per step-hour, > 0 */
	double resolution_s;   /* the judging tick: episodes shorter are not seen */
	double prior_scale_s;  /* the smallest tail scale believed (the prior) */
	double longest_factor; /* the threshold is at least this times the longest healthy episode */
};

extern const struct pdi_quiet_params pdi_quiet_params_default;

/* The fitted tail and the threshold it gives. */
struct pdi_quiet_threshold {
	double quiet_s;     /* q*: alarm at this much quiet */
	double base_s;      /* u: the shortest episode of the tail, or the resolution */
	double scale_s;     /* the excess scale used (upper bound, at least the prior) */
	double rate_u;      /* episodes longer than u, per step-hour (upper bound) */
	unsigned k;         /* episodes in the tail above u */
	bool prior;         /* the prior scale decided (the record is too short to) */
};

/* The threshold of record R (may be NULL: nothing seen) at P. */
void pdi_quiet_threshold(const struct pdi_quiet_record *r, const struct pdi_quiet_params *p,
			 struct pdi_quiet_threshold *ret);
/* How unlikely a healthy episode that reached u goes on for QUIET_S: exp(-(q-u)/scale), 1
 * below u. What the alarm line prints as p. */
double pdi_quiet_p(const struct pdi_quiet_threshold *t, double quiet_s);

/* The chi-square distribution's P-quantile with 2*HALF_DOF degrees of freedom (HALF_DOF >= 1),
 * exact (the Poisson sum, inverted by bisection). */
double pdi_chi2_quantile_even(unsigned half_dof, double p);

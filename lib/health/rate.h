/* SPDX-License-Identifier: GPL-2.0-only */
/* rate.h -- whether a step's rate of progress has fallen far below its own, for long enough
 * to be a slowdown rather than noise, at a false-alarm rate (doc/design/hang-detection.md).
 *
 * Progress (completed calls) is counted in windows of the step's judged time. A window with
 * none is a quiet one: the hang judge's, not this one's (and it breaks a run of slow ones).
 * The others are compared with the median of the step's normal windows: below median/FACTOR
 * is low. Low windows come in runs; a healthy step has a run of m in a row with probability
 * about p^m per window, p the share of its windows that were low (Laplace's estimate), so
 * slow needs a run of m with (windows per hour) * p^m <= the rate allowed. Slow ends after
 * two windows back above median/RECOVER. Pure: no I/O, no clock. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* rates in quarter octaves from 2^-16 to 2^32 calls per second */
#define PDI_RATE_BINS 192
#define PDI_RATE_LOG2_MIN (-16)

struct pdi_rate_params {
	double window_s;     /* a window of judged time */
	double factor;       /* low: below median / factor */
	double recover;      /* recovered: above median / recover */
	unsigned min_windows; /* normal windows seen before any is judged */
};

struct pdi_rate {
	double acc_s;        /* the window being filled */
	uint64_t acc_calls;
	uint32_t bins[PDI_RATE_BINS]; /* normal windows by rate */
	uint64_t normal, low;         /* windows seen of each kind */
	unsigned low_run, ok_run;     /* the current runs */
	bool slow;
	double ratio;        /* the last judged window's rate over the median */
	uint64_t windows;    /* judged windows, for tests and logs */
};

/* DT_S more of judged time with CALLS completed in it. Returns true when a window closed
 * (its verdict is in R: slow, ratio). RATE_PER_HOUR: false alarms allowed per step-hour. */
bool pdi_rate_add(struct pdi_rate *r, const struct pdi_rate_params *p, double rate_per_hour, double dt_s,
		  uint64_t calls);
/* The median rate of the normal windows (calls per second), 0 when none. */
double pdi_rate_median(const struct pdi_rate *r);
/* The run of low windows that makes slow now. */
unsigned pdi_rate_run_needed(const struct pdi_rate *r, const struct pdi_rate_params *p, double rate_per_hour);
/* The window being filled is dropped (the step was not judged meanwhile), runs broken. */
void pdi_rate_break(struct pdi_rate *r);

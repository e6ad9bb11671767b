/* SPDX-License-Identifier: GPL-2.0-only */
/* baseline.h -- the evidence a verdict weighs, and how much of it healthy runs of the same
 * program show: AutomaDeD's threshold trained on sample runs (sec. 3.4).
 *
 * A verdict weighs two figures of an AutomaDeD result: the seconds a fault cost (the time one
 * task lost against its peers, the time it went without CPU, or how much longer than usual the
 * faulty phase took) and how far that stands above the step's own phases (robust deviations).
 * A program can lose seconds by itself: HPL's own imbalance, stretched by a loaded machine,
 * made a rank compute 1.5-1.7 s longer than its peers in fault-free HPCC runs (issue 9),
 * against a step whose other phases vary by less than 50 ms. Only earlier runs of the program
 * say that this is its usual: each is analysed as if it were the step, and the most evidence
 * any of them shows, times a margin, is what the step must beat -- never less than the
 * documented floor (PDI_EXCESS_FLOOR_S, lost_time.h). */
#pragma once

#include <stddef.h>

#include "automaded.h"

/* The seconds of evidence a step must show beyond the most a healthy earlier run showed: the
 * runs of a loaded machine differ from each other by a part of their own imbalance. */
#define PDI_BASELINE_MARGIN 1.25

/* What an AutomaDeD result holds against its step's normal variation. */
struct pdi_evidence {
	double excess_s; /* seconds: lost by one task, without CPU, or the faulty phase beyond its usual */
	double z;        /* how far the faulty phase stands above the others, in robust deviations */
};

/* The evidence of AM: by the time lost or the CPU share when they chose the phase, else by
 * the phase's score (or its excess length, when time chose it) against the other compared
 * phases' (median, 1.4826 MAD; an excess under 50 ms of spread counts as 50 ms; a MAD of 0
 * falls back to the mean absolute deviation). */
void pdi_evidence_of(const struct pdi_automaded *am, struct pdi_evidence *ret);

struct pdi_baseline {
	unsigned runs;     /* earlier runs judged (a run AutomaDeD cannot analyse is left out) */
	double excess_s;   /* the most evidence any of them showed (s) */
	unsigned worst;    /* which run showed it: its index among IN's sample runs */
	double floor_s;    /* what the step must show to be abnormal: PDI_EXCESS_FLOOR_S, or
			      PDI_BASELINE_MARGIN times EXCESS_S when that is more */
};

/* The baseline of IN's sample runs (IN->samples, IN->nsamples rows of IN->n models weighted
 * as IN's own), each analysed by itself as AutomaDeD analyses a step without sample runs.
 * Without any sample run that can be analysed: runs 0 and the floor alone. 0, or -ENOMEM;
 * *RET untouched on failure. */
int pdi_baseline_of(const struct pdi_automaded_input *in, struct pdi_baseline *ret);

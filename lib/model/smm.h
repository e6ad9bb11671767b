/* SPDX-License-Identifier: GPL-2.0-only */
/* smm.h -- AutomaDeD's comparison of semi-Markov models (sec. 3.2-3.4): the difference
 * Diff(A,B) with L2, alpha and nu weighting, and HAC clustering with a trained threshold.
 *
 * A phase model is first compiled into a pdi_smm: states with their outgoing transitions
 * side by side, which is what the comparison walks. States and transitions of different
 * tasks match by their keys (step-wide call-site ids), so models of one step compare. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

enum pdi_timedist { PDI_TIME_GAUSS, PDI_TIME_HIST };

struct pdi_smm_edge {
	uint32_t to;    /* index of the target state in the same pdi_smm */
	uint64_t count;
	const struct pdi_gauss *time;
	const struct pdi_hist *hist;
};

struct pdi_smm {
	const struct pdi_phase *phase;
	uint32_t nstates;
	uint64_t *out_total;         /* per state: transitions out of it */
	uint32_t *first;             /* per state: its edges are edges[first[s] .. first[s+1]) */
	struct pdi_smm_edge *edges;  /* sorted by source state */
};

int pdi_smm_build(const struct pdi_phase *p, struct pdi_smm *ret);
void pdi_smm_done(struct pdi_smm *m);

/* Per transition, the "normal" difference among sample models (nu, sec. 3.3); transitions
 * it does not know weigh 1. */
struct pdi_nu {
	struct pdi_u64map idx; /* (from key, to key) hash -> index into rms */
	double *rms;
	uint32_t n, cap;
};

/* nu from sample models: for every transition, the RMS of D over the pairs that have it. */
int pdi_nu_train(struct pdi_nu *nu, const struct pdi_smm *const *samples, size_t n, enum pdi_timedist dist);
void pdi_nu_done(struct pdi_nu *nu);

/* D between two time distributions of one transition (L2 of the densities, times alpha).
 * Times are taken in units of the smaller mean, so that D does not depend on the clock's unit. */
double pdi_time_diff(const struct pdi_gauss *ga, const struct pdi_hist *ha, const struct pdi_gauss *gb,
		     const struct pdi_hist *hb, enum pdi_timedist dist);

/* Diff(A,B) (sec. 3.2). NU may be NULL (all weights 1). If RET_WORST is not NULL, it gets
 * the transition of A or B that contributes most (the characteristic transition, 4.3),
 * as (from key, to key), and *ret_chi its contribution. */
double pdi_smm_diff(const struct pdi_smm *a, const struct pdi_smm *b, const struct pdi_nu *nu,
		    enum pdi_timedist dist, uint64_t ret_worst[2], double *ret_chi);

/* Diff(A,B), calling EACH with every transition's contribution (the union of both). */
double pdi_smm_diff_each(const struct pdi_smm *a, const struct pdi_smm *b, const struct pdi_nu *nu,
			 enum pdi_timedist dist, void (*each)(void *ctx, uint64_t from, uint64_t to, double d),
			 void *ctx);

/* Single-linkage HAC (sec. 3.4) on an n x n difference matrix (row-major, symmetric):
 * clusters merge while their closest members differ by at most THRESHOLD. Writes each
 * item's cluster (0..k-1, numbered in order of first member) and returns k. */
size_t pdi_hac(const double *diff, size_t n, double threshold, uint32_t *ret_cluster);

/* The threshold that makes HAC give K clusters on DIFF: halfway between the merge that
 * leaves K clusters and the next one. A training run's threshold (sec. 3.4). */
double pdi_hac_threshold(const double *diff, size_t n, size_t k);

/* The n-1 heights at which single-linkage HAC merges the items of DIFF, lowest first, into
 * RET (n-1 doubles). Returns how many (0 when n < 2 or out of memory). */
size_t pdi_hac_heights(const double *diff, size_t n, double *ret);

/* The weight nu gives the transition FROM -> TO (1 when NU is NULL or does not know it). */
double pdi_nu_weight(const struct pdi_nu *nu, uint64_t from, uint64_t to);

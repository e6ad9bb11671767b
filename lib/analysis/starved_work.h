/* SPDX-License-Identifier: GPL-2.0-only */
/* starved_work.h -- what starved.c reads of a step's models to compare the tasks' shares of the
 * CPU, unit by unit (slots of phases), shared with alike.c, which reads the same units for the
 * case where every rank lost alike. Private to the two: the public side is starved.h and alike.h. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "robust.h"
#include "starved.h"

/* a share below this is taken as this: a task that got no CPU at all is still comparable */
#define SHARE_FLOOR 0.005

struct pdi_starved_work {
	const struct pdi_model *const *models;
	const uint32_t *weights;
	size_t n;
	uint32_t np;        /* phases */
	uint32_t nu;        /* units compared: the phases [first, end), each cut in slots (slots_of()) */
	uint32_t *phase;    /* nu: the phase of each unit */
	uint32_t *unit0;    /* np + 1: each phase's first unit (nu past the last looked at) */
	double *log_share;  /* n x nu: log of the share of its ready time on a CPU; NAN unknown */
	double *wall, *wait; /* n x nu: the unit's length and the time waiting for a CPU (s) */
	double *cpu;        /* n x nu: the time on a CPU (s) */
	double *group;      /* n x nu: the CPU the step's own group used over the model's unit (s, read
			       beside its counts: pdi_usage.group_ns); NAN not read */
	double *x;          /* n x nu: how many times less CPU than its peers (log), beyond its usual */
	double *usual;      /* n: the log share each model reached over the step, its best tenth (usual_of()) */
	struct pdi_usage *readings; /* one model's readings in time order (readings_of()) */
	struct pdi_weighted *peers; /* n */
	struct pdi_weighted *byunit; /* nu */
	double *scratch;    /* max(n, nu) */
};

/* The share Q of model T's time (units weighed by their lengths) before unit END over which V
 * (n x nu; NAN unknown) was at most the value returned (0 when none is known). */
double pdi_starved_by_length(struct pdi_starved_work *w, size_t t, const double *v, double q, uint32_t end);

/* Each row of K units in a row of series X (NU values, their lengths WALL): its mean by length,
 * the highest so far kept in BEST[0..NU-K] (start them at -INFINITY). */
void pdi_starved_rows_max(const double *x, const double *wall, uint32_t nu, uint32_t k, double *best);
/* MEAN, the mean over units [ONSET, LAST], above BEST's rows outside them (pdi_starved_rows_max()),
 * in robust sds: 0 with fewer than PDI_STARVED_NOISE_UNITS such rows. BEST is overwritten. */
double pdi_starved_rows_z(double *best, uint32_t nu, uint32_t onset, uint32_t last, double mean);

/* Every rank alike (alike.h), on the units W read: 0, or -ENOMEM. */
int pdi_alike_find(struct pdi_starved_work *w, struct pdi_alike *ret);

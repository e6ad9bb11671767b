/* SPDX-License-Identifier: GPL-2.0-only */
/* baseline.c -- a verdict's evidence, and what healthy earlier runs of the program show of it
 * (see baseline.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "baseline.h"
#include "lost_time.h"
#include "robust.h"

/* A phase's excess length whose spread over the other phases is below this counts as this
 * (s): a few scheduler ticks. */
#define EXCESS_MAD_FLOOR_S 0.05

/* How far the faulty phase's PER_PHASE value stands above the step's other compared phases,
 * in robust standard deviations: (value - median) / (1.4826 MAD), the MAD at least MAD_FLOOR.
 * The step's own phases are its normal variation. A MAD of 0 (most phases alike, e.g. scored 0
 * but for one or two) falls back to the mean absolute deviation from the median (x 1.2533, the
 * standard deviation of a normal law), which still sees the few phases that differ: without it
 * a fault-free run whose one other deviant phase lay outside the MAD stood 1e15-1e22 deviations
 * "above the others" in its output (HPCC and NWChem runs). Only phases all alike count as a tiny
 * fraction of the median. */
static double noise_z(const struct pdi_automaded *am, const double *per_phase, double mad_floor)
{
	uint32_t n = 0;
	double *v, med, sd, mean_dev = 0;

	if (am->end_phase - am->first_phase < 3 || !(v = malloc((am->end_phase - am->first_phase) * sizeof(*v))))
		return 0;
	for (uint32_t p = am->first_phase; p < am->end_phase; p++)
		if (p != am->faulty_phase)
			v[n++] = per_phase[p];
	med = pdi_median(v, n);
	for (uint32_t i = 0; i < n; i++)
		mean_dev += fabs(v[i] - med) / n;
	sd = pdi_robust_sd(v, n, med, mad_floor);
	free(v);
	if (sd < 1e-3 * fabs(med) || sd <= 0)
		sd = fmax(fmax(1.2533 * mean_dev, 1e-3 * fabs(med)), 1e-12);
	return (per_phase[am->faulty_phase] - med) / sd;
}

void pdi_evidence_of(const struct pdi_automaded *am, struct pdi_evidence *ret)
{
	if (am->by_lost) {
		*ret = (struct pdi_evidence){.excess_s = pdi_lost_stall_s(&am->lost), .z = am->lost.z};
	} else if (am->by_group) {
		/* how long every rank lost alike; what the job's group took against its own spread */
		*ret = (struct pdi_evidence){.excess_s = am->starved.alike.run_s, .z = am->starved.alike.group_z};
	} else if (am->by_starved) {
		/* how long it was not getting CPU; its share against the other phases' */
		*ret = (struct pdi_evidence){.excess_s = am->starved.run_s, .z = am->starved.z};
	} else {
		ret->excess_s = fmax(am->phase_excess[am->faulty_phase], am->lost.phase_s[am->faulty_phase]);
		ret->z = noise_z(am, am->by_time ? am->phase_excess : am->phase_score, am->by_time ? EXCESS_MAD_FLOOR_S : 0);
	}
}

int pdi_baseline_of(const struct pdi_automaded_input *in, struct pdi_baseline *ret)
{
	struct pdi_baseline b = {.floor_s = PDI_EXCESS_FLOOR_S};

	for (size_t r = 0; in->samples && r < in->nsamples; r++) {
		const struct pdi_model *const *row = in->samples + r * in->n;
		struct pdi_automaded am;
		struct pdi_evidence e;
		bool whole = true;
		int err;

		for (size_t t = 0; t < in->n; t++)
			whole &= row[t] != NULL;
		if (!whole)
			continue; /* a run without a model for some task is no yardstick for all */
		err = pdi_automaded_run(&(struct pdi_automaded_input){.models = row, .weights = in->weights, .n = in->n,
								      .dist = in->dist},
					&am, NULL);
		if (err == -EINVAL)
			continue; /* nothing to compare in it: it says nothing of the noise */
		if (err < 0)
			return err;
		pdi_evidence_of(&am, &e);
		pdi_automaded_done(&am);
		if (!b.runs++ || e.excess_s > b.excess_s) {
			b.excess_s = e.excess_s;
			b.worst = (unsigned)r;
		}
	}
	b.floor_s = fmax(PDI_EXCESS_FLOOR_S, PDI_BASELINE_MARGIN * b.excess_s);
	*ret = b;
	return 0;
}

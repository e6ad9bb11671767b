/* SPDX-License-Identifier: GPL-2.0-only */
/* automaded.c -- faulty phase, faulty task and characteristic transitions (AutomaDeD 4.2-4.3). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "automaded.h"

struct accumulate {
	struct pdi_transition_score *v;
	size_t n, cap;
	struct pdi_u64map idx;
	int err;
};

static void add_contribution(void *ctx, uint64_t from, uint64_t to, double d)
{
	struct accumulate *a = ctx;
	uint64_t key = from * 0x9E3779B97F4A7C15ull ^ (to + 0x632BE59BD9B4E019ull);
	uint32_t i = pdi_u64map_get(&a->idx, key);

	if (i == PDI_U64MAP_NONE) {
		if (a->n == a->cap) {
			size_t cap = a->cap ? a->cap * 2 : 64;
			struct pdi_transition_score *v = realloc(a->v, cap * sizeof(*v));

			if (!v) {
				a->err = -ENOMEM;
				return;
			}
			a->v = v;
			a->cap = cap;
		}
		if (pdi_u64map_put(&a->idx, key, (uint32_t)a->n) < 0) {
			a->err = -ENOMEM;
			return;
		}
		i = (uint32_t)a->n++;
		a->v[i] = (struct pdi_transition_score){from, to, 0};
	}
	a->v[i].score += d;
}

static int cmp_score(const void *x, const void *y)
{
	double a = ((const struct pdi_transition_score *)x)->score, b = ((const struct pdi_transition_score *)y)->score;

	return (a < b) - (a > b);
}

static size_t argmax(const double *v, size_t n, double *ret_margin)
{
	size_t best = 0;
	double second = 0;

	for (size_t i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	for (size_t i = 0; i < n; i++)
		if (i != best && v[i] > second)
			second = v[i];
	*ret_margin = second > 0 ? v[best] / second : v[best] > 0 ? 1e9 : 1.0;
	return best;
}

int pdi_automaded_run(const struct pdi_model *const *tasks, size_t ntasks, enum pdi_timedist dist,
		      struct pdi_automaded *ret)
{
	struct pdi_automaded a = {0};
	struct pdi_smm *smm = NULL;
	struct pdi_nu *nu = NULL;
	struct accumulate acc = {0};
	uint32_t np = UINT32_MAX, end;
	double *dev = NULL;
	int r = -ENOMEM;

	for (size_t t = 0; t < ntasks; t++)
		if (tasks[t]->nphases < np)
			np = tasks[t]->nphases;
	if (!ntasks || np < 2)
		return -EINVAL;
	a.nphases = np;
	/* the prologue (MPI_Init up to the loop) and the epilogue (the loop's rest, then
	 * MPI_Finalize) differ from the loop by construction: compare the loop's phases */
	a.first_phase = np >= 5 ? 1 : 0;
	end = np >= 5 ? np - 1 : np;
	smm = calloc(ntasks * np, sizeof(*smm));
	nu = calloc(ntasks * np, sizeof(*nu));
	a.phase_score = calloc(np, sizeof(*a.phase_score));
	a.task_score = calloc(ntasks, sizeof(*a.task_score));
	if (!smm || !nu || !a.phase_score || !a.task_score)
		goto out;
	for (size_t t = 0; t < ntasks; t++)
		for (uint32_t p = 0; p < np; p++)
			if ((r = pdi_smm_build(&tasks[t]->phases[p], &smm[t * np + p])) < 0)
				goto out;
	/* nu for phase p of task t: the noise among the task's other phases (3.3), so that a
	 * fault in p does not excuse itself */
	for (size_t t = 0; t < ntasks; t++)
		for (uint32_t p = a.first_phase; p < end; p++) {
			const struct pdi_smm *samples[np];
			size_t n = 0;

			for (uint32_t q = a.first_phase; q < end; q++)
				if (q != p)
					samples[n++] = &smm[t * np + q];
			if ((r = pdi_nu_train(&nu[t * np + p], samples, n, dist)) < 0)
				goto out;
		}
	/* how far each task's phase p is from its other phases, summed over the tasks */
	dev = calloc(ntasks, sizeof(*dev));
	if (!dev)
		goto out;
	for (uint32_t p = a.first_phase; p < end; p++) {
		for (size_t t = 0; t < ntasks; t++) {
			double sum = 0;

			for (uint32_t q = a.first_phase; q < end; q++)
				if (q != p)
					sum += pdi_smm_diff(&smm[t * np + p], &smm[t * np + q], &nu[t * np + p], dist, NULL, NULL);
			dev[t] = end - a.first_phase > 1 ? sum / (end - a.first_phase - 1) : 0;
		}
		a.phase_score[p] = 0;
		for (size_t t = 0; t < ntasks; t++)
			a.phase_score[p] += dev[t];
	}
	a.faulty_phase = a.first_phase +
			 (uint32_t)argmax(a.phase_score + a.first_phase, end - a.first_phase, &a.phase_margin);
	for (size_t t = 0; t < ntasks; t++)
		for (uint32_t q = a.first_phase; q < end; q++)
			if (q != a.faulty_phase)
				a.task_score[t] += pdi_smm_diff(&smm[t * np + a.faulty_phase], &smm[t * np + q],
								&nu[t * np + a.faulty_phase], dist, NULL, NULL);
	a.faulty_task = argmax(a.task_score, ntasks, &a.task_margin);
	/* the transitions that make the faulty task's faulty phase differ, over its other phases */
	for (uint32_t q = a.first_phase; q < end; q++)
		if (q != a.faulty_phase)
			(void)pdi_smm_diff_each(&smm[a.faulty_task * np + a.faulty_phase], &smm[a.faulty_task * np + q],
						&nu[a.faulty_task * np + a.faulty_phase], dist, add_contribution, &acc);
	if ((r = acc.err) < 0)
		goto out;
	qsort(acc.v, acc.n, sizeof(*acc.v), cmp_score);
	a.ntop = acc.n < PDI_TOP_TRANSITIONS ? acc.n : PDI_TOP_TRANSITIONS;
	if (a.ntop)
		memcpy(a.top, acc.v, a.ntop * sizeof(*acc.v));
	*ret = a;
	a = (struct pdi_automaded){0};
	r = 0;
out:
	for (size_t i = 0; smm && i < ntasks * np; i++)
		pdi_smm_done(&smm[i]);
	for (size_t i = 0; nu && i < ntasks * np; i++)
		pdi_nu_done(&nu[i]);
	free(smm);
	free(nu);
	free(dev);
	free(acc.v);
	pdi_u64map_free(&acc.idx);
	pdi_automaded_done(&a);
	return r;
}

void pdi_automaded_done(struct pdi_automaded *a)
{
	free(a->phase_score);
	free(a->task_score);
	*a = (struct pdi_automaded){0};
}

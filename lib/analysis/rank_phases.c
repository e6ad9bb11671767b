/* SPDX-License-Identifier: GPL-2.0-only */
/* rank_phases.c -- ranks x phases (rank_phases.h): MPI's share of every rank's phases and
 * the rows aggregated for large steps. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ranges.h"
#include "rank_phases.h"

#define QUANTUM 0.02 /* rows whose shares differ by less are alike */

/* The share of phase P of model M spent inside MPI calls (the time of the edges that leave
 * communication states), NAN when the task has no such phase or it took no time. */
static double mpi_share(const struct pdi_model *m, uint32_t p)
{
	const struct pdi_phase *ph;
	double in_mpi = 0, span;

	if (p >= m->nphases)
		return NAN;
	ph = &m->phases[p];
	span = (double)(ph->t_end - ph->t_start);
	if (ph->t_end <= ph->t_start)
		return NAN;
	for (uint32_t e = 0; e < ph->nedges; e++)
		if (!pdi_state_is_comp(ph->states[ph->edges[e].from].key))
			in_mpi += (double)ph->edges[e].time.n * ph->edges[e].time.mean;
	return fmin(1.0, fmax(0.0, in_mpi / span));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

struct row {
	int *ranks;
	size_t n;
	const double *shares; /* nphases: the values the row shows */
};

static void json_row(struct pdi_json *j, const struct row *r, uint32_t nphases)
{
	char buf[4096];

	pdi_ranges_format(r->ranks, r->n, buf, sizeof(buf));
	pdi_json_obj_begin(j);
	pdi_json_kv_str(j, "ranks", buf);
	pdi_json_kv_uint(j, "count", r->n);
	pdi_json_key(j, "mpi");
	pdi_json_arr_begin(j);
	for (uint32_t p = 0; p < nphases; p++) {
		if (isnan(r->shares[p]))
			pdi_json_null(j);
		else
			pdi_json_double(j, round(r->shares[p] * 1000) / 1000);
	}
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
}

/* Rows of alike ranks, in order of their first rank: how many (0 past MAX), into ROWS. */
static size_t alike_rows(const double *share, const int *ranks, size_t n, uint32_t np, int *members,
			 struct row *rows, size_t max)
{
	size_t nrows = 0, used = 0;
	size_t *row_of = calloc(n, sizeof(*row_of));

	if (!row_of)
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t r;

		for (r = 0; r < nrows; r++) {
			const double *a = rows[r].shares, *b = &share[i * np];
			uint32_t p;

			for (p = 0; p < np; p++)
				if (isnan(a[p]) != isnan(b[p]) ||
				    (!isnan(a[p]) && lround(a[p] / QUANTUM) != lround(b[p] / QUANTUM)))
					break;
			if (p == np)
				break;
		}
		if (r == nrows) {
			if (nrows == max) {
				free(row_of);
				return 0;
			}
			rows[nrows++] = (struct row){.shares = &share[i * np]};
		}
		row_of[i] = r;
		rows[r].n++;
	}
	/* members of each row side by side in MEMBERS */
	for (size_t r = 0; r < nrows; r++) {
		rows[r].ranks = members + used;
		used += rows[r].n;
		rows[r].n = 0;
	}
	for (size_t i = 0; i < n; i++)
		rows[row_of[i]].ranks[rows[row_of[i]].n++] = ranks[i];
	free(row_of);
	return nrows;
}

/* Blocks of consecutive tasks (in the order given: by rank), each showing per phase its
 * member farthest from the phase's median; SHOWN holds their values. */
static size_t block_rows(const double *share, const int *ranks, size_t n, uint32_t np, struct row *rows, double *shown,
			 int *members)
{
	size_t per = (n + PDI_RANK_PHASES_MAX_ROWS - 1) / PDI_RANK_PHASES_MAX_ROWS, nrows = 0;
	double *median = calloc(np ? np : 1, sizeof(*median)), *col = calloc(n, sizeof(*col));

	if (!median || !col) {
		free(median);
		free(col);
		return 0;
	}
	for (uint32_t p = 0; p < np; p++) {
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (!isnan(share[i * np + p]))
				col[k++] = share[i * np + p];
		qsort(col, k, sizeof(*col), cmp_double);
		median[p] = k ? col[k / 2] : NAN;
	}
	for (size_t start = 0; start < n; start += per, nrows++) {
		size_t end = start + per < n ? start + per : n;
		double *v = &shown[nrows * np];

		rows[nrows] = (struct row){.ranks = members + start, .n = end - start, .shares = v};
		memcpy(members + start, ranks + start, (end - start) * sizeof(*members));
		for (uint32_t p = 0; p < np; p++) {
			v[p] = NAN;
			for (size_t i = start; i < end; i++) {
				double x = share[i * np + p];

				if (!isnan(x) && (isnan(v[p]) || fabs(x - median[p]) > fabs(v[p] - median[p])))
					v[p] = x;
			}
		}
	}
	free(median);
	free(col);
	return nrows;
}

int pdi_rank_phases_json(struct pdi_json *j, const int *ranks, const struct pdi_model *const *models, size_t n)
{
	uint32_t np = 0;
	double *share, *shown = NULL;
	struct row *rows;
	int *members;
	size_t nrows = 0;
	const char *how = "none";
	int r = -ENOMEM;

	for (size_t i = 0; i < n; i++)
		if (models[i]->nphases > np)
			np = models[i]->nphases;
	share = calloc(n * np + 1, sizeof(*share));
	rows = calloc(n < PDI_RANK_PHASES_MAX_ROWS ? n + 1 : PDI_RANK_PHASES_MAX_ROWS + 1, sizeof(*rows));
	members = calloc(n + 1, sizeof(*members));
	if (!share || !rows || !members)
		goto out;
	for (size_t i = 0; i < n; i++)
		for (uint32_t p = 0; p < np; p++)
			share[i * np + p] = mpi_share(models[i], p);
	if (n <= PDI_RANK_PHASES_ROWS_EACH) {
		for (size_t i = 0; i < n; i++) {
			members[i] = ranks[i];
			rows[nrows++] = (struct row){.ranks = &members[i], .n = 1, .shares = &share[i * np]};
		}
	} else if ((nrows = alike_rows(share, ranks, n, np, members, rows, PDI_RANK_PHASES_MAX_ROWS)) > 0) {
		how = "alike";
	} else {
		shown = calloc((size_t)PDI_RANK_PHASES_MAX_ROWS * np + 1, sizeof(*shown));
		if (!shown || !(nrows = block_rows(share, ranks, n, np, rows, shown, members)))
			goto out;
		how = "blocks";
	}
	pdi_json_key(j, "rank_phases");
	pdi_json_obj_begin(j);
	pdi_json_kv_str(j, "metric", "mpi_share");
	pdi_json_kv_str(j, "aggregated", how);
	pdi_json_key(j, "rows");
	pdi_json_arr_begin(j);
	for (size_t k = 0; k < nrows; k++)
		json_row(j, &rows[k], np);
	pdi_json_arr_end(j);
	pdi_json_obj_end(j);
	r = pdi_json_failed(j) ? -ENOMEM : 0;
out:
	free(share);
	free(shown);
	free(rows);
	free(members);
	return r;
}

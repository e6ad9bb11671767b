/* SPDX-License-Identifier: GPL-2.0-only */
/* site_samples.c -- a sample source over runs fetched from the site store: the same listings the
 * local store gives samples.c, over the copies site_pg.c made. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_funcs.h"
#include "site_samples.h"

struct fetched {
	struct pdi_site_samples base; /* first: the step holds a pointer to it */
	struct pdi_site_step **runs;
	size_t n;
};

static const struct pdi_site_step *find(const struct fetched *f, const char *step)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->runs[i]->step.name, step))
			return f->runs[i];
	return NULL;
}

static int list_steps(void *data, int (*cb)(void *, const struct pdi_store_step *), void *ctx)
{
	const struct fetched *f = data;
	int r = 0;

	for (size_t i = 0; r >= 0 && i < f->n; i++)
		r = cb(ctx, &f->runs[i]->step);
	return r < 0 ? r : 0;
}

static int get_report(void *data, const char *step, char **ret_json)
{
	const struct pdi_site_step *s = find(data, step);

	if (!s || !s->report)
		return -ENOENT;
	return (*ret_json = strdup(s->report)) ? 0 : -ENOMEM;
}

static int list_sites(void *data, const char *step, int (*cb)(void *, const struct pdi_store_site *), void *ctx)
{
	const struct pdi_site_step *s = find(data, step);
	int r = 0;

	if (!s)
		return -ENOENT;
	for (size_t i = 0; r >= 0 && i < s->nsites; i++) {
		const struct pdi_site_row *x = &s->sites[i];
		int fn = pdi_mpi_func_find(x->fn);

		if (fn < 0)
			return -EPROTONOSUPPORT; /* a function only a newer pdimon probes */
		r = cb(ctx, &(struct pdi_store_site){.index = x->index, .fn = (uint16_t)fn, .name = x->name,
						     .caller = x->caller, .file = x->file, .line = x->line, .key = x->key});
	}
	return r < 0 ? r : 0;
}

static int list_tasks(void *data, const char *step, int (*cb)(void *, const struct pdi_store_task *), void *ctx)
{
	const struct pdi_site_step *s = find(data, step);
	int r = 0;

	if (!s)
		return -ENOENT;
	for (size_t i = 0; r >= 0 && i < s->ntasks; i++)
		r = cb(ctx, &s->tasks[i].t);
	return r < 0 ? r : 0;
}

static void fetched_free(struct pdi_site_samples *self)
{
	struct fetched *f = (struct fetched *)self;

	for (size_t i = 0; i < f->n; i++)
		pdi_site_step_free(f->runs[i]);
	free(f->runs);
	free(f);
}

struct pdi_site_samples *pdi_site_samples_new(struct pdi_site_step **runs, size_t n, unsigned ntasks)
{
	struct fetched *f = calloc(1, sizeof(*f));

	if (!f) {
		for (size_t i = 0; i < n; i++)
			pdi_site_step_free(runs[i]);
		free(runs);
		return NULL;
	}
	f->runs = runs;
	f->n = n;
	f->base = (struct pdi_site_samples){
		.ntasks = ntasks,
		.source = {.list_steps = list_steps, .get_report = get_report, .list_sites = list_sites,
			   .list_tasks = list_tasks, .data = f},
		.free = fetched_free, .refs = 1};
	return &f->base;
}

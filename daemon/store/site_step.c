/* SPDX-License-Identifier: GPL-2.0-only */
/* site_step.c -- a node's part of an ended step as the site store takes it: copied whole from the
 * local store on the loop, so that the lane works on memory of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_funcs.h"
#include "site_step.h"

void pdi_site_step_free(struct pdi_site_step *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nsites; i++) {
		free(s->sites[i].fn);
		free(s->sites[i].name);
		free(s->sites[i].caller);
		free(s->sites[i].file);
	}
	free(s->sites);
	for (size_t i = 0; i < s->ntasks; i++)
		free(s->tasks[i].model);
	free(s->tasks);
	free(s->report);
	free(s);
}

size_t pdi_site_step_bytes(const struct pdi_site_step *s)
{
	size_t n = sizeof(*s) + (s->report ? strlen(s->report) : 0) + s->nsites * sizeof(*s->sites);

	for (size_t i = 0; i < s->ntasks; i++)
		n += sizeof(s->tasks[i]) + s->tasks[i].t.model_len;
	return n;
}

static int read_site(void *ctx, const struct pdi_store_site *x)
{
	struct pdi_site_step *s = ctx;
	struct pdi_site_row *v = realloc(s->sites, (s->nsites + 1) * sizeof(*v)), *row;

	if (!v)
		return -ENOMEM;
	s->sites = v;
	row = &v[s->nsites];
	*row = (struct pdi_site_row){.index = x->index, .line = x->line, .key = x->key,
				     .fn = strdup(pdi_mpi_funcs[x->fn].name), .name = strdup(x->name),
				     .caller = strdup(x->caller), .file = strdup(x->file)};
	s->nsites++; /* freed with the payload, whole or not */
	return row->fn && row->name && row->caller && row->file ? 0 : -ENOMEM;
}

static int read_total(void *ctx, const struct pdi_store_site_total *t)
{
	struct pdi_site_step *s = ctx;

	for (size_t i = 0; i < s->nsites; i++)
		if (s->sites[i].index == t->index) {
			s->sites[i].calls = t->calls;
			s->sites[i].bytes = t->bytes;
			s->sites[i].time_ns = t->time_ns;
		}
	return 0;
}

static int read_task(void *ctx, const struct pdi_store_task *x)
{
	struct pdi_site_step *s = ctx;
	struct pdi_site_task *v = realloc(s->tasks, (s->ntasks + 1) * sizeof(*v)), *t;

	if (!v)
		return -ENOMEM;
	s->tasks = v;
	t = &v[s->ntasks];
	*t = (struct pdi_site_task){.t = *x};
	if (x->model_len) {
		if (!(t->model = malloc(x->model_len)))
			return -ENOMEM;
		memcpy(t->model, x->model, x->model_len);
		t->t.model = t->model;
	}
	s->ntasks++;
	return 0;
}

int pdi_site_step_read(struct pdi_store *st, const char *name, struct pdi_site_step **ret)
{
	struct pdi_site_step *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	r = pdi_store_get_step(st, name, &s->step);
	if (r >= 0)
		r = pdi_store_list_sites(st, name, read_site, s);
	if (r >= 0)
		r = pdi_store_list_site_totals(st, name, read_total, s);
	if (r >= 0)
		r = pdi_store_list_tasks(st, name, read_task, s);
	if (r >= 0 && (r = pdi_store_get_report(st, name, &s->report)) == -ENOENT)
		r = 0;
	if (r < 0) {
		pdi_site_step_free(s);
		return r;
	}
	*ret = s;
	return 0;
}


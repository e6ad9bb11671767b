/* SPDX-License-Identifier: GPL-2.0-only */
/* trend_store.c -- reading the runs trends fit from the local store, and rendering their trends. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "trend_store.h"

static void run_free(struct pdi_trend_run *r)
{
	for (size_t k = 0; k < r->nsites; k++)
		free((char *)r->sites[k].name);
	free((struct pdi_trend_site_total *)r->sites);
	free((char *)r->step);
	free((char *)r->executable);
	free((char *)r->build);
	free((char *)r->verdict);
}

int pdi_trend_runs_add(struct pdi_trend_runs *rs, const struct pdi_trend_run *r)
{
	struct pdi_trend_site_total *sites = calloc(r->nsites + 1, sizeof(*sites));
	struct pdi_trend_run c = *r;
	bool ok = sites != NULL;

	c.sites = sites;
	c.nsites = 0;
	c.step = strdup(r->step);
	c.executable = strdup(r->executable);
	c.build = strdup(r->build);
	c.verdict = strdup(r->verdict);
	ok = ok && c.step && c.executable && c.build && c.verdict;
	for (size_t k = 0; ok && k < r->nsites; k++) {
		sites[k] = r->sites[k];
		ok = (sites[k].name = strdup(r->sites[k].name)) != NULL;
		c.nsites += ok;
	}
	if (ok && rs->n == rs->cap) {
		size_t cap = rs->cap ? 2 * rs->cap : 16;
		struct pdi_trend_run *v = realloc(rs->v, cap * sizeof(*v));

		if ((ok = v != NULL)) {
			rs->v = v;
			rs->cap = cap;
		}
	}
	if (!ok) {
		run_free(&c);
		return -ENOMEM;
	}
	rs->v[rs->n++] = c;
	return 0;
}

void pdi_trend_runs_done(struct pdi_trend_runs *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		run_free(&rs->v[i]);
	free(rs->v);
	*rs = (struct pdi_trend_runs){0};
}

/* ---- the local store ---- */

struct collect {
	const char *program;
	uid_t uid;
	bool admin;
	struct pdi_store_step *steps;
	size_t n;
	struct pdi_trend_site_total *sites;
	size_t nsites, cap;
};

static int take_step(void *ctx, const struct pdi_store_step *st)
{
	struct collect *c = ctx;
	struct pdi_store_step *v;

	if (!st->ended || !st->executable[0] || (!c->admin && st->uid != c->uid) ||
	    !pdi_trend_is_program(st->executable, st->build, c->program))
		return 0;
	v = realloc(c->steps, (c->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->steps = v;
	v[c->n++] = *st;
	return 0;
}

static int take_total(void *ctx, const struct pdi_store_site_total *t)
{
	struct collect *c = ctx;

	if (c->nsites == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct pdi_trend_site_total *v = realloc(c->sites, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->sites = v;
		c->cap = cap;
	}
	/* the store's string lives only until the callback returns */
	if (!(c->sites[c->nsites].name = strdup(t->name)))
		return -ENOMEM;
	c->sites[c->nsites].calls = t->calls;
	c->sites[c->nsites].bytes = t->bytes;
	c->sites[c->nsites].time_ns = t->time_ns;
	c->nsites++;
	return 0;
}

static void drop_totals(struct collect *c)
{
	for (size_t k = 0; k < c->nsites; k++)
		free((char *)c->sites[k].name);
	c->nsites = 0;
}

int pdi_trend_runs_local(struct pdi_store *st, const char *program, uid_t uid, bool admin, struct pdi_trend_runs *ret)
{
	struct collect c = {.program = program, .uid = uid, .admin = admin};
	struct pdi_trend_runs rs = {0};
	int r = pdi_store_list_steps(st, false, take_step, &c);

	for (size_t i = 0; r >= 0 && i < c.n; i++) {
		const struct pdi_store_step *s = &c.steps[i];
		struct pdi_trend_run run = {.step = s->name, .executable = s->executable, .build = s->build,
					    .verdict = s->verdict, .ended = s->ended, .input_size = s->input_size,
					    .tasks = s->total_tasks ? s->total_tasks : s->ntasks, .counted = s->ntasks};

		r = pdi_store_list_site_totals(st, s->name, take_total, &c);
		if (r == -ENOENT) { /* expired meanwhile */
			r = 0;
			continue;
		}
		run.sites = c.sites;
		run.nsites = c.nsites;
		if (r >= 0)
			r = pdi_trend_runs_add(&rs, &run);
		drop_totals(&c);
	}
	drop_totals(&c);
	free(c.sites);
	free(c.steps);
	if (r < 0) {
		pdi_trend_runs_done(&rs);
		return r;
	}
	*ret = rs;
	return 0;
}

int pdi_trend_runs_render(const struct pdi_trend_runs *runs, const char *program, const char *source,
			  const char *format, char **ret_text, char *err, size_t errlen)
{
	struct pdi_trend_set *set;
	char *text;
	int r = pdi_trend_set_build(program, source, runs->v, runs->n, &set, err, errlen);

	if (r < 0)
		return r;
	if (!strcmp(format, "json"))
		text = pdi_trends_render_json(&set->doc);
	else if (!strcmp(format, "svg"))
		text = pdi_trends_render_svg(&set->doc);
	else
		text = pdi_trends_render_text(&set->doc);
	pdi_trend_set_free(set);
	if (!text) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*ret_text = text;
	return 0;
}

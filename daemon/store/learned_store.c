/* SPDX-License-Identifier: GPL-2.0-only */
/* learned_store.c -- the overhead budget's levels learned per program, kept in the store (see
 * learned_store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget_learn.h"
#include "daemon.h"
#include "event.h"
#include "learned_store.h"
#include "log.h"
#include "mpi_funcs.h"
#include "store.h"
#include "worker.h"

char *pdi_learned_levels_format(const uint8_t *levels)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *sep = "";

	if (!f)
		return NULL;
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		if (levels[fn]) {
			fprintf(f, "%s%s=%u", sep, pdi_mpi_func_name(fn), levels[fn]);
			sep = " ";
		}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

unsigned pdi_learned_levels_parse(const char *text, uint8_t *levels)
{
	unsigned n = 0;

	memset(levels, 0, pdi_mpi_nfuncs);
	while (text && *text) {
		size_t len = strcspn(text, " ");
		char name[64], *end;
		const char *eq = memchr(text, '=', len);
		unsigned long level;
		int fn;

		if (eq && (size_t)(eq - text) < sizeof(name)) {
			memcpy(name, text, (size_t)(eq - text));
			name[eq - text] = '\0';
			level = strtoul(eq + 1, &end, 10);
			fn = pdi_mpi_func_find(name);
			if (fn >= 0 && end == text + len && end > eq + 1 && level >= 1 && level <= 255) {
				levels[fn] = (uint8_t)level;
				n++;
			}
		}
		text += len;
		text += strspn(text, " ");
	}
	return n;
}

static int load_row(void *ctx, const struct pdi_store_learned *x)
{
	struct pdi_daemon *d = ctx;
	uint8_t levels[PDI_LINK_GEN_FUNCS];

	if (x->used > 0 && pdi_learned_levels_parse(x->levels, levels) > 0 &&
	    pdi_budget_learned_put(d->budget_learned, x->program, (uint64_t)x->used, levels) < 0)
		return -ENOMEM;
	return 0;
}

void pdi_learned_store_load(struct pdi_daemon *d)
{
	int r;

	if (!d->store || !d->budget_learned)
		return;
	r = pdi_store_list_learned(d->store, load_row, d);
	if (r < 0)
		log_warning_errno(r, "Cannot read the budget levels learned by earlier runs, starting without them: %s",
				  pdi_store_errmsg(d->store));
	else if (pdi_budget_learned_count(d->budget_learned))
		log_info("Budget levels learned by earlier runs: %u programs", pdi_budget_learned_count(d->budget_learned));
}

/* Rows to write, on the lane. */
struct learned_write {
	struct pdi_job job;
	struct pdi_store *store;  /* the lane's connection */
	unsigned keep;
	struct pdi_store_learned *v; /* levels owned */
	size_t n, cap;
	int status;
	char why[256];
};

static void write_free(struct learned_write *w)
{
	for (size_t i = 0; i < w->n; i++)
		free((char *)w->v[i].levels);
	free(w->v);
	free(w);
}

static void write_run(struct pdi_job *j)
{
	struct learned_write *w = pdi_job_of(j, struct learned_write, job);

	w->status = pdi_store_put_learned(w->store, w->v, w->n, w->keep);
	if (w->status < 0)
		snprintf(w->why, sizeof(w->why), "%s", pdi_store_errmsg(w->store));
}

static void write_done(struct pdi_job *j, bool cancelled)
{
	struct learned_write *w = pdi_job_of(j, struct learned_write, job);

	/* lost for the next restart only: this pdimond keeps them */
	if (!cancelled && w->status < 0)
		log_warning_limited(0, "Cannot store the budget levels learned for %zu programs: %s", w->n, w->why);
	write_free(w);
}

/* What a flush collects: the write, made at the first entry changed. */
struct flush {
	struct pdi_daemon *d;
	struct learned_write *w;
};

static int copy_changed(void *ctx, uint64_t program, uint64_t used, const uint8_t *levels)
{
	struct flush *f = ctx;
	struct pdi_daemon *d = f->d;
	struct learned_write *w = f->w;
	char *text;

	if (!w) {
		if (!(w = calloc(1, sizeof(*w))))
			return -ENOMEM;
		*w = (struct learned_write){.job = {.run = write_run, .done = write_done}, .store = d->store_writer,
					    .keep = d->cfg.budget_programs};
		f->w = w;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 8;
		struct pdi_store_learned *v = realloc(w->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	if (!(text = pdi_learned_levels_format(levels)))
		return -ENOMEM;
	w->v[w->n++] = (struct pdi_store_learned){.program = program, .used = (int64_t)used, .levels = text};
	return 0;
}

void pdi_learned_store_flush(struct pdi_daemon *d)
{
	struct flush f = {.d = d};

	if (!d->store_lane || !d->budget_learned)
		return;
	/* what could not be copied stays changed, for the next flush */
	(void)pdi_budget_learned_changed(d->budget_learned, copy_changed, &f);
	if (f.w && (!f.w->n || pdi_workers_submit(d->store_lane, &f.w->job) < 0))
		write_free(f.w);
}

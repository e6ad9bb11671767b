/* SPDX-License-Identifier: GPL-2.0-only */
/* samples.c -- loading a step's sample runs: earlier normal runs of its program, from the store.
 *
 * A run is a sample of normal behaviour only if nothing went wrong in it: a hung, failed or
 * partly seen run, or one its own diagnosis found abnormal, would teach the analysis that the
 * fault is normal. The store keeps the report (its verdict and diagnosis), and per task its end,
 * its lost events and its model: all must be clean.
 *
 * Site numbers are local to a step, in order of first appearance, so a stored run's models
 * are renamed into the step's numbering by matching sites. A site's key hashes the object's
 * (device, inode), the call's address in it and the MPI function: exact for one file, but it
 * changes whenever the program is rebuilt, reinstalled or run from another file system
 * (a node-local copy, a container image), and a binary overwritten in place keeps its inode
 * while its addresses move. The name FUNC@FILE:LINE survives all of that for as long as the
 * source line stays (without DWARF it is FUNC@OBJECT+0xOFFSET, stable for one binary). So the
 * name decides, and the key only tells apart sites that share a name (a call in an inlined
 * function or a macro, two calls on one line) when the file is the same; namesakes left over
 * are paired in order of first appearance. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "model_io.h"
#include "registry.h"
#include "samples.h"
#include "store.h"

#define NOT_NORMAL (-ECANCELED) /* the run is no sample of normal behaviour: skip it */
#define TOO_BIG (-EFBIG)        /* the run does not fit in PDI_SAMPLES_MAX_BYTES: stop */

/* A stored step that may be a sample run. */
struct candidate {
	char name[129];
	int64_t started, ended;
};

struct finder {
	const struct pdi_step *s;
	struct candidate *v;
	size_t n, cap;
};

/* S's site names: FNV-1a hash -> the lowest index, chained through NEXT to the others. */
struct names {
	struct pdi_u64map head;
	uint32_t *next;
};

/* S's tasks in the order the store lists a run's tasks: by rank. */
struct slot {
	int32_t rank;
	unsigned task;
};

struct loader {
	const struct pdi_sample_source *src;
	const struct pdi_step *s;
	struct names names;
	struct slot *order;
	bool *claimed;           /* S's sites that a site of the current run has taken */
	uint32_t *map, nmap, cap_map; /* the current run's site -> S's site */
	struct pdi_sample_run run;
	unsigned taken;          /* tasks of the current run decoded so far */
	size_t run_bytes, total_bytes;
	const char *why;         /* what made the current run abnormal, for the debug log */
};

static const char *site_name(const struct pdi_step *s, uint32_t i)
{
	return s->sites[i].name ? s->sites[i].name : "";
}

/* ---- which runs ---- */

static int add_candidate(void *ctx, const struct pdi_store_step *x)
{
	struct finder *f = ctx;

	if (!x->ended || x->ntasks != f->s->ntasks || strcmp(x->executable, f->s->executable) != 0 ||
	    strcmp(x->name, f->s->name) == 0)
		return 0;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct candidate *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n] = (struct candidate){.started = x->started, .ended = x->ended};
	memcpy(f->v[f->n].name, x->name, sizeof(x->name));
	f->n++;
	return 0;
}

static int by_recency(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;

	if (x->ended != y->ended)
		return x->ended > y->ended ? -1 : 1;
	if (x->started != y->started)
		return x->started > y->started ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The value of the first "KEY": after the object key "PARENT": in a report (pdi_json's output:
 * a quote inside a string is escaped, so "PARENT": can only be a key, and the first "KEY"
 * after it is its own when PARENT's object holds no nested KEY before it): a string's text
 * without its quotes, or a literal (true, false, a number) as written. NULL when absent. */
static const char *report_value(const char *json, const char *parent, const char *key, size_t *ret_len)
{
	char pk[40], kk[40];
	const char *p;

	snprintf(pk, sizeof(pk), "\"%s\":", parent);
	snprintf(kk, sizeof(kk), "\"%s\":", key);
	if (!(p = strstr(json, pk)) || !(p = strstr(p, kk)))
		return NULL;
	p += strlen(kk);
	p += strspn(p, " \t\r\n");
	if (*p == '"') {
		size_t n = strcspn(++p, "\"\\");

		if (p[n] != '"')
			return NULL;
		*ret_len = n;
		return p;
	}
	*ret_len = strcspn(p, ",}] \t\r\n");
	return p;
}

void pdi_report_verdict(const char *json, char *buf, size_t len)
{
	size_t n;
	const char *p = report_value(json, "verdict", "kind", &n);

	buf[0] = '\0';
	if (p && n < len)
		snprintf(buf, len, "%.*s", (int)n, p);
}

/* A run is normal when it completed and its report found nothing abnormal: a stall or
 * interference the diagnosis saw in it would teach the analysis that the fault is usual (the
 * store keeps every run of a site, faulty ones too). A run it missed stays in, as it would in
 * AutomaDeD's Fault10 set (sec. 5), which the paper found to cost little. */
static bool normal_report(struct loader *l, const char *json)
{
	char kind[16];
	size_t n;
	const char *abnormal = report_value(json, "diagnosis", "abnormal", &n);

	pdi_report_verdict(json, kind, sizeof(kind));
	if (strcmp(kind, "completed") != 0) {
		l->why = "its verdict is not \"completed\"";
		return false;
	}
	if (abnormal && n == 4 && !strncmp(abnormal, "true", 4)) {
		l->why = "its report found something abnormal";
		return false;
	}
	return true;
}

static int check_verdict(struct loader *l, const char *step)
{
	char *json = NULL;
	int r = l->src->get_report(l->src->data, step, &json);

	if (r == -ENOENT) {
		l->why = "no report";
		return NOT_NORMAL;
	}
	if (r < 0)
		return r;
	r = normal_report(l, json) ? 0 : NOT_NORMAL;
	free(json);
	return r;
}

/* ---- matching sites ---- */

static int names_build(struct names *n, const struct pdi_step *s)
{
	n->next = malloc((s->nsites ? s->nsites : 1) * sizeof(*n->next));
	if (!n->next)
		return -ENOMEM;
	/* backwards, so that each chain starts at the lowest index */
	for (uint32_t i = s->nsites; i-- > 0;) {
		uint64_t h = pdi_hash_str(site_name(s, i));

		n->next[i] = pdi_u64map_get(&n->head, h);
		if (pdi_u64map_put(&n->head, h, i) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void names_free(struct names *n)
{
	pdi_u64map_free(&n->head);
	free(n->next);
}

/* The first pass: a site S has under the same key and the same name is the same site. */
static int match_exact(void *ctx, const struct pdi_store_site *x)
{
	struct loader *l = ctx;
	uint32_t i = pdi_u64map_get(&l->s->site_idx, x->key);

	if (x->index != l->nmap)
		return -EBADMSG; /* the indices are the names the models use: they must be dense */
	if (l->nmap == l->cap_map) {
		uint32_t cap = l->cap_map ? 2 * l->cap_map : 64;
		uint32_t *v = realloc(l->map, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->map = v;
		l->cap_map = cap;
	}
	if (i < l->s->nsites && !l->claimed[i] && strcmp(site_name(l->s, i), x->name) == 0)
		l->claimed[i] = true;
	else
		i = PDI_U64MAP_NONE;
	l->map[l->nmap++] = i;
	return 0;
}

/* The second pass: the rest by name, or a site of their own outside S's. */
static int match_name(void *ctx, const struct pdi_store_site *x)
{
	struct loader *l = ctx;
	uint32_t j = x->index;

	if (j >= l->nmap || j > PDI_SITE_MAX - PDI_SAMPLES_FOREIGN_SITE)
		return -EBADMSG;
	if (l->map[j] != PDI_U64MAP_NONE)
		return 0;
	for (uint32_t i = pdi_u64map_get(&l->names.head, pdi_hash_str(x->name)); i != PDI_U64MAP_NONE;
	     i = l->names.next[i]) {
		if (!l->claimed[i] && strcmp(site_name(l->s, i), x->name) == 0) {
			l->claimed[i] = true;
			l->map[j] = i;
			return 0;
		}
	}
	l->map[j] = PDI_SAMPLES_FOREIGN_SITE + j;
	return 0;
}

static int map_sites(struct loader *l, const char *step)
{
	int r;

	l->nmap = 0;
	if (l->s->nsites)
		memset(l->claimed, 0, l->s->nsites * sizeof(*l->claimed));
	r = l->src->list_sites(l->src->data, step, match_exact, l);
	return r < 0 ? r : l->src->list_sites(l->src->data, step, match_name, l);
}

/* ---- a run's models ---- */

static void run_free(struct pdi_sample_run *run, unsigned ntasks)
{
	for (unsigned i = 0; run->models && i < ntasks; i++)
		pdi_model_done(&run->models[i]);
	free(run->models);
	free(run->row);
	*run = (struct pdi_sample_run){0};
}

static int take_task(void *ctx, const struct pdi_store_task *x)
{
	struct loader *l = ctx;
	struct pdi_model *m;
	int r;

	/* a launcher pdimond watched (a checkpoint stored it while the step ran): no task */
	if (!strcmp(x->state, "watched"))
		return 0;
	if (l->taken >= l->s->ntasks || x->rank != l->order[l->taken].rank) {
		l->why = "its ranks are not the step's";
		return NOT_NORMAL;
	}
	if (strcmp(x->state, "ended") != 0 || x->ended_in[0] || x->events_lost || !x->model_len) {
		l->why = "a task did not end normally, lost events or has no model";
		return NOT_NORMAL;
	}
	m = &l->run.models[l->order[l->taken++].task];
	if ((r = pdi_model_decode(x->model, x->model_len, NULL, m)) < 0)
		return r;
	if (m->dropped_states || m->dropped_edges) {
		l->why = "a model is incomplete";
		return NOT_NORMAL;
	}
	l->run_bytes += m->bytes;
	if (l->total_bytes + l->run_bytes > PDI_SAMPLES_MAX_BYTES)
		return TOO_BIG;
	r = pdi_model_remap_sites(m, l->map, l->nmap);
	return r == -EINVAL ? -EBADMSG : r; /* a model naming a site its step does not have */
}

static int load_run(struct loader *l, const struct candidate *c)
{
	unsigned n = l->s->ntasks;
	int r;

	l->why = NULL;
	if ((r = check_verdict(l, c->name)) < 0 || (r = map_sites(l, c->name)) < 0)
		return r;
	l->run = (struct pdi_sample_run){.started = c->started, .ended = c->ended};
	memcpy(l->run.step, c->name, sizeof(c->name));
	l->run.models = calloc(n, sizeof(*l->run.models));
	l->run.row = malloc(n * sizeof(*l->run.row));
	if (!l->run.models || !l->run.row)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		l->run.row[i] = &l->run.models[i];
	l->taken = 0;
	l->run_bytes = n * (sizeof(*l->run.models) + sizeof(*l->run.row));
	r = l->src->list_tasks(l->src->data, c->name, take_task, l);
	if (r == 0 && l->taken != n) {
		l->why = "it has fewer tasks with a model than the step";
		r = NOT_NORMAL;
	}
	return r;
}

static int keep_run(struct pdi_samples *v, struct loader *l)
{
	struct pdi_sample_run *runs = realloc(v->runs, (v->nruns + 1) * sizeof(*runs));

	if (!runs)
		return -ENOMEM;
	v->runs = runs;
	runs[v->nruns++] = l->run;
	l->run = (struct pdi_sample_run){0};
	l->total_bytes += l->run_bytes;
	return 0;
}

/* Account for a run that was not kept because of R: 0 to go on, 1 to stop, or R if fatal. */
static int skip_run(struct pdi_samples *v, const struct loader *l, const struct candidate *c, int r)
{
	switch (r) {
	case NOT_NORMAL:
		v->abnormal++;
		log_debug("Step %s: earlier run %s is no sample run: %s", l->s->name, c->name, l->why);
		return 0;
	case TOO_BIG:
		v->truncated = true;
		log_debug("Step %s: sample runs stop before %s: they would hold more than %zu bytes", l->s->name,
			  c->name, PDI_SAMPLES_MAX_BYTES);
		return 1;
	case -EBADMSG:
	case -EPROTONOSUPPORT:
	case -ENOENT: /* expired meanwhile */
		v->unreadable++;
		pdi_log_errno(PDI_LOG_DEBUG, r, "Step %s: earlier run %s cannot be read, skipping it: %m",
			      l->s->name, c->name);
		return 0;
	default:
		return r;
	}
}

static int by_rank(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->task < y->task ? -1 : x->task > y->task;
}

static int loader_init(struct loader *l)
{
	const struct pdi_step *s = l->s;

	l->order = malloc(s->ntasks * sizeof(*l->order));
	l->claimed = calloc(s->nsites ? s->nsites : 1, sizeof(*l->claimed));
	if (!l->order || !l->claimed)
		return -ENOMEM;
	for (unsigned i = 0; i < s->ntasks; i++)
		l->order[i] = (struct slot){.rank = s->tasks[i]->rank, .task = i};
	qsort(l->order, s->ntasks, sizeof(*l->order), by_rank);
	return names_build(&l->names, s);
}

static void loader_done(struct loader *l)
{
	run_free(&l->run, l->s->ntasks);
	names_free(&l->names);
	free(l->order);
	free(l->claimed);
	free(l->map);
}

void pdi_samples_done(struct pdi_samples *v)
{
	for (unsigned i = 0; i < v->nruns; i++)
		run_free(&v->runs[i], v->ntasks);
	free(v->runs);
	*v = (struct pdi_samples){0};
}

static int load(const struct pdi_sample_source *src, const struct pdi_step *s, unsigned max_runs,
		struct pdi_samples *ret)
{
	struct pdi_samples v = {.ntasks = s->ntasks};
	struct loader l = {.src = src, .s = s};
	struct finder f = {.s = s};
	int r = 0;

	if (!max_runs || !s->ntasks || !s->executable || !*s->executable) {
		*ret = v;
		return 0;
	}
	if ((r = src->list_steps(src->data, add_candidate, &f)) >= 0)
		r = loader_init(&l);
	if (r >= 0 && f.n)
		qsort(f.v, f.n, sizeof(*f.v), by_recency);
	for (size_t i = 0; r == 0 && i < f.n && v.nruns < max_runs; i++) {
		r = load_run(&l, &f.v[i]);
		if (r == 0) {
			r = keep_run(&v, &l);
		} else {
			run_free(&l.run, s->ntasks);
			r = skip_run(&v, &l, &f.v[i], r);
		}
	}
	v.bytes = l.total_bytes;
	loader_done(&l);
	free(f.v);
	if (r < 0) {
		pdi_samples_done(&v);
		return r;
	}
	*ret = v;
	return 0;
}

/* ---- the local store as a source ---- */

static int store_steps(void *data, int (*cb)(void *, const struct pdi_store_step *), void *ctx)
{
	return pdi_store_list_steps(data, false, cb, ctx);
}

static int store_report(void *data, const char *step, char **ret_json)
{
	return pdi_store_get_report(data, step, ret_json);
}

static int store_sites(void *data, const char *step, int (*cb)(void *, const struct pdi_store_site *), void *ctx)
{
	return pdi_store_list_sites(data, step, cb, ctx);
}

static int store_tasks(void *data, const char *step, int (*cb)(void *, const struct pdi_store_task *), void *ctx)
{
	return pdi_store_list_tasks(data, step, cb, ctx);
}

int pdi_samples_load(struct pdi_store *st, const struct pdi_step *s, unsigned max_runs, struct pdi_samples *ret)
{
	const struct pdi_sample_source local = {.list_steps = store_steps, .get_report = store_report,
						.list_sites = store_sites, .list_tasks = store_tasks, .data = st};
	int r;

	/* the site's runs first, when they were fetched for this many tasks; else this node's */
	if (s->site_samples && s->site_samples->ntasks == s->ntasks && s->site_samples->source.list_steps &&
	    (r = load(&s->site_samples->source, s, max_runs, ret)) == 0) {
		if (ret->nruns)
			return 0;
		pdi_samples_done(ret);
	}
	return st ? load(&local, s, max_runs, ret) : (*ret = (struct pdi_samples){.ntasks = s->ntasks}, 0);
}

int pdi_samples_load_from(const struct pdi_sample_source *src, const struct pdi_step *s, unsigned max_runs,
			  struct pdi_samples *ret)
{
	return load(src, s, max_runs, ret);
}

struct pdi_site_samples *pdi_site_samples_ref(struct pdi_site_samples *v)
{
	if (v)
		v->refs++;
	return v;
}

void pdi_site_samples_unref(struct pdi_site_samples *v)
{
	if (v && --v->refs == 0)
		v->free(v);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* view.c -- a step as the analysis sees it (view.h), and the view in bytes: the payload
 * one node contributes to the gather of a step, and the merge of two payloads on the way up.
 *
 * A payload holds the step, its call sites by name, and its tasks grouped in classes of
 * identical models, each model once with the tasks that share it (rank, where it is, its live
 * stack). Site numbers are each node's own, so a merge renames the second part's sites to the
 * first's by name (the same program names its sites alike on every node), then lets
 * identical models share a class again: what travels up is reduced at each level, and holds
 * task lists only of its own subtree (STAT V.B). Payloads come from other hosts: decoding
 * trusts no count and no length. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eqclass.h"
#include "model_io.h"
#include "mpi_funcs.h"
#include "u64map.h"
#include "view.h"
#include "wire.h"

const char *const pdi_where_names[] = {
	[PDI_WHERE_FINISHED] = "finished", [PDI_WHERE_BLOCKED] = "blocked", [PDI_WHERE_IN_MPI] = "in_mpi",
	[PDI_WHERE_COMPUTING] = "computing", [PDI_WHERE_NO_MPI] = "no_mpi"};

const char *const pdi_activity_names[] = {
	[PDI_ACT_UNKNOWN] = "unknown", [PDI_ACT_SLEEPING] = "sleeping", [PDI_ACT_RUNNING] = "running",
	[PDI_ACT_STARVED] = "starved", [PDI_ACT_STOPPED] = "stopped", [PDI_ACT_DISK] = "uninterruptible"};

void pdi_task_activity_shares(struct pdi_task_activity *a, uint64_t run_ns, uint64_t wait_ns, uint64_t interval_ns)
{
	uint64_t over = run_ns + wait_ns > interval_ns ? run_ns + wait_ns : interval_ns;

	if (!over)
		return;
	a->over_ns = over;
	a->cpu_pct = (int)(run_ns * 100 / over);
	a->wait_pct = (int)(wait_ns * 100 / over);
}

void pdi_view_done(struct pdi_view *v)
{
	for (unsigned i = 0; v->tasks && i < v->ntasks; i++) {
		for (size_t k = 0; k < v->tasks[i].nstack; k++)
			free(v->tasks[i].stack[k]);
		free(v->tasks[i].stack);
	}
	for (size_t i = 0; i < v->nown_models; i++)
		pdi_model_done(&v->own_models[i]);
	for (uint32_t i = 0; v->own_sites && v->sites && i < v->nsites; i++) {
		free(v->sites[i].name);
		free(v->sites[i].caller);
		free(v->sites[i].file);
	}
	if (v->own_sites)
		free(v->sites);
	for (unsigned i = 0; i < v->nmissing; i++) {
		free(v->missing[i]);
		free(v->missing_why[i]);
	}
	free(v->missing);
	free(v->missing_why);
	free(v->own_models);
	free(v->tasks);
	free(v->name);
	*v = (struct pdi_view){0};
}

bool pdi_view_running(const struct pdi_view *v)
{
	return v->running;
}

const char *pdi_view_site_name(const struct pdi_view *v, uint64_t i)
{
	return pdi_site_name(v->sites, v->nsites, i);
}

void pdi_view_state_name(const struct pdi_view *v, uint64_t key, char *buf, size_t len)
{
	pdi_state_name(v->sites, v->nsites, key, buf, len);
}

/* WHAT and " for 41 s": nothing under a second, which every task spends between two calls. */
static void for_words(const char *what, uint64_t ns, char *buf, size_t len)
{
	buf[0] = '\0';
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%s for %.0f s", what, (double)ns / 1e9);
}

void pdi_view_task_doing(const struct pdi_view_task *t, char *buf, size_t len)
{
	const struct pdi_where *w = &t->where;
	const struct pdi_task_activity *a = &w->act;
	/* what /proc said, when it was read (a task that ended was not looked at) */
	bool looked = t->running && a->kind != PDI_ACT_UNKNOWN;
	char cpu[96] = "", quiet[64], progress[64], since[64];

	for_words(", no MPI call", w->for_ns, quiet, sizeof(quiet));
	for_words(", no MPI progress", w->for_ns, progress, sizeof(progress));
	for_words("", w->for_ns, since, sizeof(since));
	if (w->by_stack && since[0]) /* a call found on its stack began unseen: since the probes saw again at least */
		snprintf(since, sizeof(since), " for at least %.0f s", (double)w->for_ns / 1e9);
	if (looked && a->cpu_pct >= 0 && a->kind == PDI_ACT_RUNNING && a->wait_pct > 50)
		/* what a busy node gives every task alike (the view calls it interference when not) */
		snprintf(cpu, sizeof(cpu), ", %d%% CPU (waiting for one %d%% of the time, as its peers: a busy node)",
			 a->cpu_pct, a->wait_pct);
	else if (looked && a->cpu_pct >= 0)
		snprintf(cpu, sizeof(cpu), ", %d%% CPU", a->cpu_pct);
	if (!t->running && w->kind == PDI_WHERE_COMPUTING)
		snprintf(buf, len, "ended outside MPI without MPI_Finalize (%s)", w->text);
	else if (!t->running && (w->kind == PDI_WHERE_BLOCKED || w->kind == PDI_WHERE_IN_MPI))
		snprintf(buf, len, "ended inside %s", w->text);
	else if (looked && a->kind == PDI_ACT_STOPPED)
		snprintf(buf, len, "stopped (SIGSTOP or a debugger)%s, %s %s", progress,
			 w->kind == PDI_WHERE_COMPUTING ? "last" : "in", w->text[0] ? w->text : "its program");
	else if (looked && a->kind == PDI_ACT_DISK)
		snprintf(buf, len, "in uninterruptible sleep%s%s (a file system or device that does not answer)%s",
			 a->wchan[0] ? " in " : "", a->wchan, progress);
	else if (looked && a->kind == PDI_ACT_STARVED)
		snprintf(buf, len, "not getting CPU (ready but waiting %d%% of the time: interference)%s, %s%s",
			 a->wait_pct, cpu, w->text[0] ? w->text : "?", quiet);
	else if (w->kind == PDI_WHERE_COMPUTING && looked && a->kind == PDI_ACT_SLEEPING)
		snprintf(buf, len, "asleep outside MPI (not computing)%s%s (%s)", cpu, quiet, w->text);
	else if (w->kind == PDI_WHERE_COMPUTING)
		snprintf(buf, len, "computing%s%s (%s)", cpu, quiet, w->text);
	else if (w->kind == PDI_WHERE_BLOCKED || w->kind == PDI_WHERE_IN_MPI)
		snprintf(buf, len, "waiting in %s%s%s", w->text, since, cpu);
	else if (w->kind == PDI_WHERE_FINISHED)
		snprintf(buf, len, "finished");
	else
		snprintf(buf, len, "made no MPI call");
}

bool pdi_view_task_incomplete(const struct pdi_view_task *t)
{
	return pdi_model_incomplete(t->model, t->lost);
}

#define PAYLOAD_VERSION 3 /* 2: what the kernel says a task is doing, its clock offset; 3: by_stack */
#define TEXT_MAX 600    /* where a task is: struct pdi_where's text */
#define NAME_MAX_ 4096  /* a site's name, caller or file; a stack frame */
#define MAX_PEERS (PDI_NREQS + 1)

static void put_site(struct pdi_wire_writer *w, const struct pdi_site *s)
{
	pdi_wire_put_str(w, s->name ? s->name : "");
	pdi_wire_put_str(w, s->caller ? s->caller : "");
	pdi_wire_put_str(w, s->file ? s->file : "");
	pdi_wire_put_u32(w, (uint32_t)s->line);
	pdi_wire_put_str(w, s->fn < pdi_mpi_nfuncs ? pdi_mpi_funcs[s->fn].name : "");
}

static void put_task(struct pdi_wire_writer *w, const struct pdi_view_task *t)
{
	const struct pdi_where *x = &t->where;

	pdi_wire_put_u32(w, (uint32_t)t->rank);
	pdi_wire_put_u32(w, (uint32_t)t->pid);
	pdi_wire_put_u8(w, t->running);
	pdi_wire_put_u64(w, t->lost);
	pdi_wire_put_u8(w, t->gap);
	pdi_wire_put_u64(w, t->progress);
	pdi_wire_put_u8(w, (uint8_t)x->kind);
	pdi_wire_put_str(w, x->text);
	pdi_wire_put_u32(w, x->site < 0 ? 0 : (uint32_t)x->site + 1);
	pdi_wire_put_u64(w, x->for_ns);
	pdi_wire_put_u32(w, x->npeers);
	for (unsigned i = 0; i < x->npeers; i++)
		pdi_wire_put_u32(w, (uint32_t)x->peers[i]);
	pdi_wire_put_u32(w, (uint32_t)t->nstack);
	for (size_t i = 0; i < t->nstack; i++)
		pdi_wire_put_str(w, t->stack[i]);
	pdi_wire_put_u64(w, (uint64_t)t->wall_offset_ns);
	pdi_wire_put_u8(w, (uint8_t)x->act.kind);
	pdi_wire_put_str(w, x->act.wchan);
	pdi_wire_put_u32(w, (uint32_t)x->act.cpu_pct);
	pdi_wire_put_u32(w, (uint32_t)x->act.wait_pct);
	pdi_wire_put_u64(w, x->act.over_ns);
	pdi_wire_put_u8(w, x->by_stack);
}

/* V into W; its tasks in CLASSES (members index V's tasks). */
static int put_view(struct pdi_wire_writer *w, const struct pdi_view *v, const struct pdi_eqclasses *classes)
{
	pdi_wire_put_u32(w, PAYLOAD_VERSION);
	pdi_wire_put_str(w, v->name);
	pdi_wire_put_u32(w, v->job_id);
	pdi_wire_put_u32(w, v->step_id);
	pdi_wire_put_u32(w, v->uid);
	pdi_wire_put_u8(w, v->running);
	pdi_wire_put_u64(w, (uint64_t)v->started);
	pdi_wire_put_u64(w, (uint64_t)v->ended);
	pdi_wire_put_u32(w, v->nodes);
	pdi_wire_put_u32(w, v->nsites);
	for (uint32_t i = 0; i < v->nsites; i++)
		put_site(w, &v->sites[i]);
	pdi_wire_put_u32(w, (uint32_t)classes->n);
	for (size_t c = 0; c < classes->n && !w->err; c++) {
		const struct pdi_eqclass *k = &classes->classes[c];
		void *buf;
		size_t len;
		int r = pdi_model_encode(k->model, &buf, &len);

		if (r < 0)
			return r;
		pdi_wire_put_bytes(w, buf, (uint32_t)len);
		free(buf);
		pdi_wire_put_u32(w, k->n);
		for (uint32_t m = 0; m < k->n; m++)
			put_task(w, &v->tasks[k->members[m]]);
	}
	return w->err;
}

/* Classes of V's tasks by identical models (exactly: the analysis collapses near ones). */
static int classes_of(const struct pdi_view *v, struct pdi_eqclasses *ret)
{
	const struct pdi_model **models = calloc(v->ntasks + 1, sizeof(*models));
	int r;

	if (!models)
		return -ENOMEM;
	for (unsigned i = 0; i < v->ntasks; i++)
		models[i] = v->tasks[i].model;
	r = pdi_eqclass_build(models, v->ntasks, 0, ret);
	free(models);
	return r;
}

int pdi_view_encode(const struct pdi_view *v, struct pdi_wire_writer *out)
{
	struct pdi_eqclasses classes;
	int r = classes_of(v, &classes);

	if (r < 0)
		return r;
	r = put_view(out, v, &classes);
	pdi_eqclasses_done(&classes);
	return r;
}

static char *get_strdup(struct pdi_wire_reader *r, size_t max)
{
	char buf[NAME_MAX_ + 1];

	if (pdi_wire_get_str(r, buf, max < sizeof(buf) ? max : sizeof(buf)) < 0)
		return NULL;
	return strdup(buf);
}

static int get_site(struct pdi_wire_reader *r, struct pdi_site *s)
{
	char fn[64];
	int f;

	s->name = get_strdup(r, NAME_MAX_);
	s->caller = get_strdup(r, NAME_MAX_);
	s->file = get_strdup(r, NAME_MAX_);
	s->line = (int)pdi_wire_get_u32(r);
	if (pdi_wire_get_str(r, fn, sizeof(fn)) < 0 || !s->name || !s->caller || !s->file)
		return r->err ? r->err : -ENOMEM;
	f = pdi_mpi_func_find(fn);
	if (f < 0)
		return -EPROTONOSUPPORT; /* a newer pdimon's function: this one cannot name it */
	s->fn = (uint16_t)f;
	return 0;
}

static int get_task(struct pdi_wire_reader *r, const struct pdi_view *v, struct pdi_view_task *t)
{
	struct pdi_where *x = &t->where;
	uint32_t site, n;

	t->rank = (int)pdi_wire_get_u32(r);
	t->pid = (pid_t)pdi_wire_get_u32(r);
	t->running = pdi_wire_get_u8(r);
	t->lost = pdi_wire_get_u64(r);
	t->gap = pdi_wire_get_u8(r);
	t->progress = pdi_wire_get_u64(r);
	x->kind = pdi_wire_get_u8(r);
	if (pdi_wire_get_str(r, x->text, sizeof(x->text)) < 0 || x->kind > PDI_WHERE_NO_MPI)
		return -EBADMSG;
	site = pdi_wire_get_u32(r);
	if (site > v->nsites)
		return -EBADMSG;
	x->site = (int64_t)site - 1;
	x->for_ns = pdi_wire_get_u64(r);
	x->npeers = pdi_wire_get_u32(r);
	if (x->npeers > MAX_PEERS)
		return -EBADMSG;
	for (unsigned i = 0; i < x->npeers; i++)
		x->peers[i] = (int32_t)pdi_wire_get_u32(r);
	n = pdi_wire_get_u32(r);
	if (n > PDI_VIEW_MAX_FRAMES || r->err)
		return -EBADMSG;
	if (n) {
		t->stack = calloc(n, sizeof(*t->stack));
		if (!t->stack)
			return -ENOMEM;
		for (t->nstack = 0; t->nstack < n; t->nstack++)
			if (!(t->stack[t->nstack] = get_strdup(r, NAME_MAX_)))
				return r->err ? r->err : -ENOMEM;
	}
	t->wall_offset_ns = (int64_t)pdi_wire_get_u64(r);
	x->act.kind = pdi_wire_get_u8(r);
	if (pdi_wire_get_str(r, x->act.wchan, sizeof(x->act.wchan)) < 0 || x->act.kind > PDI_ACT_MAX)
		return -EBADMSG;
	x->act.cpu_pct = (int)pdi_wire_get_u32(r);
	x->act.wait_pct = (int)pdi_wire_get_u32(r);
	x->act.over_ns = pdi_wire_get_u64(r);
	x->by_stack = pdi_wire_get_u8(r);
	if (x->act.cpu_pct < -1 || x->act.cpu_pct > 100 * 1024 || x->act.wait_pct < -1 || x->act.wait_pct > 100 * 1024)
		return -EBADMSG;
	return r->err;
}

/* A payload decoded into a view that owns everything it points to. */
int pdi_view_decode(const uint8_t *p, size_t len, struct pdi_view *ret)
{
	struct pdi_wire_reader r;
	struct pdi_view v = {.own_sites = true};
	uint32_t nclasses, ntasks_cap = 0;
	int err = -EBADMSG;

	pdi_wire_reader_init(&r, p, len);
	if (pdi_wire_get_u32(&r) != PAYLOAD_VERSION)
		return -EPROTONOSUPPORT;
	if (!(v.name = get_strdup(&r, 256)))
		goto fail;
	v.job_id = pdi_wire_get_u32(&r);
	v.step_id = pdi_wire_get_u32(&r);
	v.uid = pdi_wire_get_u32(&r);
	v.running = pdi_wire_get_u8(&r);
	v.started = (int64_t)pdi_wire_get_u64(&r);
	v.ended = (int64_t)pdi_wire_get_u64(&r);
	v.nodes = pdi_wire_get_u32(&r);
	v.nsites = pdi_wire_get_u32(&r);
	/* every site takes at least 16 bytes: a count beyond that is a lie, not an allocation */
	if (r.err || v.nsites > len / 16)
		goto fail;
	v.sites = calloc(v.nsites + 1, sizeof(*v.sites));
	if (!v.sites)
		goto nomem;
	for (uint32_t i = 0; i < v.nsites; i++)
		if ((err = get_site(&r, &v.sites[i])) < 0)
			goto fail;
	err = -EBADMSG;
	nclasses = pdi_wire_get_u32(&r);
	if (r.err || nclasses > len / 8)
		goto fail;
	v.own_models = calloc(nclasses + 1, sizeof(*v.own_models));
	if (!v.own_models)
		goto nomem;
	for (uint32_t c = 0; c < nclasses; c++) {
		uint32_t mlen, n;
		const uint8_t *m = pdi_wire_get_bytes(&r, &mlen);

		err = m ? pdi_model_decode(m, mlen, NULL, &v.own_models[c]) : -EBADMSG;
		if (err < 0)
			goto fail;
		v.nown_models++;
		err = -EBADMSG;
		n = pdi_wire_get_u32(&r);
		if (r.err || n > len / 8)
			goto fail;
		if (v.ntasks + n > ntasks_cap) {
			uint32_t cap = (v.ntasks + n) * 2;
			struct pdi_view_task *t = realloc(v.tasks, cap * sizeof(*t));

			if (!t)
				goto nomem;
			v.tasks = t;
			ntasks_cap = cap;
		}
		for (uint32_t k = 0; k < n; k++) {
			struct pdi_view_task *t = &v.tasks[v.ntasks];

			*t = (struct pdi_view_task){.model = &v.own_models[c]};
			v.ntasks++;
			if ((err = get_task(&r, &v, t)) < 0)
				goto fail;
			err = -EBADMSG;
			if (t->running)
				v.running = true;
		}
	}
	if ((err = pdi_wire_reader_finish(&r)) < 0)
		goto fail;
	/* nodes merge their tasks' automatic phases when their own bounds say so: line them up, so
	 * that phase I is the same stretch of the program in every model (doc/design/call-sites.md) */
	(void)pdi_models_line_up(v.own_models, v.nown_models);
	*ret = v;
	return 0;
nomem:
	err = -ENOMEM;
fail:
	pdi_view_done(&v);
	return err;
}

/* B's sites renamed to A's by name; the ones A lacks appended to A. MAP gets B's renaming. */
static int merge_sites(struct pdi_view *a, const struct pdi_view *b, uint32_t *map)
{
	struct pdi_u64map by_name = {0};
	struct pdi_site *sites = realloc(a->sites, (a->nsites + b->nsites + 1) * sizeof(*sites));
	int r = -ENOMEM;

	if (!sites)
		return -ENOMEM;
	a->sites = sites;
	/* names hash to their first site; a collision of two names just misses a match */
	for (uint32_t i = 0; i < a->nsites; i++)
		if (pdi_u64map_get(&by_name, pdi_hash_str(a->sites[i].name)) == PDI_U64MAP_NONE &&
		    pdi_u64map_put(&by_name, pdi_hash_str(a->sites[i].name), i) < 0)
			goto out;
	for (uint32_t i = 0; i < b->nsites; i++) {
		uint32_t j = pdi_u64map_get(&by_name, pdi_hash_str(b->sites[i].name));

		if (j == PDI_U64MAP_NONE || strcmp(a->sites[j].name, b->sites[i].name)) {
			struct pdi_site *s = &a->sites[a->nsites];

			*s = (struct pdi_site){.fn = b->sites[i].fn, .line = b->sites[i].line, .name = strdup(b->sites[i].name),
					      .caller = strdup(b->sites[i].caller), .file = strdup(b->sites[i].file)};
			j = a->nsites++;
			if (!s->name || !s->caller || !s->file || pdi_u64map_put(&by_name, pdi_hash_str(s->name), j) < 0)
				goto out;
		}
		map[i] = j;
	}
	r = 0;
out:
	pdi_u64map_free(&by_name);
	return r;
}

/* B's models renamed to the merged sites, and its tasks' positions with them. */
static int rename_sites(struct pdi_view *b, const uint32_t *map)
{
	for (size_t c = 0; c < b->nown_models; c++) {
		int r = pdi_model_remap_sites(&b->own_models[c], map, b->nsites);
		if (r < 0)
			return r;
	}
	for (unsigned i = 0; i < b->ntasks; i++)
		if (b->tasks[i].where.site >= 0)
			b->tasks[i].where.site = map[b->tasks[i].where.site];
	return 0;
}

/* A and B as one view: A's sites, then B's new ones; A's tasks, then B's. The tasks keep
 * pointing at their own view's models, so A and B must outlive the result. */
static int join(struct pdi_view *a, struct pdi_view *b, struct pdi_view *ret)
{
	uint32_t *map = calloc(b->nsites + 1, sizeof(*map));
	int r = -ENOMEM;

	if (!map)
		return -ENOMEM;
	if ((r = merge_sites(a, b, map)) < 0 || (r = rename_sites(b, map)) < 0)
		goto out;
	*ret = (struct pdi_view){.name = a->name, .job_id = a->job_id, .step_id = a->step_id, .uid = a->uid,
				 .running = a->running || b->running, .started = a->started, .ended = a->ended,
				 .sites = a->sites, .nsites = a->nsites, .nodes = a->nodes + b->nodes,
				 .ntasks = a->ntasks + b->ntasks};
	if (b->started && (!ret->started || b->started < ret->started))
		ret->started = b->started;
	if (b->ended > ret->ended)
		ret->ended = b->ended;
	ret->tasks = calloc(ret->ntasks + 1, sizeof(*ret->tasks));
	if (!ret->tasks) {
		r = -ENOMEM;
		goto out;
	}
	if (a->ntasks) /* a node with no task of the step has no array */
		memcpy(ret->tasks, a->tasks, a->ntasks * sizeof(*a->tasks));
	if (b->ntasks)
		memcpy(ret->tasks + a->ntasks, b->tasks, b->ntasks * sizeof(*b->tasks));
	r = 0;
out:
	free(map);
	return r;
}

int pdi_view_merge(const uint8_t *pa, size_t alen, const uint8_t *pb, size_t blen, struct pdi_wire_writer *out)
{
	struct pdi_view a = {0}, b = {0}, both = {0};
	int r;

	if (!alen || !blen) { /* nothing from one side: the other, checked */
		if ((r = pdi_view_decode(alen ? pa : pb, alen ? alen : blen, &a)) == 0)
			r = pdi_view_encode(&a, out);
		goto out;
	}
	if ((r = pdi_view_decode(pa, alen, &a)) < 0 || (r = pdi_view_decode(pb, blen, &b)) < 0 ||
	    (r = join(&a, &b, &both)) < 0)
		goto out;
	r = pdi_view_encode(&both, out);
out:
	free(both.tasks); /* the rest of it is A's and B's */
	pdi_view_done(&a);
	pdi_view_done(&b);
	return r;
}


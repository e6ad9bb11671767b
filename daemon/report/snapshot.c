/* SPDX-License-Identifier: GPL-2.0-only */
/* snapshot.c -- a step's view copied on the loop, its live stacks taken on a worker (see
 * snapshot.h). Models are copied through their encoding (model_io), the one definition of
 * what a model holds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "model_io.h"
#include "mpi_funcs.h"
#include "objcache.h"
#include "registry.h"
#include "samples.h"
#include "snapshot.h"
#include "stack_frames.h"
#include "stack_place.h"
#include "stackwalk.h"
#include "view_local.h"

/* ---- the skeleton of a step ---- */

static void skeleton_free(struct pdi_step *k)
{
	if (!k)
		return;
	for (uint32_t i = 0; k->sites && i < k->nsites; i++) {
		free(k->sites[i].name);
		free(k->sites[i].caller);
		free(k->sites[i].file);
	}
	free(k->sites);
	pdi_u64map_free(&k->site_idx);
	for (unsigned i = 0; k->tasks && i < k->ntasks; i++)
		free(k->tasks[i]);
	free(k->tasks);
	free(k->name);
	free(k->executable);
	pdi_site_samples_unref(k->site_samples);
	free(k);
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static int skeleton_of(const struct pdi_step *s, struct pdi_step **ret)
{
	struct pdi_step *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	*k = (struct pdi_step){.phases = s->phases, .uid = s->uid, .job_id = s->job_id, .step_id = s->step_id,
			       .total_tasks = s->total_tasks, .started = s->started, .ended = s->ended};
	k->name = strdup(s->name);
	k->executable = s->executable ? strdup(s->executable) : NULL;
	/* sample runs fetched from the site store: shared, read-only, held until the job is done */
	k->site_samples = pdi_site_samples_ref(s->site_samples);
	k->sites = calloc(s->nsites + 1, sizeof(*k->sites));
	k->tasks = calloc(s->ntasks + 1, sizeof(*k->tasks));
	if (!k->name || (s->executable && !k->executable) || !k->sites || !k->tasks)
		goto nomem;
	for (; k->nsites < s->nsites; k->nsites++) {
		const struct pdi_site *x = &s->sites[k->nsites];
		struct pdi_site *y = &k->sites[k->nsites];

		*y = (struct pdi_site){.key = x->key, .fn = x->fn, .line = x->line, .name = dup_or_empty(x->name),
				       .caller = dup_or_empty(x->caller), .file = dup_or_empty(x->file)};
		if (!y->name || !y->caller || !y->file || pdi_u64map_put(&k->site_idx, y->key, k->nsites) < 0) {
			k->nsites++;
			goto nomem;
		}
	}
	for (; k->ntasks < s->ntasks; k->ntasks++) {
		const struct pdi_task *x = s->tasks[k->ntasks];
		struct pdi_task *y = calloc(1, sizeof(*y));

		if (!y)
			goto nomem;
		*y = (struct pdi_task){.step = k, .pid = x->pid, .rank = x->rank, .pidfd = -1, .state = x->state,
				       .started = x->started, .ended = x->ended, .ended_site = x->ended_site};
		k->tasks[k->ntasks] = y;
	}
	*ret = k;
	return 0;
nomem:
	skeleton_free(k);
	return -ENOMEM;
}

/* ---- the view ---- */

static int copy_model(const struct pdi_model *m, struct pdi_model *ret)
{
	void *buf = NULL;
	size_t len = 0;
	int r = pdi_model_encode(m, &buf, &len);

	if (r == 0)
		r = pdi_model_decode(buf, len, NULL, ret);
	free(buf);
	return r;
}

/* V (pointing into the live step) as a view that owns its tasks and models, its sites those
 * of skeleton K. */
static int own_view(const struct pdi_view *v, struct pdi_step *k, struct pdi_view *ret)
{
	struct pdi_view c = *v;
	int r = -ENOMEM;

	c.name = NULL;
	c.tasks = NULL;
	c.own_models = NULL;
	c.nown_models = 0;
	c.missing = c.missing_why = NULL;
	c.nmissing = 0;
	c.sites = k->sites;
	c.nsites = k->nsites;
	c.own_sites = false;
	c.name = strdup(v->name);
	c.tasks = calloc(v->ntasks + 1, sizeof(*c.tasks));
	c.own_models = calloc(v->ntasks + 1, sizeof(*c.own_models));
	if (!c.name || !c.tasks || !c.own_models)
		goto fail;
	for (unsigned i = 0; i < v->ntasks; i++) {
		c.tasks[i] = v->tasks[i];
		c.tasks[i].stack = NULL;
		c.tasks[i].nstack = 0;
		if ((r = copy_model(v->tasks[i].model, &c.own_models[i])) < 0)
			goto fail;
		c.nown_models++;
		c.tasks[i].model = &c.own_models[i];
	}
	*ret = c;
	return 0;
fail:
	pdi_view_done(&c);
	return r;
}

int pdi_snapshot_take(struct pdi_daemon *d, struct pdi_step *s, struct pdi_snapshot **ret)
{
	struct pdi_snapshot *snap = calloc(1, sizeof(*snap));
	struct pdi_view live;
	int r;

	if (!snap)
		return -ENOMEM;
	r = pdi_view_local(d, s, &live);
	if (r < 0) {
		free(snap);
		return r;
	}
	/* the skeleton last: locating the tasks may have named new sites */
	r = skeleton_of(s, &snap->step);
	if (r == 0)
		r = own_view(&live, snap->step, &snap->view);
	snap->blocked_after_ns = d->up->hang_blocked_after_ns(d, s);
	pdi_view_done(&live);
	if (r < 0) {
		pdi_snapshot_free(snap);
		return r;
	}
	*ret = snap;
	return 0;
}

void pdi_snapshot_free(struct pdi_snapshot *snap)
{
	if (!snap)
		return;
	pdi_view_done(&snap->view);
	skeleton_free(snap->step);
	free(snap);
}

/* ---- live stacks ---- */

/* T's stack: the first KEEP of the N FRAMES walked (the rest freed), then TEXT, the call's place
 * (in place of the first frame dropped, or after all of them when the walk never reached the
 * MPI function). Takes FRAMES, also on failure. */
static int set_stack(struct pdi_view_task *t, char **frames, size_t n, size_t keep, const char *text)
{
	for (size_t k = keep; k < n; k++)
		free(frames[k]);
	if (keep == n) {
		char **more = realloc(frames, (n + 1) * sizeof(*frames));

		if (!more) {
			pdi_stack_frames_free(frames, keep);
			return -ENOMEM;
		}
		frames = more;
	}
	frames[keep] = strdup(text);
	if (!frames[keep]) {
		pdi_stack_frames_free(frames, keep);
		return -ENOMEM;
	}
	t->stack = frames;
	t->nstack = keep + 1;
	return 0;
}

/* The live stack of blocked task T of V, outermost first, down to the application's MPI call
 * (the library's frames below it say nothing about the program), then the call site. */
static int walk_task(const struct pdi_view *v, struct pdi_view_task *t, struct pdi_objcache *objs)
{
	const struct pdi_where *w = &t->where;
	const char *fn = pdi_mpi_funcs[v->sites[w->site].fn].name;
	size_t fnlen = strlen(fn), n, keep = 0;
	struct pdi_maps maps = {0};
	char **frames;
	int r;

	r = pdi_stack_walk(t->pid, w->tid, w->callsite, objs, true, &maps, &frames, &n);
	pdi_maps_free(&maps);
	if (r < 0)
		return r;
	while (keep < n && strncmp(frames[keep], fn, fnlen) &&
	       !(frames[keep][0] == 'P' && !strncmp(frames[keep] + 1, fn, fnlen)) && strcmp(frames[keep], PDI_FRAME_UPROBES))
		keep++;
	return set_stack(t, frames, n, keep, w->text);
}

/* Task T shows as computing since its last seen call, but its probes were thinned since then
 * (unobserved.h): its live stack places it (stack_place.h). In a call, it is there at least
 * since the probes saw in full again (one that began after would have been seen), or, in a
 * polling call, since the hang judge's looks first found it polling without a break
 * (stack_seen.h); computing, it says so; a walk that fails or stops short says nothing. */
static int place_by_stack(struct pdi_view_task *t, uint64_t blocked_after_ns, struct pdi_objcache *objs)
{
	struct pdi_where *w = &t->where;
	uint64_t until = pdi_unobserved_blind_until(&t->model->unobserved, t->model->last_exit), now_ns, polling;
	struct pdi_stack_place p;
	int fn;
	int r = pdi_stack_place(t->pid, objs, true, &p);

	if (r < 0)
		return r;
	if (p.kind != PDI_PLACED_IN_CALL) {
		w->by_stack = p.kind == PDI_PLACED_OUTSIDE_MPI;
		return 0;
	}
	/* in a call: WHERE.FOR_NS was the time since its last seen call ended */
	now_ns = t->model->last_exit + w->for_ns;
	w->for_ns = until < now_ns ? now_ns - until : 0;
	/* in a polling call whose probes stay thinned (UNTIL never comes: HPCC's waiters in
	 * MPI_Test/MPI_Testany loops while a rank spun, "for at least 0 s", not blocked, and no LP):
	 * as long as the hang judge's looks found it polling, look after look */
	fn = pdi_mpi_func_find(p.fn);
	polling = fn >= 0 && pdi_fn_polls((unsigned)fn) ? pdi_stack_seen_polling_since(&t->model->stack_seen, now_ns) : 0;
	if (polling && polling < now_ns && now_ns - polling > w->for_ns)
		w->for_ns = now_ns - polling;
	w->kind = w->for_ns >= blocked_after_ns ? PDI_WHERE_BLOCKED : PDI_WHERE_IN_MPI;
	w->site = -1;
	w->by_stack = true;
	snprintf(w->text, sizeof(w->text), "%s (on its stack: its probes did not see the call begin)", p.fn);
	/* the call path down to the call, as a blocked task's (walk_task) */
	return set_stack(t, p.frames, p.nframes, p.call, w->text);
}

/* Shown as computing while its probes were thinned. */
static bool computing_unseen(const struct pdi_view_task *t)
{
	return t->running && t->where.kind == PDI_WHERE_COMPUTING && !t->where.by_stack &&
	       pdi_stack_place_wanted(t->model, t->where.act.kind);
}

int pdi_snapshot_walk(struct pdi_snapshot *snap)
{
	struct pdi_view *v = &snap->view;
	struct pdi_objcache *objs = NULL;
	unsigned walked = 0;
	int r = 0;

	for (unsigned i = 0; i < v->ntasks && walked < PDI_SNAPSHOT_MAX_WALKS && r != -ENOMEM; i++) {
		struct pdi_view_task *t = &v->tasks[i];
		bool blocked = t->where.kind == PDI_WHERE_BLOCKED && t->where.callsite && t->where.site >= 0 &&
			       (uint64_t)t->where.site < v->nsites;

		if (!blocked && !computing_unseen(t))
			continue;
		/* the job's own objects: the loop's cache is the loop's */
		if (!objs && (r = pdi_objcache_new(&objs)) < 0)
			break;
		walked++;
		r = blocked ? walk_task(v, t, objs) : place_by_stack(t, snap->blocked_after_ns, objs);
	}
	pdi_objcache_free(objs);
	return r == -ENOMEM ? r : 0;
}

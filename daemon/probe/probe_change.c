/* SPDX-License-Identifier: GPL-2.0-only */
/* probe_change.c -- per-function probes for the overhead budget: a task's links replaced in a
 * plan, an attach that may run on a worker, and a commit (see probe_change.h); perf links
 * (kernels without uprobe_multi) replaced in place. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "close_together.h"
#include "mpi_funcs.h"
#include "mpitrace.skel.h"
#include "probe_change.h"
#include "probe_targets.h"
#include "tracer_impl.h"
#include "uprobe_multi.h"

/* One pair of new links: the shared links (FN -1) or function FN's own. */
struct change_set {
	int fn;
	bool with_return;
	unsigned first, n; /* into the change's offs and cookies */
	int fds[2];        /* entry, return; -1 until attached */
};

struct pdi_probe_change {
	pid_t pid;
	int progs[2];             /* the tracer's entry and return programs */
	int object_fd;            /* the probed object, an fd of the change's own (-1: none needed): the
				   * task's may be closed while a worker attaches */
	char path[32];            /* "/proc/self/fd/OBJECT_FD" */
	struct pdi_link_gens next; /* the generations that take the calls once committed */
	uint8_t modes[PDI_LINK_GEN_FUNCS]; /* per function: its new mode, or PDI_PROBE_KEEP */
	bool new_shared;          /* the shared links are rebuilt (a function leaves them) */
	unsigned nsets;
	struct change_set sets[PDI_LINK_GEN_FUNCS + 1];
	uint64_t offs[2 * PDI_MAX_PROBES], cookies[2 * PDI_MAX_PROBES]; /* the shared set, the own ones */
};

static int ensure_fns(struct pdi_attachment *a)
{
	if (a->fns)
		return 0;
	a->fns = calloc(pdi_mpi_nfuncs, sizeof(*a->fns));
	if (!a->fns)
		return -ENOMEM;
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		a->fns[fn].fds[0] = a->fns[fn].fds[1] = -1;
	return 0;
}

/* A generation for P's next links that it never had: links of a change given up may still fire
 * until their close completes, and must never become current (16 bits: they are closed long
 * before the counter comes round). */
static uint16_t new_gen(struct pdi_fn_probes *p)
{
	do
		p->issued++;
	while (p->issued == 0 || p->issued == p->gen);
	return p->issued;
}

/* FDS (entry and return links, -1 unused) join A's links to close, and are -1 after; if memory
 * is short they are closed here, on the caller's time. Apart: an entry link can go at once, a
 * return link may be the last return probe of a call in flight now (retired.h). */
static void retire(struct pdi_attachment *a, int fds[2])
{
	int entry[2] = {fds[0], -1}, ret[2] = {fds[1], -1};

	pdi_links_keep_pair(&a->retired, &a->nretired, entry);
	if (ret[0] >= 0) {
		a->returns_retired_ns = pdi_now_ns();
		if (!a->returns_held_ns)
			a->returns_held_ns = a->returns_retired_ns;
	}
	pdi_links_keep_pair(&a->retired_returns, &a->nretired_returns, ret);
	fds[0] = fds[1] = -1;
}

/* A set of C for function FN (-1: every function that stays in the shared links), with the
 * probes of A's targets at C's generations; none for an empty set. */
static void add_set(struct pdi_probe_change *c, const struct pdi_attachment *a, int fn, bool with_return,
		    bool entry_only, unsigned *used)
{
	const struct pdi_probe_targets *pt = a->targets;
	struct change_set *s = &c->sets[c->nsets];

	*s = (struct change_set){.fn = fn, .with_return = with_return, .first = *used, .fds = {-1, -1}};
	for (unsigned i = 0; i < pt->n; i++) {
		unsigned f = PDI_COOKIE_FN(pt->cookies[i]);

		if (fn >= 0 ? f != (unsigned)fn : a->fns[f].own || c->modes[f] != PDI_PROBE_KEEP)
			continue;
		c->offs[*used] = pt->offsets[i];
		c->cookies[(*used)++] =
			PDI_COOKIE_WITH_GEN(pt->cookies[i] | (entry_only ? PDI_COOKIE_ENTRY_ONLY : 0), c->next.gen[f]);
	}
	s->n = *used - s->first;
	if (s->n > 0)
		c->nsets++;
}

int pdi_probe_change_plan(struct pdi_tracer *t, struct pdi_attachment *a, pid_t pid, const uint8_t *modes,
			  struct pdi_probe_change **ret)
{
	struct pdi_probe_change *c;
	unsigned used = 0;
	bool any = false;
	int r;

	if (!t->multi)
		return -EOPNOTSUPP;
	if (!a->targets || a->object_fd < 0)
		return -EINVAL;
	if ((r = ensure_fns(a)) < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = pid;
	c->object_fd = -1;
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		const struct pdi_fn_probes *p = &a->fns[fn];
		unsigned m = modes[fn];

		/* a function still in the shared links is fully probed already */
		if (m == PDI_PROBE_KEEP || (p->mode == m && (p->own || m == PDI_PROBE_FULL))) {
			c->modes[fn] = PDI_PROBE_KEEP;
			continue;
		}
		c->modes[fn] = (uint8_t)m;
		c->new_shared |= !p->own;
		any = true;
	}
	if (!any) {
		free(c);
		*ret = NULL;
		return 0;
	}
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		struct pdi_fn_probes *p = &a->fns[fn];
		bool moves = c->modes[fn] != PDI_PROBE_KEEP || (c->new_shared && !p->own);

		c->next.gen[fn] = moves ? new_gen(p) : p->gen;
	}
	if (c->new_shared)
		add_set(c, a, -1, true, false, &used);
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		if (c->modes[fn] != PDI_PROBE_KEEP && c->modes[fn] != PDI_PROBE_OFF)
			add_set(c, a, (int)fn, c->modes[fn] == PDI_PROBE_FULL, c->modes[fn] == PDI_PROBE_ENTRY_ONLY, &used);
	if (c->nsets > 0) {
		c->object_fd = fcntl(a->object_fd, F_DUPFD_CLOEXEC, 3);
		if (c->object_fd < 0) {
			r = -errno;
			free(c);
			return r;
		}
		snprintf(c->path, sizeof(c->path), "/proc/self/fd/%d", c->object_fd);
		c->progs[0] = bpf_program__fd(t->skel->progs.mpi_enter);
		c->progs[1] = bpf_program__fd(t->skel->progs.mpi_exit);
	}
	*ret = c;
	return 0;
}

bool pdi_probe_change_needs_attach(const struct pdi_probe_change *c)
{
	return c->nsets > 0;
}

unsigned pdi_probe_change_mode(const struct pdi_probe_change *c, unsigned fn)
{
	return fn < pdi_mpi_nfuncs ? c->modes[fn] : PDI_PROBE_KEEP;
}

int pdi_probe_change_attach(struct pdi_probe_change *c)
{
	for (unsigned i = 0; i < c->nsets; i++) {
		struct change_set *s = &c->sets[i];
		int r;

		if (s->fds[0] >= 0)
			continue;
		r = pdi_uprobe_multi_attach_pair(c->progs, c->path, c->offs + s->first, c->cookies + s->first, s->n,
						 s->with_return, c->pid, s->fds);
		if (r < 0)
			return r;
	}
	return 0;
}

static void change_free(struct pdi_probe_change *c)
{
	if (c->object_fd >= 0)
		close(c->object_fd);
	free(c);
}

int pdi_probe_change_commit(struct pdi_tracer *t, struct pdi_attachment *a, struct pdi_probe_change *c)
{
	__u32 key = (__u32)c->pid;
	int r;

	for (unsigned i = 0; i < c->nsets; i++)
		if (c->sets[i].fds[0] < 0) {
			pdi_probe_change_drop(c, a, NULL, NULL);
			return -EINVAL; /* not attached */
		}
	r = bpf_map__update_elem(t->skel->maps.link_gens, &key, sizeof(key), &c->next, sizeof(c->next), BPF_ANY);
	if (r < 0) {
		pdi_probe_change_drop(c, a, NULL, NULL);
		return r;
	}
	pdi_tracer_procs_changed(t);
	/* from here the new links take the calls */
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		struct pdi_fn_probes *p = &a->fns[fn];

		if (c->modes[fn] != PDI_PROBE_KEEP) {
			retire(a, p->fds);
			p->own = true;
			p->mode = c->modes[fn];
		}
		p->gen = c->next.gen[fn];
	}
	if (c->new_shared)
		retire(a, a->multi_fds);
	for (unsigned i = 0; i < c->nsets; i++) {
		struct change_set *s = &c->sets[i];

		memcpy(s->fn < 0 ? a->multi_fds : a->fns[s->fn].fds, s->fds, sizeof(s->fds));
	}
	change_free(c);
	return 0;
}

void pdi_probe_change_drop(struct pdi_probe_change *c, struct pdi_attachment *a, int **ret_fds, unsigned *ret_n)
{
	int *fds = NULL;
	unsigned n = 0;

	if (!c)
		return;
	if (!a && (fds = malloc(sizeof(*fds) * (2 * c->nsets + 1))))
		for (unsigned i = 0; i < c->nsets; i++)
			for (unsigned k = 0; k < 2; k++)
				if (c->sets[i].fds[k] >= 0)
					fds[n++] = c->sets[i].fds[k];
	for (unsigned i = 0; i < c->nsets; i++) {
		if (a)
			retire(a, c->sets[i].fds);
		else if (!fds)
			pdi_links_close_pair(c->sets[i].fds);
	}
	if (n == 0) {
		free(fds);
		fds = NULL;
	}
	if (ret_fds) {
		*ret_fds = fds;
		*ret_n = n;
	} else {
		for (unsigned i = 0; i < n; i++)
			close(fds[i]);
		free(fds);
	}
	change_free(c);
}

/* perf links: target I's pair sits at links[2 I] (return) and links[2 I + 1] (entry). */
static int set_mode_perf(struct pdi_tracer *t, struct pdi_attachment *a, pid_t pid, unsigned fn,
			 enum pdi_probe_mode mode)
{
	const struct pdi_probe_targets *pt = a->targets;
	int r = 0;

	for (unsigned i = 0; i < pt->n && 2 * i + 1 < a->nlinks; i++) {
		uint64_t cookie = pt->cookies[i];

		if (PDI_COOKIE_FN(cookie) != fn)
			continue;
		for (unsigned k = 0; k < 2; k++) {
			bpf_link__destroy(a->links[2 * i + k]);
			a->links[2 * i + k] = NULL;
		}
		for (int ret = mode == PDI_PROBE_FULL; mode != PDI_PROBE_OFF && ret >= 0 && r == 0; ret--) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret,
				    .bpf_cookie = cookie | (mode == PDI_PROBE_ENTRY_ONLY ? PDI_COOKIE_ENTRY_ONLY : 0));
			struct bpf_program *prog = ret ? t->skel->progs.mpi_exit : t->skel->progs.mpi_enter;
			struct bpf_link *l = bpf_program__attach_uprobe_opts(prog, pid, pt->path, pt->offsets[i], &opts);

			if (!l)
				r = -errno;
			a->links[2 * i + (ret ? 0 : 1)] = l;
		}
	}
	return r;
}

int pdi_tracer_set_mode(struct pdi_tracer *t, struct pdi_attachment *a, pid_t pid, unsigned fn,
			enum pdi_probe_mode mode)
{
	uint8_t modes[PDI_LINK_GEN_FUNCS];
	struct pdi_probe_change *c;
	int r;

	if (fn >= pdi_mpi_nfuncs || !a->targets)
		return -EINVAL;
	if ((r = ensure_fns(a)) < 0)
		return r;
	if (!t->multi) {
		if (a->fns[fn].mode == mode)
			return 0;
		r = set_mode_perf(t, a, pid, fn, mode);
		a->fns[fn].mode = (uint8_t)(r < 0 ? PDI_PROBE_OFF : mode);
		return r;
	}
	memset(modes, PDI_PROBE_KEEP, sizeof(modes));
	modes[fn] = (uint8_t)mode;
	if ((r = pdi_probe_change_plan(t, a, pid, modes, &c)) < 0 || !c)
		return r;
	if ((r = pdi_probe_change_attach(c)) < 0) {
		pdi_probe_change_drop(c, a, NULL, NULL);
		return r;
	}
	return pdi_probe_change_commit(t, a, c);
}

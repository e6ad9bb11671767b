/* SPDX-License-Identifier: GPL-2.0-only */
/* objwarm.c -- a joining process's objects opened and indexed on a worker (see objwarm.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfobj.h"
#include "objcache.h"
#include "objwarm.h"
#include "procmaps.h"

struct pdi_objwarm {
	pid_t pid;
	uint64_t max_bytes;          /* what the cache keeps: no more is read */
	struct pdi_maps to_read;     /* the mappings to read, one per file, paths the job's own */
	int *opened;                 /* per mapping: pdi_objcache_open()'s result */
	int *held_fd;                /* per mapping: the file of the cache's object, or -1 */
	struct pdi_elfobj **objs;    /* and the object when it is 0 */
	bool lines;                  /* the DWARF of every object read, not the executable's alone */
	uint64_t line_at;            /* an address in the first object whose unit's line table is read, or 0 */
};

static bool listed(const struct pdi_maps *v, const struct pdi_mapping *m)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->v[i].dev == m->dev && v->v[i].ino == m->ino)
			return true;
	return false;
}

void pdi_objwarm_free(struct pdi_objwarm *w)
{
	if (!w)
		return;
	for (size_t i = 0; w->objs && i < w->to_read.n; i++)
		pdi_elfobj_free(w->objs[i]);
	for (size_t i = 0; w->held_fd && i < w->to_read.n; i++)
		if (w->held_fd[i] >= 0)
			close(w->held_fd[i]);
	free(w->held_fd);
	free(w->objs);
	free(w->opened);
	pdi_maps_free(&w->to_read);
	free(w);
}

/* M copied into *W's mappings to read (made at the first); 0 or -ENOMEM. */
static int add_mapping(struct pdi_objwarm **w, const struct pdi_mapping *m)
{
	struct pdi_maps *v;

	if (!*w && !(*w = calloc(1, sizeof(**w))))
		return -ENOMEM;
	v = &(*w)->to_read;
	if (listed(v, m))
		return 0;
	if (!(v->n % 16)) {
		struct pdi_mapping *nv = realloc(v->v, sizeof(*nv) * (v->n + 16));

		if (!nv)
			return -ENOMEM;
		v->v = nv;
	}
	v->v[v->n] = *m;
	if (!(v->v[v->n].path = strdup(m->path)))
		return -ENOMEM;
	v->n++;
	return 0;
}

/* W's plan done (R: how it went): for process PID of cache C, into *RET. */
static int plan_done(struct pdi_objcache *c, pid_t pid, int r, struct pdi_objwarm *w, struct pdi_objwarm **ret)
{
	struct pdi_objcache_stats st;

	pdi_objcache_stats(c, &st);
	if (r == 0 && w) {
		w->pid = pid;
		w->max_bytes = st.max_bytes;
		w->opened = calloc(w->to_read.n, sizeof(*w->opened));
		w->objs = calloc(w->to_read.n, sizeof(*w->objs));
		w->held_fd = malloc(w->to_read.n * sizeof(*w->held_fd));
		if (!w->opened || !w->objs || !w->held_fd)
			r = -ENOMEM;
		for (size_t i = 0; r == 0 && i < w->to_read.n; i++) {
			w->opened[i] = -ECANCELED; /* until run: a job cancelled at shutdown reads nothing */
			w->held_fd[i] = -1;
		}
	}
	if (r < 0) {
		if (w)
			pdi_objwarm_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

int pdi_objwarm_plan(struct pdi_objcache *c, pid_t pid, const struct pdi_maps *maps, struct pdi_objwarm **ret)
{
	struct pdi_objwarm *w = NULL;
	struct pdi_objcache_stats st;
	int r = 0;

	/* a process decides how many files it maps: no more are read than the cache keeps */
	pdi_objcache_stats(c, &st);
	for (size_t i = 0; i < maps->n && r == 0 && (!w || w->to_read.n < st.max_objects); i++) {
		const struct pdi_mapping *m = &maps->v[i];

		if (m->exec && m->path && !pdi_objcache_holds(c, m))
			r = add_mapping(&w, m);
	}
	return plan_done(c, pid, r, w, ret);
}

int pdi_objwarm_plan_lines(struct pdi_objcache *c, pid_t pid, const struct pdi_mapping *const *maps, unsigned n,
			   uint64_t line_at, struct pdi_objwarm **ret)
{
	struct pdi_objwarm *w = NULL;
	int r = 0;

	for (unsigned i = 0; i < n && r == 0; i++)
		if (maps[i]->path)
			r = add_mapping(&w, maps[i]);
	if (r == 0 && w) {
		w->lines = true;
		/* the first mapping is MAPS[0]'s: add_mapping() keeps the order */
		w->line_at = maps[0]->path ? line_at : 0;
	}
	r = plan_done(c, pid, r, w, &w);
	if (r < 0)
		return r;
	/* an object the cache holds (its DWARF or a line table is what is read) is read again from
	 * its very file: the process may have exited by the time the worker runs, its calls waiting */
	for (size_t i = 0; w && i < w->to_read.n; i++)
		(void)pdi_objcache_dup_held(c, &w->to_read.v[i], &w->held_fd[i]);
	*ret = w;
	return 0;
}

bool pdi_objwarm_covers(const struct pdi_objwarm *a, const struct pdi_objwarm *b)
{
	for (size_t i = 0; i < b->to_read.n; i++)
		if (!listed(&a->to_read, &b->to_read.v[i]))
			return false;
	return true;
}

void pdi_objwarm_run(struct pdi_objwarm *w)
{
	dev_t exe_dev;
	ino_t exe_ino;
	bool have_exe = pdi_exe_identity(w->pid, &exe_dev, &exe_ino) == 0;
	uint64_t bytes = 0;

	for (size_t i = 0; i < w->to_read.n; i++) {
		const struct pdi_mapping *m = &w->to_read.v[i];

		if (bytes >= w->max_bytes)
			break; /* the rest, if the join needs them, are opened then */
		if (w->held_fd[i] >= 0) {
			w->opened[i] = pdi_objcache_open_fd(w->held_fd[i], &w->objs[i]);
			w->held_fd[i] = -1; /* taken, also on failure */
		} else {
			w->opened[i] = pdi_objcache_open(w->pid, m, &w->objs[i]);
		}
		if (w->opened[i] == 0)
			bytes += pdi_elfobj_file_size(w->objs[i]);
		/* the DWARF of the executable only, where the program's call sites mostly are: reading
		 * every library's (their debug files when installed) took 6-7 times as long as opening
		 * them all, for libraries whose lines are never asked for */
		if (w->opened[i] == 0)
			pdi_elfobj_preload(w->objs[i], w->lines || (have_exe && m->dev == exe_dev && m->ino == exe_ino));
		else
			w->objs[i] = NULL;
		if (i == 0 && w->line_at && w->objs[i])
			pdi_elfobj_preload_line(w->objs[i], w->line_at);
	}
}

unsigned pdi_objwarm_commit(struct pdi_objcache *c, struct pdi_objwarm *w)
{
	unsigned n = 0;

	if (!w)
		return 0;
	for (size_t i = 0; i < w->to_read.n; i++) {
		n += w->opened[i] == 0;
		/* the cache takes the object, or what it read that the cache's own lacks (its DWARF) */
		(void)pdi_objcache_adopt(c, w->pid, &w->to_read.v[i], w->opened[i], w->objs[i], NULL);
		w->objs[i] = NULL;
	}
	pdi_objwarm_free(w);
	return n;
}

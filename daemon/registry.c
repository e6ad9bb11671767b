/* SPDX-License-Identifier: GPL-2.0-only */
/* registry.c -- steps, tasks and their lifetimes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "registry.h"
#include "trapped.h"

#define DEAD_TASK (PDI_U64MAP_NONE - 1)

void pdi_registry_init(struct pdi_registry *r, const struct pdi_model_config *cfg, const struct pdi_registry_parts *parts)
{
	*r = (struct pdi_registry){.parts = parts, .model_cfg = *cfg};
}

static void task_free(const struct pdi_registry *r, struct pdi_task *t)
{
	if (!t)
		return;
	pdi_attachment_detach(&t->att);
	r->parts->task_free(t);
	pdi_model_done(&t->model);
	pdi_u64map_free(&t->site_cache);
	pdi_maps_free(&t->maps);
	if (t->pidfd >= 0)
		close(t->pidfd);
	if (t->usage_fd >= 0)
		close(t->usage_fd);
	free(t->ended_in);
	free(t->init_chain);
	free(t);
}

void pdi_step_answer_waiters(struct pdi_step *s, bool built, int status, const char *json, const char *summary,
			     const char *why)
{
	struct pdi_step_waiter **p = &s->waiters;

	while (*p) {
		struct pdi_step_waiter *w = *p;

		if (built && w->stored) {
			p = &w->next;
			continue;
		}
		*p = w->next;
		w->answer(w->ctx, status, json, summary, why);
		free(w);
	}
}

static void step_free(const struct pdi_registry *r, struct pdi_step *s)
{
	/* nobody waits for a step that is gone */
	pdi_step_answer_waiters(s, false, -ESTALE, NULL, NULL, "the step is gone");
	for (uint32_t i = 0; i < s->nsites; i++) {
		free(s->sites[i].name);
		free(s->sites[i].caller);
		free(s->sites[i].file);
	}
	free(s->sites);
	pdi_u64map_free(&s->site_idx);
	free(s->tasks);
	free(s->name);
	free(s->executable);
	for (unsigned i = 0; i < s->nnodes; i++)
		free(s->nodes[i]);
	free(s->nodes);
	free(s->node);
	free(s->report_json);
	free(s->report_summary);
	r->parts->step_free(s);
	free(s);
}

void pdi_registry_done(struct pdi_registry *r)
{
	for (unsigned i = 0; i < r->ntasks; i++)
		task_free(r, r->tasks[i]);
	for (unsigned i = 0; i < r->nsteps; i++)
		step_free(r, r->steps[i]);
	free(r->tasks);
	free(r->steps);
	for (unsigned i = 0; i < r->nwatches; i++)
		pdi_ident_release(&r->watches[i].ident);
	free(r->watches);
	pdi_u64map_free(&r->task_by_pid);
	*r = (struct pdi_registry){0};
}

struct pdi_step *pdi_registry_find_step(struct pdi_registry *r, const char *name)
{
	for (unsigned i = 0; i < r->nsteps; i++)
		if (strcmp(r->steps[i]->name, name) == 0)
			return r->steps[i];
	return NULL;
}

int pdi_registry_get_step(struct pdi_registry *r, const char *name, uid_t uid, struct pdi_step **ret)
{
	struct pdi_step *s = pdi_registry_find_step(r, name), **v;

	if (s) {
		*ret = s;
		return 0;
	}
	s = calloc(1, sizeof(*s));
	v = realloc(r->steps, sizeof(*v) * (r->nsteps + 1));
	if (v)
		r->steps = v;
	if (!s || !v || !(s->name = strdup(name))) {
		free(s);
		return -ENOMEM;
	}
	s->started = time(NULL);
	s->uid = uid;
	s->used = ++r->clock;
	r->steps[r->nsteps++] = s;
	*ret = s;
	return 0;
}

void pdi_registry_drop_if_empty(struct pdi_registry *r, struct pdi_step *s)
{
	if (s->ntasks > 0 || s->nwatches > 0)
		return;
	for (unsigned i = 0; i < r->nsteps; i++)
		if (r->steps[i] == s) {
			memmove(&r->steps[i], &r->steps[i + 1], sizeof(*r->steps) * (r->nsteps - i - 1));
			r->nsteps--;
			step_free(r, s);
			return;
		}
}

/* A step that gets a task or a watch runs again: its end and its report are undone. */
static void reopen(struct pdi_step *s)
{
	if (s->ended || s->end_started)
		s->end_gen++;
	/* and written whole at its next write: the store may have expired it meanwhile */
	s->nsites_stored = 0;
	for (unsigned i = 0; i < s->ntasks; i++)
		s->tasks[i]->stored_final = false;
	s->ended = 0;
	s->end_started = false;
	s->announced = false;
	s->stored = false;
	free(s->report_json);
	free(s->report_summary);
	s->report_json = s->report_summary = NULL;
}

int pdi_registry_add_watch(struct pdi_registry *r, struct pdi_step *s, struct pdi_ident *root, int rank)
{
	struct pdi_watch *v;

	if (pdi_registry_find_watch(r, root->pid))
		return -EEXIST;
	v = realloc(r->watches, sizeof(*v) * (r->nwatches + 1));
	if (!v)
		return -ENOMEM;
	r->watches = v;
	r->watches[r->nwatches++] = (struct pdi_watch){.root = root->pid, .ident = *root, .step = s, .rank = rank};
	root->pidfd = -1;
	pdi_trapped_note(r->runtime_dir, &r->watches[r->nwatches - 1].ident);
	s->nwatches++;
	reopen(s);
	return 0;
}

struct pdi_watch *pdi_registry_find_watch(struct pdi_registry *r, pid_t root)
{
	for (unsigned i = 0; i < r->nwatches; i++)
		if (r->watches[i].root == root)
			return &r->watches[i];
	return NULL;
}

static void maybe_end_step(struct pdi_step *s)
{
	if (!pdi_step_running(s) && !s->ended)
		s->ended = time(NULL);
}

void pdi_registry_remove_watch(struct pdi_registry *r, pid_t root)
{
	struct pdi_watch *w = pdi_registry_find_watch(r, root);
	struct pdi_step *s;

	if (!w)
		return;
	s = w->step;
	pdi_trapped_forget(r->runtime_dir, &w->ident);
	pdi_ident_release(&w->ident);
	*w = r->watches[--r->nwatches];
	s->nwatches--;
	maybe_end_step(s);
}

bool pdi_step_running(const struct pdi_step *s)
{
	return s->nwatches > 0 || pdi_step_running_tasks(s) > 0;
}

struct pdi_task *pdi_registry_find_task(struct pdi_registry *r, pid_t pid)
{
	uint32_t i = pdi_u64map_get(&r->task_by_pid, (uint64_t)pid);

	return i == PDI_U64MAP_NONE || i == DEAD_TASK ? NULL : r->tasks[i];
}

/* A new task of S in both lists (the step's sorted by rank); not yet findable by pid. */
static int append_task(struct pdi_registry *r, struct pdi_step *s, pid_t pid, int rank, struct pdi_task **ret)
{
	struct pdi_model_config cfg = r->model_cfg;
	struct pdi_task *t, **tv, **sv;
	unsigned at;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	tv = realloc(r->tasks, sizeof(*tv) * (r->ntasks + 1));
	if (tv)
		r->tasks = tv;
	sv = realloc(s->tasks, sizeof(*sv) * (s->ntasks + 1));
	if (sv)
		s->tasks = sv;
	if (!tv || !sv) {
		free(t);
		return -ENOMEM;
	}
	t->id = r->next_task_id++;
	t->pidfd = -1;
	t->usage_fd = -1;
	t->ended_site = -1;
	t->att.multi_fds[0] = t->att.multi_fds[1] = -1;
	t->att.object_fd = -1;
	t->step = s;
	t->pid = pid;
	t->rank = rank;
	t->started = time(NULL);
	if (s->phases != PDI_PHASES_DEFAULT) /* what the user asked for beats the site default */
		cfg.auto_phases = s->phases == PDI_PHASES_AUTO;
	/* the same instant for every task of the step: they choose alike how to cut phases */
	cfg.auto_slots_from_ns = (int64_t)s->started * 1000000000ll + PDI_MODEL_SLOTS_AFTER_NS;
	cfg.auto_slots_early_ns = (int64_t)s->started * 1000000000ll + PDI_MODEL_EARLY_AFTER_NS;
	pdi_model_init(&t->model, &cfg);
	r->tasks[r->ntasks++] = t;
	/* a step lists its tasks by rank, those without one last */
	at = s->ntasks;
	while (at > 0 && rank >= 0 && (s->tasks[at - 1]->rank < 0 || s->tasks[at - 1]->rank > rank)) {
		s->tasks[at] = s->tasks[at - 1];
		at--;
	}
	s->tasks[at] = t;
	s->ntasks++;
	*ret = t;
	return 0;
}

int pdi_registry_add_task(struct pdi_registry *r, struct pdi_step *s, pid_t pid, int rank,
			  struct pdi_task **ret)
{
	struct pdi_task *t;
	int e;

	if (pdi_registry_find_task(r, pid))
		return -EEXIST;
	/* room in the pid map first: a task must never be listed yet unfindable */
	e = pdi_u64map_put(&r->task_by_pid, (uint64_t)pid, DEAD_TASK);
	if (e < 0)
		return e;
	e = append_task(r, s, pid, rank, &t);
	if (e < 0)
		return e;
	(void)pdi_u64map_put(&r->task_by_pid, (uint64_t)pid, r->ntasks - 1);
	reopen(s);
	*ret = t;
	return 0;
}

int pdi_registry_add_ended_task(struct pdi_registry *r, struct pdi_step *s, pid_t pid, int rank,
				struct pdi_task **ret)
{
	struct pdi_task *t;
	int e = append_task(r, s, pid, rank, &t);

	if (e < 0)
		return e;
	t->state = PDI_TASK_ENDED;
	t->ended = t->started;
	*ret = t;
	return 0;
}

void pdi_registry_end_task(struct pdi_registry *r, struct pdi_task *t)
{
	if (t->state == PDI_TASK_ENDED)
		return;
	t->state = PDI_TASK_ENDED;
	t->ended = time(NULL);
	pdi_attachment_detach(&t->att);
	/* the maps and site cache only serve a live process */
	pdi_maps_free(&t->maps);
	pdi_u64map_free(&t->site_cache);
	if (t->pidfd >= 0) {
		close(t->pidfd);
		t->pidfd = -1;
	}
	if (t->usage_fd >= 0) {
		close(t->usage_fd);
		t->usage_fd = -1;
	}
	(void)pdi_u64map_put(&r->task_by_pid, (uint64_t)t->pid, DEAD_TASK);
	maybe_end_step(t->step);
}

/* pid -> index of every running task, again: indices moved, or ended pids piled up. */
static void reindex(struct pdi_registry *r)
{
	pdi_u64map_free(&r->task_by_pid);
	for (unsigned i = 0; i < r->ntasks; i++)
		if (r->tasks[i]->state == PDI_TASK_RUNNING)
			(void)pdi_u64map_put(&r->task_by_pid, (uint64_t)r->tasks[i]->pid, i);
}

void pdi_registry_remove_step(struct pdi_registry *r, struct pdi_step *s)
{
	unsigned n = 0, i;

	for (i = 0; i < r->ntasks; i++) {
		if (r->tasks[i]->step == s)
			task_free(r, r->tasks[i]);
		else
			r->tasks[n++] = r->tasks[i];
	}
	r->ntasks = n;
	for (i = r->nwatches; i-- > 0;)
		if (r->watches[i].step == s) {
			pdi_trapped_forget(r->runtime_dir, &r->watches[i].ident);
			pdi_ident_release(&r->watches[i].ident);
			r->watches[i] = r->watches[--r->nwatches];
		}
	for (i = 0; i < r->nsteps && r->steps[i] != s; i++)
		;
	if (i < r->nsteps) {
		memmove(&r->steps[i], &r->steps[i + 1], sizeof(*r->steps) * (r->nsteps - i - 1));
		r->nsteps--;
	}
	step_free(r, s);
	/* a failed allocation here leaves a running task unfindable by pid: its events are
	 * counted as unknown until the next rebuild, nothing worse */
	reindex(r);
}

void pdi_registry_touch(struct pdi_registry *r, struct pdi_step *s)
{
	s->used = ++r->clock;
}

uint64_t pdi_step_bytes(const struct pdi_step *s)
{
	uint64_t n = sizeof(*s) + s->ntasks * (sizeof(struct pdi_task) + sizeof(void *)) +
		     s->nsites * sizeof(*s->sites) + pdi_u64map_bytes(&s->site_idx);

	for (unsigned i = 0; i < s->ntasks; i++)
		n += s->tasks[i]->model.bytes;
	for (uint32_t i = 0; i < s->nsites; i++)
		n += strlen(s->sites[i].name ? s->sites[i].name : "") + strlen(s->sites[i].caller ? s->sites[i].caller : "") +
		     strlen(s->sites[i].file ? s->sites[i].file : "") + 3;
	if (s->report_json)
		n += strlen(s->report_json) + 1;
	if (s->report_summary)
		n += strlen(s->report_summary) + 1;
	return n;
}

bool pdi_step_evictable(const struct pdi_registry *r, const struct pdi_step *s)
{
	/* and the hang judge has saved its run's record (within a second of its end) */
	return s->ended && s->announced && s->stored && !s->store_pending && !s->waiters && !pdi_step_running(s) &&
	       r->parts->step_settled(s);
}

unsigned pdi_registry_evict(struct pdi_registry *r, const struct pdi_cache_limits *limits)
{
	unsigned kept = 0, evicted = 0;
	uint64_t bytes = 0;

	for (;;) {
		struct pdi_step *lru = NULL;

		kept = 0;
		bytes = 0;
		for (unsigned i = 0; i < r->nsteps; i++) {
			struct pdi_step *s = r->steps[i];

			if (!pdi_step_evictable(r, s))
				continue;
			kept++;
			bytes += pdi_step_bytes(s);
			if (!lru || s->used < lru->used)
				lru = s;
		}
		if (!lru || (kept <= limits->max_steps && bytes <= limits->max_bytes))
			return evicted;
		pdi_registry_remove_step(r, lru);
		evicted++;
	}
}

unsigned pdi_step_running_tasks(const struct pdi_step *s)
{
	unsigned n = 0;

	for (unsigned i = 0; i < s->ntasks; i++)
		n += s->tasks[i]->state == PDI_TASK_RUNNING;
	return n;
}

int pdi_proc_environ(pid_t pid, char **ret, size_t *ret_len)
{
	char path[64], *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, r = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	for (;;) {
		if (len + 4096 > cap) {
			char *b = realloc(buf, cap + 65536);
			if (!b) {
				r = -ENOMEM;
				break;
			}
			buf = b;
			cap += 65536;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (r < 0 || !buf) {
		free(buf);
		return r < 0 ? r : -ENOENT;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

const char *pdi_env_get(const char *env, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = env; p < env + len; p += strlen(p) + 1)
		if (strncmp(p, name, n) == 0 && p[n] == '=')
			return p + n + 1;
	return NULL;
}

int pdi_proc_rank(pid_t pid)
{
	/* Open MPI's mpirun, PMIx (Slurm, Open MPI 4+), MPICH's hydra and Slurm's PMI */
	static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
	int rank = -ENOENT, r;
	size_t len;
	char *env;

	if ((r = pdi_proc_environ(pid, &env, &len)) < 0)
		return r;
	for (unsigned v = 0; v < ELEMENTSOF(vars) && rank < 0; v++) {
		const char *val = pdi_env_get(env, len, vars[v]);
		char *end;
		long x;

		if (!val)
			continue;
		x = strtol(val, &end, 10);
		if (*end == '\0' && end != val && x >= 0 && x <= INT32_MAX)
			rank = (int)x;
	}
	free(env);
	return rank;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* api.c -- what pdimond answers, whatever carries the question (D-Bus, see bus.c).
 *
 * Every operation gets the caller and decides what it may do: attaching probes is as
 * strong as ptrace, so it takes root; registering Slurm tasks takes root or SlurmUser;
 * a user reads only their own steps, root and the admin group read all. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>

#include "api.h"
#include "daemon.h"
#include "persist.h"
#include "report.h"
#include "json.h"
#include "log.h"
#include "tracer.h"

#define STEP_NAME_MAX 128

static struct pdi_reply ok_text(char *text)
{
	return (struct pdi_reply){text ? 0 : -ENOMEM, text ? text : strdup("out of memory")};
}

static struct pdi_reply fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static struct pdi_reply fail(int status, const char *fmt, ...)
{
	struct pdi_reply r = {status, NULL};
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&r.text, fmt, ap) < 0)
		r.text = NULL;
	va_end(ap);
	return r;
}

static bool valid_step_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > STEP_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

static const char *attach_error(int r)
{
	switch (r) {
	case -ESRCH: return "no such process";
	case -ENOENT: return "it maps no MPI library (is it an MPI program?)";
	case -EEXIST: return "already monitored";
	case -EACCES:
	case -EPERM: return "permission denied";
	default: return strerror(-r);
	}
}

/* A step of this daemon's life, or one from the store. */
static struct pdi_step *find_step(struct pdi_daemon *d, const char *name)
{
	struct pdi_step *s = pdi_registry_find_step(&d->reg, name);

	if (!s && valid_step_name(name) && pdi_persist_load(d, name, &s) < 0)
		s = NULL;
	return s;
}

struct pdi_reply pdi_api_attach(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				const pid_t *pids, unsigned n)
{
	struct pdi_task **added;
	struct pdi_step *s;
	struct pdi_json j;
	int r;

	if (c->uid != 0)
		return fail(-EPERM, "attaching probes to processes needs root");
	if (!valid_step_name(step))
		return fail(-EINVAL, "invalid step name '%.64s': use 1-%d of [A-Za-z0-9._-]", step, STEP_NAME_MAX);
	if (n == 0)
		return fail(-EINVAL, "no pid to attach to");
	/* check every pid first, so that a typo leaves nothing half attached */
	for (unsigned i = 0; i < n; i++) {
		if (pids[i] <= 0)
			return fail(-EINVAL, "invalid pid %d", (int)pids[i]);
		r = pdi_registry_find_task(&d->reg, pids[i]) ? -EEXIST : pdi_tracer_check(d->objs, pids[i]);
		if (r < 0)
			return fail(r, "pid %d: %s; nothing attached", (int)pids[i], attach_error(r));
	}
	s = find_step(d, step);
	if (s && (!pdi_step_running(s) || s->uid != c->uid))
		return fail(-EEXIST, "step %s exists already; choose another name with --step", step);
	r = pdi_registry_get_step(&d->reg, step, c->uid, &s);
	if (r < 0)
		return fail(r, "cannot create step: %s", strerror(-r));
	added = calloc(n, sizeof(*added));
	if (!added)
		return fail(-ENOMEM, "out of memory");
	for (unsigned i = 0; i < n; i++) {
		r = pdi_task_begin(d, s, pids[i], -1, &added[i]);
		if (r < 0) {
			/* it vanished since the check: the tasks attached so far stay, ended */
			for (unsigned k = 0; k < i; k++)
				pdi_task_finish(d, added[k]);
			free(added);
			pdi_registry_drop_if_empty(&d->reg, s);
			return fail(r, "pid %d: %s", (int)pids[i], attach_error(r));
		}
	}
	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_kv_str(&j, "step", s->name);
	pdi_json_key(&j, "attached");
	pdi_json_arr_begin(&j);
	for (unsigned i = 0; i < n; i++) {
		pdi_json_obj_begin(&j);
		pdi_json_kv_int(&j, "pid", added[i]->pid);
		pdi_json_kv_int(&j, "rank", added[i]->rank);
		pdi_json_kv_str(&j, "mpi_library", added[i]->att.object);
		pdi_json_obj_end(&j);
	}
	pdi_json_arr_end(&j);
	pdi_json_obj_end(&j);
	free(added);
	return ok_text(pdi_json_steal(&j));
}

/* Watch ROOT: the MPI processes it starts join STEP at their MPI_Init, with RANK if the
 * launcher knows it (-1: from their environment). */
static int watch(struct pdi_daemon *d, struct pdi_step *s, pid_t root, int rank)
{
	int r = pdi_registry_add_watch(&d->reg, s, root, rank);

	if (r < 0)
		return r;
	r = pdi_tracer_watch(d->tracer, root);
	if (r < 0)
		pdi_registry_remove_watch(&d->reg, root);
	return r;
}

/* End the tasks of S whose process has exited but whose pidfd the loop has not seen yet:
 * whoever says a step is over should find it over. */
static void reap_exited(struct pdi_daemon *d, struct pdi_step *s)
{
	for (unsigned i = 0; i < s->ntasks; i++) {
		struct pdi_task *t = s->tasks[i];
		struct pollfd p = {.fd = t->pidfd, .events = POLLIN};

		if (t->state == PDI_TASK_RUNNING && t->pidfd >= 0 && poll(&p, 1, 0) == 1)
			pdi_task_finish(d, t);
	}
}

static void unwatch(struct pdi_daemon *d, pid_t root)
{
	struct pdi_watch *w = pdi_registry_find_watch(&d->reg, root);
	struct pdi_step *s = w ? w->step : NULL;

	pdi_tracer_unwatch(d->tracer, root);
	pdi_registry_remove_watch(&d->reg, root);
	if (s) {
		reap_exited(d, s);
		pdi_step_ended(d, s); /* if that was all it waited for */
	}
}

struct pdi_reply pdi_api_watch(struct pdi_daemon *d, const struct pdi_caller *c, const char *step, pid_t pid)
{
	struct pdi_step *s;
	int r;

	if (c->uid != 0)
		return fail(-EPERM, "monitoring processes needs root");
	if (!valid_step_name(step))
		return fail(-EINVAL, "invalid step name '%.64s': use 1-%d of [A-Za-z0-9._-]", step, STEP_NAME_MAX);
	if (find_step(d, step))
		return fail(-EEXIST, "step %s exists already; choose another name with --step", step);
	if (pid <= 0 || kill(pid, 0) < 0)
		return fail(-ESRCH, "pid %d: no such process", (int)pid);
	r = pdi_registry_get_step(&d->reg, step, c->uid, &s);
	if (r < 0)
		return fail(r, "cannot create step: %s", strerror(-r));
	r = watch(d, s, pid, -1);
	if (r < 0)
		return fail(r, "cannot watch pid %d: %s", (int)pid, strerror(-r));
	return ok_text(strdup("{}"));
}

struct pdi_reply pdi_api_unwatch(struct pdi_daemon *d, const struct pdi_caller *c, pid_t pid)
{
	if (c->uid != 0)
		return fail(-EPERM, "monitoring processes needs root");
	if (!pdi_registry_find_watch(&d->reg, pid))
		return fail(-ENOENT, "pid %d is not watched", (int)pid);
	/* its tasks' exits still in the pipeline are seen by their pidfds */
	(void)pdi_tracer_drain(d->tracer);
	unwatch(d, pid);
	return ok_text(strdup("{}"));
}

static bool may_launch(struct pdi_daemon *d, const struct pdi_caller *c)
{
	return c->uid == 0 || (d->slurm_uid != (uid_t)-1 && c->uid == d->slurm_uid);
}

/* A Slurm task, forked but not yet executing the program: it joins at its MPI_Init. */
static int parse_step_options(const char *options, enum pdi_phases *ret)
{
	char buf[256], *save = NULL;

	*ret = PDI_PHASES_DEFAULT;
	if (strlen(options) >= sizeof(buf))
		return -E2BIG;
	strcpy(buf, options);
	for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		if (!strcmp(o, "phases=auto"))
			*ret = PDI_PHASES_AUTO;
		else if (!strcmp(o, "phases=pcontrol"))
			*ret = PDI_PHASES_PCONTROL;
		else
			return -EINVAL;
	}
	return 0;
}

struct pdi_reply pdi_api_register_task(struct pdi_daemon *d, const struct pdi_caller *c, uint32_t job,
				       uint32_t stepid, uint32_t rank, pid_t pid, uid_t uid, const char *options)
{
	enum pdi_phases phases;
	char name[32];
	struct pdi_step *s;
	int r;

	if (!may_launch(d, c))
		return fail(-EPERM, "only root or the SlurmUser may register tasks");
	if (parse_step_options(options, &phases) < 0)
		return fail(-EINVAL, "invalid options '%.64s': use phases=auto or phases=pcontrol", options);
	if (pid <= 0 || rank > INT32_MAX)
		return fail(-EINVAL, "invalid pid %d or rank %u", (int)pid, rank);
	if (kill(pid, 0) < 0)
		return fail(-ESRCH, "pid %d: no such process", (int)pid);
	snprintf(name, sizeof(name), "%u.%u", job, stepid);
	r = pdi_registry_get_step(&d->reg, name, uid, &s);
	if (r < 0)
		return fail(r, "cannot create step: %s", strerror(-r));
	if (s->uid != uid)
		return fail(-EPERM, "step %s belongs to uid %u, not %u", name, (unsigned)s->uid, (unsigned)uid);
	s->job_id = job;
	s->step_id = stepid;
	s->ending = false;
	s->phases = phases;
	r = watch(d, s, pid, (int)rank);
	if (r < 0) {
		pdi_registry_drop_if_empty(&d->reg, s);
		return fail(r, "cannot watch pid %d: %s", (int)pid, strerror(-r));
	}
	log_info("Step %s: task %u registered (pid %d, uid %u)", name, rank, (int)pid, (unsigned)uid);
	return ok_text(strdup("{}"));
}

/* The step is over (its tasks have exited, or it was cancelled): stop waiting for tasks
 * that never reached MPI_Init, and end those whose process is gone; the step ends with
 * its last task. */
struct pdi_reply pdi_api_end_step(struct pdi_daemon *d, const struct pdi_caller *c, uint32_t job, uint32_t stepid)
{
	char name[32];
	struct pdi_step *s;

	if (!may_launch(d, c))
		return fail(-EPERM, "only root or the SlurmUser may end steps");
	snprintf(name, sizeof(name), "%u.%u", job, stepid);
	s = pdi_registry_find_step(&d->reg, name);
	if (!s)
		return fail(-ENOENT, "no step %s", name);
	(void)pdi_tracer_drain(d->tracer);
	s->ending = true;
	for (unsigned i = d->reg.nwatches; i-- > 0;)
		if (d->reg.watches[i].step == s)
			unwatch(d, d->reg.watches[i].root);
	reap_exited(d, s);
	pdi_step_ended(d, s);
	return ok_text(strdup("{}"));
}

static bool may_read(const struct pdi_caller *c, const struct pdi_step *s)
{
	return c->admin || c->uid == s->uid;
}

struct pdi_reply pdi_api_show(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
			      const char *format)
{
	struct pdi_step *s;

	if (strcmp(format, "json") && strcmp(format, "text") && strcmp(format, "dot"))
		return fail(-EINVAL, "unknown format '%.16s': use json, text or dot", format);
	s = find_step(d, step);
	if (!s || !may_read(c, s))
		/* another user's step is as good as absent: its name is not theirs to learn */
		return fail(-ENOENT, "no step named '%.*s' (pdimon steps lists them)", STEP_NAME_MAX, step);
	(void)pdi_tracer_drain(d->tracer);
	return ok_text(pdi_show_step(d, s, format));
}

struct pdi_reply pdi_api_report(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				char **ret_summary)
{
	struct pdi_step *s = find_step(d, step);
	char *json;
	int r;

	if (!s || !may_read(c, s))
		return fail(-ENOENT, "no step named '%.*s' (pdimon steps lists them)", STEP_NAME_MAX, step);
	r = pdi_report_build(d, s, &json, ret_summary);
	if (r < 0)
		return fail(r, "cannot build the report: %s", strerror(-r));
	return (struct pdi_reply){0, json};
}

struct pdi_reply pdi_api_status(struct pdi_daemon *d, const struct pdi_caller *c, bool json)
{
	(void)c;
	return ok_text(pdi_show_status(d, json));
}

struct pdi_reply pdi_api_steps(struct pdi_daemon *d, const struct pdi_caller *c, bool json, bool all)
{
	struct pdi_step_row *rows = NULL;
	size_t n = 0;
	char *text;
	int r;

	if (all && (r = pdi_persist_rows(d, &rows, &n)) < 0)
		return fail(r, "cannot read the stored steps: %s", strerror(-r));
	text = pdi_show_steps(d, json, c->admin ? (uid_t)-1 : c->uid, rows, n);
	pdi_persist_rows_free(rows, n);
	return ok_text(text);
}

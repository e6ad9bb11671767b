/* SPDX-License-Identifier: GPL-2.0-only */
/* api.c -- what pdimond answers, whatever carries the question (D-Bus, see bus.c).
 *
 * Every operation gets the caller and decides what it may do: attaching probes is as
 * strong as ptrace, so it takes root; registering Slurm tasks takes root or SlurmUser;
 * a user reads only their own steps, root and the admin group read all. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "ahead_attach.h"
#include "api.h"
#include "daemon.h"
#include "ingest.h"
#include "step_end.h"
#include "persist.h"
#include "procmaps.h"
#include "program.h"
#include "report.h"
#include "show.h"
#include "json.h"
#include "log.h"
#include "site_store.h"
#include "tracer.h"
#include "trend_store.h"

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

/* Whether a step called NAME exists, in memory or in the store (not loaded). 1, 0, or
 * -EBUSY when the store cannot say now. */
static int step_exists(struct pdi_daemon *d, const char *name)
{
	uid_t owner;
	int r;

	if (pdi_registry_find_step(&d->reg, name))
		return 1;
	r = pdi_persist_owner(d, name, &owner);
	return r == 0 ? 1 : r == -ENOENT ? 0 : r;
}

/* The reply to a caller who asked for step NAME and got R from pdi_find_readable(). */
static struct pdi_reply not_found(int r, const char *name)
{
	/* another user's step is as good as absent: its name is not theirs to learn */
	if (r == -ENOENT || r == -EACCES || r == -EEXIST)
		return fail(-ENOENT, "no step named '%.*s' (pdimon steps lists them)", PDI_STEP_NAME_MAX, name);
	if (r == -EBUSY)
		return fail(r, "cannot read step '%.*s' now: the database is locked by another process; try again",
			    PDI_STEP_NAME_MAX, name);
	return fail(r, "cannot read step '%.*s': %s", PDI_STEP_NAME_MAX, name, strerror(-r));
}

/* A step named NAME exists already (or the store cannot tell): the reply, or NULL text. */
static struct pdi_reply name_taken(struct pdi_daemon *d, const char *name)
{
	int r = step_exists(d, name);

	if (r > 0)
		return fail(-EEXIST, "step %s exists already; choose another name with --step", name);
	if (r < 0)
		return fail(r, "cannot tell whether step %s exists: %s", name,
			    r == -EBUSY ? "the database is locked by another process; try again" : strerror(-r));
	return (struct pdi_reply){0, NULL};
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
	if (!pdi_step_name_valid(step))
		return fail(-EINVAL, "invalid step name '%.64s': use 1-%d of [A-Za-z0-9._-]", step, PDI_STEP_NAME_MAX);
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
	s = pdi_registry_find_step(&d->reg, step);
	if (s && (!pdi_step_running(s) || s->uid != c->uid))
		return fail(-EEXIST, "step %s exists already; choose another name with --step", step);
	if (!s) {
		struct pdi_reply taken = name_taken(d, step);

		if (taken.status < 0)
			return taken;
	}
	r = pdi_registry_get_step(&d->reg, step, c->uid, &s);
	if (r < 0)
		return fail(r, "cannot create step: %s", strerror(-r));
	added = calloc(n, sizeof(*added));
	if (!added)
		return fail(-ENOMEM, "out of memory");
	for (unsigned i = 0; i < n; i++) {
		struct pdi_ident id;

		r = pdi_ident_pin(pids[i], &id);
		if (r == 0) {
			r = pdi_task_begin(d, s, &id, -1, &added[i]);
			pdi_ident_release(&id);
		}
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
static int watch(struct pdi_daemon *d, struct pdi_step *s, struct pdi_ident *root, int rank)
{
	pid_t pid = root->pid;
	int r = pdi_registry_add_watch(&d->reg, s, root, rank);

	if (r < 0)
		return r;
	r = pdi_tracer_watch(d->tracer, pid);
	if (r < 0)
		pdi_registry_remove_watch(&d->reg, pid);
	return r;
}

/* End the tasks of S whose process has exited but whose pidfd the loop has not seen yet:
 * whoever says a step is over should find it over. One whose calls wait for a worker ends once
 * they are in, as at its pidfd (pdi_task_exited()): not on the loop, reading what the worker
 * reads. */
static void reap_exited(struct pdi_daemon *d, struct pdi_step *s)
{
	for (unsigned i = 0; i < s->ntasks; i++) {
		struct pdi_task *t = s->tasks[i];

		if (t->state == PDI_TASK_RUNNING && pdi_pidfd_exited(t->pidfd))
			pdi_task_exited(d, t);
	}
}

void pdi_unwatch(struct pdi_daemon *d, pid_t root)
{
	struct pdi_watch *w;
	struct pdi_step *s;

	/* the tree's processes that reached MPI_Init join first, even those that ended already */
	(void)pdi_tracer_drain(d->tracer);
	w = pdi_registry_find_watch(&d->reg, root);
	/* and those whose probes are still being attached, when they are: the watch goes then */
	if (w && pdi_ahead_pending_root(d, root)) {
		w->unwatch_due = true;
		return;
	}
	s = w ? w->step : NULL;
	pdi_tracer_unwatch(d->tracer, root);
	pdi_registry_remove_watch(&d->reg, root);
	if (s) {
		reap_exited(d, s);
		pdi_step_ended(d, s); /* if that was all it waited for */
	}
}

struct pdi_reply pdi_api_watch(struct pdi_daemon *d, const struct pdi_caller *c, const char *step, pid_t pid)
{
	struct pdi_maps maps = {0};
	struct pdi_ident id;
	struct pdi_step *s;
	int r;

	if (c->uid != 0)
		return fail(-EPERM, "monitoring processes needs root");
	if (!pdi_step_name_valid(step))
		return fail(-EINVAL, "invalid step name '%.64s': use 1-%d of [A-Za-z0-9._-]", step, PDI_STEP_NAME_MAX);
	struct pdi_reply taken = name_taken(d, step);

	if (taken.status < 0)
		return taken;
	if (pdi_ident_pin(pid, &id) < 0)
		return fail(-ESRCH, "pid %d: no such process", (int)pid);
	/* a watch catches a process at its MPI_Init trap; one that maps a trapped MPI library runs an
	 * MPI program already, may be past it, and would never join: attaching is what joins it
	 * (before its MPI_Init too). Its maps only: `pdimon run`'s child, watched before its exec,
	 * must not have pdimon's own objects read on the loop */
	if (pdi_maps_read(pid, &maps) == 0) {
		bool mpi = pdi_tracer_maps_trapped(d->tracer, &maps);

		pdi_maps_free(&maps);
		if (mpi) {
			pdi_ident_release(&id);
			return fail(-EBUSY, "pid %d runs an MPI program already, and watching catches processes as they "
				    "start: use 'pdimon attach --step %s --pid %d'", (int)pid, step, (int)pid);
		}
	}
	r = pdi_registry_get_step(&d->reg, step, c->uid, &s);
	if (r == 0)
		r = watch(d, s, &id, -1);
	pdi_ident_release(&id);
	if (r < 0)
		return fail(r, "cannot watch pid %d: %s", (int)pid, strerror(-r));
	return ok_text(strdup("{}"));
}

static void later_done(void *ctx, int status, const char *json, const char *summary, const char *why)
{
	struct pdi_later *to = ctx;

	/* the step has ended, stored and announced, with or without its report */
	(void)status, (void)json, (void)summary, (void)why;
	to->answer(to->ctx, ok_text(strdup("{}")), NULL);
	free(to);
}

struct pdi_reply pdi_api_unwatch(struct pdi_daemon *d, const struct pdi_caller *c, pid_t pid,
				 const struct pdi_later *later)
{
	struct pdi_watch *w = pdi_registry_find_watch(&d->reg, pid);
	struct pdi_later *to;
	struct pdi_step *s;

	if (c->uid != 0)
		return fail(-EPERM, "monitoring processes needs root");
	if (!w)
		return fail(-ENOENT, "pid %d is not watched", (int)pid);
	s = w->step;
	/* its tasks' exits still in the pipeline are seen by their pidfds */
	(void)pdi_tracer_drain(d->tracer);
	pdi_unwatch(d, pid);
	/* the command of pdimon run is over: it returns once the step's end is stored */
	if ((to = malloc(sizeof(*to)))) {
		*to = *later;
		if (pdi_step_wait_end(s, true, later_done, to) == 0)
			return (struct pdi_reply){PDI_REPLY_LATER, NULL};
		free(to);
	}
	return ok_text(strdup("{}"));
}

static bool may_launch(struct pdi_daemon *d, const struct pdi_caller *c)
{
	return c->uid == 0 || (d->slurm_uid != (uid_t)-1 && c->uid == d->slurm_uid);
}

/* What slurmstepd says of a step with each of its tasks, comma-separated:
 *   phases=auto|pcontrol   how the user wants phases cut
 *   node=NAME              this node, as Slurm names it (NodeName, maybe not the host name)
 *   nodes=A+B+...          the step's nodes in Slurm's order (the first roots the gather),
 *                          expanded by the plugin with Slurm's own hostlist code; '+' is in
 *                          no host name. Sent until a registration with it succeeded.
 *   ntasks=N               the step's tasks on all its nodes (with nodes=)
 *   size=N                 the input size the user gave (--pdi-monitor=size=N), for trends
 *   on-hang=ACTION         report, command or cancel: what to do when the step hangs
 *   notify=on|off          whether to say the step's health on its output while it runs
 * Unknown keys are refused: a plugin and a daemon out of step should say so. */
struct step_options {
	enum pdi_phases phases;
	char **nodes;
	unsigned nnodes;
	char *node;
	uint32_t ntasks;
	unsigned long long input_size;
	enum pdi_on_hang on_hang;     /* PDI_ON_HANG_DEFAULT: the site's */
	int notify;                   /* -1: the site's; 0 off, 1 on */
};

#define STEP_OPTIONS_MAX (16u << 20) /* a million nodes with names of 15 characters */
#define STEP_NODES_MAX (1u << 20)    /* as many as a gather takes (gather.h) */
#define NODE_NAME_MAX 255

static void step_options_done(struct step_options *o)
{
	for (unsigned i = 0; i < o->nnodes; i++)
		free(o->nodes[i]);
	free(o->nodes);
	free(o->node);
	*o = (struct step_options){0};
}

/* Host names and Slurm NodeNames: letters, digits, '.', '_', '-'. */
static bool valid_node_name(const char *s, size_t n)
{
	if (n == 0 || n > NODE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* "A+B+C" into O's node list; -EINVAL for an empty or invalid name, too many nodes. */
static int split_nodes(const char *list, struct step_options *o)
{
	unsigned n = 1;

	for (const char *p = list; *p; p++)
		n += *p == '+';
	if (n > STEP_NODES_MAX)
		return -EINVAL;
	o->nodes = calloc(n, sizeof(*o->nodes));
	if (!o->nodes)
		return -ENOMEM;
	for (const char *p = list;; p++) {
		const char *end = strchrnul(p, '+');

		if (!valid_node_name(p, (size_t)(end - p)))
			return -EINVAL;
		o->nodes[o->nnodes] = strndup(p, (size_t)(end - p));
		if (!o->nodes[o->nnodes])
			return -ENOMEM;
		o->nnodes++;
		if (!*end)
			return 0;
		p = end;
	}
}

static int parse_ntasks(const char *s, uint32_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > INT32_MAX || *s == '-' || *s == '+')
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static int parse_step_options(const char *options, struct step_options *ret)
{
	char *buf, *save = NULL;
	int r = 0;

	*ret = (struct step_options){.phases = PDI_PHASES_DEFAULT, .notify = -1};
	if (strlen(options) > STEP_OPTIONS_MAX)
		return -E2BIG;
	buf = strdup(options);
	if (!buf)
		return -ENOMEM;
	for (char *o = strtok_r(buf, ",", &save); o && r >= 0; o = strtok_r(NULL, ",", &save)) {
		if (!strcmp(o, "phases=auto"))
			ret->phases = PDI_PHASES_AUTO;
		else if (!strcmp(o, "phases=pcontrol"))
			ret->phases = PDI_PHASES_PCONTROL;
		else if (!strncmp(o, "node=", 5) && !ret->node && valid_node_name(o + 5, strlen(o + 5)))
			r = (ret->node = strdup(o + 5)) ? 0 : -ENOMEM;
		else if (!strncmp(o, "nodes=", 6) && !ret->nodes)
			r = split_nodes(o + 6, ret);
		else if (!strncmp(o, "ntasks=", 7) && !ret->ntasks)
			r = parse_ntasks(o + 7, &ret->ntasks);
		else if (!strncmp(o, "size=", 5) && !ret->input_size)
			r = pdi_input_size_parse(o + 5, &ret->input_size);
		else if (!strncmp(o, "on-hang=", 8))
			r = pdi_on_hang_parse(o + 8, &ret->on_hang);
		else if (!strcmp(o, "notify=on") || !strcmp(o, "notify=off"))
			ret->notify = !strcmp(o, "notify=on");
		else
			r = -EINVAL;
	}
	free(buf);
	/* this node must be one of the step's */
	if (r >= 0 && ret->node && ret->nodes) {
		unsigned i = 0;

		while (i < ret->nnodes && strcmp(ret->nodes[i], ret->node))
			i++;
		if (i == ret->nnodes)
			r = -EINVAL;
	}
	if (r < 0)
		step_options_done(ret);
	return r;
}

/* The first names of S's node list for a log line: "a+b+...+h (+N more)". */
static void nodes_preview(const struct pdi_step *s, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < s->nnodes && i < 8 && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "+" : "", s->nodes[i]);
	if (s->nnodes > 8 && n < len)
		snprintf(buf + n, len - n, " (+%u more)", s->nnodes - 8);
}

/* Is ID the task of Slurm job JOB, step STEPID: a child of that step's slurmstepd, which runs
 * as root and names its step in its title ("slurmstepd: [JOB.STEP]")? */
static bool slurm_task_of(const struct pdi_ident *id, uint32_t job, uint32_t stepid)
{
	char fn[64], title[64], want[64];
	struct pdi_ident parent;
	bool ok = false;
	ssize_t n;
	int fd;

	if (pdi_ident_pin(id->ppid, &parent) < 0)
		return false;
	snprintf(fn, sizeof(fn), "/proc/%d/cmdline", (int)parent.pid);
	snprintf(want, sizeof(want), "slurmstepd: [%u.%u]", job, stepid);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, title, sizeof(title) - 1);
		close(fd);
		title[n > 0 ? n : 0] = '\0';
		ok = parent.uid == 0 && !strcmp(title, want) && pdi_ident_alive(&parent);
	}
	pdi_ident_release(&parent);
	return ok;
}

/* Why caller C may not register ID as a task of (JOB, STEPID) owned by UID, or NULL. Root is
 * trusted; the SlurmUser may only name a task of that job (a child of its slurmstepd) run by
 * that user, or it could hand anyone's process to anyone. */
static const char *task_refusal(const struct pdi_caller *c, const struct pdi_ident *id, uint32_t job,
				uint32_t stepid, uid_t uid)
{
	if (c->uid == 0)
		return NULL;
	if (id->uid != uid || id->euid != uid)
		return "the process does not belong to the uid given";
	if (!slurm_task_of(id, job, stepid))
		return "the process is not a task of that job step";
	return NULL;
}

/* A Slurm task, forked but not yet executing the program: it joins at its MPI_Init. */
struct pdi_reply pdi_api_register_task(struct pdi_daemon *d, const struct pdi_caller *c, uint32_t job,
				       uint32_t stepid, uint32_t rank, pid_t pid, uid_t uid, const char *options)
{
	struct pdi_ident id = {.pidfd = -1};
	struct step_options o;
	struct pdi_reply reply;
	const char *why;
	char name[32], nodes[256];
	struct pdi_step *s;
	int r;

	if (!may_launch(d, c))
		return fail(-EPERM, "only root or the SlurmUser may register tasks");
	r = parse_step_options(options, &o);
	if (r == -ENOMEM)
		return fail(r, "cannot parse options: %s", strerror(-r));
	if (r < 0)
		return fail(-EINVAL, "invalid options '%.64s': use phases=auto or phases=pcontrol, node=NAME, "
				     "nodes=NAME+NAME... (NAME of [A-Za-z0-9._-], NAME in the nodes), ntasks=N, size=N, "
				     "on-hang=report|command|cancel, notify=on|off", options);
	if (pid <= 0 || rank > INT32_MAX) {
		reply = fail(-EINVAL, "invalid pid %d or rank %u", (int)pid, rank);
		goto out;
	}
	if (pdi_ident_pin((pid_t)pid, &id) < 0) {
		reply = fail(-ESRCH, "pid %d: no such process", (int)pid);
		goto out;
	}
	why = task_refusal(c, &id, job, stepid, uid);
	if (why) {
		log_warning_limited(c->uid, "Refused to register pid %d for step %u.%u of uid %u (asked by uid %u): %s",
				    (int)pid, job, stepid, (unsigned)uid, (unsigned)c->uid, why);
		reply = fail(-EPERM, "pid %d: %s", (int)pid, why);
		goto out;
	}
	snprintf(name, sizeof(name), "%u.%u", job, stepid);
	r = pdi_registry_get_step(&d->reg, name, uid, &s);
	if (r < 0) {
		reply = fail(r, "cannot create step: %s", strerror(-r));
		goto out;
	}
	if (s->uid != uid) {
		reply = fail(-EPERM, "step %s belongs to uid %u, not %u", name, (unsigned)s->uid, (unsigned)uid);
		goto out;
	}
	s->job_id = job;
	s->step_id = stepid;
	s->ending = false;
	s->phases = o.phases;
	r = watch(d, s, &id, (int)rank);
	if (r < 0) {
		pdi_registry_drop_if_empty(&d->reg, s);
		reply = fail(r, "cannot watch pid %d: %s", (int)pid, strerror(-r));
		goto out;
	}
	log_info("Step %s: task %u registered (pid %d, uid %u)", name, rank, (int)pid, (unsigned)uid);
	/* the first registration that says sets them: every slurmstepd of the step sends the same */
	if (o.nodes && !s->nodes) {
		s->nodes = o.nodes;
		s->nnodes = o.nnodes;
		o.nodes = NULL;
		o.nnodes = 0;
	}
	if (o.ntasks && !s->total_tasks)
		s->total_tasks = o.ntasks;
	if (o.input_size)
		s->input_size = o.input_size;
	if (o.on_hang != PDI_ON_HANG_DEFAULT)
		s->on_hang = (uint8_t)o.on_hang;
	if (o.notify >= 0)
		s->quiet = !o.notify;
	if (o.node && !s->node) {
		s->node = o.node;
		o.node = NULL;
		nodes_preview(s, nodes, sizeof(nodes));
		log_info("Step %s: on %u node%s (%s), this one %s", name, s->nnodes, s->nnodes == 1 ? "" : "s",
			 nodes, s->node);
	}
	reply = ok_text(strdup("{}"));
out:
	pdi_ident_release(&id);
	step_options_done(&o);
	return reply;
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
			pdi_unwatch(d, d->reg.watches[i].root);
	reap_exited(d, s);
	pdi_step_ended(d, s);
	return ok_text(strdup("{}"));
}

static bool valid_format(const char *format)
{
	return !strcmp(format, "json") || !strcmp(format, "text") || !strcmp(format, "dot");
}

struct pdi_reply pdi_api_show(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
			      const char *format)
{
	struct pdi_step *s;
	int r;

	if (!valid_format(format))
		return fail(-EINVAL, "unknown format '%.16s': use json, text or dot", format);
	if ((r = pdi_find_readable(d, c, step, &s)) < 0)
		return not_found(r, step);
	(void)pdi_tracer_drain(d->tracer);
	return ok_text(pdi_show_step(d, s, format));
}

/* ---- answers that come later: a report or an analysis made on a worker ---- */

struct later_call {
	struct pdi_later to;
	bool report;                  /* GetReport: answers with a summary too */
	char step[PDI_STEP_NAME_MAX + 1];
};

static struct later_call *later_new(const struct pdi_later *to, const char *step, bool report)
{
	struct later_call *lc = calloc(1, sizeof(*lc));

	if (lc) {
		lc->to = *to;
		lc->report = report;
		snprintf(lc->step, sizeof(lc->step), "%s", step);
	}
	return lc;
}

/* Answer LC's caller with STATUS and TEXT (and SUMMARY), both taken, or WHY. */
static void later_answer(struct later_call *lc, int status, char *text, char *summary, const char *why)
{
	struct pdi_reply rep = {0, text};

	if (status == 0 && (!text || (lc->report && !summary))) {
		free(text);
		free(summary);
		text = summary = NULL;
		status = -ENOMEM;
		why = "out of memory";
	}
	if (status == -ENOENT)
		rep = not_found(status, lc->step);
	else if (status < 0)
		rep = fail(status, "cannot %s step '%s': %s", lc->report ? "report on" : "analyse", lc->step,
			   why && *why ? why : strerror(-status));
	if (status < 0) {
		free(text);
		free(summary);
		summary = NULL;
	}
	lc->to.answer(lc->to.ctx, rep, summary);
	free(lc);
}

static void later_from_job(struct pdi_daemon *d, void *ctx, struct pdi_report_result *res)
{
	char *text = res->text, *summary = res->summary;

	(void)d;
	res->text = res->summary = NULL;
	later_answer(ctx, res->status, text, summary, res->why);
}

static void later_from_step_end(void *ctx, int status, const char *json, const char *summary, const char *why)
{
	later_answer(ctx, status, status == 0 ? strdup(json) : NULL, status == 0 ? strdup(summary) : NULL, why);
}

/* Start WHAT of S for C, answered later through TO. */
static struct pdi_reply start_later(struct pdi_daemon *d, const struct pdi_caller *c, struct pdi_step *s,
				    enum pdi_report_what what, const char *format, const struct pdi_later *to)
{
	struct later_call *lc = later_new(to, s->name, what == PDI_REPORT);
	int r;

	if (!lc)
		return fail(-ENOMEM, "out of memory");
	/* the report of the step's end is on its way: wait for it rather than make another */
	if (what == PDI_REPORT && pdi_step_wait_end(s, false, later_from_step_end, lc) == 0)
		return (struct pdi_reply){PDI_REPLY_LATER, NULL};
	/* an ended step's report is its owner's, whoever may read it asks */
	r = pdi_report_start(d, s, what == PDI_REPORT && s->ended ? s->uid : c->uid, what, format, later_from_job, lc);
	if (r < 0) {
		free(lc);
		return fail(r, "cannot %s step '%s' now: %s", what == PDI_REPORT ? "report on" : "analyse", s->name,
			    r == -EBUSY ? "pdimond has too much work queued; try again" : strerror(-r));
	}
	return (struct pdi_reply){PDI_REPLY_LATER, NULL};
}

/* A copy of S's cached report (and its summary), or NULL text when it has none. */
static struct pdi_reply cached_report(const struct pdi_step *s, char **ret_summary)
{
	char *json, *summary;

	if (!s->report_json)
		return (struct pdi_reply){0, NULL};
	json = strdup(s->report_json);
	summary = ret_summary ? strdup(s->report_summary) : NULL;
	if (!json || (ret_summary && !summary)) {
		free(json);
		free(summary);
		return fail(-ENOMEM, "out of memory");
	}
	if (ret_summary)
		*ret_summary = summary;
	return (struct pdi_reply){0, json};
}

struct pdi_reply pdi_api_report(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				char **ret_summary, const struct pdi_later *later)
{
	struct pdi_reply rep;
	struct pdi_step *s;
	int r;

	if ((r = pdi_find_readable(d, c, step, &s)) < 0)
		return not_found(r, step);
	rep = cached_report(s, ret_summary);
	if (rep.status < 0 || rep.text)
		return rep;
	return start_later(d, c, s, PDI_REPORT, "json", later);
}

static bool reports_for_all(const struct pdi_daemon *d, const struct pdi_step *s)
{
	return s->nnodes <= 1 || (d->cfg.node_name && !strcmp(s->nodes[0], d->cfg.node_name));
}

struct pdi_reply pdi_api_analyze(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				 const char *format, const struct pdi_later *later)
{
	struct pdi_step *s;
	struct pdi_reply rep;
	uint32_t job, stepid;
	struct later_call *lc;
	char tail;
	int r;

	if (!valid_format(format))
		return fail(-EINVAL, "unknown format '%.16s': use json, text or dot", format);
	r = pdi_find_readable(d, c, step, &s);
	/* a Slurm step with no task here: gathered from its nodes, as Slurm names them */
	if (r == -ENOENT && sscanf(step, "%" SCNu32 ".%" SCNu32 "%c", &job, &stepid, &tail) == 2) {
		if (!(lc = later_new(later, step, false)))
			return fail(-ENOMEM, "out of memory");
		r = pdi_report_start_elsewhere(d, job, stepid, c->uid, format, later_from_job, lc);
		if (r == 0)
			return (struct pdi_reply){PDI_REPLY_LATER, NULL};
		free(lc);
		if (r != -ENOENT)
			return fail(r, "cannot analyse step '%.*s' from its nodes: %s", PDI_STEP_NAME_MAX, step, strerror(-r));
	}
	if (r < 0)
		return not_found(r, step);
	/* the report is the whole step's on its first node, and on a step of one node */
	if (!strcmp(format, "json") && reports_for_all(d, s)) {
		rep = cached_report(s, NULL);
		if (rep.status < 0 || rep.text)
			return rep;
	}
	return start_later(d, c, s, PDI_ANALYSIS, format, later);
}

#define PROGRAM_MAX 255

/* The site store's answer (site_store.h) to the caller waiting through a struct pdi_later. */
static void trends_answer(void *ctx, int status, const char *text)
{
	struct pdi_later *to = ctx;

	to->answer(to->ctx, status < 0 ? fail(status, "%s", text) : ok_text(strdup(text)), NULL);
	free(to);
}

struct pdi_reply pdi_api_trends(struct pdi_daemon *d, const struct pdi_caller *c, const char *program,
				const char *format, const struct pdi_later *later)
{
	struct pdi_later *to;
	struct pdi_trend_runs runs = {0};
	char why[512], *text;
	int r;

	if (strcmp(format, "json") && strcmp(format, "text") && strcmp(format, "svg"))
		return fail(-EINVAL, "unknown format '%.16s': use json, text or svg", format);
	if (!*program || strlen(program) > PROGRAM_MAX || strchr(program, '\n'))
		return fail(-EINVAL, "invalid program name: give its path, its file name or its build ID");
	if (!d->store)
		return fail(-ENOENT, "no store to read runs from: pdimond keeps none (database is empty in pdimond.conf)");
	/* the site's runs, when there is a site store: answered once its lane has them */
	if (later && d->site && (to = malloc(sizeof(*to)))) {
		*to = *later;
		r = pdi_site_store_trends(d, program, c->uid, c->admin, format, trends_answer, to);
		if (r == 0)
			return (struct pdi_reply){PDI_REPLY_LATER, NULL};
		free(to);
		if (r == -EBUSY)
			return fail(r, "the site store has too many queries waiting: try again in a moment");
	}
	r = pdi_trend_runs_local(d->store, program, c->uid, c->admin, &runs);
	if (r < 0)
		return fail(r, "cannot read the stored runs: %s", strerror(-r));
	r = pdi_trend_runs_render(&runs, program, "local store", format, &text, why, sizeof(why));
	pdi_trend_runs_done(&runs);
	if (r < 0)
		return fail(r, "%s", why);
	return ok_text(text);
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
		return fail(r, "cannot read the stored steps: %s",
			    r == -EBUSY ? "the database is locked by another process; try again" : strerror(-r));
	text = pdi_show_steps(d, json, c->admin ? (uid_t)-1 : c->uid, rows, n);
	pdi_persist_rows_free(rows, n);
	return ok_text(text);
}

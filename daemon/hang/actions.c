/* SPDX-License-Identifier: GPL-2.0-only */
/* actions.c -- the site's command, or the step cancelled, when a step hangs (actions.h).
 *
 * A command runs on a worker (worker.h): spawned, then waited for through its pidfd until
 * its time is up, when it is killed. pdimond never waits for it on the loop, and a command
 * that hangs costs one worker thread for on_hang_command_timeout_s at most. What it did
 * comes back to the loop as the step's action, logged and reported. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actions.h"
#include "daemon.h"
#include "log.h"
#include "health_state.h"
#include "history.h"
#include "worker.h"

extern char **environ;

#define NS 1000000000ull
#define SCANCEL_TIMEOUT_S 30
#define MAX_ENV 8

struct spawn_job {
	struct pdi_job job;
	struct pdi_daemon *d;
	char *step;
	time_t started;                /* the step's start: the step it was for */
	const char *what;              /* "command" or "cancel" */
	char *argv[4];
	char *env[MAX_ENV + 1];        /* added to pdimond's environment */
	unsigned timeout_s;
	int status;                    /* waitpid's, when it ran */
	int err;                       /* it could not be run or waited for; -ETIMEDOUT: killed */
};

static void job_free(struct spawn_job *j)
{
	for (unsigned i = 0; i < ELEMENTSOF(j->argv); i++)
		free(j->argv[i]);
	for (unsigned i = 0; i < MAX_ENV; i++)
		free(j->env[i]);
	free(j->step);
	free(j);
}

/* pdimond's environment with J's variables first (they win over inherited ones). */
static char **environment(struct spawn_job *j)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + MAX_ENV + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (unsigned i = 0; j->env[i]; i++)
		env[k++] = j->env[i];
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "PDIMON_", 7))
			env[k++] = environ[i];
	return env;
}

static void job_run(struct pdi_job *pj)
{
	struct spawn_job *j = pdi_job_of(pj, struct spawn_job, job);
	posix_spawn_file_actions_t fa;
	char **env = environment(j);
	struct pollfd p = {.events = POLLIN};
	pid_t pid;
	int r;

	if (!env) {
		j->err = -ENOMEM;
		return;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	r = posix_spawnp(&pid, j->argv[0], &fa, NULL, j->argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (r) {
		j->err = -r;
		return;
	}
	p.fd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* its time: the pidfd becomes readable when it exits */
	if (p.fd >= 0) {
		time_t deadline = time(NULL) + (time_t)j->timeout_s, left;

		do
			left = deadline - time(NULL);
		while ((r = poll(&p, 1, left > 0 ? (int)left * 1000 : 0)) < 0 && errno == EINTR);
		if (r == 0) {
			j->err = -ETIMEDOUT;
			(void)kill(pid, SIGKILL);
		}
		close(p.fd);
	}
	while (waitpid(pid, &j->status, 0) < 0 && errno == EINTR)
		;
}

/* What this file did about S's health (WHAT, OK, in words) into its log; a cancel, done or
 * not, is saved at once, so that the store knows whether the step was cancelled. */
static void acted(struct pdi_daemon *d, struct pdi_step *s, const char *what, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void acted(struct pdi_daemon *d, struct pdi_step *s, const char *what, bool ok, const char *fmt, ...)
{
	char detail[sizeof(((struct pdi_health_action *)0)->detail)];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (pdi_step_health_acted(s, what, ok, "%s", detail) && !strcmp(what, "cancel"))
		pdi_hang_history_save(d, s);
}

static void job_done(struct pdi_job *pj, bool cancelled)
{
	struct spawn_job *j = pdi_job_of(pj, struct spawn_job, job);
	struct pdi_step *s = pdi_registry_find_step(&j->d->reg, j->step);
	bool ok = !cancelled && !j->err && WIFEXITED(j->status) && WEXITSTATUS(j->status) == 0;
	char result[120];

	if (cancelled)
		snprintf(result, sizeof(result), "not run: pdimond is stopping");
	else if (j->err == -ETIMEDOUT)
		snprintf(result, sizeof(result), "killed after %u s", j->timeout_s);
	else if (j->err)
		snprintf(result, sizeof(result), "cannot run: %s", strerror(-j->err));
	else if (WIFEXITED(j->status))
		snprintf(result, sizeof(result), "exit status %d", WEXITSTATUS(j->status));
	else
		snprintf(result, sizeof(result), "killed by signal %d", WTERMSIG(j->status));
	if (ok)
		log_info("Step %s: %s %s: %s", j->step, j->what, j->argv[0], result);
	else
		log_warning("Step %s: %s %s: %s", j->step, j->what, j->argv[0], result);
	if (s && s->started == j->started)
		acted(j->d, s, j->what, ok, "%s %s %s: %s", j->argv[0], j->argv[1],
		      j->argv[2] ? j->argv[2] : "", result);
	job_free(j);
}

static int setenvf(struct spawn_job *j, unsigned i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int setenvf(struct spawn_job *j, unsigned i, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&j->env[i], fmt, ap);
	va_end(ap);
	if (r < 0)
		j->env[i] = NULL;
	return r < 0 ? -ENOMEM : 0;
}

static void submit(struct pdi_daemon *d, struct pdi_step *s, struct spawn_job *j)
{
	int r = pdi_workers_submit(d->workers, &j->job);

	if (r < 0) {
		log_warning_errno(r, "Step %s: cannot start %s %s: %m", s->name, j->what, j->argv[0]);
		acted(d, s, j->what, false, "%s: not started: %s", j->argv[0], strerror(-r));
		job_free(j);
	}
}

static struct spawn_job *job_new(struct pdi_daemon *d, struct pdi_step *s, const char *what, unsigned timeout_s)
{
	struct spawn_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->job = (struct pdi_job){.run = job_run, .done = job_done};
	j->d = d;
	j->what = what;
	j->timeout_s = timeout_s;
	j->started = s->started;
	if (!(j->step = strdup(s->name))) {
		free(j);
		return NULL;
	}
	return j;
}

void pdi_hang_run_command(struct pdi_daemon *d, struct pdi_step *s, const char *line)
{
	time_t since = 0;
	struct spawn_job *j;

	if (!d->cfg.on_hang_command) {
		log_warning_limited(0, "Step %s: on-hang=command, but no on_hang_command is set: only reported", s->name);
		acted(d, s, "command", false, "no on_hang_command is set");
		return;
	}
	(void)pdi_step_health_of(s, &since);
	j = job_new(d, s, "command", d->cfg.on_hang_command_timeout_s);
	if (!j || !(j->argv[0] = strdup(d->cfg.on_hang_command)) || !(j->argv[1] = strdup(s->name)) ||
	    !(j->argv[2] = strdup("hung")) || setenvf(j, 0, "PDIMON_STEP=%s", s->name) < 0 ||
	    setenvf(j, 1, "PDIMON_JOB_ID=%u", s->job_id) < 0 || setenvf(j, 2, "PDIMON_STEP_ID=%u", s->step_id) < 0 ||
	    setenvf(j, 3, "PDIMON_HEALTH=hung") < 0 || setenvf(j, 4, "PDIMON_SINCE=%lld", (long long)since) < 0 ||
	    setenvf(j, 5, "PDIMON_VERDICT=pdimon: %s", line) < 0 ||
	    setenvf(j, 6, "PDIMON_NODE=%s", d->cfg.node_name ? d->cfg.node_name : "") < 0) {
		log_warning("Step %s: cannot run %s: out of memory", s->name, d->cfg.on_hang_command);
		if (j)
			job_free(j);
		return;
	}
	submit(d, s, j);
}

/* A step of no Slurm job: SIGTERM to its running tasks here, through their pidfds. */
static void terminate_tasks(struct pdi_daemon *d, struct pdi_step *s)
{
	unsigned n = 0, failed = 0;

	for (unsigned i = 0; i < s->ntasks; i++) {
		struct pdi_task *t = s->tasks[i];

		if (t->state != PDI_TASK_RUNNING)
			continue;
		if (syscall(SYS_pidfd_send_signal, t->pidfd, SIGTERM, NULL, 0) == 0)
			n++;
		else
			failed++;
	}
	log_warning("Step %s cancelled: hung past its grace; SIGTERM to %u task%s%s", s->name, n, n == 1 ? "" : "s",
		    failed ? " (some had exited)" : "");
	acted(d, s, "cancel", n > 0, "SIGTERM to %u task%s", n, n == 1 ? "" : "s");
}

void pdi_hang_cancel(struct pdi_daemon *d, struct pdi_step *s, const char *line)
{
	struct spawn_job *j;

	(void)line;
	if (!s->job_id) {
		terminate_tasks(d, s);
		return;
	}
	j = job_new(d, s, "cancel", SCANCEL_TIMEOUT_S);
	if (!j || !(j->argv[0] = strdup("scancel")) || asprintf(&j->argv[1], "%u.%u", s->job_id, s->step_id) < 0) {
		if (j)
			j->argv[1] = NULL;
		log_warning("Step %s: cannot cancel it: out of memory", s->name);
		if (j)
			job_free(j);
		return;
	}
	log_warning("Step %s: hung past its grace of %u s: cancelling it (scancel %s)", s->name, d->cfg.on_hang_grace_s,
		    j->argv[1]);
	submit(d, s, j);
}

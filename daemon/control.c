/* SPDX-License-Identifier: GPL-2.0-only */
/* control.c -- the local control socket: the pdimon CLI's requests and their replies.
 *
 * Only root may connect (the socket is 0600 in a 0755 directory): attaching probes to a
 * process is as strong as ptrace. A request is answered on the connection it came on,
 * then the connection is closed. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "daemon.h"
#include "json.h"
#include "log.h"
#include "tracer.h"

#define STEP_NAME_MAX 128

struct reply {
	int status;
	char *text;
};

static struct reply ok_text(char *text)
{
	return (struct reply){text ? 0 : -ENOMEM, text ? text : strdup("out of memory")};
}

static struct reply fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static struct reply fail(int status, const char *fmt, ...)
{
	struct reply r = {status, NULL};
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

static int parse_pid(const char *s, pid_t *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 4194304)
		return -EINVAL;
	*ret = (pid_t)v;
	return 0;
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

/* attach STEP PID... */
static struct reply cmd_attach(struct pdi_daemon *d, int argc, char **argv)
{
	struct pdi_task **added;
	struct pdi_step *s;
	struct pdi_json j;
	pid_t pid;
	int r;

	if (argc < 3)
		return fail(-EINVAL, "usage: attach STEP PID...");
	if (!valid_step_name(argv[1]))
		return fail(-EINVAL, "invalid step name '%.64s': use 1-%d of [A-Za-z0-9._-]", argv[1], STEP_NAME_MAX);
	/* check every pid first, so that a typo leaves nothing half attached */
	for (int i = 2; i < argc; i++) {
		if (parse_pid(argv[i], &pid) < 0)
			return fail(-EINVAL, "invalid pid '%.32s'", argv[i]);
		r = pdi_registry_find_task(&d->reg, pid) ? -EEXIST : pdi_tracer_check(d->objs, pid);
		if (r < 0)
			return fail(r, "pid %d: %s; nothing attached", (int)pid, attach_error(r));
	}
	r = pdi_registry_get_step(&d->reg, argv[1], &s);
	if (r < 0)
		return fail(r, "cannot create step: %s", strerror(-r));
	added = calloc((size_t)argc, sizeof(*added));
	if (!added)
		return fail(-ENOMEM, "out of memory");
	for (int i = 2; i < argc; i++) {
		(void)parse_pid(argv[i], &pid);
		r = pdi_task_begin(d, s, pid, &added[i]);
		if (r < 0) {
			/* it vanished since the check: the tasks attached so far stay, ended */
			for (int k = 2; k < i; k++)
				pdi_task_finish(d, added[k]);
			free(added);
			pdi_registry_drop_if_empty(&d->reg, s);
			return fail(r, "pid %d: %s", (int)pid, attach_error(r));
		}
	}
	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_key(&j, "step");
	pdi_json_str(&j, s->name);
	pdi_json_key(&j, "attached");
	pdi_json_arr_begin(&j);
	for (int i = 2; i < argc; i++) {
		pdi_json_obj_begin(&j);
		pdi_json_key(&j, "pid");
		pdi_json_int(&j, added[i]->pid);
		pdi_json_key(&j, "rank");
		pdi_json_int(&j, added[i]->rank);
		pdi_json_key(&j, "mpi_library");
		pdi_json_str(&j, added[i]->att.object);
		pdi_json_obj_end(&j);
	}
	pdi_json_arr_end(&j);
	pdi_json_obj_end(&j);
	free(added);
	return ok_text(pdi_json_steal(&j));
}

/* watch STEP PID : every MPI process PID starts from now on joins STEP at its MPI_Init */
static struct reply cmd_watch(struct pdi_daemon *d, int argc, char **argv)
{
	struct pdi_step *s;
	pid_t pid;
	int r;

	if (argc != 3 || parse_pid(argv[2], &pid) < 0)
		return fail(-EINVAL, "usage: watch STEP PID");
	if (!valid_step_name(argv[1]))
		return fail(-EINVAL, "invalid step name '%.64s': use 1-%d of [A-Za-z0-9._-]", argv[1], STEP_NAME_MAX);
	s = pdi_registry_find_step(&d->reg, argv[1]);
	if (s && (s->watching || pdi_step_running_tasks(s) > 0))
		return fail(-EEXIST, "step %s is already being monitored", argv[1]);
	if (kill(pid, 0) < 0)
		return fail(-ESRCH, "pid %d: no such process", (int)pid);
	r = pdi_registry_get_step(&d->reg, argv[1], &s);
	if (r < 0)
		return fail(r, "cannot create step: %s", strerror(-r));
	r = pdi_tracer_watch(d->tracer, pid);
	if (r < 0)
		return fail(r, "cannot watch pid %d: %s", (int)pid, strerror(-r));
	s->watch_root = pid;
	s->watching = true;
	s->ended = 0;
	return ok_text(strdup("{}"));
}

/* unwatch PID : the command has exited; its step ends with its last task */
static struct reply cmd_unwatch(struct pdi_daemon *d, int argc, char **argv)
{
	struct pdi_step *s;
	pid_t pid;

	if (argc != 2 || parse_pid(argv[1], &pid) < 0)
		return fail(-EINVAL, "usage: unwatch PID");
	s = pdi_registry_find_watch(&d->reg, pid);
	if (!s)
		return fail(-ENOENT, "pid %d is not watched", (int)pid);
	pdi_tracer_unwatch(d->tracer, pid);
	s->watching = false;
	/* tasks whose exit we have not processed yet are ended by their pidfd */
	(void)pdi_tracer_drain(d->tracer);
	if (pdi_step_running_tasks(s) == 0)
		s->ended = time(NULL);
	return ok_text(strdup("{}"));
}

static bool want_json(int argc, char **argv, int from)
{
	for (int i = from; i < argc; i++)
		if (!strcmp(argv[i], "json"))
			return true;
	return false;
}

static struct reply cmd_show(struct pdi_daemon *d, int argc, char **argv)
{
	const char *format = argc > 2 ? argv[2] : "text";
	struct pdi_step *s;

	if (argc < 2 || argc > 3)
		return fail(-EINVAL, "usage: show STEP [json|text|dot]");
	if (strcmp(format, "json") && strcmp(format, "text") && strcmp(format, "dot"))
		return fail(-EINVAL, "unknown format '%.16s': use json, text or dot", format);
	s = pdi_registry_find_step(&d->reg, argv[1]);
	if (!s)
		return fail(-ENOENT, "no step named '%.*s' (pdimon steps lists them)", STEP_NAME_MAX, argv[1]);
	(void)pdi_tracer_drain(d->tracer);
	return ok_text(pdi_show_step(d, s, format));
}

static struct reply dispatch(struct pdi_daemon *d, int argc, char **argv)
{
	if (!strcmp(argv[0], "status"))
		return ok_text(pdi_show_status(d, want_json(argc, argv, 1)));
	if (!strcmp(argv[0], "steps"))
		return ok_text(pdi_show_steps(d, want_json(argc, argv, 1)));
	if (!strcmp(argv[0], "show"))
		return cmd_show(d, argc, argv);
	if (!strcmp(argv[0], "attach"))
		return cmd_attach(d, argc, argv);
	if (!strcmp(argv[0], "watch"))
		return cmd_watch(d, argc, argv);
	if (!strcmp(argv[0], "unwatch"))
		return cmd_unwatch(d, argc, argv);
	return fail(-EOPNOTSUPP, "unknown request '%.32s'", argv[0]);
}

int pdi_control_listen(struct pdi_daemon *d)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PDI_SRC(PDI_SRC_LISTEN, 0)};
	char dir[sizeof(sa.sun_path)], *slash;
	int fd, r;

	if (strlen(d->cfg.socket_path) >= sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "Socket path %s is too long", d->cfg.socket_path);
	strcpy(sa.sun_path, d->cfg.socket_path);
	strcpy(dir, d->cfg.socket_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return log_error_errno(-errno, "Cannot create %s: %m", dir);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_error_errno(-errno, "Cannot create control socket: %m");
	/* a stale socket of a dead daemon is in the way; a live one would answer */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		return log_error_errno(-EADDRINUSE, "Another pdimond is listening on %s", sa.sun_path);
	}
	(void)unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(sa.sun_path, 0600) < 0 ||
	    listen(fd, 64) < 0) {
		r = log_error_errno(-errno, "Cannot listen on %s: %m", sa.sun_path);
		close(fd);
		return r;
	}
	if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	d->listen_fd = fd;
	return 0;
}

static void serve(struct pdi_daemon *d, int fd)
{
	struct timeval tv = {.tv_sec = 2};
	struct reply rep;
	char **argv = NULL;
	int argc, r;

	/* a client that connects and says nothing must not stall the daemon */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &(struct timeval){.tv_sec = 10}, sizeof(tv));
	r = pdi_ctl_recv_request(fd, &argv, &argc);
	if (r < 0) {
		log_warning_errno(r, "Dropping malformed control request: %m");
		rep = fail(r == -EPROTO ? -EPROTO : -EBADMSG, "malformed request");
	} else if (argc == 0) {
		rep = fail(-EINVAL, "empty request");
	} else {
		rep = dispatch(d, argc, argv);
	}
	if (!rep.text)
		rep = (struct reply){-ENOMEM, strdup("")};
	if (rep.text)
		(void)pdi_ctl_send_reply(fd, rep.status, rep.text, strlen(rep.text));
	free(rep.text);
	free(argv);
}

void pdi_control_accept(struct pdi_daemon *d)
{
	for (;;) {
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_warning("Cannot accept control connection: %m");
			return;
		}
		serve(d, fd);
		close(fd);
	}
}

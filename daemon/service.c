/* SPDX-License-Identifier: GPL-2.0-only */
/* service.c -- pdimond's life as a service (see service.h): a fork whose parent waits for
 * the daemon to serve, and sd_notify(3) for systemd. Under systemd pdimond runs in the
 * foreground (Type=notify), and the notifications are what systemd waits on; elsewhere
 * NOTIFY_SOCKET is unset and sd_notify() does nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "service.h"

int pdi_service_background(struct pdi_service *s)
{
	int fds[2], status;
	pid_t pid;
	ssize_t n;
	char b;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		close(fds[0]);
		s->ready_fd = fds[1];
		(void)setsid(); /* no controlling terminal: a hang-up there is not ours */
		return 0;
	}
	close(fds[1]);
	while ((n = read(fds[0], &b, 1)) < 0 && errno == EINTR)
		;
	if (n == 1)
		_exit(0); /* it serves */
	/* it ended before serving: its reason is on stderr, its status is ours */
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			_exit(1);
	_exit(WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : 1);
}

static void notify(const char *what)
{
	int r = sd_notify(0, what);

	if (r < 0)
		log_debug("Cannot notify the service manager (%s), ignoring: %s", what, strerror(-r));
}

void pdi_service_ready(struct pdi_service *s, const char *status)
{
	char msg[512];
	uint64_t usec;
	int null;

	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
	notify(msg);
	if (sd_watchdog_enabled(0, &usec) > 0)
		s->watchdog_usec = usec;
	if (s->ready_fd < 0)
		return;
	/* from here on the log goes to syslog; the terminal is the caller's again */
	openlog("pdimond", LOG_PID, LOG_DAEMON);
	pdi_log_to_syslog = true;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		(void)dup2(null, STDIN_FILENO);
		(void)dup2(null, STDOUT_FILENO);
		(void)dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	(void)!chdir("/"); /* hold no directory busy; every path was opened or made absolute */
	(void)!write(s->ready_fd, "r", 1);
	close(s->ready_fd);
	s->ready_fd = -1;
}

void pdi_service_reloading(struct pdi_service *s)
{
	(void)s;
	notify("RELOADING=1\nSTATUS=Reloading the configuration");
}

void pdi_service_stopping(struct pdi_service *s)
{
	(void)s;
	notify("STOPPING=1\nSTATUS=Stopping: storing the running steps, detaching the probes");
}

void pdi_service_status(struct pdi_service *s, const char *status)
{
	char msg[512];

	(void)s;
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
	notify(msg);
}

void pdi_service_alive(struct pdi_service *s, uint64_t now_usec)
{
	if (!s->watchdog_usec || now_usec - s->pinged_usec < s->watchdog_usec / 2)
		return;
	s->pinged_usec = now_usec;
	notify("WATCHDOG=1");
}

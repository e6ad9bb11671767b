/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_html.c -- srun: --pdi-monitor=report=NAME.html writes the report as one HTML page.
 *
 * srun neither loads Graphviz nor lays graphs out itself: it runs `pdimon render - --html
 * NAME.html` (the CLI, as the user, in a process of its own) and feeds it the JSON report on
 * a socket, for at most PDIMON_HTML_MS. A crash or a slow layout there can neither take srun
 * down nor hold it past that; the job itself has ended by then. On any failure the caller
 * writes the JSON report instead, so nothing is lost. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spank_ctx.h"

#ifndef PDIMON_CLI
#define PDIMON_CLI "/usr/bin/pdimon"
#endif
#define PDIMON_HTML_MS 30000

extern char **environ;

bool pdimon_html_wanted(const char *path)
{
	size_t n = strlen(path);

	return (n > 5 && !strcasecmp(path + n - 5, ".html")) || (n > 4 && !strcasecmp(path + n - 4, ".htm"));
}

static long ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* Send JSON to the child on FD (nonblocking) until it is all sent, the child stops reading,
 * or the deadline passes. */
static int feed(int fd, const char *json, const struct timespec *deadline)
{
	size_t len = strlen(json);

	for (size_t done = 0; done < len;) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		long left = ms_left(deadline);
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		n = send(fd, json + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n > 0)
			done += (size_t)n;
	}
	return 0;
}

/* The status of child PID, waiting until the deadline; -ETIMEDOUT (and the child killed). */
static int reap(pid_t pid, const struct timespec *deadline, int *ret_status)
{
	int pidfd = pidfd_open(pid, 0), r = 0;

	if (pidfd >= 0) {
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		long left;

		while ((left = ms_left(deadline)) > 0 && poll(&p, 1, (int)left) < 0 && errno == EINTR)
			;
		if (ms_left(deadline) <= 0 && !(p.revents & POLLIN))
			r = -ETIMEDOUT;
		close(pidfd);
	}
	if (r < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, ret_status, 0) < 0 && errno == EINTR)
		;
	return r;
}

int pdimon_write_html(const char *path, const char *json, char *why, size_t whylen)
{
	const char *cli = pdimon_ctx.cli[0] ? pdimon_ctx.cli : PDIMON_CLI;
	char *argv[] = {(char *)"pdimon", (char *)"render", (char *)"-", (char *)"--html", (char *)path, NULL};
	posix_spawn_file_actions_t fa;
	struct timespec deadline;
	int sv[2], status = 0, r, rr;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(why, whylen, "socketpair: %s", strerror(errno));
		return -errno;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], STDIN_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	r = posix_spawn(&pid, cli, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	if (r != 0) {
		close(sv[0]);
		snprintf(why, whylen, "cannot run %s: %s", cli, strerror(r));
		return -r;
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += PDIMON_HTML_MS / 1000;
	r = feed(sv[0], json, &deadline);
	close(sv[0]); /* end of the document */
	rr = reap(pid, &deadline, &status);
	if (rr < 0 || r == -ETIMEDOUT) {
		snprintf(why, whylen, "%s render took longer than %d s", cli, PDIMON_HTML_MS / 1000);
		return -ETIMEDOUT;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, whylen, "%s render failed (%s %d)", cli, WIFEXITED(status) ? "exit status" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		return -EIO;
	}
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* slurm_nodes.c -- a Slurm step's nodes, asked of slurmctld with scontrol: what a node that
 * has no part in a step needs to gather it (`pdimon analyze JOB.STEP` from anywhere in the
 * cluster). scontrol rather than libslurm: pdimond runs without Slurm too, and the command
 * is what every Slurm node has, speaking to slurmctld as the site configured it. It blocks
 * up to its deadline (slurmctld may be stopped, or far): call it on a worker (worker.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "slurm_nodes.h"

#define OUTPUT_MAX (16u << 20) /* scontrol's answer about one step: a million node names */

extern char **environ;

/* Run ARGV, its standard output into *RET (NUL-terminated, malloc'd), within DEADLINE
 * (CLOCK_MONOTONIC ms): killed past it (-ETIMEDOUT). -ENOENT when it fails or says nothing. */
static int capture(char *const *argv, uint64_t deadline, char **ret)
{
	posix_spawn_file_actions_t fa;
	char *out = NULL;
	size_t len = 0, cap = 0;
	int fds[2], status, r = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	/* never a blocking read: a silent child is waited for by poll() and its deadline only */
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0) {
		r = -errno;
		close(fds[0]);
		close(fds[1]);
		return r;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	r = -posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (r < 0) {
		close(fds[0]);
		return r;
	}
	for (;;) {
		struct pollfd p = {.fd = fds[0], .events = POLLIN};
		uint64_t now = pdi_now_ms();
		ssize_t n;
		int k;

		if (now >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		k = poll(&p, 1, (int)(deadline - now));
		if (k < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (k <= 0)
			continue; /* the deadline, checked above */
		if (cap - len < 4096) {
			char *more = cap < OUTPUT_MAX ? realloc(out, cap + 65536) : NULL;

			if (!more) {
				r = cap < OUTPUT_MAX ? -ENOMEM : -E2BIG;
				break;
			}
			out = more;
			cap += 65536;
		}
		n = read(fds[0], out + len, cap - len - 1);
		if (n == 0)
			break;
		if (n < 0 && errno != EINTR && errno != EAGAIN) {
			r = -errno;
			break;
		}
		if (n > 0)
			len += (size_t)n;
	}
	close(fds[0]);
	if (r < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !len))
		r = -ENOENT;
	if (r < 0) {
		free(out);
		return r;
	}
	out[len] = '\0';
	*ret = out;
	return 0;
}

/* The value of KEY= in scontrol's one-line record TEXT, copied; NULL when absent. */
static char *field(const char *text, const char *key)
{
	size_t klen = strlen(key);

	for (const char *p = text; (p = strstr(p, key)); p += klen)
		if ((p == text || p[-1] == ' ') && p[klen] == '=') {
			const char *v = p + klen + 1;
			return strndup(v, strcspn(v, " \n"));
		}
	return NULL;
}

int pdi_slurm_step_nodes(uint32_t job, uint32_t step, unsigned timeout_ms, char ***ret, unsigned *ret_n)
{
	uint64_t deadline = pdi_now_ms() + timeout_ms;
	char id[32], *text = NULL, *list = NULL, *names = NULL, **nodes = NULL, *save = NULL;
	unsigned n = 0;
	int r;

	snprintf(id, sizeof(id), "%u.%u", job, step);
	r = capture((char *[]){"scontrol", "-o", "show", "step", id, NULL}, deadline, &text);
	if (r < 0)
		return r;
	list = field(text, "NodeList");
	r = list && strcmp(list, "(null)") ? 0 : -ENOENT;
	if (r == 0)
		r = capture((char *[]){"scontrol", "show", "hostnames", list, NULL}, deadline, &names);
	if (r < 0)
		goto out;
	for (const char *p = names; *p; p++)
		n += *p == '\n';
	nodes = calloc(n + 1, sizeof(*nodes));
	if (!nodes) {
		r = -ENOMEM;
		goto out;
	}
	n = 0;
	for (char *name = strtok_r(names, "\n", &save); name; name = strtok_r(NULL, "\n", &save))
		if (!(nodes[n++] = strdup(name))) {
			r = -ENOMEM;
			goto out;
		}
	r = n ? 0 : -ENOENT;
	if (r == 0) {
		*ret = nodes;
		*ret_n = n;
		nodes = NULL;
	}
out:
	for (unsigned i = 0; nodes && i < n; i++)
		free(nodes[i]);
	free(nodes);
	free(names);
	free(list);
	free(text);
	return r;
}

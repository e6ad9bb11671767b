/* SPDX-License-Identifier: GPL-2.0-only */
/* pdimon.c -- the pdimon command: ask the node's pdimond what it sees, or have it watch a
 * program. Every failure prints one line saying what is wrong and exits non-zero. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"

#ifndef PDI_VERSION
#define PDI_VERSION "0"
#endif
#define DEFAULT_SOCKET "/run/pdimon/pdimond.sock"
#define STEP_NAME_MAX 128

static const char *socket_path = DEFAULT_SOCKET;
static volatile pid_t run_child;

/* pdimon run stands in for its command: a kill of pdimon is a kill of the command */
static void forward_signal(int sig)
{
	if (run_child > 0)
		kill(run_child, sig);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pdimon [--socket PATH] COMMAND [ARGS]\n"
		"Ask pdimond where a parallel job went wrong.\n\n"
		"Commands:\n"
		"  status [--json]                      daemon health: steps, tasks, events/s, loss, memory\n"
		"  steps [--json]                       the steps this node monitors or monitored\n"
		"  show STEP [--json|--dot|--text]      each task's per-phase states and transitions\n"
		"  attach --pid PID... [--step NAME]    monitor running MPI processes\n"
		"  run [--step NAME] -- COMMAND...      run COMMAND, monitoring every MPI process it starts\n\n"
		"Options:\n"
		"  -s, --socket PATH   pdimond's control socket (default %s, or $PDIMON_SOCKET)\n"
		"  -h, --help          show this help\n"
		"      --version       show the version\n",
		DEFAULT_SOCKET);
}

static int die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int die(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("pdimon: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static int connect_daemon(int *ret_fd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return die(-ENAMETOOLONG, "socket path too long: %s", socket_path);
	strcpy(sa.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return die(-errno, "cannot create a socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		if (e == ENOENT || e == ECONNREFUSED)
			return die(-e, "pdimond is not running (nothing listens on %s): start it with "
				       "'systemctl start pdimond' or 'pdimond'", socket_path);
		if (e == EACCES)
			return die(-e, "permission denied on %s: pdimon needs root", socket_path);
		return die(-e, "cannot reach pdimond at %s: %s", socket_path, strerror(e));
	}
	*ret_fd = fd;
	return 0;
}

/* Send one request; print the reply (text to stdout, an error to stderr). */
static int request(int argc, char **argv, bool print)
{
	size_t len;
	char *text;
	int fd = -1, r, status;

	r = connect_daemon(&fd);
	if (r < 0)
		return r;
	r = pdi_ctl_send_request(fd, argc, argv);
	if (r == 0)
		r = pdi_ctl_recv_reply(fd, &status, &text, &len);
	close(fd);
	if (r < 0)
		return die(r, "lost the connection to pdimond: %s", strerror(-r));
	if (status < 0)
		die(status, "%s", text);
	else if (print) {
		fwrite(text, 1, len, stdout);
		if (len && text[len - 1] != '\n')
			putchar('\n');
	}
	free(text);
	return status;
}

static int cmd_simple(const char *verb, int argc, char **argv)
{
	bool json = false;
	char *req[2] = {(char *)verb, "json"};

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else
			return die(-EINVAL, "%s: unknown argument '%s' (only --json)", verb, argv[i]);
	}
	return request(json ? 2 : 1, req, true);
}

static int cmd_show(int argc, char **argv)
{
	const char *format = "text", *step = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			format = "json";
		else if (!strcmp(argv[i], "--dot"))
			format = "dot";
		else if (!strcmp(argv[i], "--text"))
			format = "text";
		else if (argv[i][0] == '-')
			return die(-EINVAL, "show: unknown option '%s' (use --json, --dot or --text)", argv[i]);
		else if (step)
			return die(-EINVAL, "show: one step at a time ('%s' and '%s')", step, argv[i]);
		else
			step = argv[i];
	}
	if (!step)
		return die(-EINVAL, "show: which step? (pdimon steps lists them)");
	return request(3, (char *[]){"show", (char *)step, (char *)format}, true);
}

static int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{"pid", required_argument, NULL, 'p'}, {"step", required_argument, NULL, 's'}, {0}};
	char **req = calloc((size_t)argc + 3, sizeof(char *)), step_buf[64];
	int n = 2, c, r;

	if (!req)
		return die(-ENOMEM, "out of memory");
	req[0] = "attach";
	req[1] = NULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:s:", opts, NULL)) >= 0) {
		if (c == 'p')
			req[n++] = optarg;
		else if (c == 's')
			req[1] = optarg;
		else {
			free(req);
			return die(-EINVAL, "attach: usage: pdimon attach --pid PID... [--step NAME]");
		}
	}
	/* "--pid 1 2 3" reads as naturally as "--pid 1 --pid 2 --pid 3" */
	for (; optind < argc; optind++)
		req[n++] = argv[optind];
	if (n == 2) {
		free(req);
		return die(-EINVAL, "attach: no --pid given");
	}
	if (!req[1]) {
		snprintf(step_buf, sizeof(step_buf), "attach-%s", req[2]);
		req[1] = step_buf;
	}
	r = request(n, req, true);
	free(req);
	return r;
}

/* Run COMMAND with pdimond watching its process tree from before exec, so that no MPI
 * process it spawns can make a call unseen. Exits with COMMAND's status. */
static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {{"step", required_argument, NULL, 's'}, {0}};
	char step_buf[64], pidbuf[16];
	const char *step = NULL;
	int c, go[2], status, r;
	pid_t child;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+s:", opts, NULL)) >= 0) {
		if (c == 's')
			step = optarg;
		else
			return die(-EINVAL, "run: usage: pdimon run [--step NAME] -- COMMAND...");
	}
	if (optind >= argc)
		return die(-EINVAL, "run: no command given (pdimon run -- mpirun -np 4 ./app)");
	if (pipe2(go, O_CLOEXEC) < 0)
		return die(-errno, "cannot create a pipe: %s", strerror(errno));
	child = fork();
	if (child < 0)
		return die(-errno, "cannot fork: %s", strerror(errno));
	if (child == 0) {
		char b;

		close(go[1]);
		/* wait until pdimond watches us (or the parent gave up and closed the pipe) */
		if (read(go[0], &b, 1) != 1)
			_exit(127);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "pdimon: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)child);
	if (!step) {
		snprintf(step_buf, sizeof(step_buf), "run-%d", (int)child);
		step = step_buf;
	}
	r = request(3, (char *[]){"watch", (char *)step, pidbuf}, false);
	if (r < 0) {
		close(go[1]);
		waitpid(child, NULL, 0);
		return r;
	}
	fprintf(stderr, "pdimon: monitoring step %s\n", step);
	/* the command's terminal signals reach it directly; others we pass on */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	run_child = child;
	signal(SIGTERM, forward_signal);
	signal(SIGHUP, forward_signal);
	if (write(go[1], "g", 1) != 1)
		return die(-EIO, "cannot start %s", argv[optind]);
	close(go[1]);
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR)
			return die(-errno, "waitpid: %s", strerror(errno));
	(void)request(2, (char *[]){"unwatch", pidbuf}, false);
	fprintf(stderr, "pdimon: step %s done; see 'pdimon show %s'\n", step, step);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'}, {0}};
	const char *env = getenv("PDIMON_SOCKET");
	const char *cmd;
	int c, r;

	if (env && *env)
		socket_path = env;
	while ((c = getopt_long(argc, argv, "+s:h", opts, NULL)) >= 0) {
		switch (c) {
		case 's': socket_path = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("pdimon %s\n", PDI_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	if (!strcmp(cmd, "status") || !strcmp(cmd, "steps"))
		r = cmd_simple(cmd, argc, argv);
	else if (!strcmp(cmd, "show"))
		r = cmd_show(argc, argv);
	else if (!strcmp(cmd, "attach"))
		r = cmd_attach(argc, argv);
	else if (!strcmp(cmd, "run")) {
		r = cmd_run(argc, argv);
		return r < 0 ? 1 : r; /* the command's own exit status */
	}
	else {
		die(2, "unknown command '%s'; see pdimon --help", cmd);
		return 2;
	}
	return r < 0 ? 1 : 0;
}

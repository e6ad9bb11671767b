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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus_names.h"
#include "html_file.h"

#ifndef PDI_VERSION
#define PDI_VERSION "0"
#endif
/* long enough for a show of a big step, short enough that a wedged daemon is noticed */
#define CALL_TIMEOUT_USEC (120ull * 1000000)

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
		"Usage: pdimon COMMAND [ARGS]\n"
		"Ask pdimond where a parallel job went wrong.\n\n"
		"Commands:\n"
		"  status [--json]                      daemon health: steps, tasks, events/s, loss, memory\n"
		"  steps [--all] [--json]               the steps of this daemon; --all: stored ones too\n"
		"  show STEP [--json|--dot|--text]      each task's per-phase states and transitions\n"
		"  report STEP [--json|--html FILE]     the step's verdict, or its full report\n"
		"  analyze STEP [--json|--dot|--text|--html FILE]\n"
		"                                       where the step went wrong: faulty phase, task(s),\n"
		"                                       transitions; for a hang the least-progressed task(s)\n"
		"  render DOCUMENT.json --html FILE     a report, analysis or trends document as one HTML page\n"
		"  attach --pid PID... [--step NAME]    monitor running MPI processes\n"
		"  run [--step NAME] [--size N] -- COMMAND...\n"
		"                                       run COMMAND, monitoring every MPI process it starts;\n"
		"                                       N: its input size, for trends\n"
		"  trends PROGRAM [--json|--text|--svg FILE|--html FILE]\n"
		"                                       how each call site's calls, bytes and time per task\n"
		"                                       grow across stored runs at different task counts\n"
		"                                       (and input sizes), least scalable first\n\n"
		"Options:\n"
		"  -h, --help          show this help\n"
		"      --version       show the version\n\n"
		"pdimon talks to pdimond on the system bus ($DBUS_SYSTEM_BUS_ADDRESS names another).\n");
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

/* Why a call failed, in words that say what to do. */
static int call_failed(const char *method, const sd_bus_error *e, int r)
{
	if (sd_bus_error_has_name(e, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
	    sd_bus_error_has_name(e, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
		return die(r, "pdimond is not running (nothing owns %s on the system bus): start it with "
			      "'systemctl start pdimond'", PDI_BUS_NAME);
	/* a timeout of our own call; pdimond's own timeouts (Slurm, peers) come with its words */
	if (sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) || (r == -ETIMEDOUT && !sd_bus_error_is_set(e)))
		return die(r, "pdimond did not answer %s in time", method);
	if (sd_bus_error_is_set(e))
		return die(r, "%s", e->message);
	return die(r, "%s failed: %s", method, strerror(-r));
}

/* Call METHOD with the message filled by FILL; on success print its string result number
 * PRINT (1-based; 0 prints nothing), or with RET_TEXT, hand it back (malloc'd) instead. */
static int call_text(const char *method, int (*fill)(sd_bus_message *m, void *ctx), void *ctx, int print,
		     char **ret_text)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus *bus = NULL;
	const char *text;
	int r;

	r = sd_bus_open_system(&bus);
	if (r < 0)
		return die(r, "cannot connect to the system bus: %s (is dbus running?)", strerror(-r));
	r = sd_bus_message_new_method_call(bus, &m, PDI_BUS_NAME, PDI_BUS_PATH, PDI_BUS_IFACE, method);
	if (r >= 0)
		r = fill(m, ctx);
	if (r < 0) {
		die(r, "cannot build the %s call: %s", method, strerror(-r));
		goto out;
	}
	r = sd_bus_call(bus, m, CALL_TIMEOUT_USEC, &error, &reply);
	if (r < 0) {
		call_failed(method, &error, r);
		goto out;
	}
	for (int i = 0; i < (print ? print : 1); i++) {
		r = sd_bus_message_read(reply, "s", &text);
		if (r <= 0) {
			die(r < 0 ? r : -EBADMSG, "unexpected answer to %s", method);
			goto out;
		}
	}
	if (print && ret_text) {
		*ret_text = strdup(text);
		r = *ret_text ? 0 : die(-ENOMEM, "out of memory");
		goto out;
	}
	if (print) {
		size_t len = strlen(text);
		fputs(text, stdout);
		if (len && text[len - 1] != '\n')
			putchar('\n');
	}
	r = 0;
out:
	sd_bus_error_free(&error);
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	sd_bus_flush_close_unref(bus);
	return r;
}

static int call(const char *method, int (*fill)(sd_bus_message *m, void *ctx), void *ctx, int print)
{
	return call_text(method, fill, ctx, print, NULL);
}

/* Call METHOD and write its string result number NTH, a JSON document, as an HTML page to PATH. */
static int call_html(const char *method, int (*fill)(sd_bus_message *m, void *ctx), void *ctx, int nth,
		     const char *path)
{
	char *doc = NULL;
	int r = call_text(method, fill, ctx, nth, &doc);

	if (r < 0)
		return r;
	r = pdi_html_file_write(doc, strlen(doc), path);
	free(doc);
	if (r == 0 && strcmp(path, "-"))
		printf("pdimon: HTML report in %s\n", path);
	return r;
}

static int fill_bool(sd_bus_message *m, void *ctx)
{
	return sd_bus_message_append(m, "b", *(bool *)ctx);
}

static int fill_two_strings(sd_bus_message *m, void *ctx)
{
	const char *const *v = ctx;
	return sd_bus_message_append(m, "ss", v[0], v[1]);
}

struct step_pid {
	const char *step;
	uint32_t pid;
};

static int fill_step_pid(sd_bus_message *m, void *ctx)
{
	const struct step_pid *sp = ctx;
	return sd_bus_message_append(m, "su", sp->step, sp->pid);
}

static int fill_pid(sd_bus_message *m, void *ctx)
{
	return sd_bus_message_append(m, "u", *(uint32_t *)ctx);
}

struct attach_args {
	const char *step;
	uint32_t *pids;
	size_t n;
};

static int fill_attach(sd_bus_message *m, void *ctx)
{
	const struct attach_args *a = ctx;
	int r = sd_bus_message_append(m, "s", a->step);

	return r < 0 ? r : sd_bus_message_append_array(m, 'u', a->pids, a->n * sizeof(*a->pids));
}

static int parse_pid(const char *s, uint32_t *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT32_MAX)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else
			return die(-EINVAL, "status: unknown argument '%s' (only --json)", argv[i]);
	}
	return call("Status", fill_bool, &json, 1);
}

static int fill_two_bools(sd_bus_message *m, void *ctx)
{
	const bool *b = ctx;
	return sd_bus_message_append(m, "bb", b[0], b[1]);
}

static int cmd_steps(int argc, char **argv)
{
	bool flags[2] = {false, false}; /* json, all */

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			flags[0] = true;
		else if (!strcmp(argv[i], "--all"))
			flags[1] = true;
		else
			return die(-EINVAL, "steps: unknown argument '%s' (--all, --json)", argv[i]);
	}
	return call("ListSteps", fill_two_bools, flags, 1);
}

/* "show" and "analyze": STEP [--json|--dot|--text], answered by METHOD(step, format); with
 * HTML (analyze), also --html FILE: the JSON answer as an HTML page. */
static int cmd_step_format(const char *cmd, const char *method, bool html, int argc, char **argv)
{
	const char *args[2] = {NULL, "text"}, *html_path = NULL;

	for (int i = 1; i < argc; i++) {
		if (html && !strcmp(argv[i], "--html")) {
			if (++i == argc)
				return die(-EINVAL, "%s: --html needs a file name (or - for standard output)", cmd);
			html_path = argv[i];
		} else if (!strcmp(argv[i], "--json"))
			args[1] = "json";
		else if (!strcmp(argv[i], "--dot"))
			args[1] = "dot";
		else if (!strcmp(argv[i], "--text"))
			args[1] = "text";
		else if (argv[i][0] == '-')
			return die(-EINVAL, "%s: unknown option '%s' (use --json, --dot, --text%s)", cmd, argv[i],
				   html ? " or --html FILE" : "");
		else if (args[0])
			return die(-EINVAL, "%s: one step at a time ('%s' and '%s')", cmd, args[0], argv[i]);
		else
			args[0] = argv[i];
	}
	if (!args[0])
		return die(-EINVAL, "%s: which step? (pdimon steps lists them)", cmd);
	if (html_path) {
		args[1] = "json";
		return call_html(method, fill_two_strings, args, 1, html_path);
	}
	return call(method, fill_two_strings, args, 1);
}

static int fill_string(sd_bus_message *m, void *ctx)
{
	return sd_bus_message_append(m, "s", (const char *)ctx);
}

static int cmd_report(int argc, char **argv)
{
	const char *step = NULL, *html_path = NULL;
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--html") && i + 1 < argc)
			html_path = argv[++i];
		else if (argv[i][0] == '-' || step)
			return die(-EINVAL, "report: usage: pdimon report STEP [--json|--html FILE]");
		else
			step = argv[i];
	}
	if (!step)
		return die(-EINVAL, "report: which step? (pdimon steps lists them)");
	if (html_path)
		return call_html("GetReport", fill_string, (void *)step, 1, html_path);
	return call("GetReport", fill_string, (void *)step, json ? 1 : 2);
}

/* Write TEXT to PATH whole, or say why not. */
static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	size_t len = strlen(text);

	if (!f)
		return die(-errno, "cannot write %s: %s", path, strerror(errno));
	if (fwrite(text, 1, len, f) != len || fflush(f) != 0) {
		int e = errno ? errno : EIO;

		fclose(f);
		return die(-e, "cannot write %s: %s", path, strerror(e));
	}
	if (fclose(f) != 0)
		return die(-errno, "cannot write %s: %s", path, strerror(errno));
	return 0;
}

static int cmd_trends(int argc, char **argv)
{
	const char *args[2] = {NULL, "text"}, *svg = NULL, *html_path = NULL;
	char *text;
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			args[1] = "json";
		else if (!strcmp(argv[i], "--html")) {
			if (++i == argc)
				return die(-EINVAL, "trends: --html needs a file name (or - for standard output)");
			args[1] = "json"; /* the page is drawn from the JSON document */
			html_path = argv[i];
		}
		else if (!strcmp(argv[i], "--text"))
			args[1] = "text";
		else if (!strcmp(argv[i], "--svg")) {
			if (++i == argc)
				return die(-EINVAL, "trends: --svg needs a file to write the chart to");
			args[1] = "svg";
			svg = argv[i];
		} else if (argv[i][0] == '-')
			return die(-EINVAL, "trends: unknown option '%s' (use --json, --text, --svg FILE or --html FILE)",
				   argv[i]);
		else if (args[0])
			return die(-EINVAL, "trends: one program at a time ('%s' and '%s')", args[0], argv[i]);
		else
			args[0] = argv[i];
	}
	if (!args[0])
		return die(-EINVAL, "trends: which program? (its path, its file name or its build ID)");
	if (html_path)
		return call_html("Trends", fill_two_strings, args, 1, html_path);
	if (!svg)
		return call("Trends", fill_two_strings, args, 1);
	if ((r = call_text("Trends", fill_two_strings, args, 1, &text)) < 0)
		return r;
	r = write_file(svg, text);
	free(text);
	if (r == 0)
		fprintf(stderr, "pdimon: wrote %s\n", svg);
	return r;
}

/* pdimon render DOC --html FILE: a JSON document (a report, an analysis, trends) of a file or
 * of standard output ("-") as an HTML page; no daemon needed. srun's plugin runs it. */
static int cmd_render(int argc, char **argv)
{
	const char *in = NULL, *html_path = NULL;
	size_t len = 0, cap = 0;
	char *doc = NULL;
	FILE *f;
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--html") && i + 1 < argc)
			html_path = argv[++i];
		else if ((argv[i][0] == '-' && argv[i][1]) || in)
			return die(-EINVAL, "render: usage: pdimon render DOCUMENT.json|- --html FILE");
		else
			in = argv[i];
	}
	if (!in || !html_path)
		return die(-EINVAL, "render: usage: pdimon render DOCUMENT.json|- --html FILE");
	f = strcmp(in, "-") ? fopen(in, "re") : stdin;
	if (!f)
		return die(-errno, "render: cannot read %s: %s", in, strerror(errno));
	for (;;) {
		size_t n;

		if (len + 65536 > cap) {
			char *b = realloc(doc, cap = cap ? cap * 2 : 1 << 20);

			if (!b) {
				r = die(-ENOMEM, "render: out of memory reading %s", in);
				goto out;
			}
			doc = b;
		}
		n = fread(doc + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		r = die(-EIO, "render: cannot read %s", in);
		goto out;
	}
	r = pdi_html_file_write(doc ? doc : "", len, html_path);
	if (r == 0 && strcmp(html_path, "-"))
		printf("pdimon: HTML report in %s\n", html_path);
out:
	if (f != stdin)
		fclose(f);
	free(doc);
	return r;
}

static int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{"pid", required_argument, NULL, 'p'}, {"step", required_argument, NULL, 's'}, {0}};
	struct attach_args a = {.pids = calloc((size_t)argc, sizeof(uint32_t))};
	char step_buf[64];
	int c, r;

	if (!a.pids)
		return die(-ENOMEM, "out of memory");
	optind = 1;
	/* no '+': "--pid 1 2 --step x" works as well as "--step x --pid 1 2" */
	while ((c = getopt_long(argc, argv, "p:s:", opts, NULL)) >= 0) {
		if (c == 's') {
			a.step = optarg;
			continue;
		}
		if (c != 'p' || parse_pid(optarg, &a.pids[a.n]) < 0) {
			free(a.pids);
			return c == 'p' ? die(-EINVAL, "attach: invalid pid '%s'", optarg)
					: die(-EINVAL, "attach: usage: pdimon attach --pid PID... [--step NAME]");
		}
		a.n++;
	}
	/* "--pid 1 2 3" reads as naturally as "--pid 1 --pid 2 --pid 3" */
	for (; optind < argc; optind++, a.n++)
		if (parse_pid(argv[optind], &a.pids[a.n]) < 0) {
			free(a.pids);
			return die(-EINVAL, "attach: invalid pid '%s'", argv[optind]);
		}
	if (a.n == 0) {
		free(a.pids);
		return die(-EINVAL, "attach: no --pid given");
	}
	if (!a.step) {
		snprintf(step_buf, sizeof(step_buf), "attach-%u-%ld", a.pids[0], (long)time(NULL));
		a.step = step_buf;
	}
	r = call("Attach", fill_attach, &a, 1);
	free(a.pids);
	return r;
}

#define INPUT_SIZE_ENV "PDIMON_INPUT_SIZE" /* program.h's PDI_INPUT_SIZE_ENV */

static bool valid_size(const char *v)
{
	unsigned long long x;
	char *end;

	if (*v < '0' || *v > '9')
		return false;
	errno = 0;
	x = strtoull(v, &end, 10);
	return !errno && !*end && x > 0 && x <= 1ull << 62;
}

/* Run COMMAND with pdimond watching its process tree from before exec, so that no MPI
 * process it spawns can make a call unseen. Exits with COMMAND's status. */
static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"step", required_argument, NULL, 's'}, {"size", required_argument, NULL, 'n'}, {0}};
	char step_buf[64];
	struct step_pid sp = {0};
	int c, go[2], status, r;
	pid_t child;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+s:", opts, NULL)) >= 0) {
		if (c == 's')
			sp.step = optarg;
		else if (c == 'n' && valid_size(optarg))
			setenv(INPUT_SIZE_ENV, optarg, 1); /* pdimond reads it from the MPI processes */
		else if (c == 'n')
			return die(-EINVAL, "run: --size '%s': give the input size as a whole number from 1 to 2^62", optarg);
		else
			return die(-EINVAL, "run: usage: pdimon run [--step NAME] [--size N] -- COMMAND...");
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
	sp.pid = (uint32_t)child;
	if (!sp.step) {
		snprintf(step_buf, sizeof(step_buf), "run-%d-%ld", (int)child, (long)time(NULL));
		sp.step = step_buf;
	}
	r = call("Watch", fill_step_pid, &sp, 0);
	if (r < 0) {
		close(go[1]);
		waitpid(child, NULL, 0);
		return r;
	}
	fprintf(stderr, "pdimon: monitoring step %s\n", sp.step);
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
	(void)call("Unwatch", fill_pid, &sp.pid, 0);
	fprintf(stderr, "pdimon: step %s done; see 'pdimon show %s'\n", sp.step, sp.step);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {0}};
	const char *cmd;
	int c, r;

	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
		switch (c) {
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
	if (!strcmp(cmd, "status"))
		r = cmd_status(argc, argv);
	else if (!strcmp(cmd, "steps"))
		r = cmd_steps(argc, argv);
	else if (!strcmp(cmd, "show"))
		r = cmd_step_format("show", "GetStep", false, argc, argv);
	else if (!strcmp(cmd, "analyze") || !strcmp(cmd, "analyse"))
		r = cmd_step_format("analyze", "Analyze", true, argc, argv);
	else if (!strcmp(cmd, "report"))
		r = cmd_report(argc, argv);
	else if (!strcmp(cmd, "trends"))
		r = cmd_trends(argc, argv);
	else if (!strcmp(cmd, "render"))
		r = cmd_render(argc, argv);
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

/* SPDX-License-Identifier: GPL-2.0-only */
/* walk.c -- pdi_stack_walk() on a real blocked child: the frames of a call three deep, a
 * trampoline return address replaced (a fake "[uprobes]" range, and a real uretprobe made
 * with perf_event_open when permitted), a walk that ends at an unreplaced trampoline, a signal
 * handler's frames told from the code it interrupted (also where the signal landed on a
 * trampoline: a fake range at the interrupted instruction), a task gone; and the child is
 * never left stopped or killed. Exit 0 passes, 1 fails. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "objcache.h"
#include "stack_frames.h"
#include "stackwalk.h"

static int to_child[2], from_child[2];
static int failures;
volatile uint64_t walk_sink;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                                \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* ---- the child: main -> walk_outer -> walk_middle -> walk_inner, blocked in read() ---- */

static void wait_for_parent(void)
{
	char c;

	if (read(to_child[0], &c, 1) != 1)
		_exit(3);
}

__attribute__((noinline, noclone)) void walk_inner(void)
{
	if (write(from_child[1], "i", 1) != 1)
		_exit(3);
	wait_for_parent();
	walk_sink++; /* no tail call: the frame must stay */
}

/* The first call reports its return address (no probe yet) and blocks; the second, probed
 * when the test can, goes one deeper. Both calls come from one call site. */
__attribute__((noinline, noclone)) void walk_middle(int first)
{
	if (first) {
		uint64_t ra = (uint64_t)(uintptr_t)__builtin_return_address(0);

		if (write(from_child[1], &ra, sizeof(ra)) != sizeof(ra))
			_exit(3);
		wait_for_parent();
	} else {
		walk_inner();
	}
	walk_sink++;
}

__attribute__((noinline, noclone)) void walk_outer(void)
{
	for (int i = 0; i < 2; i++) {
		walk_middle(i == 0);
		walk_sink++;
	}
}

/* A signal's handler: reports the instruction it interrupted, then blocks until the parent has
 * walked it, and returns (the interrupted read() is restarted: SA_RESTART). */
__attribute__((noinline, noclone)) void walk_on_signal(int sig, siginfo_t *si, void *ctx)
{
	uint64_t pc = (uint64_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)si;
	if (write(from_child[1], &pc, sizeof(pc)) != sizeof(pc))
		_exit(3);
	wait_for_parent();
	walk_sink++;
}

/* ---- the parent ---- */

static void print_frames(const char *what, char **f, size_t n)
{
	printf("# %s:", what);
	for (size_t i = 0; i < n; i++)
		printf(" %s", f[i]);
	printf("\n");
}

/* Index of the first frame from FROM on whose name starts with NAME "@", or -1. */
static long find(char **f, size_t n, size_t from, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = from; i < n; i++)
		if (!strncmp(f[i], name, len) && f[i][len] == '@')
			return (long)i;
	return -1;
}

/* Index of the first frame that is MARKER, or -1. */
static long find_marker(char **f, size_t n, const char *marker)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i], marker))
			return (long)i;
	return -1;
}

/* NAMES appear in this order, outermost first, each with a FILE:LINE */
static void check_order(char **f, size_t n, const char *const *names, size_t nnames)
{
	long at = 0;

	for (size_t i = 0; i < nnames && at >= 0; i++) {
		at = find(f, n, (size_t)at, names[i]);
		CHECK(at >= 0, "no %s in order", names[i]);
		if (at >= 0) {
			/* the line may be that of a function inlined there (read()'s fortify wrapper) */
			CHECK(strchr(f[at], ':') != NULL, "%s has no source line", f[at]);
			at++;
		}
	}
}

static char proc_state(pid_t pid)
{
	char fn[64], buf[512], *p;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/stat", (int)pid);
	f = fopen(fn, "re");
	if (!f)
		return '?';
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' ? p[2] : '?';
}

static void walk(pid_t pid, uint64_t fixup, uint64_t ts, uint64_t te, bool use_range,
		 struct pdi_objcache *objs, struct pdi_maps *maps, const char *what, char ***f,
		 size_t *n)
{
	int r = use_range ? pdi_stack_walk_range(pid, pid, fixup, ts, te, objs, true, maps, f, n)
			  : pdi_stack_walk(pid, pid, fixup, objs, true, maps, f, n);

	CHECK(r == 0, "%s: walk failed: %s", what, strerror(-r));
	if (r < 0) {
		*f = NULL;
		*n = 0;
		return;
	}
	print_frames(what, *f, *n);
	/* never left stopped: 't' is a ptrace stop, 'T' a job-control one */
	CHECK(proc_state(pid) != 't' && proc_state(pid) != 'T', "%s: child left stopped (%c)", what,
	      proc_state(pid));
}

/* A real uretprobe on walk_middle for PID, as pdimond's BPF makes one: the kernel puts its
 * trampoline in "[uprobes]" over the return address. -errno when not permitted. */
static int uretprobe(pid_t pid, struct pdi_objcache *objs, const struct pdi_maps *maps)
{
	const struct pdi_mapping *m;
	struct pdi_elfobj *obj;
	uint64_t off;
	char path[4096];
	ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);
	int r;

	if (len < 0)
		return -errno;
	path[len] = '\0';
	r = pdi_objcache_find_func(objs, pid, maps, "walk_middle", &m, &obj);
	if (r == 0)
		r = pdi_elfobj_func_offset(obj, "walk_middle", &off);
	if (r < 0)
		return r;
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = 8, /* /sys/bus/event_source/devices/uprobe/type, read below */
		.config = 1, /* format/retprobe is config:0 */
		.config1 = (uint64_t)(uintptr_t)path,
		.config2 = off,
	};
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");

	if (!f || fscanf(f, "%u", &a.type) != 1) {
		if (f)
			fclose(f);
		return -EOPNOTSUPP;
	}
	fclose(f);
	r = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return r < 0 ? -errno : r;
}

static void step(void)
{
	char c;

	if (write(to_child[1], "g", 1) != 1 || read(from_child[0], &c, 1) != 1)
		failures++;
}

int main(void)
{
	static const char *const full[] = {"main", "walk_outer", "walk_middle", "walk_inner"};
	struct pdi_frames_place at;
	struct pdi_maps maps = {0};
	struct pdi_objcache *objs;
	uint64_t ra, pc = 0;
	long sig;
	size_t n;
	char **f;
	pid_t pid;
	int st, probe;

	if (pipe(to_child) < 0 || pipe(from_child) < 0 || pdi_objcache_new(&objs) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		struct sigaction sa = {.sa_sigaction = walk_on_signal, .sa_flags = SA_SIGINFO | SA_RESTART};

		if (sigaction(SIGUSR1, &sa, NULL) < 0)
			_exit(3);
		walk_outer();
		_exit(0);
	}
	if (read(from_child[0], &ra, sizeof(ra)) != sizeof(ra))
		return 1;
	usleep(20000); /* into its read() */

	/* blocked in the first walk_middle: no trampoline anywhere */
	walk(pid, 0, 0, 0, false, objs, &maps, "plain", &f, &n);
	check_order(f, n, full, 3);
	pdi_stack_frames_free(f, n);

	/* names only (the hang judge's looks): the same frames, by object and offset, no DWARF */
	CHECK(pdi_stack_walk(pid, pid, 0, objs, false, &maps, &f, &n) == 0, "names-only walk failed");
	print_frames("names only", f, n);
	for (size_t i = 0, at = 0; i < 3; i++) {
		long k = find(f, n, at, full[i]);

		CHECK(k >= 0, "names only: no %s in order", full[i]);
		if (k < 0)
			break;
		CHECK(strstr(f[k], "@test-stackwalk+0x") && !strchr(f[k], ':'),
		      "names only: %s should give its object and offset, not a line", f[k]);
		at = (size_t)k + 1;
	}
	pdi_stack_frames_free(f, n);

	/* walk_middle's return address inside a fake trampoline range */
	walk(pid, 0, ra, ra + 1, true, objs, &maps, "fake trampoline, no fixup", &f, &n);
	CHECK(n > 0 && !strcmp(f[0], "[uprobes]"), "the walk should end at [uprobes]");
	check_order(f, n, full + 2, 1);
	CHECK(find(f, n, 0, "walk_outer") < 0, "nothing past the trampoline");
	pdi_stack_frames_free(f, n);
	walk(pid, ra, ra, ra + 1, true, objs, &maps, "fake trampoline, fixed", &f, &n);
	check_order(f, n, full, 3);
	pdi_stack_frames_free(f, n);

	/* in a signal handler that interrupted the first walk_middle's read() */
	CHECK(kill(pid, SIGUSR1) == 0, "kill: %s", strerror(errno));
	CHECK(read(from_child[0], &pc, sizeof(pc)) == sizeof(pc), "no word from the handler");
	usleep(20000); /* into the handler's read() */
	walk(pid, 0, 0, 0, false, objs, &maps, "in a handler", &f, &n);
	sig = find_marker(f, n, PDI_FRAME_SIGNAL);
	CHECK(sig > 0, "no %s frame", PDI_FRAME_SIGNAL);
	if (sig > 0) {
		check_order(f, (size_t)sig, full, 3); /* what it interrupted, outside */
		CHECK(find(f, n, (size_t)sig, "walk_on_signal") > sig, "the handler should be inside %s", PDI_FRAME_SIGNAL);
	}
	pdi_stack_frames_place(f, n, &at);
	CHECK(at.kind == PDI_PLACED_OUTSIDE_MPI, "a handler of the program's own is outside MPI (%d)", at.kind);
	pdi_stack_frames_free(f, n);
	/* as if the signal had landed on a return probe's trampoline: the interrupted instruction
	 * in a fake trampoline range; the walk ends there, and the handler still places the task */
	walk(pid, 0, pc, pc + 1, true, objs, &maps, "in a handler, on a trampoline", &f, &n);
	CHECK(n >= 3 && !strcmp(f[0], PDI_FRAME_UPROBES) && !strcmp(f[1], PDI_FRAME_SIGNAL) &&
		      !strncmp(f[2], "walk_on_signal@", 15),
	      "the walk should be %s %s walk_on_signal@...", PDI_FRAME_UPROBES, PDI_FRAME_SIGNAL);
	pdi_stack_frames_place(f, n, &at);
	CHECK(at.kind == PDI_PLACED_OUTSIDE_MPI, "the handler places the task outside MPI (%d)", at.kind);
	pdi_stack_frames_free(f, n);
	/* ... and with the real return address known, the walk goes on through it */
	walk(pid, pc, pc, pc + 1, true, objs, &maps, "in a handler, on a trampoline, fixed", &f, &n);
	sig = find_marker(f, n, PDI_FRAME_SIGNAL);
	CHECK(sig > 0 && strcmp(f[0], PDI_FRAME_UPROBES), "the walk should go through the trampoline");
	if (sig > 0)
		check_order(f, (size_t)sig, full, 3);
	pdi_stack_frames_free(f, n);
	if (write(to_child[1], "h", 1) != 1) /* the handler returns; walk_middle reads again */
		failures++;

	/* a real uretprobe: the second walk_middle is entered with it in place */
	pdi_maps_free(&maps);
	CHECK(pdi_maps_read(pid, &maps) == 0, "maps");
	probe = uretprobe(pid, objs, &maps);
	if (probe < 0)
		printf("# no uretprobe (%s): real trampoline not tested\n", strerror(-probe));
	step();
	usleep(20000);
	walk(pid, 0, 0, 0, false, objs, &maps, "second call, no fixup", &f, &n);
	if (probe >= 0) {
		CHECK(n > 0 && !strcmp(f[0], "[uprobes]"), "a real trampoline should end the walk");
		check_order(f, n, full + 2, 2);
	}
	pdi_stack_frames_free(f, n);
	walk(pid, ra, 0, 0, false, objs, &maps, "second call, fixed", &f, &n);
	check_order(f, n, full, 4);
	pdi_stack_frames_free(f, n);

	/* the child goes on and ends normally */
	if (write(to_child[1], "g", 1) != 1)
		failures++;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the child did not exit normally (status %#x)", st);
	if (probe >= 0) {
		uint64_t hits = 0;

		/* the uretprobe fired when walk_middle returned: the walk did not write the
		 * real return address over the trampoline on the child's stack */
		CHECK(read(probe, &hits, sizeof(hits)) == sizeof(hits) && hits == 1,
		      "the uretprobe fired %llu times, not once", (unsigned long long)hits);
		close(probe);
	}

	/* gone */
	CHECK(pdi_stack_walk(pid, pid, 0, objs, true, &maps, &f, &n) == -ESRCH, "a reaped task should give -ESRCH");
	/* a thread of another process is never seized in this one's name */
	CHECK(pdi_stack_walk(getppid(), getpid(), 0, objs, true, &maps, &f, &n) == -ESRCH,
	      "a tid outside the process should give -ESRCH");

	pdi_maps_free(&maps);
	pdi_objcache_free(objs);
	printf("%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}

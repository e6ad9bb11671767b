/* SPDX-License-Identifier: GPL-2.0-only */
/* untrusted_objects.c -- what reading a user's ELF object costs pdimond in its own process,
 * against what a sandboxed helper would cost (doc/design/untrusted-objects.md).
 *
 * For each object given: (1) in process: open it (objopen.h's checks), index its symbols, and
 * name 256 addresses (symbols, DWARF lines); (2) the same in a child forked for the object,
 * which drops every privilege (setresuid to nobody, no capabilities, no_new_privs) before it
 * parses and sends the names back over a pipe: the cost of a helper per object; (3) one request
 * and answer over a pipe to a helper already running: the cost a persistent helper adds per
 * call site named. Printed as medians of ROUNDS runs, side by side. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elfobj.h"
#include "objopen.h"
#include "log.h"

#define ROUNDS 15
#define ADDRS 256

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* Open PATH and name ADDRS addresses spread over its code; the bytes of names written to FD
 * (-1: none). Returns 0 or negative errno. */
static int parse(int objfd, const char *path, int fd)
{
	struct pdi_elfobj *o;
	struct pdi_srcloc loc;
	uint64_t base, end = 0;
	int r = pdi_elfobj_open_fd(objfd, path, &o);

	if (r < 0)
		return r;
	base = pdi_elfobj_load_base(o);
	(void)pdi_elfobj_offset_to_vaddr(o, pdi_elfobj_file_size(o) / 2, &end);
	for (unsigned i = 0; i < ADDRS; i++) {
		uint64_t a = base + (end > base ? (end - base) / ADDRS * i : i * 64);

		(void)pdi_elfobj_describe(o, a, &loc);
		if (fd >= 0 && write(fd, &loc, sizeof(loc)) != (ssize_t)sizeof(loc)) {
			r = -EIO;
			break;
		}
	}
	pdi_elfobj_free(o);
	return r;
}

static void drop_privileges(void)
{
	/* nobody, no capabilities left (a uid change from 0 clears them), and none to regain */
	if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(2);
}

/* The daemon opens (objopen.h), the helper parses: it needs no right to the file. */
static int in_process(const char *path)
{
	int fd, r = pdi_objopen_path(path, 0, &fd);

	return r < 0 ? r : parse(fd, path, -1);
}

static int in_child(const char *path)
{
	struct pdi_srcloc loc;
	int p[2], status, fd, r = pdi_objopen_path(path, 0, &fd);
	pid_t pid;

	if (r < 0)
		return r;
	if (pipe(p) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(p[0]);
		drop_privileges();
		_exit(parse(fd, path, p[1]) < 0);
	}
	close(fd);
	close(p[1]);
	/* to the end: a pipe hands out what it holds, not whole records */
	while (read(p[0], &loc, sizeof(loc)) > 0)
		;
	close(p[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* One request and one pdi_srcloc back, to a child that answers in a loop. */
static uint64_t pipe_round_trip_ns(void)
{
	int req[2], ans[2];
	uint64_t v[ROUNDS * 64];
	struct pdi_srcloc loc = {0};
	pid_t pid;

	if (pipe(req) < 0 || pipe(ans) < 0)
		return 0;
	pid = fork();
	if (pid == 0) {
		uint64_t a;

		close(req[1]); /* or it would never see the end of its requests */
		close(ans[0]);
		drop_privileges();
		while (read(req[0], &a, sizeof(a)) == (ssize_t)sizeof(a))
			if (write(ans[1], &loc, sizeof(loc)) != (ssize_t)sizeof(loc))
				break;
		_exit(0);
	}
	close(req[0]);
	close(ans[1]);
	for (size_t i = 0; i < ELEMENTSOF(v); i++) {
		uint64_t t0 = now_ns(), a = i;

		if (write(req[1], &a, sizeof(a)) != (ssize_t)sizeof(a) || read(ans[0], &loc, sizeof(loc)) != (ssize_t)sizeof(loc))
			return 0;
		v[i] = now_ns() - t0;
	}
	close(req[1]);
	close(ans[0]);
	waitpid(pid, NULL, 0);
	return median(v, ELEMENTSOF(v));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench-untrusted-objects OBJECT...\n");
		return 2;
	}
	printf("# %d rounds, %d addresses named per object; medians\n", ROUNDS, ADDRS);
	printf("%-60s %14s %14s %8s\n", "object", "in-process ms", "helper/obj ms", "ratio");
	for (int i = 1; i < argc; i++) {
		uint64_t in[ROUNDS], out[ROUNDS];

		for (int k = 0; k < ROUNDS; k++) {
			/* alternated, so that the machine's noise falls on both alike */
			uint64_t t0 = now_ns();

			if (in_process(argv[i]) < 0 || (in[k] = now_ns() - t0, t0 = now_ns(), in_child(argv[i]) < 0)) {
				fprintf(stderr, "bench-untrusted-objects: cannot read %s\n", argv[i]);
				return 1;
			}
			out[k] = now_ns() - t0;
		}
		uint64_t a = median(in, ROUNDS), b = median(out, ROUNDS);
		printf("%-60s %14.3f %14.3f %8.2f\n", argv[i], a / 1e6, b / 1e6, (double)b / (double)a);
	}
	printf("pipe round trip to a running helper (one call site named): %.1f us median\n",
	       pipe_round_trip_ns() / 1e3);
	return 0;
}

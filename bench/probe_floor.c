/* SPDX-License-Identifier: GPL-2.0-only */
/* probe_floor.c -- attaches do-nothing uprobes exactly where pdimond attaches its own: the floor.
 *
 * Usage: probe-floor [--perf-links] [--at-start] [--object LIB] [--close-together] [--max-seconds S]
 *                    --pid PID...
 *        probe-floor --list [--at-start] --pid PID...
 *
 * The probes are those pdi_probe_targets_find() gives pdimond, attached the same way (one
 * uprobe_multi link per direction where the kernel has them, else one perf link per offset
 * and direction) with the same cookies, and the same placement of entry probes on emulated
 * instructions (entry_place.h) unless --at-start puts every probe on its function's first byte. Prints "attached N probes ..." on stdout once all
 * processes are probed, then stays attached until stdin reaches end of file, SIGTERM or
 * SIGINT arrives, or --max-seconds (default 3600) pass; then detaches and exits 0. On stderr it
 * prints what each process's link creates took, and what closing all the links took.
 *
 * --object LIB takes the probes from the MPI library LIB for every process, instead of from the
 *   library each process maps: the processes need not map it yet (a link with a pid filter takes
 *   effect when its process maps the library; bench/attach_scale.py --order).
 * --close-together closes the links at the end from one thread each (close_together.h), not one
 *   after the other.
 *
 * --list attaches nothing: it prints one line per probe of each process, tab-separated
 *   pid function symbol_offset probe_offset skipped_bytes probed_kind first_kind why
 * (kinds "emulated" or "single-stepped"; why "-" when the probe is on an emulated instruction). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "close_together.h"
#include "elfobj.h"
#include "empty.skel.h"
#include "event.h"
#include "mpi_funcs.h"
#include "objcache.h"
#include "probe_targets.h"
#include "uprobe_multi.h"

struct floor {
	struct empty_bpf *skel;
	struct pdi_objcache *objs;
	bool multi;
	int *fds; /* uprobe_multi link fds */
	unsigned nfds;
	struct bpf_link **links; /* perf links */
	unsigned nlinks;
	unsigned nprobes;
	unsigned target_flags; /* PDI_TARGETS_AT_START with --at-start */
	struct pdi_elfobj *object; /* --object's library, or NULL: each process's own */
	const char *object_path;
	bool close_together;       /* --close-together: close the links at once (close_together.h) */
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || level == LIBBPF_INFO)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int add_fd(struct floor *f, int fd)
{
	int *v = realloc(f->fds, sizeof(*v) * (f->nfds + 1));

	if (!v) {
		close(fd);
		return -ENOMEM;
	}
	f->fds = v;
	f->fds[f->nfds++] = fd;
	return 0;
}

static int add_link(struct floor *f, struct bpf_link *l)
{
	struct bpf_link **v = realloc(f->links, sizeof(*v) * (f->nlinks + 1));

	if (!v) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	f->links = v;
	f->links[f->nlinks++] = l;
	return 0;
}

/* Return probes first, in the order pdimond attaches them (daemon/probe/tracer.c). */
static int attach_multi(struct floor *f, const struct pdi_probe_targets *pt, pid_t pid)
{
	for (int ret = 1; ret >= 0; ret--) {
		struct bpf_program *prog = ret ? f->skel->progs.empty_exit : f->skel->progs.empty_enter;
		int fd = pdi_uprobe_multi_attach(bpf_program__fd(prog), pt->path, pt->offsets, pt->cookies,
						 pt->n, ret, pid);
		int r;

		if (fd < 0)
			return fd;
		if ((r = add_fd(f, fd)) < 0)
			return r;
	}
	return 0;
}

static int attach_perf(struct floor *f, const struct pdi_probe_targets *pt, pid_t pid)
{
	for (unsigned i = 0; i < pt->n; i++) {
		for (int ret = 1; ret >= 0; ret--) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = pt->cookies[i], .retprobe = ret);
			struct bpf_program *prog = ret ? f->skel->progs.empty_exit : f->skel->progs.empty_enter;
			struct bpf_link *l = bpf_program__attach_uprobe_opts(prog, pid, pt->path, pt->offsets[i], &opts);
			int r;

			if (!l)
				return -errno;
			if ((r = add_link(f, l)) < 0)
				return r;
		}
	}
	return 0;
}

static int floor_attach(struct floor *f, pid_t pid)
{
	struct pdi_probe_targets *pt = malloc(sizeof(*pt));
	double t0;
	int r;

	if (!pt)
		return -ENOMEM;
	r = f->object ? pdi_probe_targets_of(f->object, f->target_flags, pt)
		      : pdi_probe_targets_find(f->objs, pid, f->target_flags, pt);
	if (r < 0) {
		fprintf(stderr, "probe-floor: no MPI probes for pid %d: %s\n", (int)pid, strerror(-r));
		goto out;
	}
	if (f->object) {
		snprintf(pt->path, sizeof(pt->path), "%s", f->object_path);
		snprintf(pt->object, sizeof(pt->object), "%s", f->object_path);
	}
	t0 = now_s();
	r = f->multi ? attach_multi(f, pt, pid) : attach_perf(f, pt, pid);
	if (r < 0) {
		fprintf(stderr, "probe-floor: cannot attach to %s for pid %d: %s\n", pt->path, (int)pid,
			strerror(-r));
		goto out;
	}
	/* the attach syscalls alone (bench/attach_scale.py): the targets were read before */
	fprintf(stderr, "probe-floor: pid %d: %u probes in %s, attached in %.3f ms\n", (int)pid, pt->n, pt->object,
		(now_s() - t0) * 1e3);
	f->nprobes += pt->n;
out:
	free(pt);
	return r;
}

static int floor_list(struct floor *f, pid_t pid)
{
	struct pdi_probe_targets *pt = malloc(sizeof(*pt));
	int r;

	if (!pt)
		return -ENOMEM;
	r = pdi_probe_targets_find(f->objs, pid, f->target_flags, pt);
	if (r < 0)
		fprintf(stderr, "probe-floor: no MPI probes for pid %d: %s\n", (int)pid, strerror(-r));
	for (unsigned i = 0; r == 0 && i < pt->n; i++)
		printf("%d\t%s\t0x%" PRIx64 "\t0x%" PRIx64 "\t%u\t%s\t%s\t%s\n", (int)pid,
		       pdi_mpi_funcs[PDI_COOKIE_FN(pt->cookies[i])].name, pt->offsets[i] - pt->skipped[i],
		       pt->offsets[i], pt->skipped[i], pdi_insn_kind_name(pt->kinds[i]),
		       pdi_insn_kind_name(pt->first_kinds[i]), pt->kinds[i] == PDI_INSN_EMULATED ? "-" : pt->why[i]);
	free(pt);
	return r;
}

static void floor_free(struct floor *f)
{
	double t0 = now_s();

	if (f->close_together) {
		pdi_links_close_together(f->fds, f->nfds, f->links, f->nlinks);
	} else {
		for (unsigned i = 0; i < f->nfds; i++)
			close(f->fds[i]);
		for (unsigned i = 0; i < f->nlinks; i++)
			bpf_link__destroy(f->links[i]);
	}
	free(f->fds);
	free(f->links);
	/* each unregistration walks the processes that still map the library (bench/attach_scale.py) */
	if (f->nfds + f->nlinks)
		fprintf(stderr, "probe-floor: %u links closed in %.3f ms\n", f->nfds + f->nlinks, (now_s() - t0) * 1e3);
	empty_bpf__destroy(f->skel);
	pdi_elfobj_free(f->object);
	pdi_objcache_free(f->objs);
	*f = (struct floor){0};
}

/* Until stdin ends, SIGTERM/SIGINT arrives (through SFD) or MAX_S seconds pass. */
static int wait_for_end(int sfd, double max_s)
{
	double deadline = now_s() + max_s;

	for (;;) {
		struct pollfd p[2] = {{.fd = STDIN_FILENO, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		double left = deadline - now_s();
		char buf[256];
		int n;

		if (left <= 0) {
			fprintf(stderr, "probe-floor: %.0f s passed, detaching\n", max_s);
			return 0;
		}
		n = poll(p, 2, left > 60 ? 60000 : (int)(left * 1000) + 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[1].revents)
			return 0;
		if (p[0].revents) {
			ssize_t k = read(STDIN_FILENO, buf, sizeof(buf));

			if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
				return 0;
		}
	}
}

static void usage(FILE *out)
{
	fprintf(out, "usage: probe-floor [--perf-links] [--at-start] [--object LIB] [--close-together]\n"
		     "                   [--max-seconds S] --pid PID...\n"
		     "       probe-floor --list [--at-start] --pid PID...\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"pid", required_argument, NULL, 'p'},
					     {"perf-links", no_argument, NULL, 'l'},
					     {"at-start", no_argument, NULL, 's'},
					     {"list", no_argument, NULL, 'L'},
					     {"max-seconds", required_argument, NULL, 'm'},
					     {"object", required_argument, NULL, 'o'},
					     {"close-together", no_argument, NULL, 'T'},
					     {"help", no_argument, NULL, 'h'},
					     {0}};
	struct floor f = {0};
	pid_t *pids = calloc((size_t)argc, sizeof(*pids));
	unsigned npids = 0;
	bool perf_links = false, list = false;
	double max_s = 3600;
	sigset_t mask;
	int c, r, sfd = -1;

	if (!pids)
		return 1;
	while ((c = getopt_long(argc, argv, "p:lsLm:o:Th", opts, NULL)) >= 0) {
		switch (c) {
		case 'L': list = true; break;
		case 's': f.target_flags |= PDI_TARGETS_AT_START; break;
		case 'p': pids[npids++] = (pid_t)atoi(optarg); break;
		case 'l': perf_links = true; break;
		case 'm': max_s = atof(optarg); break;
		case 'o': f.object_path = optarg; break;
		case 'T': f.close_together = true; break;
		case 'h': usage(stdout); free(pids); return 0;
		default: usage(stderr); free(pids); return 2;
		}
	}
	/* "--pid 1 2 3", as pdimon attach takes it */
	for (; optind < argc; optind++)
		pids[npids++] = (pid_t)atoi(argv[optind]);
	for (unsigned i = 0; i < npids; i++)
		if (pids[i] <= 0) {
			usage(stderr);
			free(pids);
			return 2;
		}
	if (!npids) {
		usage(stderr);
		free(pids);
		return 2;
	}

	/* SIGTERM/SIGINT end the wait through a signalfd; block them before anything is attached */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		r = -errno;
		fprintf(stderr, "probe-floor: signalfd: %s\n", strerror(-r));
		goto out;
	}

	libbpf_set_print(libbpf_print);
	r = pdi_objcache_new(&f.objs);
	if (r < 0)
		goto out;
	if (f.object_path && (r = pdi_elfobj_open(f.object_path, &f.object)) < 0) {
		fprintf(stderr, "probe-floor: cannot read %s: %s\n", f.object_path, strerror(-r));
		goto out;
	}
	if (list) {
		for (unsigned i = 0; i < npids && r == 0; i++)
			r = floor_list(&f, pids[i]);
		goto out;
	}
	f.skel = empty_bpf__open();
	if (!f.skel) {
		r = -errno;
		fprintf(stderr, "probe-floor: cannot open the BPF object: %s\n", strerror(-r));
		goto out;
	}
	f.multi = !perf_links && pdi_uprobe_multi_supported();
	if (f.multi) {
		bpf_program__set_expected_attach_type(f.skel->progs.empty_enter, PDI_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(f.skel->progs.empty_exit, PDI_BPF_TRACE_UPROBE_MULTI);
	}
	r = empty_bpf__load(f.skel);
	if (r < 0) {
		fprintf(stderr, "probe-floor: cannot load the BPF programs: %s\n", strerror(-r));
		goto out;
	}
	for (unsigned i = 0; i < npids; i++)
		if ((r = floor_attach(&f, pids[i])) < 0)
			goto out;
	printf("attached %u probes to %u processes (%s)\n", f.nprobes, npids,
	       f.multi ? "uprobe_multi links" : "perf links");
	fflush(stdout);
	r = wait_for_end(sfd, max_s);
out:
	floor_free(&f);
	if (sfd >= 0)
		close(sfd);
	free(pids);
	return r < 0 ? 1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* tracer.c -- loads bpf/mpitrace.bpf.c, attaches it per process and drains its ring buffer.
 *
 * Probes are attached per process (pid filter) to the object the process really maps the
 * MPI symbols from: attaching to a library path for all processes would make every
 * process that maps it pay the trap. Only MPI_Init is trapped for all processes, which
 * costs one trap per MPI process in its life. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "close_together.h"
#include "elfobj.h"
#include "log.h"
#include "mpi_funcs.h"
#include "mpitrace.skel.h"
#include "objcache.h"
#include "probe_targets.h"
#include "procmaps.h"
#include "tracer.h"
#include "tracer_impl.h"
#include "uprobe_multi.h"


/* libbpf's own messages only with -v: every failure they describe is reported by pdimond
 * in one line that says what to do */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	if (pdi_log_level < PDI_LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int handle_sample(void *ctx, void *data, size_t size)
{
	struct pdi_tracer *t = ctx;
	struct pdi_event e;

	if (t->discarding)
		return 0;
	if (size >= sizeof(struct pdi_frames) && *(const __u32 *)data == PDI_EV_FRAMES) {
		if (t->on_frames)
			t->on_frames(t->ctx, data); /* 4 KiB: handled in place, not copied */
		return 0;
	}
	if (size < sizeof(e))
		return 0;
	memcpy(&e, data, sizeof(e));
	return t->on_event(t->ctx, &e);
}

int pdi_tracer_replay_event(struct pdi_tracer *t, const struct pdi_event *e)
{
	return t->on_event(t->ctx, e);
}

void pdi_tracer_replay_frames(struct pdi_tracer *t, const struct pdi_frames *f)
{
	if (t->on_frames)
		t->on_frames(t->ctx, f);
}

int pdi_tracer_new(const struct pdi_tracer_options *opts, pdi_event_fn on_event, void *ctx,
		   struct pdi_tracer **ret)
{
	struct pdi_tracer *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	libbpf_set_print(libbpf_print);
	t->on_event = on_event;
	t->on_frames = opts->on_frames;
	t->ctx = ctx;
	t->target_flags = opts->target_flags;
	t->skel = mpitrace_bpf__open();
	if (!t->skel) {
		r = -errno;
		goto fail;
	}
	r = bpf_map__set_max_entries(t->skel->maps.events, opts->ring_bytes);
	if (r == 0 && opts->inflight_threads)
		r = bpf_map__set_max_entries(t->skel->maps.inflight, opts->inflight_threads);
	if (r < 0)
		goto fail;
	t->skel->rodata->wakeup_bytes = opts->wakeup_bytes;
	/* behind by an eighth of the ring: every record wakes pdimond (mpitrace.bpf.c, wakeup_flag) */
	t->skel->rodata->behind_bytes = opts->ring_bytes / 8;
	if (t->skel->rodata->behind_bytes < opts->wakeup_bytes)
		t->skel->rodata->behind_bytes = opts->wakeup_bytes;
	t->multi = pdi_uprobe_multi_supported();
	if (t->multi) {
		bpf_program__set_expected_attach_type(t->skel->progs.mpi_enter, PDI_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(t->skel->progs.mpi_exit, PDI_BPF_TRACE_UPROBE_MULTI);
	}
	r = mpitrace_bpf__load(t->skel);
	if (r < 0)
		goto fail;
	t->exit_link = bpf_program__attach(t->skel->progs.thread_exit);
	if (!t->exit_link) {
		r = -errno;
		goto fail;
	}
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), handle_sample, t, NULL);
	if (!t->rb) {
		r = -errno;
		goto fail;
	}
	*ret = t;
	return 0;
fail:
	pdi_tracer_free(t);
	return r;
}

void pdi_tracer_free(struct pdi_tracer *t)
{
	if (!t)
		return;
	pdi_startup_free(t);
	bpf_link__destroy(t->exit_link);
	for (unsigned i = 0; i < t->ntargets; i++)
		free(t->targets[i].pt);
	ring_buffer__free(t->rb);
	mpitrace_bpf__destroy(t->skel);
	free(t);
}

int pdi_tracer_check(struct pdi_objcache *objs, pid_t pid)
{
	struct pdi_probe_targets *pt = malloc(sizeof(*pt));
	int r;

	if (!pt)
		return -ENOMEM;
	r = pdi_probe_targets_find(objs, pid, PDI_TARGETS_AT_START, pt);
	free(pt);
	return r;
}

static int add_link(struct pdi_attachment *a, struct bpf_link *l)
{
	struct bpf_link **v = realloc(a->links, sizeof(*v) * (a->nlinks + 1));

	if (!v) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	a->links = v;
	a->links[a->nlinks++] = l;
	return 0;
}

static int attach_pair(struct mpitrace_bpf *skel, struct pdi_attachment *a, pid_t pid,
		       const char *path, uint64_t off, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = true);
	struct bpf_link *l;
	int r;

	/* return probe first, as in attach_multi() */
	l = bpf_program__attach_uprobe_opts(skel->progs.mpi_exit, pid, path, off, &opts);
	if (!l)
		return -errno;
	if ((r = add_link(a, l)) < 0)
		return r;
	opts.retprobe = false;
	l = bpf_program__attach_uprobe_opts(skel->progs.mpi_enter, pid, path, off, &opts);
	if (!l)
		return -errno;
	return add_link(a, l);
}

/* Both links at once: one syscall each, whatever the number of functions. The return
 * probes go first: a call entered between the two attaches would otherwise leave an
 * inflight entry that no return ever clears, and every later call would count as nested. */
static int attach_multi(struct pdi_tracer *t, struct pdi_attachment *a, pid_t pid, const char *path,
			const uint64_t *offs, const uint64_t *cookies, unsigned n)
{
	return pdi_tracer_attach_offsets(t, pid, path, offs, cookies, n, true, a->multi_fds);
}

const struct pdi_probe_targets *pdi_tracer_targets_of(struct pdi_tracer *t, struct pdi_elfobj *o, dev_t dev,
						      ino_t ino)
{
	struct pdi_probe_targets *pt;

	for (unsigned i = 0; i < t->ntargets; i++)
		if (t->targets[i].dev == dev && t->targets[i].ino == ino)
			return t->targets[i].pt;
	if (!o || t->ntargets == PDI_TARGETS_CACHED || !(pt = calloc(1, sizeof(*pt))))
		return NULL;
	if (pdi_probe_targets_of(o, t->target_flags, pt) < 0) {
		free(pt);
		return NULL;
	}
	pt->obj = NULL; /* the object cache's, which may close it */
	t->targets[t->ntargets].dev = dev;
	t->targets[t->ntargets].ino = ino;
	t->targets[t->ntargets++].pt = pt;
	return pt;
}

/* PID's probe targets: where it maps its MPI object, and that object's offsets and placement
 * (computed once per object). */
static int find_targets(struct pdi_tracer *t, struct pdi_objcache *objs, pid_t pid, struct pdi_probe_targets *pt)
{
	const struct pdi_probe_targets *of;
	int r = pdi_probe_targets_locate(objs, pid, pt);

	if (r < 0)
		return r;
	of = pdi_tracer_targets_of(t, pt->obj, pt->dev, pt->ino);
	if (!of)
		return pdi_probe_targets_of(pt->obj, t->target_flags, pt) < 0 ? -ENOENT : 0;
	pt->n = of->n;
	memcpy(pt->offsets, of->offsets, sizeof(pt->offsets[0]) * of->n);
	memcpy(pt->cookies, of->cookies, sizeof(pt->cookies[0]) * of->n);
	memcpy(pt->skipped, of->skipped, sizeof(pt->skipped[0]) * of->n);
	memcpy(pt->kinds, of->kinds, sizeof(pt->kinds[0]) * of->n);
	memcpy(pt->first_kinds, of->first_kinds, sizeof(pt->first_kinds[0]) * of->n);
	memcpy(pt->why, of->why, sizeof(pt->why[0]) * of->n);
	return 0;
}

/* A's counts and names from its targets PT, which it takes. */
static void complete(struct pdi_attachment *a, pid_t pid, struct pdi_probe_targets *pt)
{
	for (unsigned i = 0; i < pt->n; i++) {
		a->nmoved += pt->skipped[i] > 0;
		a->nstepped += pt->kinds[i] == PDI_INSN_STEPPED;
	}
	log_debug("pid %d: %u MPI functions probed in %s, %u entry probes moved to an emulated instruction, "
		  "%u single-stepped", (int)pid, pt->n, pt->object, a->nmoved, a->nstepped);
	a->nprobes = pt->n;
	a->int_handles = pt->int_handles;
	a->dtypes = pt->dtypes;
	snprintf(a->object, sizeof(a->object), "%s", pt->object);
	a->targets = pt;
}

int pdi_tracer_attach(struct pdi_tracer *t, struct pdi_objcache *objs, pid_t pid,
		      struct pdi_attachment *ret)
{
	struct pdi_attachment a = {.multi_fds = {-1, -1}, .object_fd = -1};
	struct pdi_probe_targets *pt = malloc(sizeof(*pt));
	int r;

	if (!pt)
		return -ENOMEM;
	r = find_targets(t, objs, pid, pt);
	if (r < 0)
		goto out;
	/* a new attachment's links are all of generation 0 (a process by this pid before it may
	 * have left its generations behind) */
	(void)bpf_map__delete_elem(t->skel->maps.link_gens, &(__u32){(__u32)pid}, sizeof(__u32), 0);
	pdi_tracer_procs_changed(t);
	/* the cache may close its object any time: the probes, and their later moves by the
	 * budget, name the file by an fd of the attachment's own */
	a.object_fd = fcntl(pdi_elfobj_fd(pt->obj), F_DUPFD_CLOEXEC, 3);
	if (a.object_fd < 0) {
		r = -errno;
		goto out;
	}
	snprintf(pt->path, sizeof(pt->path), "/proc/self/fd/%d", a.object_fd);
	pt->obj = NULL;
	if (t->multi && (r = pdi_startup_take(t, pid, pt, a.multi_fds)) == 0) {
		a.ahead = true;
	} else if (r == -ESRCH || r == -EBUSY) {
		/* exited meanwhile: pdi_tracer_attach_exited() takes its links; or they are being
		 * attached (a second set would see every call twice) */
		pdi_attachment_detach(&a);
		goto out;
	} else if (t->multi) {
		r = attach_multi(t, &a, pid, pt->path, pt->offsets, pt->cookies, pt->n);
	} else {
		for (unsigned i = 0; i < pt->n && r == 0; i++)
			r = attach_pair(t->skel, &a, pid, pt->path, pt->offsets[i], pt->cookies[i]);
	}
	if (r < 0) {
		log_warning_errno(r, "Cannot probe MPI functions in %s for pid %d: %m", pt->object, (int)pid);
		pdi_attachment_detach(&a);
		goto out;
	}
	pdi_startup_learn(t, pid, pt);
	complete(&a, pid, pt);
	pt = NULL;
	*ret = a;
out:
	free(pt);
	return r;
}

int pdi_tracer_attach_exited(struct pdi_tracer *t, struct pdi_objcache *objs, pid_t pid, uint64_t start_ticks,
			     const struct pdi_maps *maps, int exe_fd,
			     struct pdi_attachment *ret)
{
	struct pdi_attachment a = {.multi_fds = {-1, -1}, .object_fd = -1, .ahead = true};
	struct pdi_probe_targets *pt = malloc(sizeof(*pt));
	int r;

	if (!pt)
		return -ENOMEM;
	r = pdi_startup_take_exited(t, pid, start_ticks, pt, a.multi_fds);
	if (r < 0) {
		free(pt);
		return r;
	}
	/* MPICH's handles are the same in every process; Open MPI's are addresses in it, known from
	 * its maps (a short rank of a program's first step, gone before its objects were read, lost
	 * every call's bytes and its MPI_COMM_WORLD) */
	pdi_dtypes_load_read(&pt->dtypes, pt->int_handles, objs, pid, maps, exe_fd, pt->dev, pt->ino);
	a.object_fd = open(pt->path, O_RDONLY | O_CLOEXEC); /* an fd of its own, as for any attachment */
	if (a.object_fd >= 0)
		snprintf(pt->path, sizeof(pt->path), "/proc/self/fd/%d", a.object_fd);
	complete(&a, pid, pt);
	*ret = a;
	return 0;
}

void pdi_attachment_detach(struct pdi_attachment *a)
{
	for (unsigned i = 0; i < a->nlinks; i++)
		bpf_link__destroy(a->links[i]);
	free(a->links);
	a->links = NULL;
	a->nlinks = 0;
	for (unsigned i = 0; i < 2; i++)
		if (a->multi_fds[i] >= 0) {
			close(a->multi_fds[i]);
			a->multi_fds[i] = -1;
		}
	for (unsigned fn = 0; a->fns && fn < pdi_mpi_nfuncs; fn++)
		pdi_links_close_pair(a->fns[fn].fds);
	free(a->fns);
	a->fns = NULL;
	for (unsigned i = 0; i < a->nretired; i++)
		close(a->retired[i]);
	free(a->retired);
	a->retired = NULL;
	a->nretired = 0;
	for (unsigned i = 0; i < a->nretired_returns; i++)
		close(a->retired_returns[i]);
	free(a->retired_returns);
	a->retired_returns = NULL;
	a->nretired_returns = 0;
	a->returns_held_ns = 0;
	a->returns_waiting = false;
	pdi_threads_free(&a->threads);
	free(a->targets);
	a->targets = NULL;
	if (a->object_fd >= 0) {
		close(a->object_fd);
		a->object_fd = -1;
	}
}

int pdi_tracer_attach_offsets(struct pdi_tracer *t, pid_t pid, const char *path, const uint64_t *offs,
			      const uint64_t *cookies, unsigned n, bool with_return, int fds[2])
{
	const int progs[2] = {bpf_program__fd(t->skel->progs.mpi_enter), bpf_program__fd(t->skel->progs.mpi_exit)};

	fds[0] = fds[1] = -1;
	if (!t->multi)
		return -EOPNOTSUPP;
	return pdi_uprobe_multi_attach_pair(progs, path, offs, cookies, n, with_return, pid, fds);
}

int pdi_tracer_watch(struct pdi_tracer *t, pid_t pid)
{
	__u32 k = (__u32)pid, v = 1;

	return bpf_map__update_elem(t->skel->maps.watched, &k, sizeof(k), &v, sizeof(v), BPF_ANY);
}

void pdi_tracer_unwatch(struct pdi_tracer *t, pid_t pid)
{
	__u32 k = (__u32)pid;

	(void)bpf_map__delete_elem(t->skel->maps.watched, &k, sizeof(k), 0);
	pdi_startup_drop_root(t, pid);
}

int pdi_tracer_epoll_fd(struct pdi_tracer *t)
{
	return ring_buffer__epoll_fd(t->rb);
}

void pdi_tracer_discard(struct pdi_tracer *t)
{
	t->discarding = true;
	(void)ring_buffer__consume(t->rb);
	t->discarding = false;
}

int pdi_tracer_drain(struct pdi_tracer *t)
{
	return ring_buffer__consume(t->rb);
}

uint64_t pdi_tracer_lost(struct pdi_tracer *t, pid_t pid)
{
	__u32 k = (__u32)pid;
	__u64 v = 0;

	if (bpf_map__lookup_elem(t->skel->maps.lost, &k, sizeof(k), &v, sizeof(v), 0) < 0)
		return 0;
	return v;
}

/* Thread TID of PID's entry into *RET, if it is inside a call: one map lookup. */
static bool thread_in_call(int fd, pid_t pid, pid_t tid, struct pdi_inflight *ret)
{
	__u64 key = (__u64)pid << 32 | (__u32)tid;

	return bpf_map_lookup_elem(fd, &key, ret) == 0 && ret->active > 0;
}

int pdi_tracer_fill_callsite(struct pdi_tracer *t, pid_t tid)
{
	LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info linfo = {.task.tid = (__u32)tid};
	struct bpf_link *link;
	char buf[64];
	ssize_t n;
	int fd, r = 0;

	opts.link_info = &linfo;
	opts.link_info_len = sizeof(linfo);
	link = bpf_program__attach_iter(t->skel->progs.inflight_callsite, &opts);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		r = -errno;
	} else {
		/* the program writes nothing: reading to the end runs it */
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			;
		if (n < 0)
			r = -errno;
		close(fd);
	}
	bpf_link__destroy(link);
	return r;
}

/* As thread_in_call(), the call site filled in where the entry left it to the return. */
static bool thread_call_placed(struct pdi_tracer *t, int fd, pid_t pid, pid_t tid, struct pdi_inflight *ret)
{
	if (!thread_in_call(fd, pid, tid, ret))
		return false;
	if (ret->callsite || pdi_tracer_fill_callsite(t, tid) < 0)
		return true;
	/* the call may have ended meanwhile: the entry as it is now */
	return thread_in_call(fd, pid, tid, ret);
}

int pdi_tracer_inflight(struct pdi_tracer *t, pid_t pid, const struct pdi_attachment *att,
			struct pdi_inflight *out, pid_t *tids, int max)
{
	int fd = bpf_map__fd(t->skel->maps.inflight), n = 0;
	unsigned seen = 0;
	pid_t tid;
	DIR *dir;

	/* the main thread first: MPI is mostly called there, and its entry outlives the process
	 * (until pdi_tracer_forget()), where an ended task's last call is read */
	if (max > 0 && thread_call_placed(t, fd, pid, pid, &out[n]) &&
	    !(att && pdi_attachment_return_lost(att, &out[n])))
		tids[n++] = pid;
	/* then the others, one lookup each (a thread that never called a probed function has no
	 * entry): an MPI thread that is not the main one, as MPI_THREAD_FUNNELED or MULTIPLE allow */
	if (n >= max || !(dir = pdi_threads_open(pid)))
		return n;
	while (n < max && pdi_threads_next(dir, &seen, &tid) > 0)
		if (tid != pid && thread_call_placed(t, fd, pid, tid, &out[n]) &&
		    !(att && pdi_attachment_return_lost(att, &out[n])))
			tids[n++] = tid;
	closedir(dir);
	return n;
}

int pdi_tracer_inflight_fns_before(struct pdi_tracer *t, pid_t pid, const pid_t *tids, unsigned ntids,
				   uint64_t before_ns, uint64_t ret[PDI_LINK_GEN_FUNCS / 64])
{
	uint64_t fns[PDI_LINK_GEN_FUNCS / 64] = {0};
	int fd = bpf_map__fd(t->skel->maps.inflight);

	/* a thread that never called a probed function, or has exited, has no entry */
	for (unsigned i = 0; i < ntids; i++) {
		struct pdi_inflight f;

		if (thread_in_call(fd, pid, tids[i], &f) && f.t_enter < before_ns &&
		    PDI_COOKIE_FN(f.cookie) < PDI_LINK_GEN_FUNCS)
			fns[PDI_COOKIE_FN(f.cookie) / 64] |= 1ull << (PDI_COOKIE_FN(f.cookie) % 64);
	}
	memcpy(ret, fns, sizeof(fns));
	return 0;
}

int pdi_tracer_inflight_thread(struct pdi_tracer *t, pid_t pid, pid_t tid, struct pdi_inflight *ret)
{
	__u64 key = (__u64)pid << 32 | (__u32)tid;
	struct pdi_inflight f;

	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.inflight), &key, &f) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (f.active == 0)
		return 0;
	*ret = f;
	return 1;
}

int pdi_tracer_exited_in(struct pdi_tracer *t, pid_t pid, struct pdi_inflight *ret)
{
	__u32 k = (__u32)pid;

	return bpf_map__lookup_elem(t->skel->maps.exited_in, &k, sizeof(k), ret, sizeof(*ret), 0) < 0 ? -ENOENT : 0;
}

int pdi_tracer_hop_maps(struct pdi_tracer *t, int *ret_hops_fd, int *ret_ranges_fd)
{
	int hops = bpf_map__fd(t->skel->maps.hops), ranges = bpf_map__fd(t->skel->maps.hop_ranges);

	if (hops < 0 || ranges < 0)
		return -EBADF;
	*ret_hops_fd = hops;
	*ret_ranges_fd = ranges;
	return 0;
}

void pdi_tracer_procs_changed(struct pdi_tracer *t)
{
	/* after the change: a thread that reads the new epoch finds the maps changed */
	__atomic_add_fetch(&t->skel->data->procs_epoch, 1, __ATOMIC_SEQ_CST);
}

/* Keys of one process's threads deleted per walk of the in-flight map. */
#define FORGET_BATCH 256

void pdi_tracer_forget(struct pdi_tracer *t, pid_t pid)
{
	int fd = bpf_map__fd(t->skel->maps.inflight);
	/* a walk restarts from the first key when the one it stands on was deleted meanwhile (other
	 * processes' threads come and go): bounded all the same */
	uint64_t steps = 0, most = 4 * (uint64_t)bpf_map__max_entries(t->skel->maps.inflight) + FORGET_BATCH;
	__u64 keys[FORGET_BATCH], key, next, *prev;
	__u32 k = (__u32)pid;
	unsigned n;

	/* deleting the key a walk stands on loses its place: collect the process's keys in one walk,
	 * then delete them (one walk per FORGET_BATCH threads of it) */
	do {
		n = 0;
		prev = NULL;
		while (n < FORGET_BATCH && steps++ < most && bpf_map_get_next_key(fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if ((pid_t)(key >> 32) == pid)
				keys[n++] = key;
		}
		for (unsigned i = 0; i < n; i++)
			(void)bpf_map_delete_elem(fd, &keys[i]);
	} while (n == FORGET_BATCH && steps < most);
	(void)bpf_map__delete_elem(t->skel->maps.lost, &k, sizeof(k), 0);
	(void)bpf_map__delete_elem(t->skel->maps.exited_in, &k, sizeof(k), 0);
	(void)bpf_map__delete_elem(t->skel->maps.link_gens, &k, sizeof(k), 0);
	pdi_tracer_procs_changed(t);
}

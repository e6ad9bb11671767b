/* SPDX-License-Identifier: GPL-2.0-only */
/* startup.c -- how a starting MPI process gets its probes: the MPI_Init trap, and probes
 * attached ahead of it.
 *
 * MPI_Init is trapped for every process in the libraries of the setting mpi_libraries; a
 * process of a watched tree (a registered Slurm task, the launcher of "pdimon run") is stopped
 * there until pdimond attached its probes. That costs the step the daemon's reaction time per
 * process, one after the other. So probes go on earlier where the daemon can tell where they
 * go: uprobes belong to the library's inode, and a link with a pid filter takes effect in that
 * process whenever it maps the library. When a process of a watched tree executes a program
 * (BPF on sched_process_exec), its probes are attached at once to the trapped library that
 * program's processes mapped before (learned at their attach, per executable inode); the
 * process reaches MPI_Init probed, its entry probe sees that call, and the trap lets it go
 * (bpf/mpitrace.bpf.c). A program never run here is read for the libraries it links
 * (DT_NEEDED, directly or through one library beside a trapped one: the Fortran bindings,
 * ScaLAPACK, an application's own library). Where the daemon cannot tell (a program that loads
 * MPI with dlopen, or attached too late) the process is stopped at MPI_Init as before, as it
 * is when the guess was wrong (another file of that name, by LD_LIBRARY_PATH): no call is
 * missed either way.
 *
 * Each trapped library's offsets and placement are computed when it is trapped, and a link
 * of pdimond's own (pid filter: pdimond, which never maps it) keeps every probe's uprobe
 * registered: the first attach to a library otherwise pays for creating them.
 *
 * The attach itself runs off the loop (ahead_attach.c): planned here on the loop, the entry kept
 * as "attaching", attached by pdi_ahead_attach_run() on a worker, committed here on the loop by
 * pdi_tracer_ahead_end(). */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "clock.h"
#include "close_together.h"
#include "elfobj.h"
#include "ident.h"
#include "log.h"
#include "mpi_funcs.h"
#include "mpitrace.skel.h"
#include "objcache.h"
#include "objopen.h"
#include "probe_targets.h"
#include "tracer_impl.h"
#include "uprobe_multi.h"

#define AHEAD_MAX 4096   /* processes attached ahead and not yet joined */
#define LEARNED_MAX 256  /* executables remembered */
#define TREE_DEPTH 16    /* as MAX_ANCESTORS in the BPF trap */
#define AHEAD_KEEP_NS (10 * 1000000000ull) /* an exited process attached ahead may still join */
/* Reading programs for what they link costs the loop up to a few ms for each one never seen:
 * a user executing thousands of distinct programs in a watched tree gets the old way (stopped
 * at MPI_Init) past this many a second, and no more of pdimond's time. */
#define NEEDED_PER_S 32
#define NEEDED_DEPS_MAX 16 /* libraries beside a trapped one read for one program */

/* ---- the MPI_Init traps ---- */

static int add_init_link(struct pdi_tracer *t, struct bpf_link *l)
{
	struct bpf_link **v = realloc(t->init_links, sizeof(*v) * (t->ninit_links + 1));

	if (!v) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	t->init_links = v;
	t->init_links[t->ninit_links++] = l;
	return 0;
}

static int trap_object(struct pdi_tracer *t, struct pdi_elfobj *o, const char *path, unsigned lib)
{
	static const char *const inits[] = {"MPI_Init", "MPI_Init_thread"};
	int ntrapped = 0, r;

	for (unsigned i = 0; i < ELEMENTSOF(inits); i++) {
		int fn = pdi_mpi_func_find(inits[i]);
		uint64_t offs[2];
		unsigned n = pdi_func_offsets(o, inits[i], offs);

		for (unsigned k = 0; k < n; k++) {
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = PDI_TRAP_COOKIE(fn, lib));
			struct bpf_link *l;

			l = bpf_program__attach_uprobe_opts(t->skel->progs.mpi_init_trap, -1, path, offs[k], &opts);
			if (!l)
				return log_warning_errno(-errno, "Cannot trap %s in %s: %m", inits[i], path);
			if ((r = add_init_link(t, l)) < 0)
				return r;
			ntrapped++;
		}
	}
	return ntrapped;
}

static int find_trapped(const struct pdi_tracer *t, dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < t->ntrapped; i++)
		if (t->trapped[i].dev == dev && t->trapped[i].ino == ino)
			return (int)i;
	return -1;
}

bool pdi_tracer_maps_trapped(const struct pdi_tracer *t, const struct pdi_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].path && find_trapped(t, (dev_t)maps->v[i].dev, (ino_t)maps->v[i].ino) >= 0)
			return true;
	return false;
}

/* Trapped library L (object O) has its offsets computed now, and kept registered by pdimond's
 * own link. */
static void warm_up(struct pdi_tracer *t, struct pdi_trapped_lib *l, struct pdi_elfobj *o)
{
	const struct pdi_probe_targets *pt = pdi_tracer_targets_of(t, o, l->dev, l->ino);

	if (!pt || !t->multi)
		return;
	if (pdi_tracer_attach_offsets(t, getpid(), l->path, pt->offsets, pt->cookies, pt->n, true, l->warm) < 0)
		log_debug("Cannot keep the probes of %s registered: %m; its first attach pays for them", l->path);
}

/* L's DT_SONAME, what programs name it by; its file name when it has none. */
static void set_soname(struct pdi_trapped_lib *l)
{
	struct pdi_needed *n = malloc(sizeof(*n));
	const char *base = strrchr(l->name, '/');

	if (n && pdi_needed_read(l->fd, n) == 0 && n->soname[0])
		snprintf(l->soname, sizeof(l->soname), "%s", n->soname);
	else
		snprintf(l->soname, sizeof(l->soname), "%s", base ? base + 1 : l->name);
	free(n);
}

/* One library the globs name: trapped once per inode (libmpi.so, libmpi.so.40 and
 * libmpi.so.40.30.4 are one file). Returns 1 when newly trapped. */
static int trap_library(struct pdi_tracer *t, struct pdi_objcache *objs, const char *path)
{
	struct pdi_mapping m = {.path = (char *)path, .exec = true};
	struct pdi_trapped_lib *l;
	struct pdi_elfobj *o;
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || find_trapped(t, st.st_dev, st.st_ino) >= 0)
		return 0;
	if (t->ntrapped == PDI_TRAPPED_MAX) {
		log_warning("Not trapping MPI_Init in %s: %d MPI libraries are trapped already", path, PDI_TRAPPED_MAX);
		return 0;
	}
	m.dev = st.st_dev;
	m.ino = st.st_ino;
	if (pdi_objcache_get(objs, 0, &m, &o) < 0)
		return 0;
	l = &t->trapped[t->ntrapped];
	*l = (struct pdi_trapped_lib){.dev = st.st_dev, .ino = st.st_ino, .warm = {-1, -1}};
	/* the file the cache checked, pinned: a library replaced on disk keeps its old offsets */
	l->fd = fcntl(pdi_elfobj_fd(o), F_DUPFD_CLOEXEC, 3);
	if (l->fd < 0)
		return 0;
	snprintf(l->path, sizeof(l->path), "/proc/self/fd/%d", l->fd);
	snprintf(l->name, sizeof(l->name), "%s", path);
	set_soname(l);
	if (trap_object(t, o, l->path, t->ntrapped) <= 0) {
		close(l->fd);
		return 0;
	}
	warm_up(t, l, o);
	t->ntrapped++;
	log_info("Trapping MPI_Init in %s", path);
	return 1;
}

int pdi_tracer_trap_init(struct pdi_tracer *t, struct pdi_objcache *objs, char *const *globs, unsigned nglobs)
{
	int ntrapped = 0;

	for (unsigned g = 0; g < nglobs; g++) {
		glob_t gl = {0};

		if (glob(globs[g], 0, NULL, &gl) != 0)
			continue;
		for (size_t i = 0; i < gl.gl_pathc; i++)
			ntrapped += trap_library(t, objs, gl.gl_pathv[i]);
		globfree(&gl);
	}
	/* without it every process is stopped at MPI_Init, as before */
	if (ntrapped > 0 && !t->exec_link && t->multi) {
		t->exec_link = bpf_program__attach(t->skel->progs.mpi_exec);
		if (!t->exec_link)
			log_warning_errno(-errno, "Cannot see programs start (sched_process_exec): %m; "
						  "starting MPI processes are stopped at MPI_Init until attached");
	}
	return ntrapped;
}

/* ---- probes attached ahead ---- */

static int find_ahead(const struct pdi_tracer *t, pid_t pid)
{
	for (unsigned i = 0; i < t->nahead; i++)
		if (t->ahead[i].ident.pid == pid)
			return (int)i;
	return -1;
}

/* Link fds FDS (-1 skipped) join those the daemon closes off the loop, and are -1 after. */
static void drop_links(struct pdi_tracer *t, int fds[2])
{
	pdi_links_keep_pair(&t->dropped_fds, &t->ndropped_fds, fds);
}

static void drop_ahead(struct pdi_tracer *t, unsigned i)
{
	drop_links(t, t->ahead[i].fds);
	pdi_ident_release(&t->ahead[i].ident);
	t->ahead[i] = t->ahead[--t->nahead];
}

void pdi_tracer_take_dropped(struct pdi_tracer *t, int **ret_fds, unsigned *ret_n)
{
	*ret_fds = t->dropped_fds;
	*ret_n = t->ndropped_fds;
	t->dropped_fds = NULL;
	t->ndropped_fds = 0;
}

/* Processes that exited before they joined leave: they never reached MPI_Init, or their
 * MPI_Init was not handled yet and never will be after AHEAD_KEEP_NS (a short program may run
 * to its end while the loop is busy, and joins when its MPI_Init is: pdi_startup_take_exited()). */
static void sweep(struct pdi_tracer *t)
{
	uint64_t now = pdi_now_ns();

	for (unsigned i = t->nahead; i-- > 0;)
		if (!t->ahead[i].attaching && now - t->ahead[i].attached_ns > AHEAD_KEEP_NS &&
		    pdi_pidfd_exited(t->ahead[i].ident.pidfd))
			drop_ahead(t, i);
}

static const struct pdi_learned_exe *find_learned(const struct pdi_tracer *t, dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < t->nlearned; i++)
		if (t->learned[i].dev == dev && t->learned[i].ino == ino)
			return &t->learned[i];
	return NULL;
}

/* E is what its executable's processes map, from now on; when full, the oldest entry goes. */
static void remember(struct pdi_tracer *t, const struct pdi_learned_exe *e)
{
	for (unsigned i = 0; i < t->nlearned; i++)
		if (t->learned[i].dev == e->dev && t->learned[i].ino == e->ino) {
			t->learned[i] = *e;
			return;
		}
	if (!t->learned && !(t->learned = calloc(LEARNED_MAX, sizeof(*t->learned))))
		return;
	if (t->nlearned == LEARNED_MAX)
		memmove(t->learned, t->learned + 1, sizeof(*t->learned) * --t->nlearned);
	t->learned[t->nlearned++] = *e;
}

static int trapped_by_soname(const struct pdi_tracer *t, const char *soname)
{
	for (unsigned i = 0; i < t->ntrapped; i++)
		if (!strcmp(t->trapped[i].soname, soname))
			return (int)i;
	return PDI_LEARNED_NONE;
}

/* May one more program be read for what it links, this second? */
static bool needed_allowed(struct pdi_tracer *t)
{
	uint64_t now = pdi_now_ns();

	if (now - t->needed_since_ns >= 1000000000ull) {
		t->needed_since_ns = now;
		t->needed_read = 0;
	}
	return t->needed_read++ < NEEDED_PER_S;
}

/* The trapped library that the file at PATH (inode INO, 0: any) asks for by name, or
 * PDI_LEARNED_NONE; its DT_NEEDED names into N. */
static int links_trapped(const struct pdi_tracer *t, const char *path, uint64_t ino, struct pdi_needed *n)
{
	int fd, r, lib = PDI_LEARNED_NONE;

	n->n = 0;
	if (pdi_objopen_path(path, ino, &fd) < 0)
		return lib;
	r = pdi_needed_read(fd, n);
	close(fd);
	for (unsigned i = 0; r == 0 && i < n->n && lib < 0; i++)
		lib = trapped_by_soname(t, n->names[i]);
	return lib;
}

/* Is trapped library K the first one of its folder? (each folder is looked in once) */
static bool first_of_folder(const struct pdi_tracer *t, unsigned k)
{
	size_t len = (size_t)(strrchr(t->trapped[k].name, '/') - t->trapped[k].name);

	for (unsigned j = 0; j < k; j++)
		if (!strncmp(t->trapped[j].name, t->trapped[k].name, len + 1) && !strchr(t->trapped[j].name + len + 1, '/'))
			return false;
	return true;
}

/* The trapped library that PID's program (inode INO) links: named in its DT_NEEDED, or in that
 * of a library it names that lies in a trapped library's folder (libmpi_mpifh.so.40 asks for
 * libmpi.so.40). A guess the held path corrects: see the top of this file. */
static int needed_lib(struct pdi_tracer *t, pid_t pid, ino_t ino)
{
	struct pdi_needed *exe = malloc(sizeof(*exe)), *dep = malloc(sizeof(*dep));
	int lib = PDI_LEARNED_NONE;
	unsigned deps = 0;
	char path[PATH_MAX];

	if (!exe || !dep)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	lib = links_trapped(t, path, ino, exe);
	for (unsigned i = 0; i < exe->n && lib < 0 && deps < NEEDED_DEPS_MAX; i++)
		for (unsigned k = 0; k < t->ntrapped && lib < 0 && deps < NEEDED_DEPS_MAX; k++) {
			const char *name = t->trapped[k].name, *slash = strrchr(name, '/');

			if (!slash || !first_of_folder(t, k) ||
			    snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - name), name, exe->names[i]) >=
				    (int)sizeof(path) ||
			    access(path, F_OK) < 0)
				continue;
			deps++;
			lib = links_trapped(t, path, 0, dep);
		}
out:
	free(exe);
	free(dep);
	return lib;
}

/* The trapped library PID's program (DEV, INO) will map, or PDI_LEARNED_NONE: learned from an
 * earlier run, else from what the program links (then remembered either way). */
static int lib_of_program(struct pdi_tracer *t, pid_t pid, dev_t dev, ino_t ino)
{
	const struct pdi_learned_exe *known = find_learned(t, dev, ino);
	struct pdi_learned_exe e = {.dev = dev, .ino = ino};

	if (known)
		return known->lib;
	if (!needed_allowed(t))
		return PDI_LEARNED_NONE;
	e.lib = needed_lib(t, pid, ino);
	remember(t, &e);
	return e.lib;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	if (!p || sscanf(p, ") %*c %d", &ppid) != 1)
		ppid = 0;
	fclose(f);
	return ppid;
}

/* Is PID (pinned by the caller's pidfd) ROOT or one of its descendants? A pid recycled since
 * the exec was seen belongs to another process, which must not get probes. */
static bool in_tree(pid_t pid, pid_t root)
{
	for (unsigned i = 0; i < TREE_DEPTH && pid > 1; i++, pid = parent_of(pid))
		if (pid == root)
			return true;
	return false;
}

/* An attach ahead of MPI_Init, planned on the loop, run on any thread: a copy of all it needs. */
struct pdi_ahead_attach {
	pid_t pid;
	uint64_t serial;          /* its entry's */
	int pidfd;                /* the process, an fd of its own */
	int lib_fd;               /* the trapped library, an fd of its own */
	char path[32];            /* "/proc/self/fd/LIB_FD" */
	int progs[2];             /* the tracer's entry and return programs */
	unsigned n;
	uint64_t offsets[PDI_MAX_PROBES], cookies[PDI_MAX_PROBES];
	int fds[2];               /* entry, return: -1 until attached */
};

static void ahead_attach_free(struct pdi_ahead_attach *a)
{
	if (a->pidfd >= 0)
		close(a->pidfd);
	if (a->lib_fd >= 0)
		close(a->lib_fd);
	free(a);
}

/* The attach of entry E, on library L's targets PT; NULL when out of fds or memory. */
static struct pdi_ahead_attach *ahead_attach_new(struct pdi_tracer *t, const struct pdi_ahead *e,
						 const struct pdi_trapped_lib *l, const struct pdi_probe_targets *pt)
{
	struct pdi_ahead_attach *a = malloc(sizeof(*a));

	if (!a)
		return NULL;
	*a = (struct pdi_ahead_attach){.pid = e->ident.pid, .serial = e->serial, .n = pt->n, .fds = {-1, -1},
				       .progs = {bpf_program__fd(t->skel->progs.mpi_enter),
						 bpf_program__fd(t->skel->progs.mpi_exit)}};
	a->pidfd = fcntl(e->ident.pidfd, F_DUPFD_CLOEXEC, 3);
	a->lib_fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 3);
	if (a->pidfd < 0 || a->lib_fd < 0) {
		ahead_attach_free(a);
		return NULL;
	}
	snprintf(a->path, sizeof(a->path), "/proc/self/fd/%d", a->lib_fd);
	memcpy(a->offsets, pt->offsets, sizeof(a->offsets[0]) * pt->n);
	memcpy(a->cookies, pt->cookies, sizeof(a->cookies[0]) * pt->n);
	return a;
}

int pdi_tracer_ahead_plan(struct pdi_tracer *t, pid_t pid, pid_t root, uint64_t start_ticks, int rank, int lib,
			  struct pdi_ahead_attach **ret)
{
	const struct pdi_probe_targets *pt;
	struct pdi_ahead e = {.root = root, .rank = rank, .fds = {-1, -1}, .attaching = true};
	struct pdi_ahead_attach *a = NULL;
	struct pdi_trapped_lib *l;
	dev_t dev;
	ino_t ino;
	int r;

	if (!t->multi)
		return -EOPNOTSUPP;
	sweep(t);
	if (lib >= (int)t->ntrapped)
		return -EINVAL;
	/* a process that executes again keeps its probes: the pid filter is the process's; one held
	 * at the MPI_Init of another library than its links' (its program's last run mapped that
	 * one) gets links on the library it maps */
	r = find_ahead(t, pid);
	if (r >= 0 && (lib < 0 || t->ahead[r].lib == (unsigned)lib || t->ahead[r].attaching)) {
		*ret = NULL;
		return 0;
	}
	if (r >= 0)
		drop_ahead(t, (unsigned)r);
	if (lib < 0 && (r = pdi_exe_identity(pid, &dev, &ino)) < 0)
		return r;
	if (lib < 0 && (lib = lib_of_program(t, pid, dev, ino)) < 0)
		return -ENOENT;
	l = &t->trapped[lib];
	pt = pdi_tracer_targets_of(t, NULL, l->dev, l->ino); /* computed when it was trapped */
	if (!pt)
		return -ENOENT;
	if (t->nahead == AHEAD_MAX)
		return -ENOSPC;
	e.lib = (unsigned)lib;
	e.serial = ++t->ahead_serial;
	/* the process that executed, pinned: it may have exited by the time it joins */
	if ((r = pdi_ident_pin(pid, &e.ident)) < 0)
		return r;
	if (e.ident.start_ticks != start_ticks || !in_tree(pid, root))
		r = -ESRCH;
	else if (!t->ahead && !(t->ahead = calloc(AHEAD_MAX, sizeof(*t->ahead))))
		r = -ENOMEM;
	else if (!(a = ahead_attach_new(t, &e, l, pt)))
		r = -ENOMEM;
	if (r < 0) {
		pdi_ident_release(&e.ident);
		return r;
	}
	e.attached_ns = pdi_now_ns();
	t->ahead[t->nahead++] = e;
	*ret = a;
	return 0;
}

int pdi_ahead_attach_run(struct pdi_ahead_attach *a)
{
	if (pdi_pidfd_exited(a->pidfd))
		return -ESRCH;
	return pdi_uprobe_multi_attach_pair(a->progs, a->path, a->offsets, a->cookies, a->n, true, a->pid, a->fds);
}

bool pdi_ahead_attach_lib_mapped(const struct pdi_ahead_attach *a, const struct pdi_maps *maps)
{
	struct stat st;

	return fstat(a->lib_fd, &st) == 0 && pdi_maps_of_file(maps, st.st_dev, st.st_ino);
}

int pdi_tracer_ahead_end(struct pdi_tracer *t, struct pdi_ahead_attach *a, int result)
{
	int i = find_ahead(t, a->pid);

	if (i >= 0 && t->ahead[i].serial != a->serial)
		i = -1;
	if (result == 0 && i < 0)
		result = -ESRCH;
	if (result == 0) {
		struct pdi_ahead *e = &t->ahead[i];

		e->fds[0] = a->fds[0];
		e->fds[1] = a->fds[1];
		e->attaching = false;
		e->attached_ns = pdi_now_ns();
	} else {
		drop_links(t, a->fds);
		if (i >= 0)
			drop_ahead(t, (unsigned)i);
	}
	ahead_attach_free(a);
	return result;
}

/* The links attached ahead for t->ahead[I] into FDS; the entry goes. */
static void take_links(struct pdi_tracer *t, unsigned i, int fds[2])
{
	fds[0] = t->ahead[i].fds[0];
	fds[1] = t->ahead[i].fds[1];
	t->ahead[i].fds[0] = t->ahead[i].fds[1] = -1;
	drop_ahead(t, i);
}

int pdi_startup_take(struct pdi_tracer *t, pid_t pid, const struct pdi_probe_targets *pt, int fds[2])
{
	int i = find_ahead(t, pid);
	struct pdi_ahead *a;

	if (i < 0)
		return -ENOENT;
	a = &t->ahead[i];
	/* its links are being attached: its join waits for them (pdi_tracer_ahead_end()) */
	if (a->attaching)
		return -EBUSY;
	/* on the very library it maps */
	if (t->trapped[a->lib].dev != pt->dev || t->trapped[a->lib].ino != pt->ino) {
		drop_ahead(t, (unsigned)i);
		return -ENOENT;
	}
	/* gone while its maps were read: its links stay for pdi_startup_take_exited() */
	if (pdi_pidfd_exited(a->ident.pidfd))
		return -ESRCH;
	take_links(t, (unsigned)i, fds);
	return 0;
}

int pdi_startup_take_exited(struct pdi_tracer *t, pid_t pid, uint64_t start_ticks, struct pdi_probe_targets *pt,
			    int fds[2])
{
	int i = find_ahead(t, pid);
	const struct pdi_probe_targets *of;
	const struct pdi_trapped_lib *l;
	struct pdi_ahead *a;

	if (i < 0 || t->ahead[i].attaching)
		return -ESRCH;
	a = &t->ahead[i];
	l = &t->trapped[a->lib];
	of = pdi_tracer_targets_of(t, NULL, l->dev, l->ino);
	/* the very process (its start), gone: alive, it would have been attached from its maps */
	if (a->ident.start_ticks != start_ticks || !pdi_pidfd_exited(a->ident.pidfd) || !of)
		return -ESRCH;
	memcpy(pt, of, sizeof(*pt));
	pt->obj = NULL;
	pt->dev = l->dev;
	pt->ino = l->ino;
	snprintf(pt->object, sizeof(pt->object), "%s", l->name);
	snprintf(pt->path, sizeof(pt->path), "%s", l->path);
	memset(&pt->dtypes, 0, sizeof(pt->dtypes)); /* the caller's: from what was read while it lived */
	take_links(t, (unsigned)i, fds);
	return 0;
}

int pdi_tracer_ahead_ident(struct pdi_tracer *t, pid_t pid, uint64_t start_ticks, struct pdi_ident *ret,
			   int *ret_rank)
{
	int i = find_ahead(t, pid), fd;

	if (i < 0 || t->ahead[i].attaching || t->ahead[i].ident.start_ticks != start_ticks ||
	    !pdi_pidfd_exited(t->ahead[i].ident.pidfd))
		return -ESRCH;
	fd = fcntl(t->ahead[i].ident.pidfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	*ret = t->ahead[i].ident;
	ret->pidfd = fd;
	*ret_rank = t->ahead[i].rank;
	return 0;
}

void pdi_startup_learn(struct pdi_tracer *t, pid_t pid, const struct pdi_probe_targets *pt)
{
	struct pdi_learned_exe e = {.lib = find_trapped(t, pt->dev, pt->ino)};

	if (e.lib >= 0 && pdi_exe_identity(pid, &e.dev, &e.ino) == 0)
		remember(t, &e);
}

void pdi_startup_drop_root(struct pdi_tracer *t, pid_t root)
{
	for (unsigned i = t->nahead; i-- > 0;)
		if (t->ahead[i].root == root)
			drop_ahead(t, i);
}

void pdi_startup_free(struct pdi_tracer *t)
{
	int warm[2 * PDI_TRAPPED_MAX];

	while (t->nahead > 0)
		drop_ahead(t, t->nahead - 1);
	pdi_links_close_together(t->dropped_fds, t->ndropped_fds, NULL, 0);
	free(t->dropped_fds);
	free(t->ahead);
	free(t->learned);
	bpf_link__destroy(t->exec_link);
	pdi_tracer_untrap(t);
	for (unsigned i = 0; i < t->ntrapped; i++) {
		warm[2 * i] = t->trapped[i].warm[0];
		warm[2 * i + 1] = t->trapped[i].warm[1];
		close(t->trapped[i].fd);
	}
	pdi_links_close_together(warm, 2 * t->ntrapped, NULL, 0);
	t->ntrapped = 0;
}

void pdi_tracer_untrap(struct pdi_tracer *t)
{
	pdi_links_close_together(NULL, 0, t->init_links, t->ninit_links);
	free(t->init_links);
	t->init_links = NULL;
	t->ninit_links = 0;
}

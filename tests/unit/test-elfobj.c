/* SPDX-License-Identifier: GPL-2.0-only */
/* test-elfobj.c -- procmaps, elfobj and objcache against this test's own process.
 *
 * Must be built with -g: describe() is checked against the line numbers of this file. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elfobj.h"
#include "objopen.h"
#include "objcache.h"
#include "objwarm.h"
#include "procmaps.h"

static __attribute__((noinline)) void *return_address(void)
{
	return __builtin_return_address(0);
}

/* Kept on one line so that the call and __LINE__ agree. */
static __attribute__((noinline)) void call_site(void **ra, int *line)
{
	*ra = return_address(), *line = __LINE__;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && !strcmp(s + ls - lx, suffix);
}

static void read_self_maps(struct pdi_maps *maps)
{
	cr_assert_eq(pdi_maps_read(getpid(), maps), 0);
	cr_assert_gt(maps->n, 0);
}

/* The mapping holding ADDR and its object, opened directly by path. */
static const struct pdi_mapping *open_at(const struct pdi_maps *maps, uintptr_t addr,
					 struct pdi_elfobj **o)
{
	const struct pdi_mapping *m = pdi_maps_find(maps, addr);

	cr_assert_not_null(m);
	cr_assert_not_null(m->path);
	cr_assert_eq(pdi_elfobj_open(m->path, o), 0, "open %s", m->path);
	return m;
}

static uint64_t addr_to_vaddr(struct pdi_elfobj *o, const struct pdi_mapping *m, uintptr_t addr)
{
	uint64_t vaddr;

	cr_assert_eq(pdi_elfobj_offset_to_vaddr(o, addr - m->start + m->pgoff, &vaddr), 0);
	return vaddr;
}

Test(elfobj, maps_self)
{
	char exe[PATH_MAX];
	struct pdi_maps maps;
	const struct pdi_mapping *m;

	read_self_maps(&maps);
	for (size_t i = 1; i < maps.n; i++)
		cr_assert_geq(maps.v[i].start, maps.v[i - 1].end);
	m = pdi_maps_find(&maps, (uintptr_t)call_site);
	cr_assert_not_null(m);
	cr_assert(m->exec);
	cr_assert_not_null(realpath("/proc/self/exe", exe));
	cr_assert_str_eq(m->path, exe);
	cr_assert_neq(m->ino, 0);
	cr_assert_null(pdi_maps_find(&maps, 0));
	cr_assert_null(pdi_maps_find(&maps, UINT64_MAX));
	/* the stack is mapped but is no file */
	m = pdi_maps_find(&maps, (uintptr_t)&m);
	cr_assert_not_null(m);
	cr_assert_null(m->path);
	pdi_maps_free(&maps);
	cr_assert_null(maps.v);
	cr_assert_eq(maps.n, 0);
}

Test(elfobj, maps_free_zeroed)
{
	struct pdi_maps maps = {0};

	pdi_maps_free(&maps);
}

Test(elfobj, maps_gone)
{
	struct pdi_maps maps = {0};
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_assert_eq(pdi_maps_read(pid, &maps), -ESRCH);
	cr_assert_eq(pdi_maps_read(INT_MAX, &maps), -ESRCH);
}

Test(elfobj, describe_call_site)
{
	struct pdi_elfobj *o;
	struct pdi_srcloc loc;
	struct pdi_maps maps;
	const struct pdi_mapping *m;
	void *ra;
	int line;

	call_site(&ra, &line);
	read_self_maps(&maps);
	m = open_at(&maps, (uintptr_t)ra - 1, &o);
	cr_assert_eq(pdi_elfobj_describe(o, addr_to_vaddr(o, m, (uintptr_t)ra - 1), &loc), 0);
	cr_assert_str_eq(loc.func, "call_site");
	cr_assert_gt(loc.func_off, 0);
	cr_assert(ends_with(loc.file, "/test-elfobj.c") || !strcmp(loc.file, "test-elfobj.c"),
		  "file %s", loc.file);
	cr_assert_eq(loc.line, line);
	/* twice: DWARF is set up once */
	cr_assert_eq(pdi_elfobj_describe(o, addr_to_vaddr(o, m, (uintptr_t)ra - 1), &loc), 0);
	cr_assert_eq(loc.line, line);
	pdi_elfobj_free(o);
	pdi_maps_free(&maps);
}

Test(elfobj, func_offset_self)
{
	struct pdi_elfobj *o;
	struct pdi_maps maps;
	const struct pdi_mapping *m;
	uint64_t off, vaddr;

	read_self_maps(&maps);
	m = open_at(&maps, (uintptr_t)call_site, &o);
	/* a static function: only .symtab has it */
	cr_assert_eq(pdi_elfobj_func_offset(o, "call_site", &off), 0);
	cr_assert_eq(m->start + off - m->pgoff, (uintptr_t)call_site);
	cr_assert_eq(pdi_elfobj_func_vaddr(o, "call_site", &vaddr), 0);
	cr_assert_eq(addr_to_vaddr(o, m, (uintptr_t)call_site), vaddr);
	cr_assert_eq(pdi_elfobj_func_offset(o, "no_such_function", &off), -ENOENT);
	cr_assert_eq(pdi_elfobj_func_vaddr(o, "", &vaddr), -ENOENT);
	cr_assert_eq(strlen(pdi_elfobj_build_id(o)), 40);
	cr_assert_str_eq(pdi_elfobj_path(o), m->path);
	pdi_elfobj_free(o);
	pdi_maps_free(&maps);
}

Test(elfobj, libc)
{
	struct pdi_elfobj *o;
	struct pdi_srcloc loc;
	struct pdi_maps maps;
	const struct pdi_mapping *m;
	uint64_t off, vaddr, back;

	read_self_maps(&maps);
	/* not malloc or qsort: valgrind and ASan put their own in front of libc's */
	m = open_at(&maps, (uintptr_t)gnu_get_libc_version, &o);
	cr_assert(strstr(m->path, "libc"), "gnu_get_libc_version from %s", m->path);
	cr_assert_eq(pdi_elfobj_func_offset(o, "gnu_get_libc_version", &off), 0);
	cr_assert_eq(m->start + off - m->pgoff, (uintptr_t)gnu_get_libc_version);

	cr_assert_eq(pdi_elfobj_func_offset(o, "malloc", &off), 0);
	cr_assert_eq(pdi_elfobj_func_vaddr(o, "malloc", &vaddr), 0);
	cr_assert_eq(pdi_elfobj_offset_to_vaddr(o, off, &back), 0);
	cr_assert_eq(back, vaddr);

	cr_assert_eq(pdi_elfobj_describe(o, vaddr + 1, &loc), 0);
	cr_assert_eq(loc.func_off, 1);
	cr_assert_eq(pdi_elfobj_func_vaddr(o, loc.func, &back), 0, "func %s", loc.func);
	cr_assert_eq(back, vaddr);
	cr_assert_eq(strlen(pdi_elfobj_build_id(o)), 40);
	cr_assert_eq(pdi_elfobj_offset_to_vaddr(o, UINT64_MAX, &back), -ENOENT);
	pdi_elfobj_free(o);
	pdi_maps_free(&maps);
}

Test(elfobj, not_elf)
{
	char fn[] = "/tmp/test-elfobj.XXXXXX";
	struct pdi_elfobj *o = NULL;
	int fd = mkstemp(fn);

	cr_assert_geq(fd, 0);
	/* empty */
	cr_assert_eq(pdi_elfobj_open(fn, &o), -ENOEXEC);
	cr_assert_eq(write(fd, "#!/bin/sh\nexit 0\n", 17), 17);
	close(fd);
	cr_assert_eq(pdi_elfobj_open(fn, &o), -ENOEXEC);
	unlink(fn);
	cr_assert_eq(pdi_elfobj_open("/tmp", &o), PDI_EOBJ_NOT_REGULAR);
	cr_assert_null(o);
	pdi_elfobj_free(NULL);
}

Test(elfobj, missing)
{
	struct pdi_elfobj *o = NULL;

	cr_assert_eq(pdi_elfobj_open("/nonexistent/libnothing.so", &o), -ENOENT);
	cr_assert_null(o);
}

Test(elfobj, objcache)
{
	struct pdi_elfobj *o1, *o2, *o3;
	struct pdi_objcache *c;
	struct pdi_maps maps;
	const struct pdi_mapping *m, *libc;

	read_self_maps(&maps);
	cr_assert_eq(pdi_objcache_new(&c), 0);
	m = pdi_maps_find(&maps, (uintptr_t)call_site);
	cr_assert_eq(pdi_objcache_get(c, getpid(), m, &o1), 0);
	cr_assert_eq(pdi_objcache_get(c, getpid(), m, &o2), 0);
	cr_assert_eq(o1, o2);
	/* every mapping of one file is one object */
	for (size_t i = 0; i < maps.n; i++) {
		if (maps.v[i].ino != m->ino || maps.v[i].dev != m->dev)
			continue;
		cr_assert_eq(pdi_objcache_get(c, getpid(), &maps.v[i], &o2), 0);
		cr_assert_eq(o1, o2);
	}
	cr_assert_eq(pdi_objcache_get(c, getpid(), pdi_maps_find(&maps, (uintptr_t)&c), &o2),
		     -EINVAL);

	cr_assert_eq(pdi_objcache_find_func(c, getpid(), &maps, "gnu_get_libc_version", &libc, &o3), 0);
	cr_assert_eq(libc, pdi_maps_find(&maps, (uintptr_t)gnu_get_libc_version));
	cr_assert_neq(o3, o1);
	cr_assert_eq(pdi_objcache_find_func(c, getpid(), &maps, "call_site", &m, &o2), 0);
	cr_assert_eq(o2, o1);
	cr_assert_eq(pdi_objcache_find_func(c, getpid(), &maps, "no_such_function", &m, &o2),
		     -ENOENT);
	/* opening every mapped library above left earlier entries alone */
	cr_assert_eq(pdi_objcache_find_func(c, getpid(), &maps, "gnu_get_libc_version", &m, &o2), 0);
	cr_assert_eq(o2, o3);
	pdi_objcache_free(c);
	pdi_maps_free(&maps);
}

/* A join's objects read on a worker (objwarm.h): the cache then holds every executable file this
 * process maps and has nothing left to read; a copy opened twice is dropped for the cache's. */
Test(elfobj, objwarm)
{
	struct pdi_elfobj *o1, *o2, *dup;
	struct pdi_objwarm *w = NULL, *again = NULL;
	struct pdi_objcache *c;
	struct pdi_maps maps;
	const struct pdi_mapping *m;

	read_self_maps(&maps);
	cr_assert_eq(pdi_objcache_new(&c), 0);
	m = pdi_maps_find(&maps, (uintptr_t)call_site);
	cr_assert_eq(pdi_objcache_get(c, getpid(), m, &o1), 0);
	cr_assert_eq(pdi_objwarm_plan(c, getpid(), &maps, &w), 0);
	cr_assert_not_null(w, "libc at least is not read yet");
	cr_assert(pdi_objwarm_covers(w, w));
	pdi_objwarm_run(w);
	cr_assert_geq(pdi_objwarm_commit(c, w), 1);
	for (size_t i = 0; i < maps.n; i++)
		if (maps.v[i].exec && maps.v[i].path)
			cr_assert(pdi_objcache_holds(c, &maps.v[i]), "%s", maps.v[i].path);
	cr_assert_eq(pdi_objwarm_plan(c, getpid(), &maps, &again), 0);
	cr_assert_null(again);
	/* the executable read before stays the cache's object */
	cr_assert_eq(pdi_objcache_get(c, getpid(), m, &o2), 0);
	cr_assert_eq(o1, o2);
	cr_assert_eq(pdi_objcache_open(getpid(), m, &dup), 0);
	cr_assert_eq(pdi_objcache_adopt(c, getpid(), m, 0, dup, &o2), 0);
	cr_assert_eq(o1, o2);
	pdi_objcache_free(c);
	/* a file a worker could not read is not planned again, but the next get opens it */
	cr_assert_eq(pdi_objcache_new(&c), 0);
	cr_assert_eq(pdi_objcache_adopt(c, getpid(), m, -EACCES, NULL, NULL), -EACCES);
	cr_assert(pdi_objcache_holds(c, m));
	o2 = NULL;
	cr_assert_eq(pdi_objcache_get(c, getpid(), m, &o2), 0);
	cr_assert_not_null(o2);
	pdi_objcache_free(c);
	pdi_maps_free(&maps);
}

Test(elfobj, objcache_map_files_fallback)
{
	struct pdi_mapping m;
	struct pdi_objcache *c;
	struct pdi_elfobj *o;
	struct pdi_maps maps;
	uint64_t off;

	read_self_maps(&maps);
	/* a path that no longer leads to the mapped file, as after a library upgrade */
	m = *pdi_maps_find(&maps, (uintptr_t)call_site);
	m.path = "/nonexistent/test-elfobj";
	cr_assert_eq(pdi_objcache_new(&c), 0);
	cr_assert_eq(pdi_objcache_get(c, getpid(), &m, &o), 0);
	cr_assert(strstr(pdi_elfobj_path(o), "/proc/self/fd/"), "path %s", pdi_elfobj_path(o));
	cr_assert_eq(pdi_elfobj_func_offset(o, "call_site", &off), 0);
	cr_assert_eq(m.start + off - m.pgoff, (uintptr_t)call_site);
	pdi_objcache_free(c);
	pdi_maps_free(&maps);
}

static void copy_file(const char *from, int to)
{
	char buf[65536];
	int fd = open(from, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	cr_assert_geq(fd, 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(to, buf, (size_t)n), n);
	cr_assert_eq(n, 0);
	close(fd);
}

Test(elfobj, deleted_file)
{
	char fn[] = "/tmp/test-elfobj.XXXXXX";
	const struct pdi_mapping *m;
	struct pdi_objcache *c;
	struct pdi_elfobj *o;
	struct pdi_maps maps;
	uint64_t off;
	int fd = mkstemp(fn);
	void *p;

	cr_assert_geq(fd, 0);
	copy_file("/proc/self/exe", fd);
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	close(fd);
	unlink(fn);

	read_self_maps(&maps);
	m = pdi_maps_find(&maps, (uintptr_t)p);
	cr_assert_not_null(m);
	cr_assert_str_eq(m->path, fn);
	cr_assert_not(m->exec);
	cr_assert_eq(pdi_objcache_new(&c), 0);
	cr_assert(m->deleted);
	cr_assert_eq(pdi_objcache_get(c, getpid(), m, &o), 0);
	cr_assert(strstr(pdi_elfobj_path(o), "/proc/self/fd/"), "path %s", pdi_elfobj_path(o));
	cr_assert_eq(pdi_elfobj_func_offset(o, "call_site", &off), 0);
	pdi_objcache_free(c);
	pdi_maps_free(&maps);
	munmap(p, 4096);
}

/* What a user can put where a mapped file was: nothing of it is opened for reading. */
Test(elfobj, untrusted_paths_refused)
{
	char dir[] = "/tmp/test-objopen.XXXXXX", fifo[64], link[64];
	struct pdi_mapping m;
	struct pdi_maps maps;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(symlink("/proc/self/exe", link), 0);
	/* a FIFO: refused at once, where open() would wait for a writer */
	cr_assert_eq(pdi_objopen_path(fifo, 0, &fd), PDI_EOBJ_NOT_REGULAR);
	cr_assert_eq(pdi_objopen_path("/dev/null", 0, &fd), PDI_EOBJ_NOT_REGULAR);
	/* a mapping that map_files no longer shows falls back to its path, never through a symlink,
	 * and only to the inode mapped */
	read_self_maps(&maps);
	m = *pdi_maps_find(&maps, (uintptr_t)call_site);
	m.start = 0x1000;
	m.end = 0x2000;
	m.path = link;
	cr_assert_eq(pdi_objopen_mapped(getpid(), &m, &fd), PDI_EOBJ_REPLACED);
	m.path = fifo;
	cr_assert_eq(pdi_objopen_mapped(getpid(), &m, &fd), PDI_EOBJ_NOT_REGULAR);
	m.path = "/bin/sh";
	cr_assert_eq(pdi_objopen_mapped(getpid(), &m, &fd), PDI_EOBJ_REPLACED);
	/* nor a deleted file's path, whatever now stands there */
	m.path = fifo;
	m.deleted = true;
	cr_assert_eq(pdi_objopen_mapped(getpid(), &m, &fd), -ESRCH);
	pdi_maps_free(&maps);
	unlink(fifo);
	unlink(link);
	rmdir(dir);
}

static int open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* The cache holds at most its count of objects (and so of fds), the least recently used
 * closed first, and within its bytes. */
Test(elfobj, objcache_lru)
{
	struct pdi_objcache_stats st;
	const struct pdi_mapping *libc, *self;
	struct pdi_elfobj *o1, *o2;
	struct pdi_objcache *c;
	struct pdi_maps maps;
	int fds = open_fds();

	read_self_maps(&maps);
	cr_assert_eq(pdi_objcache_new(&c), 0);
	pdi_objcache_set_limits(c, 2, UINT64_MAX);
	self = pdi_maps_find(&maps, (uintptr_t)call_site);
	libc = pdi_maps_find(&maps, (uintptr_t)gnu_get_libc_version);
	cr_assert_eq(pdi_objcache_get(c, getpid(), self, &o1), 0);
	cr_assert_eq(pdi_objcache_get(c, getpid(), libc, &o2), 0);
	/* every library mapped: never more than two held */
	for (size_t i = 0; i < maps.n; i++) {
		if (maps.v[i].exec && maps.v[i].path && maps.v[i].ino != self->ino)
			(void)pdi_objcache_get(c, getpid(), &maps.v[i], &o2);
		cr_assert_leq(open_fds(), fds + 2 * 2);
	}
	pdi_objcache_stats(c, &st);
	cr_assert_eq(st.objects, 2);
	cr_assert_gt(st.evicted, 0);
	/* the executable was evicted meanwhile: opened again, the same file */
	cr_assert_eq(pdi_objcache_get(c, getpid(), self, &o1), 0);
	cr_assert_eq(pdi_elfobj_func_vaddr(o1, "call_site", &(uint64_t){0}), 0);
	/* by bytes: one object at a time, however large */
	pdi_objcache_set_limits(c, 100, 1);
	cr_assert_eq(pdi_objcache_get(c, getpid(), libc, &o2), 0);
	pdi_objcache_stats(c, &st);
	cr_assert_eq(st.objects, 1);
	pdi_objcache_free(c);
	pdi_maps_free(&maps);
	cr_assert_eq(open_fds(), fds);
}

/* A worker's copy of an object whose DWARF and frames the cache's object takes (site_warm.h) is
 * kept open with it: its file counts in the cache's bytes, so older objects make room for it. */
Test(elfobj, objcache_counts_kept_copies)
{
	struct pdi_objcache_stats st;
	const struct pdi_mapping *libc, *self;
	struct pdi_elfobj *o1, *o2, *lib, *dup;
	struct pdi_objcache *c;
	struct pdi_maps maps;
	uint64_t s, l;
	int fds = open_fds();

	read_self_maps(&maps);
	self = pdi_maps_find(&maps, (uintptr_t)call_site);
	libc = pdi_maps_find(&maps, (uintptr_t)gnu_get_libc_version);
	cr_assert_eq(pdi_objcache_new(&c), 0);
	cr_assert_eq(pdi_objcache_get(c, getpid(), libc, &lib), 0);
	cr_assert_eq(pdi_objcache_get(c, getpid(), self, &o1), 0);
	s = pdi_elfobj_file_size(o1);
	l = pdi_elfobj_file_size(lib);
	cr_assert_eq(pdi_elfobj_bytes_held(o1), s, "nothing kept yet");
	pdi_objcache_stats(c, &st);
	cr_assert_eq(st.bytes, s + l);
	/* the cache full to the byte: the copy it keeps makes libc, the older, go */
	pdi_objcache_set_limits(c, 100, s + l);
	cr_assert_eq(pdi_objcache_open(getpid(), self, &dup), 0);
	pdi_elfobj_preload(dup, true);
	cr_assert_eq(pdi_objcache_adopt(c, getpid(), self, 0, dup, &o2), 0);
	cr_assert_eq(o2, o1);
	cr_assert(pdi_elfobj_lines_loaded(o1));
	cr_assert_eq(pdi_elfobj_bytes_held(o1), 2 * s);
	pdi_objcache_stats(c, &st);
	cr_assert_eq(st.objects, 1);
	cr_assert_eq(st.bytes, 2 * s);
	cr_assert_eq(st.evicted, 1);
	cr_assert(!pdi_objcache_holds(c, libc));
	/* a copy that read nothing the cache's object lacks is not kept, nor counted */
	pdi_objcache_set_limits(c, 100, UINT64_MAX);
	cr_assert_eq(pdi_objcache_open(getpid(), self, &dup), 0);
	pdi_elfobj_preload(dup, true);
	cr_assert_eq(pdi_objcache_adopt(c, getpid(), self, 0, dup, &o2), 0);
	pdi_objcache_stats(c, &st);
	cr_assert_eq(st.bytes, 2 * s);
	/* evicted, the object closes its copy too */
	pdi_objcache_set_limits(c, 100, 1);
	cr_assert_eq(pdi_objcache_get(c, getpid(), libc, &lib), 0);
	pdi_objcache_stats(c, &st);
	cr_assert_eq(st.objects, 1);
	cr_assert_eq(st.bytes, l);
	cr_assert_leq(open_fds(), fds + 2, "one object: one or two fds"); /* with the copy it was 3 */
	pdi_objcache_free(c);
	pdi_maps_free(&maps);
	cr_assert_eq(open_fds(), fds);
}

/* A compile unit's line table, read by a worker's copy of the object (reading it through the
 * cache's own object would be the loop's time): the cache's object takes the rows, counts their
 * bytes, and names the line from them. */
Test(elfobj, line_table_read_by_a_copy)
{
	const struct pdi_mapping *self;
	struct pdi_elfobj *o, *o2, *copy;
	struct pdi_objcache *c;
	struct pdi_srcloc loc;
	struct pdi_maps maps;
	uint64_t vaddr, s;
	void *ra;
	int line, fd;

	call_site(&ra, &line);
	read_self_maps(&maps);
	self = pdi_maps_find(&maps, (uintptr_t)ra - 1);
	cr_assert_eq(pdi_objcache_new(&c), 0);
	cr_assert_eq(pdi_objcache_get(c, getpid(), self, &o), 0);
	s = pdi_elfobj_bytes_held(o);
	vaddr = addr_to_vaddr(o, self, (uintptr_t)ra - 1);
	cr_assert_not(pdi_elfobj_line_ready(o, vaddr), "no DWARF loaded yet");
	pdi_elfobj_preload(o, true);
	cr_assert_not(pdi_elfobj_line_ready(o, vaddr), "the DWARF loaded, the unit's table not read");
	/* the worker's copy, from the cache's very file */
	cr_assert_eq(pdi_objcache_dup_held(c, self, &fd), 0);
	cr_assert_eq(pdi_objcache_open_fd(fd, &copy), 0);
	pdi_elfobj_preload_line(copy, vaddr);
	cr_assert(pdi_elfobj_line_ready(copy, vaddr));
	cr_assert_eq(pdi_objcache_adopt(c, getpid(), self, 0, copy, &o2), 0);
	cr_assert_eq(o2, o);
	cr_assert(pdi_elfobj_line_ready(o, vaddr), "the cache's object took the copy's table");
	cr_assert_gt(pdi_elfobj_bytes_held(o), s, "its rows count in the cache's bytes");
	cr_assert_eq(pdi_elfobj_describe(o, vaddr, &loc), 0);
	cr_assert_eq(loc.line, line);
	cr_assert(ends_with(loc.file, "/test-elfobj.c") || !strcmp(loc.file, "test-elfobj.c"), "file %s", loc.file);
	cr_assert_eq(pdi_objcache_dup_held(c, pdi_maps_find(&maps, (uintptr_t)gnu_get_libc_version), &fd), -ENOENT);
	pdi_objcache_free(c);
	pdi_maps_free(&maps);
}

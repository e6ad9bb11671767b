/* SPDX-License-Identifier: GPL-2.0-only */
/* program.c -- a step's program: its path, its identity, its input size.
 *
 * The path alone cannot tell a rebuilt program from the old one, and trends or sample runs
 * across a rebuild compare different code. The GNU build ID (what linkers write by default on
 * Debian) names the code itself; it is read through the object cache, which opens the
 * executable anyway to name the call sites in it. A program linked without one is known by its
 * path, size and modification time, which a rebuild changes too. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "objcache.h"
#include "objopen.h"
#include "procmaps.h"
#include "program.h"
#include "u64map.h"

int pdi_input_size_parse(const char *s, unsigned long long *ret)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || v > PDI_INPUT_SIZE_MAX)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* The build ID of PID's executable EXE, through the object cache. */
/* The build ID of the program mapped at M in PID: from the object cache if it holds it, else
 * from the file's notes alone (a program's first process is identified as it reaches MPI_Init,
 * before its objects are read on a worker: indexing NWChem's 65 MB there stalled the loop). */
static int mapped_build_id(struct pdi_daemon *d, pid_t pid, const struct pdi_mapping *m, char *hex, size_t len)
{
	struct pdi_elfobj *o;
	int fd, r;

	if (pdi_objcache_holds(d->objs, m)) {
		if ((r = pdi_objcache_get(d->objs, pid, m, &o)) < 0)
			return r;
		snprintf(hex, len, "%s", pdi_elfobj_build_id(o));
		return hex[0] ? 0 : -ENOENT;
	}
	if ((r = pdi_objopen_mapped(pid, m, &fd)) < 0)
		return r;
	r = pdi_elfobj_read_build_id(fd, hex, len);
	close(fd);
	return r;
}

static int build_id(struct pdi_daemon *d, pid_t pid, const char *exe, char *buf, size_t len)
{
	struct pdi_maps maps = {0};
	char hex[64]; /* a SHA-1 build ID is 40 hex digits; longer ones are cut, as the step keeps them */
	int r = pdi_maps_read(pid, &maps), found = -ENOENT;

	for (size_t i = 0; r >= 0 && i < maps.n && found < 0; i++)
		if (maps.v[i].path && !strcmp(maps.v[i].path, exe))
			found = mapped_build_id(d, pid, &maps.v[i], hex, sizeof(hex));
	pdi_maps_free(&maps);
	if (r < 0)
		return r;
	if (found < 0)
		return -ENOENT;
	snprintf(buf, len, "build-id:%s", hex);
	return 0;
}

static void file_identity(pid_t pid, const char *exe, char *buf, size_t len)
{
	char path[64], key[4400];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st) < 0)
		return;
	snprintf(key, sizeof(key), "%s\n%jd\n%jd.%09ld", exe, (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	snprintf(buf, len, "file:%016" PRIx64, pdi_hash_str(key));
}

static void input_size(struct pdi_step *s, pid_t pid)
{
	unsigned long long v;
	const char *val;
	size_t len;
	char *env;

	if (pdi_proc_environ(pid, &env, &len) < 0)
		return;
	val = pdi_env_get(env, len, PDI_INPUT_SIZE_ENV);
	if (val && pdi_input_size_parse(val, &v) == 0)
		s->input_size = v;
	else if (val)
		log_warning("Step %s: ignoring %s=%.32s: not a whole number from 1 to 2^62", s->name,
			    PDI_INPUT_SIZE_ENV, val);
	free(env);
}

void pdi_program_identify(struct pdi_daemon *d, struct pdi_step *s, pid_t pid)
{
	char path[64], exe[4096];
	ssize_t n;

	if (!s->input_size)
		input_size(s, pid);
	if (s->executable)
		return;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	s->executable = strdup(exe);
	if (build_id(d, pid, exe, s->build, sizeof(s->build)) < 0)
		file_identity(pid, exe, s->build, sizeof(s->build));
}

uint64_t pdi_program_hash(const struct pdi_step *s)
{
	char key[4096 + sizeof(s->build) + 1];
	uint64_t h;

	if (!s->executable || !s->build[0])
		return 0;
	snprintf(key, sizeof(key), "%s\n%s", s->executable, s->build);
	h = pdi_hash_str(key);
	return h ? h : 1;
}

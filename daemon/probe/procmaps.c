/* SPDX-License-Identifier: GPL-2.0-only */
/* procmaps.c -- parse /proc/PID/maps.
 *
 * Used to tell which file, and which offset in it, a code address of a monitored process
 * comes from; and which of those files it executes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "procmaps.h"

#define DELETED_SUFFIX " (deleted)"

/* Only real files are worth resolving: "[heap]", "[vdso]", "anon_inode:..." name no file we
 * could open. */
static int parse_path(const char *s, char **ret, bool *ret_deleted)
{
	size_t len;

	*ret = NULL;
	*ret_deleted = false;
	s += strspn(s, " \t");
	if (*s != '/')
		return 0;
	len = strcspn(s, "\n");
	if (len > strlen(DELETED_SUFFIX) &&
	    !strncmp(s + len - strlen(DELETED_SUFFIX), DELETED_SUFFIX, strlen(DELETED_SUFFIX))) {
		len -= strlen(DELETED_SUFFIX);
		*ret_deleted = true;
	}
	*ret = strndup(s, len);
	return *ret ? 0 : -ENOMEM;
}

static int parse_line(const char *line, struct pdi_mapping *m)
{
	unsigned int major, minor;
	char perms[5];
	int pos = -1;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 "%n", &m->start,
		   &m->end, perms, &m->pgoff, &major, &minor, &m->ino, &pos) < 7 ||
	    pos < 0)
		return -EBADMSG;
	m->dev = makedev(major, minor);
	m->exec = strlen(perms) >= 3 && perms[2] == 'x';
	return parse_path(line + pos, &m->path, &m->deleted);
}

static int maps_push(struct pdi_maps *maps, size_t *cap, const struct pdi_mapping *m)
{
	if (maps->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct pdi_mapping *v = realloc(maps->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		maps->v = v;
		*cap = ncap;
	}
	maps->v[maps->n++] = *m;
	return 0;
}

static int maps_parse(FILE *f, struct pdi_maps *maps)
{
	size_t cap = 0, linecap = 0;
	char *line = NULL;
	int r = 0;

	errno = 0;
	while (getline(&line, &linecap, f) >= 0) {
		struct pdi_mapping m;

		r = parse_line(line, &m);
		if (r < 0)
			break;
		r = maps_push(maps, &cap, &m);
		if (r < 0) {
			free(m.path);
			break;
		}
		errno = 0;
	}
	if (!r && ferror(f))
		r = errno ? -errno : -EIO;
	free(line);
	return r;
}

int pdi_maps_read(pid_t pid, struct pdi_maps *ret)
{
	struct pdi_maps maps = {0};
	char fn[64];
	FILE *f;
	int r;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
	f = fopen(fn, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	r = maps_parse(f, &maps);
	fclose(f);
	/* Once a process has exited its /proc entry lingers until it is reaped, but its memory is
	 * gone and its maps read empty: for us it is gone. */
	if (!r && !maps.n)
		r = -ESRCH;
	if (r < 0) {
		pdi_maps_free(&maps);
		return r;
	}
	*ret = maps;
	return 0;
}

void pdi_maps_free(struct pdi_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

const struct pdi_mapping *pdi_maps_find(const struct pdi_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < m->v[mid].start)
			hi = mid;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

int pdi_exe_identity(pid_t pid, dev_t *ret_dev, ino_t *ret_ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	*ret_dev = st.st_dev;
	*ret_ino = st.st_ino;
	return 0;
}

const struct pdi_mapping *pdi_maps_of_file(const struct pdi_maps *m, uint64_t dev, uint64_t ino)
{
	for (size_t k = 0; k < m->n; k++)
		if (m->v[k].dev == dev && m->v[k].ino == ino && m->v[k].path)
			return &m->v[k];
	return NULL;
}

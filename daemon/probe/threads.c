/* SPDX-License-Identifier: GPL-2.0-only */
/* threads.c -- a process's thread ids, read again only when older than asked (threads.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "threads.h"

DIR *pdi_threads_open(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	return opendir(path);
}

int pdi_threads_next(DIR *dir, unsigned *seen, pid_t *ret_tid)
{
	struct dirent *de;

	while ((errno = 0, de = readdir(dir))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (de->d_name[0] == '.' || *end || tid <= 0)
			continue;
		if (++*seen > PDI_THREADS_MAX)
			return -E2BIG;
		*ret_tid = (pid_t)tid;
		return 1;
	}
	return errno ? -errno : 0;
}

/* The thread ids of PID into a new array. */
static int read_tids(pid_t pid, pid_t **ret, unsigned *ret_n)
{
	pid_t *tids = NULL, tid;
	unsigned n = 0, cap = 0, seen = 0;
	DIR *dir = pdi_threads_open(pid);
	int r;

	if (!dir)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
	while ((r = pdi_threads_next(dir, &seen, &tid)) > 0) {
		if (n == cap) {
			unsigned ncap = cap ? 2 * cap : 8;
			pid_t *p = reallocarray(tids, ncap, sizeof(*tids));

			if (!p) {
				r = -ENOMEM;
				break;
			}
			tids = p;
			cap = ncap;
		}
		tids[n++] = tid;
	}
	closedir(dir);
	if (r < 0) {
		free(tids);
		return r == -ESRCH ? -ENOENT : r;
	}
	*ret = tids;
	*ret_n = n;
	return 0;
}

int pdi_threads_since(struct pdi_threads *c, pid_t pid, uint64_t since_ns)
{
	uint64_t now = pdi_now_ns();
	pid_t *tids = NULL;
	unsigned n = 0;
	int r;

	if (c->read_ns && c->read_ns >= since_ns)
		return 0;
	r = read_tids(pid, &tids, &n);
	if (r < 0)
		return r;
	free(c->tids);
	c->tids = tids;
	c->n = n;
	c->read_ns = now;
	return 0;
}

void pdi_threads_free(struct pdi_threads *c)
{
	free(c->tids);
	*c = (struct pdi_threads){0};
}

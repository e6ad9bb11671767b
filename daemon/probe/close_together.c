/* SPDX-License-Identifier: GPL-2.0-only */
/* close_together.c -- uprobe links closed at once, one thread each (see close_together.h). */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "close_together.h"

#define BATCH 64 /* threads at once: a task has at most a few hundred links */

struct closing {
	int fd;                /* -1: LINK instead */
	struct bpf_link *link;
	pthread_t thread;
	bool started;
};

static void close_one(struct closing *c)
{
	if (c->fd >= 0)
		close(c->fd);
	else
		bpf_link__destroy(c->link);
}

static void *close_thread(void *arg)
{
	close_one(arg);
	return NULL;
}

static void close_batch(struct closing *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		c[i].started = pthread_create(&c[i].thread, NULL, close_thread, &c[i]) == 0;
		if (!c[i].started)
			close_one(&c[i]);
	}
	for (unsigned i = 0; i < n; i++)
		if (c[i].started)
			(void)pthread_join(c[i].thread, NULL);
}

void pdi_links_close_together(int *fds, unsigned nfds, struct bpf_link **links, unsigned nlinks)
{
	struct closing batch[BATCH];
	unsigned n = 0;

	for (unsigned i = 0; i < nfds + nlinks; i++) {
		int fd = i < nfds ? fds[i] : -1;
		struct bpf_link *l = i < nfds ? NULL : links[i - nfds];

		if (fd < 0 && !l)
			continue;
		batch[n++] = (struct closing){.fd = fd, .link = l};
		if (n == BATCH) {
			close_batch(batch, n);
			n = 0;
		}
	}
	close_batch(batch, n);
}

void pdi_links_keep_pair(int **list, unsigned *n, int fds[2])
{
	for (unsigned k = 0; k < 2; k++) {
		int *v;

		if (fds[k] < 0)
			continue;
		v = realloc(*list, sizeof(*v) * (*n + 1));
		if (!v) {
			close(fds[k]);
		} else {
			*list = v;
			(*list)[(*n)++] = fds[k];
		}
		fds[k] = -1;
	}
}

void pdi_links_close_pair(int fds[2])
{
	for (unsigned k = 0; k < 2; k++)
		if (fds[k] >= 0) {
			close(fds[k]);
			fds[k] = -1;
		}
}

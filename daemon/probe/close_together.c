/* SPDX-License-Identifier: GPL-2.0-only */
/* close_together.c -- uprobe links closed at once (see close_together.h), by a bounded set of
 * closer threads that stay while there is work, rather than a thread made and unmapped per link. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "close_together.h"
#include "worker.h"

#define BATCH (PDI_CLOSERS + 1) /* links waited for at once by one caller, on its stack */
#define CLOSER_STACK (128 << 10) /* a close needs little: a system call, libbpf's destroy */
#define CLOSER_IDLE_S 10      /* a closer with nothing to do this long ends: a quiet node keeps none */

struct closing {
	int fd;                /* -1: LINK instead */
	struct bpf_link *link;
	unsigned *left;        /* its caller's count of links not closed yet */
	struct closing *next;  /* in the queue */
};

/* The closers and what waits for them; one for the process: every caller's closes share the
 * grace periods of the closes under way. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t queued;  /* links came into the queue */
	pthread_cond_t closed;  /* a caller's last link was closed */
	struct closing *head;
	struct closing **tail;  /* NULL while empty */
	unsigned threads;       /* closers alive, at most PDI_CLOSERS */
	unsigned idle;          /* of them waiting for links */
} closers = {.lock = PTHREAD_MUTEX_INITIALIZER, .queued = PTHREAD_COND_INITIALIZER,
	     .closed = PTHREAD_COND_INITIALIZER};

static void close_one(struct closing *c)
{
	if (c->fd >= 0)
		close(c->fd);
	else
		bpf_link__destroy(c->link);
}

/* Under the lock: the first queued link, or NULL. */
static struct closing *dequeue(void)
{
	struct closing *c = closers.head;

	if (c && !(closers.head = c->next))
		closers.tail = NULL;
	return c;
}

/* Close C outside the lock (held on entry and return) and count it; C may be gone after, with
 * its caller. */
static void close_counted(struct closing *c)
{
	unsigned *left = c->left;

	pthread_mutex_unlock(&closers.lock);
	close_one(c);
	pthread_mutex_lock(&closers.lock);
	if (--*left == 0)
		pthread_cond_broadcast(&closers.closed);
}

static void *closer_main(void *arg)
{
	int prio;

	(void)arg;
	/* the loop's workers' nice value (worker.h), whichever thread made this one */
	errno = 0;
	prio = getpriority(PRIO_PROCESS, (id_t)getpid());
	if (errno == 0)
		(void)setpriority(PRIO_PROCESS, (id_t)gettid(), prio - PDI_LOOP_NICE);
	pthread_mutex_lock(&closers.lock);
	for (;;) {
		struct closing *c = dequeue();
		struct timespec until;
		int e;

		if (c) {
			close_counted(c);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += CLOSER_IDLE_S;
		closers.idle++;
		e = pthread_cond_clockwait(&closers.queued, &closers.lock, CLOCK_MONOTONIC, &until);
		closers.idle--;
		if (e == ETIMEDOUT && !closers.head)
			break;
	}
	closers.threads--;
	pthread_mutex_unlock(&closers.lock);
	return NULL;
}

/* Under the lock: one closer more; false when none could be made. */
static bool closer_start(void)
{
	pthread_attr_t ta;
	sigset_t all;
	pthread_t t;
	bool ok;

	if (pthread_attr_init(&ta) != 0)
		return false;
	(void)pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	(void)pthread_attr_setstacksize(&ta, CLOSER_STACK);
	/* signals stay with the daemon's loop (signalfd), never with a closer */
	sigfillset(&all);
	ok = pthread_attr_setsigmask_np(&ta, &all) == 0 && pthread_create(&t, &ta, closer_main, NULL) == 0;
	pthread_attr_destroy(&ta);
	if (ok) {
		(void)pthread_setname_np(t, "pdi-close");
		closers.threads++;
	}
	return ok;
}

/* Close the N links of C: the caller's thread takes the first, the closers the others, each
 * alone; the caller's thread also takes those no closer could be made for. */
static void close_batch(struct closing *c, unsigned n)
{
	unsigned left = n;

	if (n == 0)
		return;
	pthread_mutex_lock(&closers.lock);
	for (unsigned i = 0; i < n; i++)
		c[i].left = &left;
	for (unsigned i = 1; i < n; i++) {
		c[i].next = NULL;
		if (closers.tail)
			*closers.tail = &c[i];
		else
			closers.head = &c[i];
		closers.tail = &c[i].next;
	}
	/* a closer for each link waiting beyond those idle, up to the bound */
	for (unsigned queued = n - 1; queued > closers.idle && closers.threads < PDI_CLOSERS; queued--)
		if (!closer_start())
			break;
	/* one closer woken per link: a broadcast woke every idle one for each switch's link or two */
	for (unsigned i = 1; i < n; i++)
		pthread_cond_signal(&closers.queued);
	close_counted(&c[0]);
	while (left > 0) {
		struct closing *other;

		if (closers.threads == 0 && (other = dequeue()))
			close_counted(other); /* no closer: the caller's thread closes them */
		else
			pthread_cond_wait(&closers.closed, &closers.lock);
	}
	pthread_mutex_unlock(&closers.lock);
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

/* SPDX-License-Identifier: GPL-2.0-only */
/* detach.c -- uprobe links closed on a worker (see detach.h). A job owns its links from the
 * moment it is made: the task keeps nothing that could fire for it or be closed twice. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "close_together.h"
#include "detach.h"
#include "log.h"
#include "mpi_funcs.h"
#include "tracer.h"
#include "worker.h"

struct detach_job {
	struct pdi_job job;
	struct bpf_link **links; /* perf links (kernels without uprobe_multi) */
	unsigned nlinks;
	int *fds;                /* uprobe_multi links */
	unsigned nfds;
	unsigned *in_flight;     /* the submitter's count of its jobs not done, or NULL */
	bool together;           /* close its few fds at once (close_together.h), not one by one */
};

/* One after the other, not together (close_together.h): each unregistration takes the kernel's
 * global dup_mmap_sem for writing, as does every attach, and the loop attaches (new tasks, the
 * budget's changes): a task's hundreds of closes at once would queue the loop's next attach behind
 * all of them, while the ring fills. One at a time, the lock is free between them. */
static void close_all(struct detach_job *j)
{
	struct pdi_attachment links = {.links = j->links, .nlinks = j->nlinks, .multi_fds = {-1, -1},
				       .object_fd = -1};

	pdi_attachment_detach(&links);
	j->links = NULL;
	j->nlinks = 0;
	if (j->together)
		pdi_links_close_together(j->fds, j->nfds, NULL, 0);
	else
		for (unsigned i = 0; i < j->nfds; i++)
			close(j->fds[i]);
	free(j->fds);
	j->fds = NULL;
	j->nfds = 0;
}

static void detach_run(struct pdi_job *pj)
{
	struct detach_job *j = pdi_job_of(pj, struct detach_job, job);
	unsigned n = j->nlinks + j->nfds;
	uint64_t t0 = pdi_now_ns();

	close_all(j);
	log_debug("%u probe links closed in %.1f ms on a worker", n, (double)(pdi_now_ns() - t0) / 1e6);
}

static void detach_done(struct pdi_job *pj, bool cancelled)
{
	struct detach_job *j = pdi_job_of(pj, struct detach_job, job);

	if (cancelled)
		close_all(j); /* shutting down: the loop may wait now */
	if (j->in_flight)
		(*j->in_flight)--;
	free(j);
}

/* Close J's links on a worker of W; J is freed either way. */
static void submit(struct pdi_workers *w, struct detach_job *j)
{
	j->job = (struct pdi_job){.run = detach_run, .done = detach_done};
	if (w && pdi_workers_submit(w, &j->job) == 0) {
		if (j->in_flight)
			(*j->in_flight)++;
		return;
	}
	close_all(j);
	free(j);
}

/* Move link fd *FD (-1: none) into J's list, which has room for it; *FD is -1 after. */
static void take_fd(struct detach_job *j, int *fd)
{
	if (*fd < 0)
		return;
	j->fds[j->nfds++] = *fd;
	*fd = -1;
}

/* Move all of A's links into J (A keeps its object, datatypes and counts); false without memory,
 * and A keeps them. */
static bool take_links(struct detach_job *j, struct pdi_attachment *a)
{
	unsigned most = 2 + a->nretired + a->nretired_returns + (a->fns ? 2 * pdi_mpi_nfuncs : 0);
	int *fds = realloc(j->fds, sizeof(*fds) * (j->nfds + most));
	struct bpf_link **links;

	if (!fds)
		return false;
	j->fds = fds;
	if (a->nlinks && j->nlinks) {
		if (!(links = realloc(j->links, sizeof(*links) * (j->nlinks + a->nlinks))))
			return false;
		memcpy(links + j->nlinks, a->links, sizeof(*links) * a->nlinks);
		j->links = links;
		j->nlinks += a->nlinks;
		free(a->links);
	} else if (a->nlinks) {
		j->links = a->links;
		j->nlinks = a->nlinks;
	} else {
		free(a->links);
	}
	/* only the links: every other fd of an attachment stays the caller's (an object_fd of 0,
	 * as calloc left it, had the worker close fd 0, which by then was someone else's: a
	 * trapped process's pidfd, left stopped) */
	a->links = NULL;
	a->nlinks = 0;
	for (unsigned k = 0; k < 2; k++)
		take_fd(j, &a->multi_fds[k]);
	for (unsigned fn = 0; a->fns && fn < pdi_mpi_nfuncs; fn++)
		for (unsigned k = 0; k < 2; k++)
			take_fd(j, &a->fns[fn].fds[k]);
	for (unsigned i = 0; i < a->nretired; i++)
		take_fd(j, &a->retired[i]);
	a->nretired = 0;
	for (unsigned i = 0; i < a->nretired_returns; i++)
		take_fd(j, &a->retired_returns[i]);
	a->nretired_returns = 0;
	a->returns_held_ns = 0;
	a->returns_waiting = false;
	return true;
}

void pdi_detach_later(struct pdi_workers *w, struct pdi_attachment *a)
{
	struct detach_job *j = calloc(1, sizeof(*j));

	if (!j || !take_links(j, a)) {
		free(j);
		pdi_attachment_detach(a);
		return;
	}
	submit(w, j);
}

struct pdi_detach_batch {
	struct detach_job job; /* first: the job's done() frees the batch */
	uint64_t since_ns;     /* when its first links came */
	unsigned nadded;       /* attachments whose links it took */
};

bool pdi_detach_batch_add(struct pdi_detach_batch **b, struct pdi_attachment *a)
{
	struct pdi_detach_batch *n = *b ? *b : calloc(1, sizeof(*n));

	if (!n)
		return false;
	if (!take_links(&n->job, a)) {
		if (!*b)
			free(n);
		return false;
	}
	if (!*b)
		n->since_ns = pdi_now_ns();
	n->nadded++;
	n->job.together = true;
	*b = n;
	return true;
}

uint64_t pdi_detach_batch_since(const struct pdi_detach_batch *b)
{
	return b ? b->since_ns : 0;
}

unsigned pdi_detach_batch_count(const struct pdi_detach_batch *b)
{
	return b ? b->nadded : 0;
}

void pdi_detach_batch_submit(struct pdi_workers *w, struct pdi_detach_batch **b)
{
	struct pdi_detach_batch *n = *b;

	if (!n)
		return;
	*b = NULL;
	submit(w, &n->job);
}

/* A job closing the N link fds FDS (an array it takes), counted in *IN_FLIGHT; NULL without memory. */
static struct detach_job *fds_job(int *fds, unsigned n, unsigned *in_flight)
{
	struct detach_job *j = calloc(1, sizeof(*j));

	if (j) {
		j->fds = fds;
		j->nfds = n;
		j->in_flight = in_flight;
	}
	return j;
}

/* The budget's replaced links are closed together: a link keeps its breakpoints until its close
 * has unregistered them, and closed one by one behind each other's grace periods, the links of a
 * function turned off went on trapping every call for 60 ms a link, 200 ms a job
 * (bench/lammps_timeline.py: the entry program ran 1.27-2.46 times per call taken in). They are
 * a few per job, not the hundreds of a task's end that close_all() takes one at a time. */
void pdi_detach_list_later(struct pdi_workers *w, int **fds, unsigned *n, unsigned *in_flight)
{
	struct detach_job *j;

	if (*n == 0 || !(j = fds_job(*fds, *n, in_flight)))
		return; /* without memory they wait for the next call, or the task's end */
	j->together = true;
	*fds = NULL;
	*n = 0;
	submit(w, j);
}

void pdi_detach_fds_later(struct pdi_workers *w, int *fds, unsigned n, unsigned *in_flight)
{
	struct detach_job *j = fds_job(fds, n, in_flight);

	if (j) {
		submit(w, j);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
}

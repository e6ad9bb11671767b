/* SPDX-License-Identifier: GPL-2.0-only */
/* detach.c -- a task's uprobe links closed on a worker (see detach.h). The job owns the links
 * from the moment it is made: the task keeps nothing that could fire or be closed twice. */
#include <stdlib.h>

#include "detach.h"
#include "tracer.h"
#include "worker.h"

struct detach_job {
	struct pdi_job job;
	struct pdi_attachment links; /* only its links and multi_fds are used */
};

static void detach_run(struct pdi_job *pj)
{
	struct detach_job *j = pdi_job_of(pj, struct detach_job, job);

	pdi_attachment_detach(&j->links);
}

static void detach_done(struct pdi_job *pj, bool cancelled)
{
	struct detach_job *j = pdi_job_of(pj, struct detach_job, job);

	if (cancelled)
		pdi_attachment_detach(&j->links); /* shutting down: the loop may wait now */
	free(j);
}

void pdi_detach_later(struct pdi_workers *w, struct pdi_attachment *a)
{
	struct detach_job *j = calloc(1, sizeof(*j));

	if (!j || !w) {
		free(j);
		pdi_attachment_detach(a);
		return;
	}
	j->job = (struct pdi_job){.run = detach_run, .done = detach_done};
	/* only the links: every other fd of an attachment stays the caller's (an object_fd of 0,
	 * as calloc left it, had the worker close fd 0, which by then was someone else's: a
	 * trapped process's pidfd, left stopped) */
	j->links = (struct pdi_attachment){.links = a->links, .nlinks = a->nlinks,
					   .multi_fds = {a->multi_fds[0], a->multi_fds[1]}, .object_fd = -1};
	if (pdi_workers_submit(w, &j->job) < 0) {
		free(j);
		pdi_attachment_detach(a);
		return;
	}
	a->links = NULL;
	a->nlinks = 0;
	a->multi_fds[0] = a->multi_fds[1] = -1;
}

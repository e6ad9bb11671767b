/* SPDX-License-Identifier: GPL-2.0-only */
/* gather_step.c -- what pdimond plugs into the tree gather (gather.h): the merge of two parts
 * of a step (view.c), serving a parent's request off the loop, and the view the root makes of
 * the result.
 *
 * Serving a parent takes two trips to a worker (worker.h) and one back to the loop between
 * them: the request is verified on a worker (MUNGE may stall for seconds), this node's part
 * is copied on the loop (it reads the registry), then its live stacks are taken, the children
 * asked, the parts merged and the parent answered on a worker. The loop never waits. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "daemon.h"
#include "gather.h"
#include "gather_step.h"
#include "log.h"
#include "peer_auth.h"
#include "registry.h"
#include "snapshot.h"
#include "view_local.h"
#include "worker.h"

static int step_merge(void *ctx, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		      struct pdi_wire_writer *out)
{
	(void)ctx;
	return pdi_view_merge(a, alen, b, blen, out);
}

const struct pdi_gather_ops pdi_gather_step_ops = {.merge = step_merge};

int pdi_gather_step_part(struct pdi_gather *g, struct pdi_snapshot *snap, int status, struct pdi_gather_result *ret)
{
	struct pdi_wire_writer w = {0};
	int r;

	if (status == 0)
		status = pdi_view_encode(&snap->view, &w);
	r = pdi_gather_own_part(g, status, &w, ret);
	pdi_wire_writer_done(&w);
	return r;
}

/* ---- serving a parent ---- */

struct serve_job {
	struct pdi_job job;
	struct pdi_daemon *d;          /* for done() on the loop only */
	struct pdi_gather *g;          /* its thread-safe calls only */
	bool checked;                  /* the request passed pdi_gather_check(): the second trip */
	int fd;                        /* the parent's connection, ours since peer.c gave it */
	char peer[72];
	uint64_t t0_ns;
	struct pdi_wire_frame f;       /* the request, copied: F.cred and F.body point into FRAME */
	uint8_t *frame;
	struct pdi_auth_claim claim;
	struct pdi_gather_request q;
	int local_status;              /* this node's part: 0 (SNAP), -ENOENT, -EACCES, -ENOMEM */
	struct pdi_snapshot *snap;
};

static void serve_free(struct serve_job *j)
{
	if (j->fd >= 0)
		close(j->fd);
	free(j->frame);
	pdi_gather_request_done(&j->q);
	pdi_snapshot_free(j->snap);
	free(j);
}

static void serve_run(struct pdi_job *pj)
{
	struct serve_job *j = pdi_job_of(pj, struct serve_job, job);
	struct pdi_gather_result self = {0};

	if (!j->checked) {
		/* refused (answered or not, as it deserves) unless it goes back to the loop */
		j->checked = pdi_gather_check(j->g, j->fd, j->peer, &j->f, j->t0_ns, &j->claim, &j->q) == 0;
		return;
	}
	if (j->local_status == 0 && pdi_snapshot_walk(j->snap) < 0)
		j->local_status = -ENOMEM;
	/* out of memory even for saying why: the parent finds the answer short of this node */
	(void)pdi_gather_step_part(j->g, j->snap, j->local_status, &self);
	pdi_gather_serve(j->g, j->fd, j->peer, &j->claim, &j->q, &self, j->t0_ns);
	pdi_gather_result_done(&self);
	j->checked = false; /* answered: nothing comes after */
}

/* This node's part of checked request Q, on the loop: a copy of the step, or why there is none. */
static int local_part(struct pdi_daemon *d, const struct pdi_gather_request *q, struct pdi_snapshot **ret)
{
	struct pdi_caller c = pdi_caller_of(d, q->uid);
	struct pdi_step *s;
	int r = pdi_find_readable(d, &c, q->name, &s);

	if (r == 0 && (s->job_id != q->job || s->step_id != q->step))
		r = -ENOENT;
	if (r == 0)
		r = pdi_snapshot_take(d, s, ret);
	return r;
}

static void serve_done(struct pdi_job *pj, bool cancelled)
{
	struct serve_job *j = pdi_job_of(pj, struct serve_job, job);

	if (cancelled || !j->checked)
		return serve_free(j);
	j->local_status = local_part(j->d, &j->q, &j->snap);
	if (pdi_workers_submit(j->d->workers, &j->job) < 0) {
		log_warning("Peer %s: too busy to serve its gather of %u.%u, closing", j->peer, j->q.job, j->q.step);
		serve_free(j);
	}
}

bool pdi_gather_step_on_frame(struct pdi_daemon *d, int fd, const char *peer, const struct pdi_wire_frame *f,
			      uint64_t t0_ns)
{
	struct serve_job *j = calloc(1, sizeof(*j));
	int r;

	if (!j || !(j->frame = malloc((size_t)f->cred_len + f->body_len + 1))) {
		free(j);
		log_warning("Peer %s: out of memory for its request, closing", peer);
		return false;
	}
	j->job = (struct pdi_job){.run = serve_run, .done = serve_done};
	j->d = d;
	j->g = d->gather;
	j->t0_ns = t0_ns;
	snprintf(j->peer, sizeof(j->peer), "%s", peer);
	j->f = *f;
	if (f->cred_len)
		memcpy(j->frame, f->cred, f->cred_len);
	if (f->body_len)
		memcpy(j->frame + f->cred_len, f->body, f->body_len);
	j->f.cred = (const char *)j->frame;
	j->f.body = j->frame + f->cred_len;
	j->fd = fd; /* the job's from here on: it answers and closes */
	r = pdi_workers_submit(d->workers, &j->job);
	if (r < 0) {
		log_warning("Peer %s: too busy to serve its request (%s), closing", peer, strerror(-r));
		j->fd = -1; /* still peer.c's, which closes it */
		serve_free(j);
		return false;
	}
	return true;
}

/* ---- the root's view of the result ---- */

int pdi_view_from_gather(const struct pdi_gather_result *res, unsigned nnodes, struct pdi_view *ret)
{
	struct pdi_view v = {0};
	int r;

	if (res->payload && res->len) {
		if ((r = pdi_view_decode(res->payload, res->len, &v)) < 0)
			return r;
	} else if (!(v.name = strdup(""))) {
		return -ENOMEM;
	}
	v.nodes = nnodes;
	v.nodes_answered = res->answered;
	v.missing = calloc(res->nmissing + 1, sizeof(*v.missing));
	v.missing_why = calloc(res->nmissing + 1, sizeof(*v.missing_why));
	if (!v.missing || !v.missing_why)
		goto nomem;
	for (; v.nmissing < res->nmissing; v.nmissing++) {
		v.missing[v.nmissing] = strdup(res->missing[v.nmissing]);
		v.missing_why[v.nmissing] = strdup(res->missing_why[v.nmissing]);
		if (!v.missing[v.nmissing] || !v.missing_why[v.nmissing]) {
			v.nmissing++;
			goto nomem;
		}
	}
	*ret = v;
	return 0;
nomem:
	pdi_view_done(&v);
	return -ENOMEM;
}

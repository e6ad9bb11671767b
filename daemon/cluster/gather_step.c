/* SPDX-License-Identifier: GPL-2.0-only */
/* gather_step.c -- what pdimond plugs into the tree gather (gather.h): this node's part of a
 * step as a payload (view.c), the merge of two parts, and the view the root makes of the
 * result. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "daemon.h"
#include "gather.h"
#include "registry.h"
#include "view_local.h"

static int step_merge(void *ctx, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		      struct pdi_wire_writer *out)
{
	(void)ctx;
	return pdi_view_merge(a, alen, b, blen, out);
}

static int step_local(void *ctx, uint32_t job, uint32_t step, const char *name, uid_t uid, struct pdi_wire_writer *out)
{
	struct pdi_daemon *d = ctx;
	struct pdi_caller c = pdi_caller_of(d, uid);
	struct pdi_step *s = pdi_api_find_step(d, name);
	struct pdi_view v;
	int r;

	if (!s || s->job_id != job || s->step_id != step)
		return -ENOENT;
	if (!pdi_may_read(&c, s))
		return -EACCES;
	if ((r = pdi_view_local(d, s, &v)) < 0)
		return r;
	r = pdi_view_encode(&v, out);
	pdi_view_done(&v);
	return r;
}

const struct pdi_gather_ops pdi_gather_step_ops = {.local = step_local, .merge = step_merge};

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

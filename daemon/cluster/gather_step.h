/* SPDX-License-Identifier: GPL-2.0-only */
/* gather_step.h -- pdimond's side of the tree gather (gather.h): its steps' parts, and the
 * requests of parents served off the loop. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct pdi_daemon;
struct pdi_gather;
struct pdi_gather_result;
struct pdi_snapshot;
struct pdi_view;
struct pdi_wire_frame;

/* On a worker: this node's part of a gather from SNAP (its live stacks taken already), or,
 * when STATUS < 0, this node missing for that reason (SNAP unused, may be NULL). 0 or
 * -ENOMEM. */
int pdi_gather_step_part(struct pdi_gather *g, struct pdi_snapshot *snap, int status, struct pdi_gather_result *ret);

/* peer.c's frame handler: a parent's request F on FD, served off the loop. True: FD is ours
 * (answered and closed by the job); false: peer.c closes it (the request was refused). */
bool pdi_gather_step_on_frame(struct pdi_daemon *d, int fd, const char *peer, const struct pdi_wire_frame *f,
			      uint64_t t0_ns);

/* The view of a gather's merged payload over NNODES nodes, with the nodes that did not
 * answer (gather_step.c). 0, -EBADMSG or -EPROTONOSUPPORT (a payload this pdimon cannot
 * read), -ENOMEM. */
int pdi_view_from_gather(const struct pdi_gather_result *res, unsigned nnodes, struct pdi_view *ret);

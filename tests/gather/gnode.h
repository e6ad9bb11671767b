/* SPDX-License-Identifier: GPL-2.0-only */
/* gnode.h -- a stand-in pdimond for gather tests and bench-gather: the real peer listener
 * and tree gather (daemon/cluster/peer.c, daemon/cluster/gather.c) around a synthetic step.
 *
 * Each node holds NTASKS synthetic tasks, ranks RANK0.., in NCLASSES classes (rank % NCLASSES);
 * its payload is, per class, an encoded model of MODEL_BYTES (the same bytes on every node for
 * one class, as equal tasks give equal models) and the class's ranks. Merging is the union by
 * class: the model once, the rank lists concatenated (each level holds only its subtree's
 * ranks, STAT sec. V.B). Payload:
 *
 *	u32 nclasses, then per class: u32 id, bytes model, u32 nranks, nranks x u32 rank */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "gather.h"

#define GNODE_NCLASSES 4
#define GNODE_OWNER_UID 1000 /* the synthetic step's owner: it, and root, may read it */

struct gnode_options {
	const char *name;          /* node name: here its IPv4 address */
	uint16_t port;
	const char *munge_socket;
	unsigned fanout, level_ms;
	uid_t service_uid;
	uint32_t rank0, ntasks;
	uint32_t model_bytes;      /* per class */
	unsigned local_delay_ms;   /* a slow node: its own part takes this long */
	int ready_fd;              /* gnode_serve writes a byte here once it listens; -1: none */
};

struct gnode {
	const struct gnode_options *o;
	struct pdi_gather *g;
};

extern const struct pdi_gather_ops gnode_ops; /* ctx: struct gnode */

/* This node's part of a gather for UID, as the gather takes it (*RET: the payload, or this
 * node missing); returns what making it returned: 0, -EACCES for a uid that may not read the
 * step, -ENOMEM. */
int gnode_own_part(struct gnode *node, uid_t uid, struct pdi_gather_result *ret);

/* Serve gathers on O->name:O->port until SIGTERM or SIGINT. 0 or a negative errno. */
int gnode_serve(const struct gnode_options *o);

/* A summary of a merged payload: ranks in it, whether one repeats or a model is wrong. */
struct gnode_check {
	uint32_t nranks, nclasses;
	bool duplicate, bad_model, malformed;
};

void gnode_check_payload(const uint8_t *p, size_t len, uint32_t model_bytes, struct gnode_check *ret);

/* SPDX-License-Identifier: GPL-2.0-only */
/* gather.h -- gathering one Slurm step's data from every node over a k-ary tree of pdimonds.
 *
 * The node list is in tree order: position 0 is the root, the children of position i are
 * i*k+1 .. i*k+k. A parent sends each child only the child's own subtree, re-indexed with
 * the child at position 0 (the same layout: STAT sec. V.B, each level holds only its
 * subtree), so every daemon runs the same code as a root of its subtree. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire.h"

#define PDI_GATHER_MAX_NODES (1u << 20)
#define PDI_GATHER_NAME_MAX 63 /* bytes of a node name (a credential's sender) */
#define PDI_GATHER_STEP_MAX 255 /* bytes of a step name */
#define PDI_GATHER_WHY_MAX 255 /* bytes of a reason */

struct pdi_gather_ops {
	/* A and B merged into OUT. Associative, not necessarily commutative: it is always
	 * called with A before B in tree pre-order (this node, then its children's subtrees
	 * in order), as soon as the results that precede B have arrived or are given up. Runs
	 * on the gather's worker thread: it may use only its arguments (and CTX read-only). */
	int (*merge)(void *ctx, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		     struct pdi_wire_writer *out);
};

/* What pdimond plugs in (gather_step.c: the analysis's payload). */
extern const struct pdi_gather_ops pdi_gather_step_ops;

struct pdi_gather_options {
	const char *node_name;    /* this node as the others name it: nodes[0] of its requests */
	const char *bind_address; /* source address of connections to children; NULL: any */
	uint16_t port;            /* the children's peer port */
	const char *munge_socket; /* NULL: MUNGE's default */
	unsigned fanout;          /* k >= 2 */
	unsigned level_ms;        /* timeout per tree level */
	uint32_t max_body;        /* largest frame body accepted from a child */
	uid_t service_uid;        /* the only uid whose daemons we believe */
	unsigned munge_timeout_ms; /* bound on each MUNGE call; 0: PDI_AUTH_DEFAULT_TIMEOUT_MS */
	size_t replay_entries;    /* the replay cache's size; 0: PDI_AUTH_DEFAULT_REPLAY */
};

struct pdi_gather;

int pdi_gather_new(const struct pdi_gather_options *o, const struct pdi_gather_ops *ops, void *ctx,
		   struct pdi_gather **ret);
void pdi_gather_free(struct pdi_gather *g);

struct pdi_gather_result {
	uint8_t *payload; /* merged payload of the nodes that answered; NULL when none */
	size_t len;
	unsigned answered; /* nodes whose own contribution is in payload */
	char **missing;    /* the others (answered + nmissing = the number of nodes) */
	char **missing_why;
	unsigned nmissing; /* > 0: the result is partial */
};

void pdi_gather_result_done(struct pdi_gather_result *r);

/* Every call below except pdi_gather_own_part() blocks (MUNGE, connections, the children's
 * answers), each wait bounded by the gather's deadline: call them on a worker (worker.h),
 * several at once if need be, never on the loop. */

/* This node's own part of a gather, made by the caller on the loop: with STATUS 0 the payload
 * in W (moved from it; an empty payload counts as "nothing to merge"), else this node missing
 * for STATUS's reason (-ENOENT: no such step here, -EACCES: the request's uid may not read
 * it). 0 or -ENOMEM. */
int pdi_gather_own_part(struct pdi_gather *g, int status, struct pdi_wire_writer *w, struct pdi_gather_result *ret);

/* At the root: gather JOB.STEP for UID from NODES (position 0 must be this node), up to the
 * total deadline (pdi_gather_total_ms). SELF: this node's part (moved from; a zeroed result
 * when this node has no part: a node outside a step may gather it, and does not count as an
 * answering node); the caller has checked that UID may gather. 0 with a result (partial when
 * nmissing > 0), or a negative errno: -EINVAL for a bad node list (empty, position 0 not this
 * node, a name empty, over PDI_GATHER_NAME_MAX or listed twice). FANOUT, LEVEL_MS 0: the
 * configured ones. */
int pdi_gather_run(struct pdi_gather *g, uint32_t job, uint32_t step, const char *name, uid_t uid,
		   const char *const *nodes, unsigned nnodes, unsigned fanout, unsigned level_ms,
		   struct pdi_gather_result *self, struct pdi_gather_result *ret);

struct pdi_auth_claim;
struct pdi_gather_request;

/* Serving a parent, first: the GATHER frame F from PEER ("address:port") on FD, read by
 * peer.c at T0_NS, verified and decoded into *RET (pdi_gather_request_done() it) with its
 * credential's claim. A frame that does not authenticate as the service uid's gets no answer
 * at all: the daemon signs nothing whose content an unauthenticated peer chose (its job, step
 * and nonce would make a genuine answer to someone else's request); an authenticated request
 * that is wrong is answered with an ERROR. 0, or a negative errno (FD answered as it should
 * be: close it). */
int pdi_gather_check(struct pdi_gather *g, int fd, const char *peer, const struct pdi_wire_frame *f,
		     uint64_t t0_ns, struct pdi_auth_claim *ret_claim, struct pdi_gather_request *ret);
/* Then: forward checked request Q to the children, merge their parts after SELF (this node's,
 * moved from), and answer RESULT or ERROR on FD, every wait bounded by the request's budget
 * counted from T0_NS (CLOCK_MONOTONIC, when the connection was accepted). */
void pdi_gather_serve(struct pdi_gather *g, int fd, const char *peer, const struct pdi_auth_claim *claim,
		      const struct pdi_gather_request *q, struct pdi_gather_result *self, uint64_t t0_ns);

/* --- the tree, pure functions (tests/unit/test-gather.c) --- */

/* The children of position POS among N nodes, fan-out K: *ret_first and how many. */
unsigned pdi_gather_children(uint64_t pos, unsigned n, unsigned k, unsigned *ret_first);
/* Levels below the root: 0 for one node. */
unsigned pdi_gather_height(unsigned n, unsigned k);
/* How long the root waits: height x LEVEL_MS, at least one level. */
uint64_t pdi_gather_total_ms(unsigned n, unsigned k, unsigned level_ms);
/* How long a daemon given BUDGET_MS by its parent waits for its own children: half a
 * level less, so that it merges and answers before its parent gives up. */
uint64_t pdi_gather_wait_ms(uint64_t budget_ms, unsigned level_ms);
/* The subtree of position CHILD in tree order, re-indexed with CHILD at 0: indices into
 * the N nodes written to OUT (room for N); returns how many. */
unsigned pdi_gather_subtree(unsigned n, unsigned k, unsigned child, unsigned *out);

/* --- the messages (exposed for the tests) --- */

struct pdi_gather_request {
	uint32_t job, step;
	char *name;
	uint32_t uid;
	uint64_t nonce; /* the gather's id, the same in the whole tree */
	uint32_t fanout;
	uint32_t budget_ms; /* how long the sender waits for the answer, from sending */
	uint32_t level_ms;
	char **nodes; /* tree order, nodes[0] = the receiver */
	uint32_t nnodes;
};

int pdi_gather_request_encode(const struct pdi_gather_request *q, struct pdi_wire_writer *w);
int pdi_gather_request_decode(const uint8_t *p, size_t len, struct pdi_gather_request *ret);
void pdi_gather_request_done(struct pdi_gather_request *q);

/* RESULT body: answered, the missing (node, why) pairs, the payload. (The reply's credential
 * repeats the request's job, step and nonce: that binds it to the request.) */
int pdi_gather_result_encode(const struct pdi_gather_result *r, struct pdi_wire_writer *w);
int pdi_gather_result_decode(const uint8_t *p, size_t len, struct pdi_gather_result *ret);
/* Append NODE missing for WHY to R. */
int pdi_gather_result_add_missing(struct pdi_gather_result *r, const char *node, const char *why);

/* Results of a subtree as they arrive, merged in tree order (this node = slot 0, then the
 * children): a slot is filled (payload or given up) once; the merged prefix grows as soon
 * as it is contiguous. */
struct pdi_gather_acc {
	const struct pdi_gather_ops *ops;
	void *ctx;
	unsigned nslots, next; /* slots [0, next) are merged into acc */
	struct pdi_gather_result acc;
	struct pdi_gather_result *slots;
	bool *filled;
	int err; /* sticky: a merge failed */
};

int pdi_gather_acc_init(struct pdi_gather_acc *a, const struct pdi_gather_ops *ops, void *ctx, unsigned nslots);
/* Slot I's result (moved out of R). */
void pdi_gather_acc_put(struct pdi_gather_acc *a, unsigned i, struct pdi_gather_result *r);
/* The merged result of all slots (moved into RET); every slot must be filled. */
int pdi_gather_acc_finish(struct pdi_gather_acc *a, struct pdi_gather_result *ret);
void pdi_gather_acc_done(struct pdi_gather_acc *a);

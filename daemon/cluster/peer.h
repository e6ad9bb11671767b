/* SPDX-License-Identifier: GPL-2.0-only */
/* peer.h -- pdimond's TCP listener for the other pdimonds: connections, limits, frames.
 *
 * Non-blocking, driven by the caller's epoll loop. A connection carries one request: the
 * first complete frame goes to the handler, then the connection is closed. Bad input of
 * any kind (garbage, a truncated or oversized frame, an unknown version, too many
 * connections from one address, a peer too slow to send its request, more bytes announced
 * than its address may have buffered) closes that connection with one rate-limited log
 * line naming the peer and the reason; the others are served.
 *
 * Nothing a peer sends is authenticated before its frame is complete, so what may be
 * buffered before then is bounded three ways: a request's size (max_body: the listener
 * only ever receives requests, whose body is a node list), the bytes announced by all the
 * connections of one address (max_preauth_per_addr) and by all connections
 * (max_preauth_total). A frame's announced length is judged on its 16-byte header, before
 * its body is buffered. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define PDI_PEER_DEFAULT_PORT 7087
#define PDI_PEER_MAX_CONNS 128  /* open connections in all */
#define PDI_PEER_MAX_PER_ADDR 8 /* from one address: a parent holds one per gather */
#define PDI_PEER_MAX_REQUEST (4u << 20) /* a request's body: the node list of ~200,000 nodes */

struct pdi_peer_options {
	const char *address;   /* bind address; NULL or "": all (IPv6 and IPv4) */
	uint16_t port;
	unsigned max_conns;    /* 0: PDI_PEER_MAX_CONNS */
	unsigned max_per_addr; /* 0: PDI_PEER_MAX_PER_ADDR */
	unsigned frame_ms;     /* a connection must deliver its request within this */
	uint32_t max_body;     /* a request's body; 0: PDI_PEER_MAX_REQUEST */
	size_t max_preauth_per_addr; /* bytes announced by one address's connections; 0: 2 x max_body */
	size_t max_preauth_total;    /* by all connections; 0: 8 x max_body */
};

/* A complete frame F from PEER ("address:port") on FD (non-blocking), accepted at T0_NS
 * (CLOCK_MONOTONIC); F lives until the handler returns. The handler may answer on FD; the
 * connection is closed after it, unless it returns true: then FD is the handler's (to answer
 * from a worker, worker.h), out of the epoll set and no longer counted here. */
typedef bool (*pdi_peer_frame_fn)(void *ctx, int fd, const char *peer, const struct pdi_wire_frame *f,
				  uint64_t t0_ns);

struct pdi_peer;

/* Listen, and register the listener on EPOLL_FD with data LISTEN_SRC and each connection
 * with CONN_SRC | its index (below 2^32). */
int pdi_peer_new(const struct pdi_peer_options *o, int epoll_fd, uint64_t listen_src, uint64_t conn_src,
		 pdi_peer_frame_fn fn, void *ctx, struct pdi_peer **ret);
void pdi_peer_free(struct pdi_peer *p);

/* The listener is readable: accept what waits. */
void pdi_peer_on_listen(struct pdi_peer *p);
/* Connection INDEX is readable. */
void pdi_peer_on_conn(struct pdi_peer *p, unsigned index);
/* Close the connections past their deadline. */
void pdi_peer_expire(struct pdi_peer *p);
/* ms until the next deadline, -1 for none: an upper bound for epoll_wait. */
int pdi_peer_timeout_ms(const struct pdi_peer *p);
/* Open connections (tests). */
unsigned pdi_peer_nconns(const struct pdi_peer *p);

/* SPDX-License-Identifier: GPL-2.0-only */
/* peer.c -- the TCP listener for other pdimonds: non-blocking accept and reads in the
 * caller's epoll, one frame decoder per connection, limits, and one log line per refusal.
 *
 * The listener never trusts a peer with more than a bounded share of the daemon: at most
 * max_conns connections in all and max_per_addr from one address, each holding at most
 * one request (the decoder refuses an announced oversized body before buffering it),
 * announcing together at most max_preauth_per_addr bytes per address and
 * max_preauth_total in all, and living at most frame_ms before its request is complete. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "peer.h"
#include "u64map.h"

#define READS_PER_WAKEUP 16   /* then back to the loop, so that one fast peer starves nobody */
#define ACCEPTS_PER_WAKEUP 64

struct conn {
	int fd; /* -1: a free slot */
	char peer[INET6_ADDRSTRLEN + 8]; /* "address:port" */
	char addr[INET6_ADDRSTRLEN];     /* what the per-address limit counts */
	uint64_t t0_ns, deadline_ns;
	size_t received;
	size_t announced; /* the frame's length once its header is in: charged to the budgets */
	struct pdi_wire_decoder dec;
};

struct pdi_peer {
	struct pdi_peer_options o;
	int epoll_fd, listen_fd;
	uint64_t conn_src;
	pdi_peer_frame_fn fn;
	void *ctx;
	struct conn *conns;
	unsigned nconns;
	size_t preauth; /* the connections' announced bytes */
	uint8_t buf[65536];
};

/* One line per refused or closed peer, rate-limited per address: a flood of connections
 * must not turn into a flood of log lines, nor hide another address's first refusal. */
static void peer_log(const char *addr, const char *peer, const char *why)
{
	log_warning_limited(pdi_hash_str(addr), "Peer %s: %s, closing the connection", peer, why);
}

static void conn_close(struct pdi_peer *p, struct conn *c)
{
	if (c->fd < 0)
		return;
	close(c->fd); /* leaves the epoll set with it */
	c->fd = -1;
	pdi_wire_decoder_done(&c->dec);
	p->preauth -= c->announced;
	c->announced = 0;
	p->nconns--;
}

/* C's fd is the frame handler's now: out of our epoll set and our counts, still open. */
static void conn_give_away(struct pdi_peer *p, struct conn *c)
{
	(void)epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	c->fd = -1;
	pdi_wire_decoder_done(&c->dec);
	p->nconns--;
}

static int listen_on(const struct pdi_peer_options *o)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *ai, *a;
	const char *node = o->address && o->address[0] ? o->address : NULL;
	char port[8];
	int fd = -1, r, one = 1, zero = 0;

	snprintf(port, sizeof(port), "%u", (unsigned)o->port);
	if (!node)
		hints.ai_family = AF_INET6; /* "::" takes IPv4 too; falls back below */
	r = getaddrinfo(node ? node : "::", port, &hints, &ai);
	if (r != 0 && !node)
		r = getaddrinfo("0.0.0.0", port, &(struct addrinfo){.ai_socktype = SOCK_STREAM, .ai_flags = hints.ai_flags}, &ai);
	if (r != 0)
		return r == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	r = -EADDRNOTAVAIL;
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (a->ai_family == AF_INET6 && !node)
			(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0)
			break;
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd >= 0 ? fd : r;
}

int pdi_peer_new(const struct pdi_peer_options *o, int epoll_fd, uint64_t listen_src, uint64_t conn_src,
		 pdi_peer_frame_fn fn, void *ctx, struct pdi_peer **ret)
{
	struct pdi_peer *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->o = *o;
	p->o.address = NULL; /* not kept: the caller's string */
	if (!p->o.max_conns)
		p->o.max_conns = PDI_PEER_MAX_CONNS;
	if (!p->o.max_per_addr)
		p->o.max_per_addr = PDI_PEER_MAX_PER_ADDR;
	if (!p->o.frame_ms)
		p->o.frame_ms = 2000;
	if (!p->o.max_body)
		p->o.max_body = PDI_PEER_MAX_REQUEST;
	if (!p->o.max_preauth_per_addr)
		p->o.max_preauth_per_addr = 2 * (size_t)p->o.max_body;
	if (!p->o.max_preauth_total)
		p->o.max_preauth_total = 8 * (size_t)p->o.max_body;
	p->epoll_fd = epoll_fd;
	p->conn_src = conn_src;
	p->fn = fn;
	p->ctx = ctx;
	p->conns = calloc(p->o.max_conns, sizeof(*p->conns));
	if (!p->conns) {
		free(p);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < p->o.max_conns; i++)
		p->conns[i].fd = -1;
	p->listen_fd = listen_on(o);
	if (p->listen_fd < 0) {
		r = p->listen_fd;
		pdi_peer_free(p);
		return log_error_errno(r, "Cannot listen for peers on %s port %u: %m",
				       o->address && o->address[0] ? o->address : "all addresses", (unsigned)o->port);
	}
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, p->listen_fd, &(struct epoll_event){.events = EPOLLIN, .data.u64 = listen_src}) < 0) {
		r = -errno;
		pdi_peer_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

void pdi_peer_free(struct pdi_peer *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->o.max_conns; i++)
		conn_close(p, &p->conns[i]);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	free(p->conns);
	free(p);
}

/* The address of SA as text, IPv4-mapped IPv6 addresses as plain IPv4. */
static void describe(const struct sockaddr_storage *sa, char *addr, size_t alen, char *peer, size_t plen)
{
	unsigned port = 0;

	addr[0] = '\0';
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, addr, (socklen_t)alen);
		port = ntohs(s4->sin_port);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], addr, (socklen_t)alen);
		else
			inet_ntop(AF_INET6, &s6->sin6_addr, addr, (socklen_t)alen);
		port = ntohs(s6->sin6_port);
	}
	snprintf(peer, plen, "%s:%u", addr[0] ? addr : "?", port);
}

static unsigned count_from(const struct pdi_peer *p, const char *addr)
{
	unsigned n = 0;

	for (unsigned i = 0; i < p->o.max_conns; i++)
		n += p->conns[i].fd >= 0 && !strcmp(p->conns[i].addr, addr);
	return n;
}

static struct conn *free_slot(struct pdi_peer *p)
{
	for (unsigned i = 0; i < p->o.max_conns; i++)
		if (p->conns[i].fd < 0)
			return &p->conns[i];
	return NULL;
}

/* Take FD from SA as a connection, or refuse it. */
static void admit(struct pdi_peer *p, int fd, const struct sockaddr_storage *sa)
{
	char addr[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN + 8];
	struct conn *c = NULL;
	const char *why = NULL;

	describe(sa, addr, sizeof(addr), peer, sizeof(peer));
	if (count_from(p, addr) >= p->o.max_per_addr)
		why = "too many connections from this address";
	else if (!(c = free_slot(p)))
		why = "too many peer connections";
	else if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd,
			   &(struct epoll_event){.events = EPOLLIN, .data.u64 = p->conn_src | (uint64_t)(c - p->conns)}) < 0)
		why = "cannot watch it";
	if (why) {
		peer_log(addr, peer, why);
		close(fd);
		return;
	}
	*c = (struct conn){.fd = fd, .t0_ns = pdi_now_ns()};
	c->deadline_ns = c->t0_ns + (uint64_t)p->o.frame_ms * 1000000ull;
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	pdi_wire_decoder_init(&c->dec, p->o.max_body);
	p->nconns++;
}

void pdi_peer_on_listen(struct pdi_peer *p)
{
	for (unsigned i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		int fd = accept4(p->listen_fd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warning_limited(0, "Cannot accept a peer connection: %m");
			return;
		}
		admit(p, fd, &sa);
	}
}

static const char *frame_error(int r)
{
	switch (r) {
	case -EBADMSG: return "garbage or a malformed frame";
	case -EPROTONOSUPPORT: return "unknown protocol version";
	case -EMSGSIZE: return "frame longer than the limit";
	case -ENOMEM: return "out of memory for its frame";
	default: return strerror(-r);
	}
}

/* Bytes announced by the connections from ADDR. */
static size_t announced_from(const struct pdi_peer *p, const char *addr)
{
	size_t n = 0;

	for (unsigned i = 0; i < p->o.max_conns; i++)
		if (p->conns[i].fd >= 0 && !strcmp(p->conns[i].addr, addr))
			n += p->conns[i].announced;
	return n;
}

/* Charge C's frame, once its header announced its length, to its address's budget and the
 * total; NULL when it fits, or why not (WHY, WHYLEN). */
static const char *charge(struct pdi_peer *p, struct conn *c, char *why, size_t whylen)
{
	size_t len, addr;

	if (c->announced || pdi_wire_decoder_announced(&c->dec, &len) <= 0)
		return NULL;
	addr = announced_from(p, c->addr);
	if (addr + len > p->o.max_preauth_per_addr) {
		snprintf(why, whylen, "%zu bytes announced while its address holds %zu of its %zu unauthenticated bytes",
			 len, addr, p->o.max_preauth_per_addr);
		return why;
	}
	if (p->preauth + len > p->o.max_preauth_total) {
		snprintf(why, whylen, "%zu bytes announced while peers hold %zu of the %zu unauthenticated bytes", len,
			 p->preauth, p->o.max_preauth_total);
		return why;
	}
	c->announced = len;
	p->preauth += len;
	return NULL;
}

/* What C sent is there: read it, and hand a complete frame to the handler. */
static void conn_read(struct pdi_peer *p, struct conn *c)
{
	struct pdi_wire_frame f;
	const char *over;
	char why[160];

	for (unsigned i = 0; i < READS_PER_WAKEUP; i++) {
		ssize_t n = recv(c->fd, p->buf, sizeof(p->buf), 0);
		int r;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			/* a peer that connects and leaves without a byte is only probing the port */
			if (n < 0)
				snprintf(why, sizeof(why), "connection error: %s", strerror(errno));
			else
				snprintf(why, sizeof(why), "truncated frame (%zu bytes, then the end)", c->received);
			if (n < 0 || c->received > 0)
				peer_log(c->addr, c->peer, why);
			return conn_close(p, c);
		}
		c->received += (size_t)n;
		r = pdi_wire_decoder_feed(&c->dec, p->buf, (size_t)n);
		if (r == 0)
			r = pdi_wire_decoder_next(&c->dec, &f);
		if (r < 0) {
			peer_log(c->addr, c->peer, frame_error(r));
			return conn_close(p, c);
		}
		if (r == 0 && (over = charge(p, c, why, sizeof(why)))) {
			peer_log(c->addr, c->peer, over);
			return conn_close(p, c);
		}
		if (r > 0) {
			if (p->fn(p->ctx, c->fd, c->peer, &f, c->t0_ns))
				return conn_give_away(p, c);
			return conn_close(p, c);
		}
	}
}

void pdi_peer_on_conn(struct pdi_peer *p, unsigned index)
{
	/* an event queued for a connection closed earlier in the same batch finds a free slot */
	if (index < p->o.max_conns && p->conns[index].fd >= 0)
		conn_read(p, &p->conns[index]);
}

void pdi_peer_expire(struct pdi_peer *p)
{
	uint64_t now = pdi_now_ns();
	char why[96];

	if (!p || !p->nconns)
		return;
	for (unsigned i = 0; i < p->o.max_conns; i++) {
		struct conn *c = &p->conns[i];

		if (c->fd < 0 || now < c->deadline_ns)
			continue;
		snprintf(why, sizeof(why), "no complete request within %u ms (%zu bytes)", p->o.frame_ms, c->received);
		peer_log(c->addr, c->peer, why);
		conn_close(p, c);
	}
}

int pdi_peer_timeout_ms(const struct pdi_peer *p)
{
	uint64_t now = pdi_now_ns(), next = UINT64_MAX;

	if (!p || !p->nconns)
		return -1;
	for (unsigned i = 0; i < p->o.max_conns; i++)
		if (p->conns[i].fd >= 0 && p->conns[i].deadline_ns < next)
			next = p->conns[i].deadline_ns;
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

unsigned pdi_peer_nconns(const struct pdi_peer *p)
{
	return p ? p->nconns : 0;
}

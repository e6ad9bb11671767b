/* SPDX-License-Identifier: GPL-2.0-only */
/* gnode.c -- a stand-in pdimond for gather tests and bench-gather (see gnode.h): one epoll
 * loop around the real peer listener, the real tree gather, and a synthetic payload. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "gnode.h"
#include "log.h"
#include "peer.h"
#include "peer_auth.h"

#define MAX_CLASSES 16

struct cls {
	uint32_t id;
	const uint8_t *model, *ranks; /* ranks: u32 little-endian each */
	uint32_t model_len, ranks_len;
};

static void model_bytes(uint32_t id, uint8_t *out, uint32_t n)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * (id + 1);

	for (uint32_t i = 0; i < n; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		out[i] = (uint8_t)s;
	}
}

static void put_u32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32le(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int gnode_local(const struct gnode_options *o, uid_t uid, struct pdi_wire_writer *out)
{
	uint8_t *model = malloc(o->model_bytes ? o->model_bytes : 1), *ranks = malloc(4 * (o->ntasks + 1));

	if (o->local_delay_ms)
		(void)nanosleep(&(struct timespec){o->local_delay_ms / 1000, (long)(o->local_delay_ms % 1000) * 1000000}, NULL);
	if (!model || !ranks) {
		free(model);
		free(ranks);
		return -ENOMEM;
	}
	if (uid != 0 && uid != GNODE_OWNER_UID) {
		free(model);
		free(ranks);
		return -EACCES;
	}
	pdi_wire_put_u32(out, GNODE_NCLASSES);
	for (uint32_t c = 0; c < GNODE_NCLASSES; c++) {
		uint32_t n = 0;

		for (uint32_t t = 0; t < o->ntasks; t++)
			if ((o->rank0 + t) % GNODE_NCLASSES == c)
				put_u32le(ranks + 4 * n++, o->rank0 + t);
		model_bytes(c, model, o->model_bytes);
		pdi_wire_put_u32(out, c);
		pdi_wire_put_bytes(out, model, o->model_bytes);
		pdi_wire_put_bytes(out, ranks, 4 * n);
	}
	free(model);
	free(ranks);
	return out->err;
}

int gnode_own_part(struct gnode *node, uid_t uid, struct pdi_gather_result *ret)
{
	struct pdi_wire_writer w = {0};
	int r = gnode_local(node->o, uid, &w), e;

	e = pdi_gather_own_part(node->g, r, &w, ret);
	pdi_wire_writer_done(&w);
	return r < 0 ? r : e;
}

/* The classes of payload P; -EBADMSG if it is not one. */
static int parse(const uint8_t *p, size_t len, struct cls *v, uint32_t *ret_n)
{
	struct pdi_wire_reader r;
	uint32_t n;

	pdi_wire_reader_init(&r, p, len);
	n = pdi_wire_get_u32(&r);
	if (n > MAX_CLASSES)
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++) {
		v[i].id = pdi_wire_get_u32(&r);
		v[i].model = pdi_wire_get_bytes(&r, &v[i].model_len);
		v[i].ranks = pdi_wire_get_bytes(&r, &v[i].ranks_len);
		if (v[i].ranks_len % 4)
			return -EBADMSG;
	}
	*ret_n = n;
	return pdi_wire_reader_finish(&r);
}

static const struct cls *find(const struct cls *v, uint32_t n, uint32_t id)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i].id == id)
			return &v[i];
	return NULL;
}

/* The class A (its ranks followed by those of B's class of the same id, if any) into OUT. */
static int put_class(const struct cls *a, const struct cls *b, struct pdi_wire_writer *out)
{
	uint32_t n = a->ranks_len + (b ? b->ranks_len : 0);
	uint8_t *ranks = malloc(n ? n : 1);

	if (!ranks)
		return -ENOMEM;
	memcpy(ranks, a->ranks, a->ranks_len);
	if (b)
		memcpy(ranks + a->ranks_len, b->ranks, b->ranks_len);
	pdi_wire_put_u32(out, a->id);
	pdi_wire_put_bytes(out, a->model, a->model_len);
	pdi_wire_put_bytes(out, ranks, n);
	free(ranks);
	return out->err;
}

static int gnode_merge(void *ctx, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, struct pdi_wire_writer *out)
{
	struct cls ca[MAX_CLASSES], cb[MAX_CLASSES];
	uint32_t na, nb, nnew = 0;
	int r;

	(void)ctx;
	if ((r = parse(a, alen, ca, &na)) < 0 || (r = parse(b, blen, cb, &nb)) < 0)
		return r;
	for (uint32_t i = 0; i < nb; i++)
		nnew += !find(ca, na, cb[i].id);
	if (na + nnew > MAX_CLASSES)
		return -E2BIG;
	pdi_wire_put_u32(out, na + nnew);
	for (uint32_t i = 0; i < na && r == 0; i++)
		r = put_class(&ca[i], find(cb, nb, ca[i].id), out);
	for (uint32_t i = 0; i < nb && r == 0; i++)
		if (!find(ca, na, cb[i].id))
			r = put_class(&cb[i], NULL, out);
	return r;
}

const struct pdi_gather_ops gnode_ops = {.merge = gnode_merge};

void gnode_check_payload(const uint8_t *p, size_t len, uint32_t model_bytes_per_class, struct gnode_check *ret)
{
	struct cls v[MAX_CLASSES];
	uint8_t *want = malloc(model_bytes_per_class ? model_bytes_per_class : 1), *seen = NULL;
	uint32_t n = 0, max = 0;

	*ret = (struct gnode_check){0};
	if (!p || !want || parse(p, len, v, &n) < 0) {
		ret->malformed = p != NULL;
		free(want);
		return;
	}
	ret->nclasses = n;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < v[i].ranks_len / 4; j++)
			max = get_u32le(v[i].ranks + 4 * j) > max ? get_u32le(v[i].ranks + 4 * j) : max;
	seen = calloc(max + 1, 1);
	for (uint32_t i = 0; seen && i < n; i++) {
		model_bytes(v[i].id, want, model_bytes_per_class);
		if (v[i].model_len != model_bytes_per_class || memcmp(v[i].model, want, model_bytes_per_class))
			ret->bad_model = true;
		for (uint32_t j = 0; j < v[i].ranks_len / 4; j++) {
			uint32_t rank = get_u32le(v[i].ranks + 4 * j);

			ret->duplicate |= seen[rank]++ > 0;
			ret->nranks++;
		}
	}
	free(seen);
	free(want);
}

static volatile sig_atomic_t quit;

static void on_term(int sig)
{
	(void)sig;
	quit = 1;
}

/* Serving a parent, all of it right here: a stand-in daemon has no loop to keep free. */
static bool on_frame(void *ctx, int fd, const char *peer, const struct pdi_wire_frame *f, uint64_t t0_ns)
{
	struct gnode *node = ctx;
	struct pdi_auth_claim claim;
	struct pdi_gather_request q = {0};
	struct pdi_gather_result self = {0};

	if (pdi_gather_check(node->g, fd, peer, f, t0_ns, &claim, &q) < 0)
		return false;
	(void)gnode_own_part(node, q.uid, &self);
	pdi_gather_serve(node->g, fd, peer, &claim, &q, &self, t0_ns);
	pdi_gather_result_done(&self);
	pdi_gather_request_done(&q);
	return false;
}

enum { SRC_LISTEN = 1, SRC_CONN = 2 };
#define SRC(kind) ((uint64_t)(kind) << 56)

int gnode_serve(const struct gnode_options *o)
{
	struct gnode node = {.o = o};
	struct pdi_gather_options go = {.node_name = o->name, .bind_address = o->name, .port = o->port,
					.munge_socket = o->munge_socket, .fanout = o->fanout, .level_ms = o->level_ms,
					.service_uid = o->service_uid};
	struct pdi_peer_options po = {.address = o->name, .port = o->port, .frame_ms = o->level_ms};
	struct sigaction sa = {.sa_handler = on_term}; /* no SA_RESTART: epoll_wait returns */
	struct pdi_gather *g = NULL;
	struct pdi_peer *p = NULL;
	int ep = epoll_create1(EPOLL_CLOEXEC), r;

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (ep < 0)
		return -errno;
	r = pdi_gather_new(&go, &gnode_ops, &node, &g);
	node.g = g;
	if (r == 0)
		r = pdi_peer_new(&po, ep, SRC(SRC_LISTEN), SRC(SRC_CONN), on_frame, &node, &p);
	if (r == 0 && o->ready_fd >= 0) {
		(void)!write(o->ready_fd, "", 1);
		close(o->ready_fd);
	}
	while (r == 0 && !quit) {
		struct epoll_event evs[32];
		int t = pdi_peer_timeout_ms(p), n = epoll_wait(ep, evs, 32, t < 0 || t > 1000 ? 1000 : t);

		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 >> 56 == SRC_LISTEN)
				pdi_peer_on_listen(p);
			else
				pdi_peer_on_conn(p, (unsigned)(evs[i].data.u64 & 0xffffffffu));
		}
		pdi_peer_expire(p);
	}
	pdi_peer_free(p);
	pdi_gather_free(g);
	close(ep);
	return r;
}

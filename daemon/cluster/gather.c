/* SPDX-License-Identifier: GPL-2.0-only */
/* gather.c -- the tree gather: forward a step's request down a k-ary tree of pdimonds, merge
 * the answers on the way up, and name every node that did not answer.
 *
 * Design choice: the listener and the reading of requests are non-blocking, in pdimond's
 * epoll loop (peer.c). Everything else here blocks and runs on a worker thread (worker.h):
 * MUNGE calls, connecting to the children, sending, collecting their answers with poll() and
 * a hard deadline, merging, answering. A gather is thus a straight line of code (no
 * per-gather state machine threaded through the event loop), every wait in it is bounded by
 * the request's budget, and the loop never waits for it: several gathers, as root or serving
 * parents, run at once, each on its own worker. This node's own part is not made here: the
 * caller makes it on the loop (it reads the daemon's state) and hands it in. The functions
 * below share only the options (read-only once made) and struct pdi_auth (thread-safe).
 *
 * Deadlines: the root waits height x level_ms; each request carries the time its sender
 * waits for the answer (the budget). A daemon waits for its own children half a level less
 * than its budget, so that it merges and answers before its parent gives up; a child that
 * did not answer by then is missing, with its whole subtree. Nothing a child sends (reset,
 * garbage, silence, a refusal) does more than make it missing. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "gather.h"
#include "log.h"
#include "peer_auth.h"
#include "u64map.h"

#define READ_CHUNK 65536

struct pdi_gather {
	struct pdi_gather_options o; /* its strings are the copies below */
	char *node_name, *bind_address;
	const struct pdi_gather_ops *ops;
	void *ctx;
	struct pdi_auth *auth;
};

static uint32_t ms_until(uint64_t deadline_ns)
{
	uint64_t now = pdi_now_ns();

	return now >= deadline_ns ? 0 : (uint32_t)((deadline_ns - now + 999999) / 1000000);
}

/* ---- the tree ---- */

unsigned pdi_gather_children(uint64_t pos, unsigned n, unsigned k, unsigned *ret_first)
{
	uint64_t first = pos * k + 1;

	*ret_first = 0;
	if (k == 0 || first >= n)
		return 0;
	*ret_first = (unsigned)first;
	return (unsigned)(n - first < k ? n - first : k);
}

unsigned pdi_gather_height(unsigned n, unsigned k)
{
	uint64_t covered = 1, level = 1;
	unsigned h = 0;

	if (k < 2)
		return n > 0 ? n - 1 : 0; /* a chain */
	while (covered < n) {
		level *= k;
		covered += level;
		h++;
	}
	return h;
}

uint64_t pdi_gather_total_ms(unsigned n, unsigned k, unsigned level_ms)
{
	unsigned h = pdi_gather_height(n, k);

	return (uint64_t)(h ? h : 1) * level_ms;
}

uint64_t pdi_gather_wait_ms(uint64_t budget_ms, unsigned level_ms)
{
	return budget_ms > level_ms / 2 ? budget_ms - level_ms / 2 : 0;
}

unsigned pdi_gather_subtree(unsigned n, unsigned k, unsigned child, unsigned *out)
{
	uint64_t s = child, len = 1;
	unsigned m = 0;

	/* the descendants at each depth are one contiguous run of positions */
	while (s < n) {
		for (uint64_t i = s; i < s + len && i < n; i++)
			out[m++] = (unsigned)i;
		s = s * k + 1;
		len *= k;
	}
	return m;
}

/* ---- the messages ---- */

static void free_strv(char **v, unsigned n)
{
	for (unsigned i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void pdi_gather_request_done(struct pdi_gather_request *q)
{
	free(q->name);
	free_strv(q->nodes, q->nnodes);
	*q = (struct pdi_gather_request){0};
}

int pdi_gather_request_encode(const struct pdi_gather_request *q, struct pdi_wire_writer *w)
{
	pdi_wire_put_u32(w, q->job);
	pdi_wire_put_u32(w, q->step);
	pdi_wire_put_str(w, q->name ? q->name : "");
	pdi_wire_put_u32(w, q->uid);
	pdi_wire_put_u64(w, q->nonce);
	pdi_wire_put_u32(w, q->fanout);
	pdi_wire_put_u32(w, q->budget_ms);
	pdi_wire_put_u32(w, q->level_ms);
	pdi_wire_put_u32(w, q->nnodes);
	for (uint32_t i = 0; i < q->nnodes; i++)
		pdi_wire_put_str(w, q->nodes[i]);
	return w->err;
}

/* A string field into a fresh copy; NULL on a bad or empty field. */
static char *get_strdup(struct pdi_wire_reader *r, size_t max)
{
	char buf[PDI_GATHER_STEP_MAX + 1];

	if (max >= sizeof(buf) || pdi_wire_get_str(r, buf, max + 1) < 0 || !buf[0])
		return NULL;
	return strdup(buf);
}

/* A count of records at least MIN_BYTES each that the rest of R can hold. */
static int get_count(struct pdi_wire_reader *r, size_t min_bytes, uint32_t max, uint32_t *ret)
{
	uint32_t n = pdi_wire_get_u32(r);

	if (r->err || n > max || n > (r->len - r->off) / min_bytes)
		return -EBADMSG;
	*ret = n;
	return 0;
}

int pdi_gather_request_decode(const uint8_t *p, size_t len, struct pdi_gather_request *ret)
{
	struct pdi_gather_request q = {0};
	struct pdi_wire_reader r;
	uint32_t n = 0;
	int e;

	pdi_wire_reader_init(&r, p, len);
	q.job = pdi_wire_get_u32(&r);
	q.step = pdi_wire_get_u32(&r);
	q.name = get_strdup(&r, PDI_GATHER_STEP_MAX);
	q.uid = pdi_wire_get_u32(&r);
	q.nonce = pdi_wire_get_u64(&r);
	q.fanout = pdi_wire_get_u32(&r);
	q.budget_ms = pdi_wire_get_u32(&r);
	q.level_ms = pdi_wire_get_u32(&r);
	e = q.name ? get_count(&r, 4, PDI_GATHER_MAX_NODES, &n) : -EBADMSG;
	if (e == 0 && n > 0 && !(q.nodes = calloc(n, sizeof(*q.nodes))))
		e = -ENOMEM;
	for (; e == 0 && q.nnodes < n; q.nnodes++)
		if (!(q.nodes[q.nnodes] = get_strdup(&r, PDI_GATHER_NAME_MAX)))
			e = -EBADMSG;
	if (e == 0)
		e = pdi_wire_reader_finish(&r);
	if (e == 0 && (q.nnodes == 0 || q.fanout < 2 || q.level_ms == 0))
		e = -EBADMSG;
	if (e < 0) {
		pdi_gather_request_done(&q);
		return e;
	}
	*ret = q;
	return 0;
}

void pdi_gather_result_done(struct pdi_gather_result *r)
{
	free(r->payload);
	free_strv(r->missing, r->nmissing);
	free_strv(r->missing_why, r->nmissing);
	*r = (struct pdi_gather_result){0};
}

int pdi_gather_result_add_missing(struct pdi_gather_result *r, const char *node, const char *why)
{
	char **m = realloc(r->missing, (r->nmissing + 1) * sizeof(*m));
	char **w;

	if (!m)
		return -ENOMEM;
	r->missing = m;
	w = realloc(r->missing_why, (r->nmissing + 1) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	r->missing_why = w;
	m[r->nmissing] = strndup(node, PDI_GATHER_NAME_MAX);
	w[r->nmissing] = strndup(why, PDI_GATHER_WHY_MAX);
	if (!m[r->nmissing] || !w[r->nmissing]) {
		free(m[r->nmissing]);
		free(w[r->nmissing]);
		return -ENOMEM;
	}
	r->nmissing++;
	return 0;
}

int pdi_gather_result_encode(const struct pdi_gather_result *r, struct pdi_wire_writer *w)
{
	if (r->len > UINT32_MAX)
		return -EMSGSIZE;
	pdi_wire_put_u32(w, r->answered);
	pdi_wire_put_u32(w, r->nmissing);
	for (unsigned i = 0; i < r->nmissing; i++) {
		pdi_wire_put_str(w, r->missing[i]);
		pdi_wire_put_str(w, r->missing_why[i]);
	}
	pdi_wire_put_bytes(w, r->payload, (uint32_t)r->len);
	return w->err;
}

int pdi_gather_result_decode(const uint8_t *p, size_t len, struct pdi_gather_result *ret)
{
	struct pdi_gather_result res = {0};
	char node[PDI_GATHER_NAME_MAX + 1], why[PDI_GATHER_WHY_MAX + 1];
	struct pdi_wire_reader r;
	const uint8_t *payload;
	uint32_t n = 0, plen;
	int e;

	pdi_wire_reader_init(&r, p, len);
	res.answered = pdi_wire_get_u32(&r);
	e = get_count(&r, 8, PDI_GATHER_MAX_NODES, &n);
	for (uint32_t i = 0; e == 0 && i < n; i++) {
		e = pdi_wire_get_str(&r, node, sizeof(node));
		if (e == 0)
			e = pdi_wire_get_str(&r, why, sizeof(why));
		if (e == 0)
			e = pdi_gather_result_add_missing(&res, node, why);
	}
	payload = pdi_wire_get_bytes(&r, &plen);
	if (e == 0)
		e = pdi_wire_reader_finish(&r);
	if (e == 0 && res.answered > PDI_GATHER_MAX_NODES)
		e = -EBADMSG;
	if (e == 0 && plen > 0) {
		res.payload = malloc(plen);
		if (!res.payload)
			e = -ENOMEM;
		else
			memcpy(res.payload, payload, plen);
		res.len = plen;
	}
	if (e < 0) {
		pdi_gather_result_done(&res);
		return e;
	}
	*ret = res;
	return 0;
}

/* ---- merging in tree order ---- */

int pdi_gather_acc_init(struct pdi_gather_acc *a, const struct pdi_gather_ops *ops, void *ctx, unsigned nslots)
{
	*a = (struct pdi_gather_acc){.ops = ops, .ctx = ctx, .nslots = nslots};
	a->slots = calloc(nslots ? nslots : 1, sizeof(*a->slots));
	a->filled = calloc(nslots ? nslots : 1, sizeof(*a->filled));
	if (!a->slots || !a->filled) {
		pdi_gather_acc_done(a);
		return -ENOMEM;
	}
	return 0;
}

void pdi_gather_acc_done(struct pdi_gather_acc *a)
{
	for (unsigned i = 0; a->slots && i < a->nslots; i++)
		pdi_gather_result_done(&a->slots[i]);
	free(a->slots);
	free(a->filled);
	pdi_gather_result_done(&a->acc);
	*a = (struct pdi_gather_acc){0};
}

/* S (the next slot in order) into the accumulated result; S is emptied. */
static int absorb(struct pdi_gather_acc *a, struct pdi_gather_result *s)
{
	struct pdi_gather_result *acc = &a->acc;
	struct pdi_wire_writer w = {0};
	int r = 0;

	acc->answered += s->answered;
	for (unsigned i = 0; i < s->nmissing && r == 0; i++)
		r = pdi_gather_result_add_missing(acc, s->missing[i], s->missing_why[i]);
	if (r == 0 && s->len > 0 && !acc->payload) {
		acc->payload = s->payload;
		acc->len = s->len;
		s->payload = NULL;
	} else if (r == 0 && s->len > 0) {
		r = a->ops->merge(a->ctx, acc->payload, acc->len, s->payload, s->len, &w);
		if (r == 0)
			r = w.err;
		if (r == 0) {
			free(acc->payload);
			acc->payload = w.buf;
			acc->len = w.len;
			w = (struct pdi_wire_writer){0};
		}
		pdi_wire_writer_done(&w);
	}
	pdi_gather_result_done(s);
	return r;
}

void pdi_gather_acc_put(struct pdi_gather_acc *a, unsigned i, struct pdi_gather_result *r)
{
	if (i >= a->nslots || a->filled[i]) {
		pdi_gather_result_done(r);
		return;
	}
	a->slots[i] = *r;
	*r = (struct pdi_gather_result){0};
	a->filled[i] = true;
	for (; a->next < a->nslots && a->filled[a->next]; a->next++) {
		int e = absorb(a, &a->slots[a->next]);

		if (e < 0 && !a->err)
			a->err = e;
	}
}

int pdi_gather_acc_finish(struct pdi_gather_acc *a, struct pdi_gather_result *ret)
{
	if (a->err)
		return a->err;
	if (a->next < a->nslots)
		return -EINVAL;
	*ret = a->acc;
	a->acc = (struct pdi_gather_result){0};
	return 0;
}

/* ---- the daemon's side ---- */

int pdi_gather_new(const struct pdi_gather_options *o, const struct pdi_gather_ops *ops, void *ctx,
		   struct pdi_gather **ret)
{
	struct pdi_gather *g;
	int r;

	if (!o->node_name || !o->node_name[0] || strlen(o->node_name) > PDI_GATHER_NAME_MAX || o->fanout < 2 ||
	    o->level_ms == 0)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->o = *o;
	g->ops = ops;
	g->ctx = ctx;
	g->node_name = strdup(o->node_name);
	g->bind_address = o->bind_address && o->bind_address[0] ? strdup(o->bind_address) : NULL;
	g->o.node_name = g->node_name;
	g->o.bind_address = g->bind_address;
	g->o.munge_socket = NULL; /* the caller's string: pdi_auth keeps its own copy */
	if (!g->o.max_body)
		g->o.max_body = PDI_WIRE_DEFAULT_MAX_BODY;
	r = g->node_name ? pdi_auth_new(&(struct pdi_auth_options){.munge_socket = o->munge_socket,
								  .service_uid = o->service_uid,
								  .timeout_ms = o->munge_timeout_ms,
								  .replay_entries = o->replay_entries},
					&g->auth)
			 : -ENOMEM;
	if (r < 0) {
		pdi_gather_free(g);
		return r;
	}
	*ret = g;
	return 0;
}

void pdi_gather_free(struct pdi_gather *g)
{
	if (!g)
		return;
	pdi_auth_free(g->auth);
	free(g->node_name);
	free(g->bind_address);
	free(g);
}

/* BODY in a frame of TYPE whose credential claims OP for JOB.STEP with NONCE, signed before
 * DEADLINE_NS: munged gets the time the gather has left, not only munge_timeout_ms, so that
 * one slow answer of a munged on a busy node does not lose the whole gather (a call that times
 * out marks munged down, and every later child would fail at once). On failure, a negative
 * errno and a one-line reason in WHY. */
static int make_frame(struct pdi_gather *g, uint8_t type, const char *op, uint32_t job, uint32_t step,
		      uint64_t nonce, const struct pdi_wire_writer *body, uint64_t deadline_ns, uint8_t **ret,
		      size_t *ret_len, char *why, size_t whylen)
{
	struct pdi_auth_claim claim = {.job = job, .step = step, .nonce = nonce};
	uint32_t left = ms_until(deadline_ns);
	char *cred = NULL;
	int r;

	r = body->err ? body->err : body->len > UINT32_MAX ? -EMSGSIZE : 0;
	if (r == 0 && left == 0)
		r = -ETIMEDOUT;
	if (r < 0) {
		snprintf(why, whylen, "%s", r == -ETIMEDOUT ? "no time left to sign it" : strerror(-r));
		return r;
	}
	snprintf(claim.op, sizeof(claim.op), "%s", op);
	snprintf(claim.sender, sizeof(claim.sender), "%s", g->node_name);
	r = pdi_auth_sign(g->auth, PDI_AUTH_DEFAULT_TTL, left, &claim, body->buf, body->len, &cred, why, whylen);
	if (r < 0)
		return r;
	r = pdi_wire_encode(type, 0, cred, (uint32_t)strlen(cred), body->buf, (uint32_t)body->len, ret, ret_len);
	if (r < 0)
		snprintf(why, whylen, "%s", strerror(-r));
	free(cred);
	return r;
}

/* A frame's credential checked (peer_auth.h): MUNGE-valid, from the service uid, fresh. */
static int verify_frame(struct pdi_gather *g, const struct pdi_wire_frame *f, struct pdi_auth_claim *ret_claim,
			char *why, size_t whylen)
{
	char cred[PDI_WIRE_MAX_CRED + 1];

	if (pdi_wire_frame_cred(f, cred, sizeof(cred)) < 0) {
		snprintf(why, whylen, "malformed credential");
		return -EBADMSG;
	}
	return pdi_auth_verify(g->auth, cred, f->body, f->body_len, ret_claim, why, whylen);
}

/* Write all of BUF to the non-blocking FD before DEADLINE_NS. */
static int write_all(int fd, const uint8_t *buf, size_t len, uint64_t deadline_ns)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		uint32_t ms = ms_until(deadline_ns);
		if (ms == 0)
			return -ETIMEDOUT;
		if (poll(&(struct pollfd){.fd = fd, .events = POLLOUT}, 1, (int)ms) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* One child of this daemon's position, from connecting to its answer. */
enum child_state { CHILD_CONNECTING, CHILD_SENDING, CHILD_RECEIVING, CHILD_DONE };

struct child {
	unsigned slot;      /* in the accumulator: 1.. (0 is this node) */
	const char *name;
	unsigned *sub;      /* its subtree: indices into the request's nodes, itself first */
	unsigned nsub;
	int fd;
	enum child_state state;
	uint8_t *out;       /* the GATHER frame */
	size_t outlen, outoff;
	uint64_t nonce;     /* of our request's credential: the answer repeats it */
	struct pdi_wire_decoder dec;
};

struct run {
	struct pdi_gather *g;
	const struct pdi_gather_request *q;
	struct pdi_gather_acc acc;
	struct child *children;
	unsigned nchildren, pending;
	uint8_t *buf; /* READ_CHUNK bytes: what a child sent (each run its own: runs are concurrent) */
};

static void child_close(struct child *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->out);
	c->out = NULL;
	pdi_wire_decoder_done(&c->dec);
	c->state = CHILD_DONE;
}

/* C and everything below it are missing for WHY. */
static void child_give_up(struct run *run, struct child *c, const char *why)
{
	struct pdi_gather_result res = {0};
	char below[PDI_GATHER_WHY_MAX + 1];

	if (c->state == CHILD_DONE)
		return;
	log_info("Gather %u.%u: %s is missing: %s", run->q->job, run->q->step, c->name, why);
	snprintf(below, sizeof(below), "not reached: %s above it is missing", c->name);
	(void)pdi_gather_result_add_missing(&res, c->name, why);
	for (unsigned i = 1; i < c->nsub; i++)
		(void)pdi_gather_result_add_missing(&res, run->q->nodes[c->sub[i]], below);
	child_close(c);
	run->pending--;
	pdi_gather_acc_put(&run->acc, c->slot, &res);
}

static void child_give_upf(struct run *run, struct child *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void child_give_upf(struct run *run, struct child *c, const char *fmt, ...)
{
	char why[PDI_GATHER_WHY_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	child_give_up(run, c, why);
}

static void child_give_up_errno(struct run *run, struct child *c, const char *what, int r)
{
	child_give_upf(run, c, "%s: %s", what, strerror(-r));
}

/* The GATHER frame for C: its subtree, the time left until DEADLINE_NS. On failure, a
 * negative errno and a one-line reason in WHY. */
static int child_frame(struct run *run, struct child *c, uint64_t deadline_ns, char *why, size_t whylen)
{
	struct pdi_gather_request cq = *run->q;
	struct pdi_wire_writer w = {0};
	int r;

	cq.nodes = malloc(c->nsub * sizeof(*cq.nodes));
	if (!cq.nodes) {
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (unsigned i = 0; i < c->nsub; i++)
		cq.nodes[i] = run->q->nodes[c->sub[i]];
	cq.nnodes = c->nsub;
	cq.budget_ms = ms_until(deadline_ns);
	r = pdi_gather_request_encode(&cq, &w);
	free(cq.nodes);
	if (r == 0)
		r = pdi_auth_nonce(&c->nonce);
	if (r < 0)
		snprintf(why, whylen, "%s", strerror(-r));
	else
		r = make_frame(run->g, PDI_WIRE_GATHER, "gather", cq.job, cq.step, c->nonce, &w, deadline_ns, &c->out,
			       &c->outlen, why, whylen);
	pdi_wire_writer_done(&w);
	return r;
}

/* A non-blocking connection to NAME's peer port, from our bind address if we have one. */
static int child_connect(struct pdi_gather *g, const char *name, const char **ret_what)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai = NULL, *src = NULL;
	char port[8];
	int fd, r, one = 1;

	snprintf(port, sizeof(port), "%u", (unsigned)g->o.port);
	*ret_what = "cannot resolve the name";
	r = getaddrinfo(name, port, &hints, &ai);
	if (r != 0)
		return r == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	*ret_what = "cannot connect";
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	hints = (struct addrinfo){.ai_family = ai->ai_family, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
	/* answers come back to the address the others know us by */
	if (g->bind_address && getaddrinfo(g->bind_address, NULL, &hints, &src) == 0 &&
	    bind(fd, src->ai_addr, src->ai_addrlen) < 0)
		log_debug("Cannot bind to %s for connecting to %s, ignoring: %m", g->bind_address, name);
	r = connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS ? -errno : 0;
out:
	if (src)
		freeaddrinfo(src);
	freeaddrinfo(ai);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

static void child_start(struct run *run, struct child *c, uint64_t deadline_ns)
{
	char why[PDI_GATHER_WHY_MAX - 32];
	const char *what;
	int r;

	pdi_wire_decoder_init(&c->dec, run->g->o.max_body);
	r = child_frame(run, c, deadline_ns, why, sizeof(why));
	if (r < 0)
		return child_give_upf(run, c, "cannot make the request: %s", why);
	r = c->fd = child_connect(run->g, c->name, &what);
	if (r < 0)
		child_give_up_errno(run, c, what, r);
}

/* The frame F C answered with. */
static void child_answer(struct run *run, struct child *c, const struct pdi_wire_frame *f)
{
	struct pdi_gather_result res = {0};
	struct pdi_auth_claim claim;
	char why[PDI_GATHER_WHY_MAX + 1], msg[PDI_GATHER_WHY_MAX - 16];
	struct pdi_wire_reader rd;
	int r;

	r = verify_frame(run->g, f, &claim, why, sizeof(why));
	if (r < 0)
		return child_give_upf(run, c, "answer refused: %s", why);
	if (claim.nonce != c->nonce || claim.job != run->q->job || claim.step != run->q->step ||
	    strcmp(claim.sender, c->name) != 0)
		return child_give_up(run, c, "its answer is not to our request");
	if (f->type == PDI_WIRE_ERROR) {
		pdi_wire_reader_init(&rd, f->body, f->body_len);
		if (pdi_wire_get_str(&rd, msg, sizeof(msg)) < 0)
			snprintf(msg, sizeof(msg), "(no reason)");
		return child_give_upf(run, c, "refused: %s", msg);
	}
	if (f->type != PDI_WIRE_RESULT || strcmp(claim.op, "result") != 0)
		return child_give_up(run, c, "unexpected answer");
	r = pdi_gather_result_decode(f->body, f->body_len, &res);
	if (r < 0)
		return child_give_up_errno(run, c, "malformed answer", r);
	if (res.answered + res.nmissing != c->nsub) {
		pdi_gather_result_done(&res);
		return child_give_up(run, c, "its answer does not account for its subtree");
	}
	child_close(c);
	run->pending--;
	pdi_gather_acc_put(&run->acc, c->slot, &res);
}

static void child_send(struct run *run, struct child *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0)
			return child_give_up_errno(run, c, "cannot send", -errno);
		c->outoff += (size_t)n;
	}
	free(c->out);
	c->out = NULL;
	c->state = CHILD_RECEIVING;
}

static void child_receive(struct run *run, struct child *c)
{
	struct pdi_wire_frame f;

	for (;;) {
		ssize_t n = recv(c->fd, run->buf, READ_CHUNK, 0);
		int r;

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0)
			return child_give_up_errno(run, c, "connection lost", -errno);
		if (n == 0)
			return child_give_up(run, c, "connection closed before it answered");
		r = pdi_wire_decoder_feed(&c->dec, run->buf, (size_t)n);
		if (r == 0)
			r = pdi_wire_decoder_next(&c->dec, &f);
		if (r < 0)
			return child_give_up_errno(run, c, "bad frame", r);
		if (r > 0)
			return child_answer(run, c, &f);
	}
}

static void child_ready(struct run *run, struct child *c)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (c->state == CHILD_CONNECTING) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err)
			return child_give_up_errno(run, c, "cannot connect", -err);
		c->state = CHILD_SENDING;
	}
	if (c->state == CHILD_SENDING)
		child_send(run, c);
	else if (c->state == CHILD_RECEIVING)
		child_receive(run, c);
}

/* Wait for the children until they all answered or DEADLINE_NS. */
static int collect(struct run *run, uint64_t deadline_ns)
{
	struct pollfd *fds = calloc(run->nchildren ? run->nchildren : 1, sizeof(*fds));
	unsigned *who = calloc(run->nchildren ? run->nchildren : 1, sizeof(*who));
	int r = 0;

	if (!fds || !who) {
		r = -ENOMEM;
		goto out;
	}
	while (run->pending > 0) {
		uint32_t ms = ms_until(deadline_ns);
		nfds_t n = 0;

		if (ms == 0)
			break;
		for (unsigned i = 0; i < run->nchildren; i++) {
			struct child *c = &run->children[i];

			if (c->state == CHILD_DONE)
				continue;
			fds[n] = (struct pollfd){.fd = c->fd, .events = c->state == CHILD_RECEIVING ? POLLIN : POLLOUT};
			who[n++] = i;
		}
		int k = poll(fds, n, (int)ms);
		if (k < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		for (nfds_t i = 0; k > 0 && i < n; i++)
			if (fds[i].revents)
				child_ready(run, &run->children[who[i]]);
	}
out:
	for (unsigned i = 0; i < run->nchildren; i++)
		child_give_up(run, &run->children[i], "no answer before the deadline");
	free(fds);
	free(who);
	return r;
}

static const char *local_why(int r)
{
	switch (r) {
	case -ENOENT: return "no such step on this node";
	case -EACCES:
	case -EPERM: return "permission denied";
	default: return strerror(-r);
	}
}

int pdi_gather_own_part(struct pdi_gather *g, int status, struct pdi_wire_writer *w, struct pdi_gather_result *ret)
{
	struct pdi_gather_result res = {0};
	int r;

	if (status == 0 && w->err)
		status = w->err;
	if (status < 0) {
		r = pdi_gather_result_add_missing(&res, g->node_name, local_why(status));
		if (r < 0)
			return r;
	} else {
		res.answered = 1;
		res.payload = w->len ? w->buf : NULL;
		res.len = w->len;
		if (!w->len)
			free(w->buf);
		*w = (struct pdi_wire_writer){0};
	}
	*ret = res;
	return 0;
}

static void run_done(struct run *run)
{
	for (unsigned i = 0; i < run->nchildren; i++) {
		child_close(&run->children[i]);
		free(run->children[i].sub);
	}
	free(run->children);
	free(run->buf);
	pdi_gather_acc_done(&run->acc);
}

/* Gather Q's subtree (this node at position 0, its part SELF, moved from) until DEADLINE_NS
 * into RET. */
static int subgather(struct pdi_gather *g, const struct pdi_gather_request *q, uint64_t deadline_ns,
		     struct pdi_gather_result *self, struct pdi_gather_result *ret)
{
	struct run run = {.g = g, .q = q};
	unsigned first, *scratch = NULL;
	int r;

	run.nchildren = pdi_gather_children(0, q->nnodes, q->fanout, &first);
	r = pdi_gather_acc_init(&run.acc, g->ops, g->ctx, run.nchildren + 1);
	if (r < 0)
		return r;
	run.children = calloc(run.nchildren ? run.nchildren : 1, sizeof(*run.children));
	run.buf = malloc(READ_CHUNK);
	scratch = malloc(q->nnodes * sizeof(*scratch));
	if (!run.children || !run.buf || !scratch) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < run.nchildren; i++) {
		struct child *c = &run.children[i];

		*c = (struct child){.slot = i + 1, .name = q->nodes[first + i], .fd = -1};
		c->nsub = pdi_gather_subtree(q->nnodes, q->fanout, first + i, scratch);
		c->sub = malloc(c->nsub * sizeof(*c->sub));
		if (!c->sub) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(c->sub, scratch, c->nsub * sizeof(*c->sub));
	}
	run.pending = run.nchildren;
	for (unsigned i = 0; i < run.nchildren; i++)
		child_start(&run, &run.children[i], deadline_ns);
	pdi_gather_acc_put(&run.acc, 0, self);
	r = collect(&run, deadline_ns);
	if (r == 0)
		r = pdi_gather_acc_finish(&run.acc, ret);
out:
	free(scratch);
	run_done(&run);
	return r;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether NODES are valid names, each once: a node listed twice would wait on itself. */
static int check_nodes(const char *const *nodes, unsigned n)
{
	const char **sorted = malloc(n * sizeof(*sorted));
	int r = 0;

	if (!sorted)
		return -ENOMEM;
	for (unsigned i = 0; i < n && r == 0; i++)
		if (!nodes[i] || !nodes[i][0] || strlen(nodes[i]) > PDI_GATHER_NAME_MAX)
			r = -EINVAL;
		else
			sorted[i] = nodes[i];
	if (r == 0)
		qsort(sorted, n, sizeof(*sorted), cmp_name);
	for (unsigned i = 1; i < n && r == 0; i++)
		if (!strcmp(sorted[i - 1], sorted[i]))
			r = -EINVAL;
	free(sorted);
	return r;
}

int pdi_gather_run(struct pdi_gather *g, uint32_t job, uint32_t step, const char *name, uid_t uid,
		   const char *const *nodes, unsigned nnodes, unsigned fanout, unsigned level_ms,
		   struct pdi_gather_result *self, struct pdi_gather_result *ret)
{
	struct pdi_gather_request q = {.job = job, .step = step, .name = (char *)name, .uid = uid,
				       .fanout = fanout ? fanout : g->o.fanout, .level_ms = level_ms ? level_ms : g->o.level_ms,
				       .nodes = (char **)nodes, .nnodes = nnodes};
	uint64_t total;
	int r;

	if (nnodes == 0 || nnodes > PDI_GATHER_MAX_NODES || !nodes[0] || strcmp(nodes[0], g->node_name) != 0 ||
	    q.fanout < 2 || !name || !name[0] || strlen(name) > PDI_GATHER_STEP_MAX)
		return -EINVAL;
	r = check_nodes(nodes, nnodes);
	if (r == 0)
		r = pdi_auth_nonce(&q.nonce);
	if (r < 0)
		return r;
	total = pdi_gather_total_ms(nnodes, q.fanout, q.level_ms);
	return subgather(g, &q, pdi_now_ns() + total * 1000000ull, self, ret);
}

/* The log key of PEER ("address:port"): its address, so that one host's flood is limited
 * as one whatever its source ports. */
static uint64_t peer_key(const char *peer)
{
	const char *colon = strrchr(peer, ':');
	char addr[64];

	snprintf(addr, sizeof(addr), "%.*s", colon ? (int)(colon - peer) : (int)strlen(peer), peer);
	return pdi_hash_str(addr);
}

/* Answer the parent on FD: BODY in a frame of TYPE, bound to its request's CLAIM (which
 * authenticated as the service uid's: never call this for anything else). */
static void answer(struct pdi_gather *g, int fd, const char *peer, uint8_t type, const struct pdi_auth_claim *claim,
		   const struct pdi_wire_writer *body, uint64_t deadline_ns)
{
	char why[PDI_GATHER_WHY_MAX];
	uint8_t *frame = NULL;
	size_t len;
	int r;

	r = make_frame(g, type, type == PDI_WIRE_RESULT ? "result" : "error", claim->job, claim->step, claim->nonce,
		       body, deadline_ns, &frame, &len, why, sizeof(why));
	if (r < 0)
		log_warning_limited(peer_key(peer), "Peer %s: cannot answer its gather of %u.%u: %s", peer, claim->job,
				    claim->step, why);
	else if ((r = write_all(fd, frame, len, deadline_ns)) < 0)
		log_warning_errno_limited(peer_key(peer), r, "Peer %s: cannot answer its gather of %u.%u: %m", peer,
					  claim->job, claim->step);
	free(frame);
}

/* Refuse an authenticated request (CLAIM is the service uid's) with a signed ERROR. */
static void refuse(struct pdi_gather *g, int fd, const char *peer, const struct pdi_auth_claim *claim,
		   const char *why, uint64_t deadline_ns)
{
	struct pdi_wire_writer w = {0};

	log_warning_limited(peer_key(peer), "Peer %s: gather %u.%u refused: %s", peer, claim->job, claim->step, why);
	pdi_wire_put_str(&w, why);
	answer(g, fd, peer, PDI_WIRE_ERROR, claim, &w, deadline_ns);
	pdi_wire_writer_done(&w);
}

/* F's request decoded and checked against CLAIM, its authenticated credential: for this
 * node, as the credential says. */
static int check_request(struct pdi_gather *g, const struct pdi_wire_frame *f, const struct pdi_auth_claim *claim,
			 struct pdi_gather_request *q, char *why, size_t whylen)
{
	int r;

	r = pdi_gather_request_decode(f->body, f->body_len, q);
	if (r < 0) {
		snprintf(why, whylen, "malformed request");
		return r;
	}
	if (strcmp(claim->op, "gather") || claim->job != q->job || claim->step != q->step) {
		snprintf(why, whylen, "the credential is not for this request");
		return -EPERM;
	}
	if (strcmp(q->nodes[0], g->node_name) != 0) {
		snprintf(why, whylen, "the request is for node %s, this is %s", q->nodes[0], g->node_name);
		return -EINVAL;
	}
	return 0;
}

int pdi_gather_check(struct pdi_gather *g, int fd, const char *peer, const struct pdi_wire_frame *f,
		     uint64_t t0_ns, struct pdi_auth_claim *ret_claim, struct pdi_gather_request *ret)
{
	struct pdi_auth_claim claim = {0};
	struct pdi_gather_request q = {0};
	char why[PDI_GATHER_WHY_MAX + 1];
	int r;

	/* who sent it, first: an unauthenticated peer is told nothing, signed or not */
	r = verify_frame(g, f, &claim, why, sizeof(why));
	if (r == 0 && f->type != PDI_WIRE_GATHER) {
		snprintf(why, sizeof(why), "a frame of type %u where a request was expected", f->type);
		r = -EBADMSG;
	}
	if (r < 0) {
		log_warning_limited(peer_key(peer), "Peer %s: request refused, closing without an answer: %s", peer,
				    why);
		return r;
	}
	r = check_request(g, f, &claim, &q, why, sizeof(why));
	if (r < 0) {
		refuse(g, fd, peer, &claim, why, t0_ns + (uint64_t)g->o.level_ms * 1000000ull);
		pdi_gather_request_done(&q);
		return r;
	}
	*ret_claim = claim;
	*ret = q;
	return 0;
}

void pdi_gather_serve(struct pdi_gather *g, int fd, const char *peer, const struct pdi_auth_claim *claim,
		      const struct pdi_gather_request *q, struct pdi_gather_result *self, uint64_t t0_ns)
{
	struct pdi_gather_result res = {0};
	struct pdi_wire_writer w = {0};
	char why[PDI_GATHER_WHY_MAX + 1];
	uint64_t reply_by = t0_ns + (uint64_t)q->budget_ms * 1000000ull;
	int r;

	log_debug("Peer %s: gather %u.%u over %u nodes, %u ms", peer, q->job, q->step, q->nnodes, q->budget_ms);
	r = subgather(g, q, t0_ns + pdi_gather_wait_ms(q->budget_ms, q->level_ms) * 1000000ull, self, &res);
	if (r == 0)
		r = pdi_gather_result_encode(&res, &w);
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot gather: %s", strerror(-r));
		refuse(g, fd, peer, claim, why, reply_by);
	} else {
		answer(g, fd, peer, PDI_WIRE_RESULT, claim, &w, reply_by);
	}
	pdi_wire_writer_done(&w);
	pdi_gather_result_done(&res);
}

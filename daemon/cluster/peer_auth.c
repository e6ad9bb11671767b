/* SPDX-License-Identifier: GPL-2.0-only */
/* peer_auth.c -- signing and checking the peer protocol's MUNGE credentials.
 *
 * The claim travels as the credential's payload, a small versioned record written with the
 * wire writer:
 *
 *	u8 PDI_AUTH_CLAIM_VERSION, str op, u32 job, u32 step, u64 nonce, str sender,
 *	bytes body_sha256 (32)
 *
 * MUNGE encrypts and authenticates it, so nothing in it is trusted before munged said the
 * credential is genuine; it is still parsed as hostile, the key being shared by every
 * node. SHA-256 comes from nettle; the MUNGE calls are munge_call.c's, bounded in time. */
#include <errno.h>
#include <munge.h>
#include <nettle/sha2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clock.h"
#include "munge_call.h"
#include "peer_auth.h"
#include "wire.h"

_Static_assert(sizeof(((struct pdi_auth_claim *)0)->body_sha256) == SHA256_DIGEST_SIZE, "SHA-256 digest size");

/* Seconds a replay entry outlives its credential's TTL: MUNGE counts in whole seconds, so
 * a credential can still decode a moment past encode time + TTL. */
#define REPLAY_SLACK_S 5

struct replay_entry {
	uint64_t nonce;
	time_t expires;
	char op[sizeof(((struct pdi_auth_claim *)0)->op)];
};

struct pdi_auth {
	char *munge_socket;
	uid_t service_uid;
	unsigned max_ttl_s, timeout_ms, retry_ms;
	atomic_uint_fast64_t down_until_ns; /* munged failed: fail fast until then */
	/* the replay cache: a flat array under its lock. Only the service uid's credentials
	 * enter, a few per gather, so a linear scan costs less than the munged round trip
	 * that precedes it */
	pthread_mutex_t lock;
	struct replay_entry *v;
	size_t n, max;
};

static int say(char *why, size_t whylen, int r, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int say(char *why, size_t whylen, int r, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		(void)vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return r;
}

static void body_digest(const void *body, size_t body_len, uint8_t out[SHA256_DIGEST_SIZE])
{
	struct sha256_ctx c;

	sha256_init(&c);
	if (body_len)
		sha256_update(&c, body_len, body);
	sha256_digest(&c, SHA256_DIGEST_SIZE, out);
}

int pdi_auth_nonce(uint64_t *ret)
{
	uint64_t v;
	ssize_t n;

	do
		n = getrandom(&v, sizeof(v), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n != sizeof(v))
		return -EIO;
	*ret = v;
	return 0;
}

/* ---- the claim record ---- */

static int field_ok(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	return n > 0 && n < size;
}

static int claim_encode(const struct pdi_auth_claim *c, struct pdi_wire_writer *w)
{
	if (!field_ok(c->op, sizeof(c->op)) || !field_ok(c->sender, sizeof(c->sender)))
		return -EINVAL;
	pdi_wire_put_u8(w, PDI_AUTH_CLAIM_VERSION);
	pdi_wire_put_str(w, c->op);
	pdi_wire_put_u32(w, c->job);
	pdi_wire_put_u32(w, c->step);
	pdi_wire_put_u64(w, c->nonce);
	pdi_wire_put_str(w, c->sender);
	pdi_wire_put_bytes(w, c->body_sha256, sizeof(c->body_sha256));
	return w->err;
}

static int claim_decode(const void *p, size_t len, struct pdi_auth_claim *ret)
{
	struct pdi_auth_claim c = {0};
	struct pdi_wire_reader r;
	const uint8_t *digest;
	uint32_t n;

	pdi_wire_reader_init(&r, p, len);
	if (pdi_wire_get_u8(&r) != PDI_AUTH_CLAIM_VERSION)
		return -EBADMSG;
	(void)pdi_wire_get_str(&r, c.op, sizeof(c.op));
	c.job = pdi_wire_get_u32(&r);
	c.step = pdi_wire_get_u32(&r);
	c.nonce = pdi_wire_get_u64(&r);
	(void)pdi_wire_get_str(&r, c.sender, sizeof(c.sender));
	digest = pdi_wire_get_bytes(&r, &n);
	if (pdi_wire_reader_finish(&r) < 0 || n != sizeof(c.body_sha256) || !c.op[0] || !c.sender[0])
		return -EBADMSG;
	memcpy(c.body_sha256, digest, n);
	*ret = c;
	return 0;
}

/* ---- MUNGE ---- */

static int munge_errno(munge_err_t e)
{
	switch (e) {
	case EMUNGE_SOCKET:
	case EMUNGE_TIMEOUT:
	case EMUNGE_SNAFU:
		return -EIO;
	case EMUNGE_NO_MEMORY:
		return -ENOMEM;
	case EMUNGE_CRED_EXPIRED:
		return -EKEYEXPIRED;
	case EMUNGE_CRED_REPLAYED:
		return -EALREADY;
	default:
		return -EKEYREJECTED;
	}
}

static const char *munge_what(int r)
{
	switch (r) {
	case -EIO:
		return "munged unreachable";
	case -EKEYEXPIRED:
		return "credential expired";
	case -EALREADY:
		return "credential replayed";
	case -EKEYREJECTED:
		return "credential rejected";
	default:
		return "munge failed";
	}
}

/* Whether munged failed within retry_ms: then fail at once, saying so. */
static int munged_down(struct pdi_auth *a, char *why, size_t whylen)
{
	uint64_t until = atomic_load(&a->down_until_ns), now = pdi_now_ns();

	if (now >= until)
		return 0;
	return say(why, whylen, -EIO, "munged unreachable: it failed less than %u ms ago, not asking again until then",
		   a->retry_ms);
}

/* R from a MUNGE call bounded by TIMEOUT_MS (munge_call.c's errors) or RES's error, with WHY;
 * munged is marked down when it did not answer. */
static int munge_outcome(struct pdi_auth *a, unsigned timeout_ms, int r, const struct pdi_munge_result *res,
			 char *why, size_t whylen)
{
	if (r == -ETIMEDOUT || r == -EBUSY) {
		atomic_store(&a->down_until_ns, pdi_now_ns() + (uint64_t)a->retry_ms * 1000000ull);
		if (r == -EBUSY)
			return say(why, whylen, -EIO, "munged unreachable: %u earlier calls still wait for it",
				   PDI_MUNGE_MAX_STUCK);
		return say(why, whylen, r, "munged did not answer within %u ms", timeout_ms);
	}
	if (r < 0)
		return say(why, whylen, r, "cannot call munged: %s", strerror(-r));
	if (res->e == EMUNGE_SUCCESS)
		return 0;
	r = munge_errno(res->e);
	if (r == -EIO)
		atomic_store(&a->down_until_ns, pdi_now_ns() + (uint64_t)a->retry_ms * 1000000ull);
	return say(why, whylen, r, "%s: %s", munge_what(r), res->detail[0] ? res->detail : munge_strerror(res->e));
}

int pdi_auth_new(const struct pdi_auth_options *o, struct pdi_auth **ret)
{
	size_t entries = o->replay_entries ? o->replay_entries : PDI_AUTH_DEFAULT_REPLAY;
	struct pdi_auth *a;

	if ((o->max_ttl_s && o->max_ttl_s < PDI_AUTH_DEFAULT_TTL) || entries > SIZE_MAX / sizeof(struct replay_entry))
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->service_uid = o->service_uid;
	a->max_ttl_s = o->max_ttl_s ? o->max_ttl_s : PDI_AUTH_MAX_TTL;
	a->timeout_ms = o->timeout_ms ? o->timeout_ms : PDI_AUTH_DEFAULT_TIMEOUT_MS;
	a->retry_ms = o->retry_ms ? o->retry_ms : a->timeout_ms;
	a->max = entries;
	pthread_mutex_init(&a->lock, NULL);
	a->v = calloc(entries, sizeof(*a->v));
	if (!a->v || (o->munge_socket && o->munge_socket[0] && !(a->munge_socket = strdup(o->munge_socket)))) {
		pdi_auth_free(a);
		return -ENOMEM;
	}
	*ret = a;
	return 0;
}

void pdi_auth_free(struct pdi_auth *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	free(a->v);
	free(a->munge_socket);
	free(a);
}

int pdi_auth_sign(struct pdi_auth *a, int ttl_s, unsigned timeout_ms, struct pdi_auth_claim *claim, const void *body,
		  size_t body_len, char **ret_cred, char *why, size_t whylen)
{
	struct pdi_munge_result res = {0};
	struct pdi_wire_writer w = {0};
	int r;

	if (!body && body_len)
		return say(why, whylen, -EINVAL, "no body");
	if (timeout_ms == 0)
		timeout_ms = a->timeout_ms;
	body_digest(body, body_len, claim->body_sha256);
	r = claim_encode(claim, &w);
	if (r < 0)
		r = say(why, whylen, r, "claim not encodable (empty or overlong op or sender)");
	if (r == 0)
		r = munged_down(a, why, whylen);
	if (r == 0)
		r = munge_outcome(a, timeout_ms,
				  pdi_munge_encode(a->munge_socket, ttl_s > 0 ? ttl_s : PDI_AUTH_DEFAULT_TTL, w.buf,
						   (int)w.len, timeout_ms, &res),
				  &res, why, whylen);
	if (r == 0) {
		*ret_cred = res.cred;
		res.cred = NULL;
	}
	pdi_munge_result_done(&res);
	pdi_wire_writer_done(&w);
	return r;
}

/* ---- our replay cache ---- */

static void replay_purge(struct pdi_auth *c, time_t now)
{
	size_t k = 0;

	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].expires >= now)
			c->v[k++] = c->v[i];
	c->n = k;
}

static int replay_seen(const struct pdi_auth *c, const struct pdi_auth_claim *claim)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].nonce == claim->nonce && !strcmp(c->v[i].op, claim->op))
			return 1;
	return 0;
}

/* Refuse a (nonce, op) seen before, else remember it until EXPIRES. Under c->lock. */
static int replay_check_add(struct pdi_auth *c, const struct pdi_auth_claim *claim, time_t expires, char *why,
			    size_t whylen)
{
	struct replay_entry *e;

	if (replay_seen(c, claim))
		return say(why, whylen, -EALREADY, "credential replayed: op \"%s\" with nonce %016llx was seen before",
			   claim->op, (unsigned long long)claim->nonce);
	if (c->n == c->max)
		replay_purge(c, time(NULL));
	if (c->n == c->max)
		return say(why, whylen, -EBUSY, "replay cache full (%zu live credentials), refusing", c->max);
	e = &c->v[c->n++];
	*e = (struct replay_entry){.nonce = claim->nonce, .expires = expires};
	memcpy(e->op, claim->op, sizeof(e->op));
	return 0;
}

int pdi_auth_verify(struct pdi_auth *a, const char *cred, const void *body, size_t body_len,
		    struct pdi_auth_claim *ret_claim, char *why, size_t whylen)
{
	uint8_t digest[SHA256_DIGEST_SIZE];
	struct pdi_munge_result res = {0};
	struct pdi_auth_claim claim;
	int r;

	if (!cred || (!body && body_len))
		return say(why, whylen, -EINVAL, "no credential or body");
	r = munged_down(a, why, whylen);
	if (r < 0)
		return r;
	r = munge_outcome(a, a->timeout_ms, pdi_munge_decode(a->munge_socket, cred, a->timeout_ms, &res), &res, why,
			  whylen);
	if (r < 0)
		goto out;
	/* whoever else made it, it goes no further: nothing of theirs is parsed or kept */
	if (res.uid != a->service_uid) {
		r = say(why, whylen, -EPERM, "credential of uid %u, not of the service uid %u", (unsigned)res.uid,
			(unsigned)a->service_uid);
		goto out;
	}
	if (res.ttl < 0 || (unsigned)res.ttl > a->max_ttl_s) {
		r = say(why, whylen, -EKEYREJECTED, "credential valid for %d s, over the cap of %u s", res.ttl,
			a->max_ttl_s);
		goto out;
	}
	r = claim_decode(res.payload, res.plen > 0 ? (size_t)res.plen : 0, &claim);
	if (r < 0) {
		r = say(why, whylen, r, "claim malformed (%d payload bytes)", res.plen);
		goto out;
	}
	body_digest(body, body_len, digest);
	if (memcmp(digest, claim.body_sha256, sizeof(digest))) {
		r = say(why, whylen, -EBADMSG, "body does not match the credential (op \"%s\" from %s)", claim.op,
			claim.sender);
		goto out;
	}
	pthread_mutex_lock(&a->lock);
	r = replay_check_add(a, &claim, res.encoded + res.ttl + REPLAY_SLACK_S, why, whylen);
	pthread_mutex_unlock(&a->lock);
	if (r == 0 && ret_claim)
		*ret_claim = claim;
out:
	pdi_munge_result_done(&res);
	return r;
}

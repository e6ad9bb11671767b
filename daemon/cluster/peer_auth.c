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
 * node. SHA-256 comes from nettle. */
#include <errno.h>
#include <munge.h>
#include <nettle/sha2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "peer_auth.h"
#include "wire.h"

_Static_assert(sizeof(((struct pdi_auth_claim *)0)->body_sha256) == SHA256_DIGEST_SIZE, "SHA-256 digest size");

/* Seconds a replay entry outlives its credential's TTL: MUNGE counts in whole seconds, so
 * a credential can still decode a moment past encode time + TTL. */
#define REPLAY_SLACK_S 5

struct replay_entry {
	uint64_t nonce;
	time_t expires;
	uid_t uid;
	char op[sizeof(((struct pdi_auth_claim *)0)->op)];
};

/* A flat array: peer requests come a few per step, so a linear scan of a few thousand
 * entries costs less than the munged round trip that precedes it. */
struct pdi_auth_replay {
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

static int munge_fail(munge_ctx_t ctx, munge_err_t e, char *why, size_t whylen)
{
	const char *detail = ctx ? munge_ctx_strerror(ctx) : NULL;
	int r = munge_errno(e);

	return say(why, whylen, r, "%s: %s", munge_what(r), detail ? detail : munge_strerror(e));
}

static int ctx_new(const char *munge_socket, int ttl_s, munge_ctx_t *ret, char *why, size_t whylen)
{
	munge_ctx_t ctx = munge_ctx_create();
	munge_err_t e = EMUNGE_SUCCESS;

	if (!ctx)
		return say(why, whylen, -ENOMEM, "munge context: out of memory");
	if (munge_socket)
		e = munge_ctx_set(ctx, MUNGE_OPT_SOCKET, munge_socket);
	if (e == EMUNGE_SUCCESS && ttl_s > 0)
		e = munge_ctx_set(ctx, MUNGE_OPT_TTL, ttl_s);
	if (e != EMUNGE_SUCCESS) {
		int r = munge_fail(ctx, e, why, whylen);

		munge_ctx_destroy(ctx);
		return r;
	}
	*ret = ctx;
	return 0;
}

int pdi_auth_sign(const char *munge_socket, int ttl_s, struct pdi_auth_claim *claim, const void *body, size_t body_len,
		  char **ret_cred)
{
	struct pdi_wire_writer w = {0};
	munge_ctx_t ctx = NULL;
	char *cred = NULL;
	munge_err_t e;
	int r;

	if (!body && body_len)
		return -EINVAL;
	body_digest(body, body_len, claim->body_sha256);
	r = claim_encode(claim, &w);
	if (r < 0)
		goto out;
	r = ctx_new(munge_socket, ttl_s > 0 ? ttl_s : PDI_AUTH_DEFAULT_TTL, &ctx, NULL, 0);
	if (r < 0)
		goto out;
	e = munge_encode(&cred, ctx, w.buf, (int)w.len);
	if (e != EMUNGE_SUCCESS) {
		r = munge_errno(e);
		goto out;
	}
	*ret_cred = cred;
	cred = NULL;
out:
	free(cred);
	if (ctx)
		munge_ctx_destroy(ctx);
	pdi_wire_writer_done(&w);
	return r;
}

/* When MUNGE itself will call the credential expired: past that, no replay can succeed
 * and the entry may go. */
static int cred_expiry(munge_ctx_t ctx, time_t *ret)
{
	time_t encoded;
	int ttl;

	if (munge_ctx_get(ctx, MUNGE_OPT_ENCODE_TIME, &encoded) != EMUNGE_SUCCESS ||
	    munge_ctx_get(ctx, MUNGE_OPT_TTL, &ttl) != EMUNGE_SUCCESS || ttl < 0)
		return -EKEYREJECTED;
	*ret = encoded + ttl + REPLAY_SLACK_S;
	return 0;
}

/* ---- our replay cache ---- */

int pdi_auth_replay_new(size_t max_entries, struct pdi_auth_replay **ret)
{
	struct pdi_auth_replay *c;

	if (!max_entries || max_entries > SIZE_MAX / sizeof(struct replay_entry))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->v = calloc(max_entries, sizeof(*c->v));
	if (!c->v) {
		free(c);
		return -ENOMEM;
	}
	c->max = max_entries;
	*ret = c;
	return 0;
}

void pdi_auth_replay_free(struct pdi_auth_replay *replay)
{
	if (!replay)
		return;
	free(replay->v);
	free(replay);
}

static void replay_purge(struct pdi_auth_replay *c, time_t now)
{
	size_t k = 0;

	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].expires >= now)
			c->v[k++] = c->v[i];
	c->n = k;
}

static int replay_seen(const struct pdi_auth_replay *c, uid_t uid, const struct pdi_auth_claim *claim)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].nonce == claim->nonce && c->v[i].uid == uid && !strcmp(c->v[i].op, claim->op))
			return 1;
	return 0;
}

/* Refuse a (uid, nonce, op) seen before, else remember it until EXPIRES. */
static int replay_check_add(struct pdi_auth_replay *c, uid_t uid, const struct pdi_auth_claim *claim, time_t expires,
			    char *why, size_t whylen)
{
	struct replay_entry *e;

	if (replay_seen(c, uid, claim))
		return say(why, whylen, -EALREADY, "credential replayed: uid %u already sent op \"%s\" with nonce %016llx",
			   (unsigned)uid, claim->op, (unsigned long long)claim->nonce);
	if (c->n == c->max)
		replay_purge(c, time(NULL));
	if (c->n == c->max)
		return say(why, whylen, -EBUSY, "replay cache full (%zu live credentials), refusing", c->max);
	e = &c->v[c->n++];
	*e = (struct replay_entry){.nonce = claim->nonce, .expires = expires, .uid = uid};
	memcpy(e->op, claim->op, sizeof(e->op));
	return 0;
}

int pdi_auth_verify(const char *munge_socket, struct pdi_auth_replay *replay, const char *cred, const void *body,
		    size_t body_len, struct pdi_auth_claim *ret_claim, uid_t *ret_uid, gid_t *ret_gid, char *why,
		    size_t whylen)
{
	uint8_t digest[SHA256_DIGEST_SIZE];
	struct pdi_auth_claim claim;
	munge_ctx_t ctx = NULL;
	void *payload = NULL;
	time_t expires;
	int plen = 0, r;
	munge_err_t e;
	uid_t uid;
	gid_t gid;

	if (!cred || (!body && body_len))
		return say(why, whylen, -EINVAL, "no credential or body");
	r = ctx_new(munge_socket, 0, &ctx, why, whylen);
	if (r < 0)
		return r;
	e = munge_decode(cred, ctx, &payload, &plen, &uid, &gid);
	if (e != EMUNGE_SUCCESS) {
		r = munge_fail(ctx, e, why, whylen);
		goto out;
	}
	r = claim_decode(payload, plen > 0 ? (size_t)plen : 0, &claim);
	if (r < 0) {
		r = say(why, whylen, r, "claim malformed (%d payload bytes from uid %u)", plen, (unsigned)uid);
		goto out;
	}
	body_digest(body, body_len, digest);
	if (memcmp(digest, claim.body_sha256, sizeof(digest))) {
		r = say(why, whylen, -EBADMSG, "body does not match the credential (op \"%s\" from %s, uid %u)", claim.op,
			claim.sender, (unsigned)uid);
		goto out;
	}
	r = cred_expiry(ctx, &expires);
	if (r < 0) {
		r = say(why, whylen, r, "credential rejected: munge gave no encode time or TTL");
		goto out;
	}
	if (replay) {
		r = replay_check_add(replay, uid, &claim, expires, why, whylen);
		if (r < 0)
			goto out;
	}
	if (ret_claim)
		*ret_claim = claim;
	if (ret_uid)
		*ret_uid = uid;
	if (ret_gid)
		*ret_gid = gid;
out:
	free(payload);
	munge_ctx_destroy(ctx);
	return r;
}

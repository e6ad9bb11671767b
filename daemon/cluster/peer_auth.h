/* SPDX-License-Identifier: GPL-2.0-only */
/* peer_auth.h -- MUNGE credentials for the peer protocol: who sent a frame, for what.
 *
 * Every request and every reply carries a credential whose payload is a claim: the
 * operation, the job and step, a nonce and the sending node, and the SHA-256 of the frame's
 * body. MUNGE vouches for the uid of the process that made it, that it is fresh (TTL) and
 * that it is decoded once; our own replay cache also refuses a (nonce, op) seen before, even
 * after munged restarted and forgot its cache.
 *
 * Only the service uid (the uid pdimond runs as) speaks this protocol, and any user of the
 * cluster can make a genuine credential, so the order of the checks is the defence:
 *   1. munged decodes it (bounded in time, see below);
 *   2. its uid must be the service uid: any other user's credential is refused here, before
 *      it costs anything more, and never enters the replay cache;
 *   3. its TTL must not exceed max_ttl_s: the cache then holds each entry at most that long,
 *      so even the service uid cannot pin it;
 *   4. the claim parses and its digest matches the body;
 *   5. the (nonce, op) is not in the replay cache, and enters it until the credential expires.
 * A full cache (max_entries live credentials of the service uid within max_ttl_s) refuses
 * rather than forget one.
 *
 * MUNGE calls are bounded in time: libmunge has no timeout of its own and retries for
 * seconds while munged is dead or stopped, so each call runs on a short-lived thread and
 * the caller waits at most timeout_ms for it (-ETIMEDOUT; munge_call.c). After a call found
 * munged unreachable or silent, calls fail at once (-EIO) for retry_ms before one tries
 * again: a dead munged costs the caller at most timeout_ms per retry_ms, not seconds per
 * frame. Thread-safe: one struct pdi_auth may be used from several threads at once. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PDI_AUTH_CLAIM_VERSION 1
#define PDI_AUTH_DEFAULT_TTL 60          /* seconds: a gather outliving this is already missing */
#define PDI_AUTH_MAX_TTL 120             /* seconds: longer-lived credentials are refused */
#define PDI_AUTH_DEFAULT_TIMEOUT_MS 1000 /* a MUNGE call (a healthy munged answers in ~1 ms) */
#define PDI_AUTH_DEFAULT_REPLAY 65536    /* replay cache entries */

struct pdi_auth_claim {
	char op[16];             /* "gather", "result", ...: NUL-terminated, not empty */
	uint32_t job, step;
	uint64_t nonce;          /* random per request; a reply repeats its request's nonce */
	char sender[64];         /* node name, NUL-terminated, not empty */
	uint8_t body_sha256[32]; /* binds the frame body to the credential */
};

struct pdi_auth_options {
	const char *munge_socket; /* NULL or "": munged's default socket */
	uid_t service_uid;        /* the only uid whose credentials verify */
	unsigned max_ttl_s;       /* 0: PDI_AUTH_MAX_TTL */
	unsigned timeout_ms;      /* per MUNGE call; 0: PDI_AUTH_DEFAULT_TIMEOUT_MS */
	unsigned retry_ms;        /* fail fast this long after munged failed; 0: timeout_ms */
	size_t replay_entries;    /* 0: PDI_AUTH_DEFAULT_REPLAY */
};

struct pdi_auth;

/* 0, -EINVAL (a max_ttl_s below PDI_AUTH_DEFAULT_TTL), -ENOMEM. */
int pdi_auth_new(const struct pdi_auth_options *o, struct pdi_auth **ret);
/* NULL ok. Abandoned MUNGE calls still running finish on their own. */
void pdi_auth_free(struct pdi_auth *a);

/* A random nonce (getrandom). 0 or a negative errno. */
int pdi_auth_nonce(uint64_t *ret);

/* Encode a MUNGE credential valid TTL_S seconds (<= 0: PDI_AUTH_DEFAULT_TTL) whose payload
 * is CLAIM with its body_sha256 filled in from BODY, waiting at most TIMEOUT_MS for munged (0:
 * the bound of A's options; a caller with a deadline of its own passes the time left, so that a
 * munged slowed by a busy node still serves it). *RET_CRED is a NUL-terminated string, free()
 * it. 0; or, with a one-line reason in WHY (WHYLEN bytes; WHY may be NULL): -EINVAL (empty or
 * overlong op or sender); -EIO (munged unreachable, or failed recently); -ETIMEDOUT (munged did
 * not answer in time); -EKEYREJECTED (munged refused); -ENOMEM. */
int pdi_auth_sign(struct pdi_auth *a, int ttl_s, unsigned timeout_ms, struct pdi_auth_claim *claim, const void *body,
		  size_t body_len, char **ret_cred, char *why, size_t whylen);

/* Check CRED for BODY in the order above; on success fill *RET_CLAIM (may be NULL; not
 * touched on failure). On failure a negative errno and a one-line reason in WHY (WHYLEN
 * bytes): -EPERM (a genuine credential of another uid), -EKEYREJECTED (invalid, forged, or
 * TTL over the cap), -EKEYEXPIRED, -EALREADY (replayed), -EBADMSG (claim malformed or body
 * digest mismatch), -EIO (munged unreachable, or failed recently), -ETIMEDOUT, -EBUSY (the
 * replay cache is full of live entries), -EINVAL, -ENOMEM. */
int pdi_auth_verify(struct pdi_auth *a, const char *cred, const void *body, size_t body_len,
		    struct pdi_auth_claim *ret_claim, char *why, size_t whylen);

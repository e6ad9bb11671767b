/* SPDX-License-Identifier: GPL-2.0-only */
/* peer_auth.h -- MUNGE credentials for the peer protocol: who sent a frame, for what.
 *
 * Every request and every reply carries a credential whose payload is a claim: the
 * operation, the job and step, a nonce and the sending node, and the SHA-256 of the frame's
 * body. MUNGE vouches for the uid and gid of the process that made it, that it is fresh
 * (TTL) and that it is decoded once; our own replay cache also refuses a (uid, nonce, op)
 * seen before, even after munged restarted and forgot its cache.
 *
 * Authorization is the caller's, on the uid pdi_auth_verify() returns: daemon-to-daemon
 * traffic must come from the service uid (root, the uid pdimond runs as); a user-initiated
 * request from the step's owner or an admin. A reply must repeat its request's job, step
 * and nonce: compare the returned claim with the one that was sent.
 *
 * Both calls block on a round trip to munged (about a millisecond); while munged is down
 * but its socket file remains, libmunge retries for about 2 s before -EIO. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PDI_AUTH_CLAIM_VERSION 1
#define PDI_AUTH_DEFAULT_TTL 60 /* seconds: a gather outliving this is already missing */

struct pdi_auth_claim {
	char op[16];             /* "gather", "result", ...: NUL-terminated, not empty */
	uint32_t job, step;
	uint64_t nonce;          /* random per request; a reply repeats its request's nonce */
	char sender[64];         /* node name, NUL-terminated, not empty */
	uint8_t body_sha256[32]; /* binds the frame body to the credential */
};

/* A random nonce (getrandom). 0 or a negative errno. */
int pdi_auth_nonce(uint64_t *ret);

/* Encode a MUNGE credential (via MUNGE_SOCKET, NULL: munged's default socket; valid TTL_S
 * seconds, <= 0: PDI_AUTH_DEFAULT_TTL) whose payload is CLAIM with its body_sha256 filled
 * in from BODY. *RET_CRED is a NUL-terminated string, free() it. 0; -EINVAL (empty or
 * overlong op or sender); -EIO (munged unreachable); -EKEYREJECTED (munged refused);
 * -ENOMEM. */
int pdi_auth_sign(const char *munge_socket, int ttl_s, struct pdi_auth_claim *claim, const void *body, size_t body_len,
		  char **ret_cred);

/* A bounded cache of the (uid, nonce, op) accepted, each kept until its credential expires. */
struct pdi_auth_replay;

/* 0, -EINVAL (MAX_ENTRIES 0), -ENOMEM. */
int pdi_auth_replay_new(size_t max_entries, struct pdi_auth_replay **ret);
void pdi_auth_replay_free(struct pdi_auth_replay *replay);

/* Decode CRED through munged (valid, not expired, not replayed by MUNGE), parse its claim,
 * check BODY against the claim's digest and against REPLAY (NULL: MUNGE's cache only), then
 * remember it there and fill *RET_CLAIM, *RET_UID and *RET_GID (any may be NULL; none is
 * touched on failure). On failure a negative errno and a one-line reason in WHY (WHYLEN
 * bytes): -EKEYREJECTED (invalid or forged), -EKEYEXPIRED (expired), -EALREADY (replayed),
 * -EBADMSG (claim malformed or body digest mismatch), -EIO (munged unreachable), -EBUSY
 * (the replay cache is full of live entries: refused rather than forget one), -ENOMEM. */
int pdi_auth_verify(const char *munge_socket, struct pdi_auth_replay *replay, const char *cred, const void *body,
		    size_t body_len, struct pdi_auth_claim *ret_claim, uid_t *ret_uid, gid_t *ret_gid, char *why,
		    size_t whylen);

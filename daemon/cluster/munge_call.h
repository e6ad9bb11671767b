/* SPDX-License-Identifier: GPL-2.0-only */
/* munge_call.h -- one MUNGE encode or decode, bounded in time.
 *
 * libmunge blocks with no timeout of its own: it retries a refused connection, a lost
 * reply and a silent munged for seconds. A call here runs on a thread of its own and the
 * caller waits at most TIMEOUT_MS; a call that outlives it is abandoned (it finishes and
 * frees itself later) and at most PDI_MUNGE_MAX_STUCK such calls exist at once in the
 * process: past that, calls are refused at once rather than pile up threads. */
#pragma once

#include <munge.h>
#include <sys/types.h>
#include <time.h>

#define PDI_MUNGE_MAX_STUCK 4

struct pdi_munge_result {
	munge_err_t e;      /* what libmunge said */
	char detail[192];   /* its message when e != EMUNGE_SUCCESS */
	char *cred;         /* encode: the credential (free it) */
	void *payload;      /* decode: the payload (free it) and its length */
	int plen;
	uid_t uid;          /* decode: who made the credential */
	gid_t gid;
	time_t encoded;     /* decode: when, and for how long it is valid */
	int ttl;
};

/* Encode IN (INLEN bytes) valid TTL_S seconds through SOCKET (NULL: munged's default) into
 * RET. 0 when munged answered (RET->e may still be an error: see munge_strerror), or without
 * touching RET: -ETIMEDOUT (no answer within TIMEOUT_MS), -EBUSY (PDI_MUNGE_MAX_STUCK calls
 * abandoned already wait for munged), -ENOMEM, or pthread_create's error. */
int pdi_munge_encode(const char *socket, int ttl_s, const void *in, int inlen, unsigned timeout_ms,
		     struct pdi_munge_result *ret);
/* Decode CRED; the same contract. */
int pdi_munge_decode(const char *socket, const char *cred, unsigned timeout_ms, struct pdi_munge_result *ret);
/* Free what a result holds. */
void pdi_munge_result_done(struct pdi_munge_result *r);

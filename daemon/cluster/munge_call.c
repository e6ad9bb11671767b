/* SPDX-License-Identifier: GPL-2.0-only */
/* munge_call.c -- a MUNGE call on a thread of its own, waited for with a deadline.
 *
 * The call's state is shared by the caller and the thread and freed by whichever lets go
 * last: the caller when the thread finished in time, the thread when the caller gave up. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "munge_call.h"

struct call {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done, abandoned;
	/* in */
	char *socket, *cred_in;
	void *in;
	int inlen, ttl_s;
	bool encode;
	/* out */
	struct pdi_munge_result res;
};

static atomic_uint stuck; /* abandoned calls not finished yet, in the whole process */

static void call_free(struct call *c)
{
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c->socket);
	free(c->cred_in);
	free(c->in);
	pdi_munge_result_done(&c->res);
	free(c);
}

static void run(struct call *c)
{
	struct pdi_munge_result *r = &c->res;
	munge_ctx_t ctx = munge_ctx_create();
	const char *msg;

	if (!ctx) {
		r->e = EMUNGE_NO_MEMORY;
		return;
	}
	r->e = c->socket ? munge_ctx_set(ctx, MUNGE_OPT_SOCKET, c->socket) : EMUNGE_SUCCESS;
	if (r->e == EMUNGE_SUCCESS && c->encode)
		r->e = munge_ctx_set(ctx, MUNGE_OPT_TTL, c->ttl_s);
	if (r->e == EMUNGE_SUCCESS && c->encode)
		r->e = munge_encode(&r->cred, ctx, c->in, c->inlen);
	else if (r->e == EMUNGE_SUCCESS)
		r->e = munge_decode(c->cred_in, ctx, &r->payload, &r->plen, &r->uid, &r->gid);
	if (r->e == EMUNGE_SUCCESS && !c->encode &&
	    (munge_ctx_get(ctx, MUNGE_OPT_ENCODE_TIME, &r->encoded) != EMUNGE_SUCCESS ||
	     munge_ctx_get(ctx, MUNGE_OPT_TTL, &r->ttl) != EMUNGE_SUCCESS))
		r->e = EMUNGE_CRED_INVALID;
	if (r->e != EMUNGE_SUCCESS) {
		msg = munge_ctx_strerror(ctx);
		snprintf(r->detail, sizeof(r->detail), "%s", msg ? msg : munge_strerror(r->e));
	}
	munge_ctx_destroy(ctx);
}

static void *thread_main(void *arg)
{
	struct call *c = arg;
	bool abandoned;

	run(c);
	pthread_mutex_lock(&c->lock);
	c->done = true;
	abandoned = c->abandoned;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	if (abandoned) {
		call_free(c);
		atomic_fetch_sub(&stuck, 1);
	}
	return NULL;
}

static struct timespec deadline_after(unsigned ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* Run C on its thread and wait until TIMEOUT_MS; C is the callee's from here on. */
static int call_run(struct call *c, unsigned timeout_ms, struct pdi_munge_result *ret)
{
	struct timespec until = deadline_after(timeout_ms);
	pthread_attr_t ta;
	sigset_t all, old;
	pthread_t t;
	int r = 0;

	if (atomic_load(&stuck) >= PDI_MUNGE_MAX_STUCK) {
		call_free(c);
		return -EBUSY;
	}
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&ta, 256 << 10); /* libmunge needs little */
	/* signals stay with the daemon's loop (signalfd), never with this thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&t, &ta, thread_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&ta);
	if (r < 0) {
		call_free(c);
		return r;
	}
	pthread_mutex_lock(&c->lock);
	while (!c->done && r == 0) {
		int e = pthread_cond_timedwait(&c->cond, &c->lock, &until);

		if (e == ETIMEDOUT && !c->done)
			r = -ETIMEDOUT;
	}
	if (r < 0) {
		c->abandoned = true;
		atomic_fetch_add(&stuck, 1);
		pthread_mutex_unlock(&c->lock);
		return r;
	}
	pthread_mutex_unlock(&c->lock);
	*ret = c->res;
	c->res = (struct pdi_munge_result){0};
	call_free(c);
	return 0;
}

static struct call *call_new(const char *socket)
{
	struct call *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;

	if (!c)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (socket && !(c->socket = strdup(socket))) {
		call_free(c);
		return NULL;
	}
	return c;
}

int pdi_munge_encode(const char *socket, int ttl_s, const void *in, int inlen, unsigned timeout_ms,
		     struct pdi_munge_result *ret)
{
	struct call *c = call_new(socket);

	if (!c)
		return -ENOMEM;
	c->encode = true;
	c->ttl_s = ttl_s;
	c->inlen = inlen;
	if (inlen > 0 && !(c->in = malloc((size_t)inlen))) {
		call_free(c);
		return -ENOMEM;
	}
	if (inlen > 0)
		memcpy(c->in, in, (size_t)inlen);
	return call_run(c, timeout_ms, ret);
}

int pdi_munge_decode(const char *socket, const char *cred, unsigned timeout_ms, struct pdi_munge_result *ret)
{
	struct call *c = call_new(socket);

	if (!c)
		return -ENOMEM;
	if (!(c->cred_in = strdup(cred))) {
		call_free(c);
		return -ENOMEM;
	}
	return call_run(c, timeout_ms, ret);
}

void pdi_munge_result_done(struct pdi_munge_result *r)
{
	free(r->cred);
	free(r->payload);
	*r = (struct pdi_munge_result){0};
}

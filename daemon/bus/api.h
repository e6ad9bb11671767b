/* SPDX-License-Identifier: GPL-2.0-only */
/* api.h -- pdimond's operations, independent of the transport that carries them. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct pdi_caller;
struct pdi_daemon;

/* ROOT's tree is no longer watched: its processes that reached MPI_Init have joined, and its
 * step ends if that was all it waited for. While a process of the tree is still being attached
 * (probe/ahead_attach.h) the watch stays, and goes when that is done (d->up->unwatch). */
void pdi_unwatch(struct pdi_daemon *d, pid_t root);

/* status 0 and the answer, or a negative errno and a one-line message; text is malloc'd.
 * Status PDI_REPLY_LATER: no answer yet, it goes to the pdi_later the call was given. */
struct pdi_reply {
	int status;
	char *text;
};

#define PDI_REPLY_LATER 1

/* How an answer that needs slow work (made on a worker) reaches its caller: ANSWER(CTX, ...)
 * on the loop, exactly once, taking REP's text and SUMMARY (GetReport's second string; NULL
 * for the others and on failure). */
struct pdi_later {
	void (*answer)(void *ctx, struct pdi_reply rep, char *summary);
	void *ctx;
};

struct pdi_reply pdi_api_status(struct pdi_daemon *d, const struct pdi_caller *c, bool json);
/* ALL: the stored steps of earlier daemons too. */
struct pdi_reply pdi_api_steps(struct pdi_daemon *d, const struct pdi_caller *c, bool json, bool all);
struct pdi_reply pdi_api_show(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
			      const char *format);
struct pdi_reply pdi_api_attach(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				const pid_t *pids, unsigned n);
struct pdi_reply pdi_api_watch(struct pdi_daemon *d, const struct pdi_caller *c, const char *step, pid_t pid);
/* Answered LATER when the step has ended with it: once its end is stored. */
struct pdi_reply pdi_api_unwatch(struct pdi_daemon *d, const struct pdi_caller *c, pid_t pid,
				 const struct pdi_later *later);
/* OPTIONS: comma-separated "phases=auto|pcontrol" (what --pdi-monitor passed on). */
struct pdi_reply pdi_api_register_task(struct pdi_daemon *d, const struct pdi_caller *c, uint32_t job,
				       uint32_t step, uint32_t rank, pid_t pid, uid_t uid, const char *options);
/* The step's report: JSON in text, the few-line verdict in *ret_summary; or LATER. */
struct pdi_reply pdi_api_report(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				char **ret_summary, const struct pdi_later *later);
/* The step's analysis in FORMAT: json (the report's document), text or dot; mostly LATER. */
struct pdi_reply pdi_api_analyze(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				 const char *format, const struct pdi_later *later);
/* `pdimon trends`: how PROGRAM's per-site calls, bytes and time grow across the stored runs
 * C may read, in FORMAT: json, text or svg. From the site store when there is one (and LATER
 * is given: the answer then comes through it, and the reply is PDI_REPLY_LATER), else from
 * the local store. */
struct pdi_reply pdi_api_trends(struct pdi_daemon *d, const struct pdi_caller *c, const char *program,
				const char *format, const struct pdi_later *later);
struct pdi_reply pdi_api_end_step(struct pdi_daemon *d, const struct pdi_caller *c, uint32_t job, uint32_t step);

/* SPDX-License-Identifier: GPL-2.0-only */
/* api.h -- pdimond's operations, independent of the transport that carries them. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct pdi_daemon;

struct pdi_caller {
	uid_t uid;
	bool admin; /* root, the SlurmUser or a member of the admin group: reads every step */
};

/* Who UID is to pdimond: an admin (root, the SlurmUser, the admin group) reads every step. */
struct pdi_caller pdi_caller_of(struct pdi_daemon *d, uid_t uid);
struct pdi_step;
bool pdi_may_read(const struct pdi_caller *c, const struct pdi_step *s);
/* The step called NAME, in memory or brought back from the store; NULL when none. */
struct pdi_step *pdi_api_find_step(struct pdi_daemon *d, const char *name);

/* status 0 and the answer, or a negative errno and a one-line message; text is malloc'd. */
struct pdi_reply {
	int status;
	char *text;
};

struct pdi_reply pdi_api_status(struct pdi_daemon *d, const struct pdi_caller *c, bool json);
/* ALL: the stored steps of earlier daemons too. */
struct pdi_reply pdi_api_steps(struct pdi_daemon *d, const struct pdi_caller *c, bool json, bool all);
struct pdi_reply pdi_api_show(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
			      const char *format);
struct pdi_reply pdi_api_attach(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				const pid_t *pids, unsigned n);
struct pdi_reply pdi_api_watch(struct pdi_daemon *d, const struct pdi_caller *c, const char *step, pid_t pid);
struct pdi_reply pdi_api_unwatch(struct pdi_daemon *d, const struct pdi_caller *c, pid_t pid);
/* OPTIONS: comma-separated "phases=auto|pcontrol" (what --pdi-monitor passed on). */
struct pdi_reply pdi_api_register_task(struct pdi_daemon *d, const struct pdi_caller *c, uint32_t job,
				       uint32_t step, uint32_t rank, pid_t pid, uid_t uid, const char *options);
/* The step's report: JSON in text, the few-line verdict in *ret_summary. */
struct pdi_reply pdi_api_report(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				char **ret_summary);
/* The step's analysis in FORMAT: json (the report's document), text or dot. */
struct pdi_reply pdi_api_analyze(struct pdi_daemon *d, const struct pdi_caller *c, const char *step,
				 const char *format);
/* A reply's status when the answer comes later, through the callback the call was given. */
#define PDI_REPLY_LATER 1

/* `pdimon trends`: how PROGRAM's per-site calls, bytes and time grow across the stored runs
 * C may read, in FORMAT: json, text or svg. From the site store when there is one (and LATER
 * is given: the answer then comes through LATER(CTX, status, text) on the loop, and the reply's
 * status is PDI_REPLY_LATER), else from the local store. */
struct pdi_reply pdi_api_trends(struct pdi_daemon *d, const struct pdi_caller *c, const char *program,
				const char *format, void (*later)(void *ctx, int status, const char *text), void *ctx);
struct pdi_reply pdi_api_end_step(struct pdi_daemon *d, const struct pdi_caller *c, uint32_t job, uint32_t step);

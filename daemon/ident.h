/* SPDX-License-Identifier: GPL-2.0-only */
/* ident.h -- a process pinned so that a reused pid cannot stand in for it: a pidfd while it
 * runs, and (boot id, pid, start time) to recognise it after a restart of pdimond. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define PDI_BOOT_ID_LEN 36 /* as /proc/sys/kernel/random/boot_id spells it */

struct pdi_ident {
	pid_t pid;
	int pidfd;            /* -1 once released */
	uint64_t start_ticks; /* start time in clock ticks after boot (/proc/PID/stat field 22) */
	uid_t uid, euid;      /* real and effective, when pinned */
	pid_t ppid;           /* the parent, when pinned */
};

/* Pin PID: open its pidfd, then read what /proc says of it, then check the pidfd still names a
 * live process, so that what was read is of that process and not of a successor. -ESRCH if it
 * is gone (or a zombie). */
int pdi_ident_pin(pid_t pid, struct pdi_ident *ret);
/* Close the pidfd; NULL and released identities ok. */
void pdi_ident_release(struct pdi_ident *id);

/* Does the pinned process still run? */
bool pdi_ident_alive(const struct pdi_ident *id);
/* Has the process of PIDFD exited (its pidfd readable: a zombie or reaped, its memory gone)?
 * Never blocks; false for -1. */
bool pdi_pidfd_exited(int pidfd);
/* Signal the pinned process and no other: -ESRCH if it has exited. */
int pdi_ident_signal(const struct pdi_ident *id, int sig);

/* This boot's id, read once; "" if unknown. */
const char *pdi_boot_id(void);
/* Is PID now the process that was (BOOT_ID, START_TICKS)? For identities kept across restarts. */
bool pdi_ident_matches(pid_t pid, uint64_t start_ticks, const char *boot_id);

/* What /proc/PID/task/TID/stat says (TID 0: the process): start time, parent, state letter. */
int pdi_proc_stat(pid_t pid, pid_t tid, uint64_t *ret_start_ticks, pid_t *ret_ppid, char *ret_state);
/* A kernel start time (task_struct's start_boottime, ns) in /proc's clock ticks. */
uint64_t pdi_ns_to_ticks(uint64_t ns);

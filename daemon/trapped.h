/* SPDX-License-Identifier: GPL-2.0-only */
/* trapped.h -- no user's process is ever left stopped by pdimond's MPI_Init trap.
 *
 * The BPF trap stops a process of a watched tree with SIGSTOP and only pdimond continues it. A
 * pdimond that dies (SIGKILL, a crash, an OOM kill) in between would leave it stopped for good,
 * and the trap fires whether pdimond runs or is stopped itself. So each watched root is recorded
 * under the runtime directory (with the pdimond that watches it) when it is watched; at start and
 * from the unit's ExecStopPost every process of a recorded tree left stopped is continued. */
#pragma once

#include <sys/types.h>

#include "ident.h"

#define PDI_RUNTIME_DIR "/run/pdimon"

/* Record (or forget) the watched root ROOT under DIR. Failures are logged, not fatal. */
void pdi_trapped_note(const char *dir, const struct pdi_ident *root);
void pdi_trapped_forget(const char *dir, const struct pdi_ident *root);

/* Called for a stopped process ID of the tree of recorded root ROOT_PID before it is continued:
 * the restarted daemon's chance to attach to it first (as if its trap had just fired). */
typedef void (*pdi_trapped_join_fn)(void *ctx, pid_t root_pid, const struct pdi_ident *id);

/* Continue every stopped process of every tree recorded under DIR by a pdimond that no longer
 * runs (or by this one), after JOIN (NULL: none) had its say; forget the records no daemon
 * watches any more. Returns how many processes were continued, or negative errno. */
int pdi_trapped_release(const char *dir, pdi_trapped_join_fn join, void *ctx);

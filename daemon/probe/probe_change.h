/* SPDX-License-Identifier: GPL-2.0-only */
/* probe_change.h -- the overhead budget's changes of a task's probes, in three steps so that the
 * slow one runs off pdimond's loop.
 *
 * A change gives some functions of one task new modes (tracer.h, enum pdi_probe_mode). With
 * uprobe_multi links a function's first change moves it out of the task's shared links into links
 * of its own, and the shared links are rebuilt without it. Every new link carries a generation in
 * its cookie that was never handed out for that function of that task (PDI_COOKIE_GEN), so BPF
 * drops its hits (link_is_current() in bpf/mpitrace.bpf.c) until the map link_gens names it:
 *   1. plan (loop): what to attach, copied into the change with an fd of its own on the object;
 *   2. attach (any thread: a worker): the uprobe_multi syscalls, which can wait tens of ms in the
 *      kernel (dup_mmap_sem, RCU); it touches nothing but the change;
 *   3. commit (loop): one update of link_gens switches every function the change touches, the
 *      task takes the new links and the replaced ones go to its retired lists (retired.h); or drop:
 *      the new links, never current, are retired or handed back to close.
 * So no call is missed and none is counted twice, whenever the attach ends and the closes
 * complete. Between plan and commit or drop nothing else may change the task's probes. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracer.h"

#define PDI_PROBE_KEEP 0xff /* in a change's modes: this function's probes stay as they are */

struct pdi_probe_change;

/* On the loop: plan giving every function FN of PID (attached as A) with MODES[FN] !=
 * PDI_PROBE_KEEP that mode (MODES has pdi_mpi_nfuncs entries). 0 and the plan in *RET, or NULL
 * there when the probes are so already; -EOPNOTSUPP without uprobe_multi links (then
 * pdi_tracer_set_mode() changes perf links in place), -EINVAL, -ENOMEM. A is unchanged but for
 * its generation counters. */
int pdi_probe_change_plan(struct pdi_tracer *t, struct pdi_attachment *a, pid_t pid, const uint8_t *modes,
			  struct pdi_probe_change **ret);
/* Whether step 2 has anything to do (turning off functions that have links of their own needs
 * no new link: commit at once). */
bool pdi_probe_change_needs_attach(const struct pdi_probe_change *c);
/* The mode C gives function FN, or PDI_PROBE_KEEP. */
unsigned pdi_probe_change_mode(const struct pdi_probe_change *c, unsigned fn);
/* Any thread: attach C's new links. 0 or the first attach's negative errno (those made stay in C,
 * for commit to refuse and drop to close). */
int pdi_probe_change_attach(struct pdi_probe_change *c);
/* On the loop, for the attachment C was planned on, nothing changed since: switch to C's links.
 * 0, or the map update's error (then C's links were retired to A: nothing changed). Frees C. */
int pdi_probe_change_commit(struct pdi_tracer *t, struct pdi_attachment *a, struct pdi_probe_change *c);
/* Give C up. Its links (never current: BPF drops their hits) join A's retired links, or, with A
 * NULL (its task is gone), a new array in *RET_FDS of *RET_N fds for the caller to close off the
 * loop (NULL, 0: none; closed here when memory is short). Frees C; NULL ok. */
void pdi_probe_change_drop(struct pdi_probe_change *c, struct pdi_attachment *a, int **ret_fds, unsigned *ret_n);

/* SPDX-License-Identifier: GPL-2.0-only */
/* budget_change.h -- the overhead budget's probe changes, attached on a worker.
 *
 * An attach of uprobe_multi links can wait tens of ms in the kernel (the global dup_mmap_sem,
 * RCU grace periods) while the task it is for goes on filling the ring buffer; on the loop, that
 * wait is a wait of the ring's drain. So the loop plans a change (probe_change.h), a worker of
 * d->workers attaches its links, and back on the loop, in the job's done(), the task switches to
 * them in one map update: if it still runs (pinned by pid and task id: the pid may be another
 * task's by then) and the budget still holds the levels it planned for. Else the new links, never
 * current, are closed on a worker. One change per task at a time, a few jobs at once. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct pdi_daemon;
struct pdi_task;

/* Give T's functions the modes MODES (pdi_mpi_nfuncs entries; PDI_PROBE_KEEP: unchanged). 0 when
 * done (no link to attach: committed at once) or handed to a worker; -EBUSY when T has a change in
 * flight or enough jobs run (try again at the next slot); -EOPNOTSUPP without uprobe_multi (change
 * the perf links with pdi_tracer_set_mode()); other negative errno: nothing changed. */
int pdi_budget_change(struct pdi_daemon *d, struct pdi_task *t, const uint8_t *modes);
/* Whether T has a change in flight (nothing else may change its probes meanwhile). */
bool pdi_budget_change_pending(const struct pdi_task *t);

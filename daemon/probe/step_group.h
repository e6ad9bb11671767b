/* SPDX-License-Identifier: GPL-2.0-only */
/* step_group.h -- the CPU a step's own cgroup used, read beside its tasks' counts on the usage
 * timer (usage_timer.h): what a process of the job that is not one of its ranks took.
 *
 * When every rank of a step loses CPU alike, the ranks' own counts cannot tell a hog in the
 * job's scheduling group (a fault) from a node busier for everyone (no fault); the node's count
 * of runnable tasks cannot either (diagnosis-campaign.md, interf16). The CPU the job's own
 * cgroup used beyond its ranks can: a process of the job took it, or nothing did. So where the
 * ranks share a cgroup of their own (Slurm's step cgroup with proctrack/cgroup or task/cgroup, a
 * systemd scope, a container), its CPU is kept beside each reading (lib/model/usage_log.h,
 * pdi_usage.group_ns) for lib/analysis/alike.h. Where they have none (the root cgroup, or one
 * that also holds another step's tasks), nothing is read and the rule that uses it stays silent.
 *
 * Pinned at registration: the group's file (cgroup v2 `cpu.stat`, usage_usec; else v1 cpuacct's
 * `cpuacct.usage`) is opened once, relative to the hierarchy's mount, without following links,
 * and read again with pread() once per tick (1.2 us, interf16): never a path walk on the loop's
 * ticks. A read that fails drops the figure for the step for good. */
#pragma once

#include <stdint.h>

struct pdi_daemon;
struct pdi_step;
struct pdi_task;

/* Task T joined step S: S's group is the common cgroup of its tasks, re-pinned when T moves it up
 * (none when that is the root, or when it holds another step's tasks). Never fails: a task whose
 * cgroup cannot be read (gone before it joined) is left out, and a group that cannot be opened is
 * no group, said at debug level. */
void pdi_step_group_join(struct pdi_daemon *d, struct pdi_step *s, struct pdi_task *t);

/* The CPU S's group has used so far (ns) at about NOW_NS: read at most once per tick (a reading
 * less than PDI_STEP_GROUP_FRESH_NS old is taken again), 0 when S has no group or it could not
 * be read. */
#define PDI_STEP_GROUP_FRESH_NS 2000000ull
uint64_t pdi_step_group_ns(struct pdi_step *s, uint64_t now_ns);

/* The cgroup whose CPU is read for S (from its hierarchy's root: "/job_7/step_0"), "" when none. */
const char *pdi_step_group_path(const struct pdi_step *s);

/* S's group let go (the step leaves memory). */
void pdi_step_group_done(struct pdi_step *s);

/* The hierarchies' mounts, opened on first use: closed at exit. */
void pdi_step_group_close_mounts(struct pdi_daemon *d);

/* SPDX-License-Identifier: GPL-2.0-only */
/* task_activity.h -- what the node's kernel says a monitored task is doing, from /proc
 * (task_activity.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "view.h"
#include "registry.h"

/* FILE under /proc/PID/task/TID into BUF (NUL-terminated). Bytes read, or -errno. */
ssize_t pdi_task_proc_read(pid_t pid, pid_t tid, const char *file, char *buf, size_t len);

/* Time thread TID of PID spent on a CPU and runnable but waiting for one, ns so far
 * (/proc/.../schedstat). 0, or -ENODATA (gone, or no schedstat). */
int pdi_task_schedstat(pid_t pid, pid_t tid, uint64_t *ret_run, uint64_t *ret_wait);

/* The pid of the thread that traces thread TID of PID (TracerPid), 0 when none: 0, or -errno. */
int pdi_task_tracer(pid_t pid, pid_t tid, pid_t *ret);

/* Whether thread TID of PID is traced by another than pdimond (a debugger): its tracer is
 * no thread of ours (a stack walk traces from a worker thread). The one rule for "held by a
 * debugger". False when /proc cannot be read. */
bool pdi_task_traced_by_another(pid_t pid, pid_t tid);

/* What the node's kernel says thread TID of running task T is doing (/proc: its state,
 * wchan, and its CPU use and run-queue wait since the last look, kept in T). */
void pdi_task_activity_read(struct pdi_task *t, pid_t tid, uint64_t now_ns, struct pdi_task_activity *ret);

/* Read the kernel's counts of running task T's MPI thread (TID when T has none yet, then always
 * that one) at NOW_NS into its model (pdi_model_usage_add()): on the usage timer's ticks
 * (usage_timer.h), at its MPI_Finalize and when the daemon takes a view. Nothing when /proc
 * cannot be read (the task is gone). */
void pdi_task_usage_read(struct pdi_task *t, pid_t tid, uint64_t now_ns);

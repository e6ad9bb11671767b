/* SPDX-License-Identifier: GPL-2.0-only */
/* view_local.h -- this daemon's part of the analysis (lib/analysis/view.h, lib/analysis/analysis.h): the view
 * of one of its steps, where one of its tasks is, and what the node's kernel says that task
 * is doing; the sample runs its store holds; the view of a gathered payload. */
#pragma once

#include "analysis.h"
#include "registry.h"

struct pdi_daemon;
struct pdi_gather_result;
struct pdi_samples;

/* Where task T of D is now, or was when it ended, with what /proc says it is doing when it
 * runs: the one place the daemon decides it (reports, `pdimon show`). */
void pdi_task_locate(struct pdi_daemon *d, struct pdi_task *t, struct pdi_where *ret);

/* FILE under /proc/PID/task/TID into BUF (NUL-terminated). Bytes read, or -errno. */
ssize_t pdi_task_proc_read(pid_t pid, pid_t tid, const char *file, char *buf, size_t len);

/* What the node's kernel says thread TID of running task T is doing (/proc: its state,
 * wchan, and its CPU use and run-queue wait since the last look, kept in T). */
void pdi_task_activity_read(struct pdi_task *t, pid_t tid, uint64_t now_ns, struct pdi_task_activity *ret);

/* Read the kernel's counts of running task T's MPI thread (TID when T has none yet, then always
 * that one) into its model (pdi_model_usage_add()): when the daemon sees a phase's first call,
 * and when it takes a view. Nothing when /proc cannot be read (the task is gone). */
void pdi_task_usage_read(struct pdi_task *t, pid_t tid, uint64_t now_ns);

/* V is step S's view: when S's hang judge holds it hung, V says so (lib/analysis/view.h's hung). */
void pdi_view_mark_hung(const struct pdi_step *s, struct pdi_view *v);

/* This daemon's view of its step S: where each task is (no live stack: snapshot.h takes them
 * off the loop). The view points into S: use it before S changes. 0, or -ENOMEM. */
int pdi_view_local(struct pdi_daemon *d, struct pdi_step *s, struct pdi_view *ret);

/* The view of a gather's merged payload over NNODES nodes, with the nodes that did not
 * answer (gather_step.c). 0, -EBADMSG or -EPROTONOSUPPORT (a payload this pdimon cannot
 * read), -ENOMEM. */
int pdi_view_from_gather(const struct pdi_gather_result *res, unsigned nnodes, struct pdi_view *ret);

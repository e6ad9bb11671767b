/* SPDX-License-Identifier: GPL-2.0-only */
/* view_local.h -- this daemon's part of the analysis (lib/analysis/view.h, lib/analysis/analysis.h): the view
 * of one of its steps, where one of its tasks is (what the node's kernel says that task is
 * doing: task_activity.h); the sample runs its store holds; the view of a gathered payload. */
#pragma once

#include "analysis.h"
#include "registry.h"

struct pdi_daemon;
struct pdi_gather_result;
struct pdi_samples;

/* Where task T of D is now, or was when it ended, with what /proc says it is doing when it
 * runs: the one place the daemon decides it (reports, `pdimon show`). */
void pdi_task_locate(struct pdi_daemon *d, struct pdi_task *t, struct pdi_where *ret);

/* V is step S's view: when S's hang judge holds it hung, V says so (lib/analysis/view.h's hung). */
void pdi_view_mark_hung(const struct pdi_daemon *d, const struct pdi_step *s, struct pdi_view *v);

/* This daemon's view of its step S: where each task is (no live stack: snapshot.h takes them
 * off the loop). The view points into S: use it before S changes. 0, or -ENOMEM. */
int pdi_view_local(struct pdi_daemon *d, struct pdi_step *s, struct pdi_view *ret);


/* SPDX-License-Identifier: GPL-2.0-only */
/* upcalls.c -- the calls that run up the floors, wired: what the rooms above the registry keep
 * in its tasks and steps, the end of a step for the ingest and the store, the bus's signals for
 * the step's end and its health, the hang judge's answers for the step's view and report. A room calls one above it only through these, so that the
 * rooms stand on floors without a circle (doc/design/layout.md). */
#include "api.h"
#include "budget.h"
#include "callchain.h"
#include "detach.h"
#include "health_state.h"
#include "samples.h"
#include "step_end.h"
#include "step_group.h"
#include "step_health.h"
#include "subscribe.h"
#include "upcalls.h"

static void task_parts_free(struct pdi_task *t)
{
	pdi_budget_task_free(t->budget);
	pdi_chains_free(t);
}

static void step_parts_free(struct pdi_step *s)
{
	pdi_site_samples_unref(s->site_samples);
	pdi_step_health_free(s->health);
	pdi_detach_batch_submit(NULL, &s->closing); /* a step given up while it runs: now */
	pdi_step_group_done(s);
}

const struct pdi_registry_parts pdi_registry_parts = {
	.task_free = task_parts_free,
	.step_free = step_parts_free,
	.step_settled = pdi_step_health_settled,
};

const struct pdi_upcalls pdi_upcalls = {
	.step_ended = pdi_step_ended,
	.emit_step_ended = pdi_bus_emit_step_ended,
	.emit_step_health_changed = pdi_bus_emit_step_health_changed,
	.hang_blocked_after_ns = pdi_hang_blocked_after_ns,
	.hang_polling_since = pdi_hang_polling_since,
	.step_health_of = pdi_step_health_of,
	.step_health_amend_report = pdi_step_health_amend_report,
	.unwatch = pdi_unwatch,
};

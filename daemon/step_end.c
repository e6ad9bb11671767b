/* SPDX-License-Identifier: GPL-2.0-only */
/* step_end.c -- the one place where a step ends. Whoever sees that a step may have ended (a
 * task's exit, EndStep, Unwatch, a restore) calls pdi_step_ended(); from there, in this
 * order and each once per end:
 *   1. its report is built on a worker (report.h), from a copy of the step taken now;
 *   2. the step with its report is written to the store on the store's lane (persist.h), in a
 *      transaction of its own, after anything queued before it;
 *   3. the end is announced: the log line and the StepEnded signal (and the site store, when
 *      there is one, is told it has a step to collect);
 *   4. the step may leave memory: the cache of ended steps keeps the most recently used
 *      within its limits (cache_steps, cache_mib), the store serves the rest.
 * No step of it runs inside ingestion, inside a transaction or on the loop's time beyond the
 * copies. A step that gets a task again meanwhile (registry.c reopen) bumps its end_gen: the
 * results of the earlier end are then stale and dropped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "persist.h"
#include "report.h"
#include "site_store.h"
#include "step_end.h"

struct end_ctx {
	char *name;
	uint32_t end_gen;
};

/* The step NAME still at the end EGEN, or NULL: gone, or running again. */
static struct pdi_step *still_ending(struct pdi_daemon *d, const char *name, uint32_t end_gen)
{
	struct pdi_step *s = pdi_registry_find_step(&d->reg, name);

	return s && s->end_gen == end_gen && s->ended && s->end_started ? s : NULL;
}

void pdi_step_evict(struct pdi_daemon *d)
{
	struct pdi_cache_limits lim = {.max_steps = d->cfg.cache_steps, .max_bytes = (uint64_t)d->cfg.cache_mib << 20};
	unsigned n = pdi_registry_evict(&d->reg, &lim);

	if (n)
		log_debug("%u ended steps left memory for the store", n);
}

static void announce(struct pdi_daemon *d, struct pdi_step *s)
{
	s->announced = true;
	log_info("Step %s ended", s->name);
	d->up->emit_step_ended(d, s, s->ending ? "ended" : "finished");
	/* those who waited for the end hear of it when everybody else does: the step is stored */
	pdi_step_answer_waiters(s, false, s->report_json ? 0 : -EIO, s->report_json, s->report_summary,
				"its report could not be built (see the daemon's log)");
	pdi_step_evict(d);
}

static void stored(struct pdi_daemon *d, const char *name, uint32_t end_gen, int status)
{
	struct pdi_step *s = still_ending(d, name, end_gen);

	if (!s)
		return;
	/* not stored (a full disk, a locked database): announced all the same, written again at
	 * the next checkpoint, kept in memory until then */
	s->stored = status == 0;
	if (s->stored)
		pdi_site_store_kick(d); /* stored pending: on to the site store */
	if (!s->announced)
		announce(d, s);
	else if (s->stored)
		pdi_step_evict(d);
}

static void report_built(struct pdi_daemon *d, void *ctx, struct pdi_report_result *res)
{
	struct end_ctx *e = ctx;
	struct pdi_step *s = still_ending(d, e->name, e->end_gen), *again;

	/* running again, or gone: whoever waited for this end gets what was built */
	if (!s && (again = pdi_registry_find_step(&d->reg, e->name)))
		pdi_step_answer_waiters(again, false, res->status, res->text, res->summary, res->why);
	/* those who wait for the report (srun) have it now; the step's end is not announced
	 * before it is stored */
	if (s)
		pdi_step_answer_waiters(s, true, res->status, res->text, res->summary, res->why);
	if (s && res->status == 0) {
		s->report_json = res->text;
		s->report_summary = res->summary;
		res->text = res->summary = NULL;
	} else if (s) {
		log_warning("Step %s: no report: %s", s->name, res->why);
	}
	if (s && (!d->store || pdi_persist_step(d, s, stored) < 0))
		announce(d, s); /* nothing to wait for: the store is off, or said why it cannot */
	free(e->name);
	free(e);
}

void pdi_step_ended(struct pdi_daemon *d, struct pdi_step *s)
{
	struct end_ctx *e;
	int r = -ENOMEM;

	if (!s->ended || s->announced || s->end_started)
		return;
	s->end_started = true;
	e = calloc(1, sizeof(*e));
	if (e && (e->name = strdup(s->name))) {
		e->end_gen = s->end_gen;
		/* built for the step's owner: whoever may read the step reads the same report */
		r = pdi_report_start(d, s, s->uid, PDI_REPORT, "json", report_built, e);
		if (r < 0) {
			struct pdi_report_result res = {.status = r};

			snprintf(res.why, sizeof(res.why), "cannot build it: %s", strerror(-r));
			report_built(d, e, &res); /* frees E */
		}
		return;
	}
	free(e);
	log_error("Step %s: out of memory for its end; announced without a report or a record", s->name);
	announce(d, s);
}

int pdi_step_wait_end(struct pdi_step *s, bool stored, pdi_step_answer_fn answer, void *ctx)
{
	struct pdi_step_waiter *w;

	if (!s->end_started || s->announced || (!stored && s->report_json))
		return -EALREADY;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct pdi_step_waiter){.next = s->waiters, .answer = answer, .ctx = ctx, .stored = stored};
	s->waiters = w;
	return 0;
}

void pdi_step_store_again(struct pdi_daemon *d)
{
	/* the ended steps whose record did not make it into the store: written again */
	for (unsigned i = 0; d->store && i < d->reg.nsteps; i++) {
		struct pdi_step *s = d->reg.steps[i];

		if (s->ended && s->announced && s->end_started && !s->stored && !s->store_pending)
			(void)pdi_persist_step(d, s, stored);
	}
}

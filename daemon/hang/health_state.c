/* SPDX-License-Identifier: GPL-2.0-only */
/* health_state.c -- what pdimond keeps of a live step's health, and the answers read from it
 * (health_state.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "health_state.h"
#include "json.h"

void pdi_step_health_free(struct pdi_step_health *h)
{
	if (!h)
		return;
	free(h->progress);
	free(h->in);
	free(h->keys);
	free(h->models);
	free(h->index);
	free(h);
}

void pdi_step_health_log_action(struct pdi_step_health *h, const char *what, const char *fmt, ...)
{
	struct pdi_health_action *a;
	va_list ap;

	if (h->nactions == PDI_HEALTH_MAX_ACTIONS) {
		/* the first ones tell how it began, the last one how it ends */
		h->dropped_actions++;
		h->nactions--;
	}
	a = &h->actions[h->nactions++];
	a->at = time(NULL);
	snprintf(a->what, sizeof(a->what), "%s", what);
	va_start(ap, fmt);
	(void)vsnprintf(a->detail, sizeof(a->detail), fmt, ap);
	va_end(ap);
}

bool pdi_step_health_acted(struct pdi_step *s, const char *what, bool ok, const char *fmt, ...)
{
	struct pdi_step_health *h = s->health;
	char detail[sizeof(h->actions[0].detail)];
	va_list ap;

	if (!h)
		return false;
	va_start(ap, fmt);
	(void)vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	pdi_step_health_log_action(h, what, "%s%s", ok ? "" : "failed: ", detail);
	if (!strcmp(what, "cancel") && !ok)
		h->cancelled = 0; /* it did not happen after all */
	return true;
}

void pdi_step_health_get_saved(const struct pdi_step *s, struct pdi_health_saved *ret)
{
	const struct pdi_step_health *h = s->health;

	*ret = (struct pdi_health_saved){0};
	if (!h)
		return;
	ret->run = h->judge.run;
	ret->health = h->judge.announced;
	ret->since = h->since;
	ret->first_hung = h->first_hung;
	ret->cancelled = h->cancelled;
}

struct pdi_task_progress *pdi_step_health_progress(struct pdi_step *s, unsigned *ret_n)
{
	*ret_n = s->health ? s->health->nprogress : 0;
	return s->health ? s->health->progress : NULL;
}

bool pdi_step_health_settled(const struct pdi_step *s)
{
	return !s->health || s->health->saved_end;
}

uint64_t pdi_hang_polling_since(const struct pdi_step *s, unsigned i)
{
	const struct pdi_step_health *h = s->health;

	if (!h || i >= h->nprogress || !h->progress[i].npoll_sites)
		return 0;
	return h->progress[i].last_ns;
}

enum pdi_health pdi_step_health_of(const struct pdi_step *s, time_t *ret_since)
{
	if (ret_since)
		*ret_since = s->health ? s->health->since : 0;
	return s->health ? s->health->judge.announced : PDI_HEALTH_OK;
}

void pdi_hang_counts(const struct pdi_daemon *d, unsigned ret_by_health[3])
{
	ret_by_health[0] = ret_by_health[1] = ret_by_health[2] = 0;
	for (unsigned i = 0; i < d->reg.nsteps; i++)
		if (pdi_step_running(d->reg.steps[i]))
			ret_by_health[pdi_step_health_of(d->reg.steps[i], NULL)]++;
}

int pdi_step_health_amend_report(const struct pdi_step *s, char **json)
{
	char *end = *json ? strrchr(*json, '}') : NULL, *health, *out;
	struct pdi_json j;

	if (!s->health || !end)
		return 0;
	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_step_health_json(s, &j);
	pdi_json_obj_end(&j);
	health = pdi_json_steal(&j);
	if (!health)
		return -ENOMEM;
	/* {...} + "health":{...} from the second object, without its braces */
	if (asprintf(&out, "%.*s%s%.*s}", (int)(end - *json), *json, end[-1] == '{' ? "" : ",", (int)strlen(health) - 2,
		     health + 1) < 0) {
		free(health);
		return -ENOMEM;
	}
	free(health);
	free(*json);
	*json = out;
	return 0;
}

void pdi_step_health_json(const struct pdi_step *s, struct pdi_json *j)
{
	const struct pdi_step_health *h = s->health;

	pdi_json_key(j, "health");
	pdi_json_obj_begin(j);
	pdi_json_kv_str(j, "health", pdi_health_names[pdi_step_health_of(s, NULL)]);
	if (h && h->since)
		pdi_json_kv_int(j, "since", h->since);
	if (h && h->first_hung)
		pdi_json_kv_int(j, "first_judged_hung", h->first_hung);
	if (h && h->cancelled)
		pdi_json_kv_int(j, "cancelled", h->cancelled);
	if (h) {
		struct pdi_health_record all;
		double longest = 0;

		pdi_health_record(&h->judge, &all);
		for (unsigned k = 0; k < PDI_QUIET_KINDS; k++)
			if (pdi_quiet_record_longest(&all.kind[k]) > longest)
				longest = pdi_quiet_record_longest(&all.kind[k]);
		pdi_json_kv_double(j, "quiet_s", h->last.quiet_s);
		pdi_json_kv_double(j, "longest_healthy_quiet_s", longest);
		pdi_json_kv_double(j, "hung_after_s", h->last.threshold_s);
		pdi_json_kv_double(j, "false_alarms_per_step_hour", h->judge.params.quiet.rate_per_hour);
		pdi_json_key(j, "actions");
		pdi_json_arr_begin(j);
		for (unsigned i = 0; i < h->nactions; i++) {
			pdi_json_obj_begin(j);
			pdi_json_kv_int(j, "at", h->actions[i].at);
			pdi_json_kv_str(j, "action", h->actions[i].what);
			pdi_json_kv_str(j, "detail", h->actions[i].detail);
			pdi_json_obj_end(j);
		}
		pdi_json_arr_end(j);
		if (h->dropped_actions)
			pdi_json_kv_uint(j, "actions_dropped", h->dropped_actions);
	}
	pdi_json_obj_end(j);
}

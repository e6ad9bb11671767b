/* SPDX-License-Identifier: GPL-2.0-only */
/* unobserved.c -- the log of what a task's model did not see (see unobserved.h). */
#include <errno.h>
#include <stdlib.h>

#include "json.h"
#include "unobserved.h"

static struct pdi_unobserved *push(struct pdi_unobserved_log *l)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 8;
		struct pdi_unobserved *v;

		if (l->n >= PDI_UNOBSERVED_MAX)
			return NULL;
		if (cap > PDI_UNOBSERVED_MAX)
			cap = PDI_UNOBSERVED_MAX;
		v = realloc(l->v, sizeof(*v) * cap);
		if (!v)
			return NULL;
		l->v = v;
		l->cap = cap;
	}
	return &l->v[l->n++];
}

/* The log is full: the last record takes the new one in (it covers the later time too). */
static void stretch(struct pdi_unobserved_log *l, uint8_t level, uint64_t t_end)
{
	struct pdi_unobserved *last = &l->v[l->n - 1];

	if (level > last->level)
		last->level = level;
	if (last->t_end && (t_end == 0 || t_end > last->t_end))
		last->t_end = t_end;
	l->stretched++;
}

int pdi_unobserved_begin(struct pdi_unobserved_log *l, uint16_t fn, uint8_t level, uint8_t duty_log2,
			 uint32_t rate, uint32_t cost_ppm, uint64_t t)
{
	struct pdi_unobserved *u;

	pdi_unobserved_end(l, fn, t);
	u = push(l);
	if (!u) {
		if (l->n == 0)
			return -ENOMEM;
		stretch(l, level, 0);
		return 0;
	}
	*u = (struct pdi_unobserved){.t_start = t, .fn = fn, .level = level, .duty_log2 = duty_log2,
				     .rate = rate, .cost_ppm = cost_ppm};
	return 0;
}

void pdi_unobserved_end(struct pdi_unobserved_log *l, uint16_t fn, uint64_t t)
{
	for (uint32_t i = l->n; i-- > 0;)
		if (l->v[i].fn == fn && l->v[i].t_end == 0) {
			l->v[i].t_end = t > l->v[i].t_start ? t : l->v[i].t_start + 1;
			return;
		}
}

void pdi_unobserved_from_earlier_runs(struct pdi_unobserved_log *l, uint16_t fn)
{
	for (uint32_t i = l->n; i-- > 0;)
		if (l->v[i].fn == fn && l->v[i].t_end == 0) {
			l->v[i].from_earlier_runs = 1;
			return;
		}
}

bool pdi_unobserved_any_from_earlier_runs(const struct pdi_unobserved_log *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->v[i].from_earlier_runs)
			return true;
	return false;
}

int pdi_unobserved_add(struct pdi_unobserved_log *l, uint16_t fn, uint8_t level, uint64_t t_start, uint64_t t_end)
{
	struct pdi_unobserved *u = push(l);

	if (!u) {
		if (l->n == 0)
			return -ENOMEM;
		stretch(l, level, t_end);
		return 0;
	}
	*u = (struct pdi_unobserved){.t_start = t_start, .t_end = t_end > t_start ? t_end : t_start + 1, .fn = fn,
				     .level = level};
	return 0;
}

/* Does U (open when its t_end is 0) overlap [FROM, TO]? */
static bool overlaps(const struct pdi_unobserved *u, uint64_t from, uint64_t to)
{
	return u->t_start <= to && (u->t_end == 0 || u->t_end >= from);
}

bool pdi_unobserved_overlaps(const struct pdi_unobserved_log *l, uint16_t fn, uint64_t from, uint64_t to)
{
	for (uint32_t i = 0; i < l->n; i++) {
		const struct pdi_unobserved *u = &l->v[i];

		if (fn != PDI_UNOBSERVED_ALL && u->fn != fn && u->fn != PDI_UNOBSERVED_ALL)
			continue;
		if (overlaps(u, from, to))
			return true;
	}
	return false;
}

/* Could U hide every call of its function for a second or more? Detached, or sampled so
 * thinly that its calls were seen less than once a second; a gap, lost events. */
static bool blind(const struct pdi_unobserved *u)
{
	switch (u->level) {
	case PDI_UNOBS_SAMPLED:
		/* rate 0: not measured (a level learned from earlier runs of the program), so how
		 * much its slices saw is not known either */
		return u->rate == 0 || u->duty_log2 >= 32 || (u->rate >> u->duty_log2) < 1;
	case PDI_UNOBS_DETACHED: /* at its rate, or at one not known (0: the step's level) */
	case PDI_UNOBS_GAP:
	case PDI_UNOBS_LOST: return true;
	default: return false;
	}
}

bool pdi_unobserved_blind_through(const struct pdi_unobserved_log *l, uint64_t from, uint64_t to)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (overlaps(&l->v[i], from, to) && blind(&l->v[i]))
			return true;
	return false;
}

struct span {
	uint64_t from, to;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->from < y->from ? -1 : x->from > y->from;
}

uint64_t pdi_unobserved_blind_ns(const struct pdi_unobserved_log *l, uint64_t from, uint64_t to)
{
	struct span v[PDI_UNOBSERVED_MAX];
	uint64_t sum = 0, end = from;
	uint32_t n = 0;

	for (uint32_t i = 0; i < l->n && n < PDI_UNOBSERVED_MAX; i++) {
		const struct pdi_unobserved *u = &l->v[i];

		if (from < to && overlaps(u, from, to) && blind(u))
			v[n++] = (struct span){u->t_start > from ? u->t_start : from,
					       u->t_end && u->t_end < to ? u->t_end : to};
	}
	qsort(v, n, sizeof(v[0]), span_cmp);
	/* the union: records of several functions overlap */
	for (uint32_t i = 0; i < n; i++) {
		if (v[i].to <= end)
			continue;
		sum += v[i].to - (v[i].from > end ? v[i].from : end);
		end = v[i].to;
	}
	return sum;
}

uint64_t pdi_unobserved_blind_until(const struct pdi_unobserved_log *l, uint64_t t)
{
	uint64_t until = 0;

	for (uint32_t i = 0; i < l->n; i++) {
		const struct pdi_unobserved *u = &l->v[i];

		if (u->level == PDI_UNOBS_ENTRY_ONLY)
			continue;
		if (u->t_end == 0)
			return UINT64_MAX;
		if (u->t_end >= t && u->t_end > until)
			until = u->t_end;
	}
	return until;
}

bool pdi_unobserved_blind_since(const struct pdi_unobserved_log *l, uint64_t t)
{
	return pdi_unobserved_blind_until(l, t) != 0;
}

void pdi_unobserved_free(struct pdi_unobserved_log *l)
{
	free(l->v);
	*l = (struct pdi_unobserved_log){0};
}

const char *pdi_unobserved_level_name(unsigned level)
{
	switch (level) {
	case PDI_UNOBS_ENTRY_ONLY: return "entry only";
	case PDI_UNOBS_SAMPLED: return "sampled";
	case PDI_UNOBS_DETACHED: return "detached";
	case PDI_UNOBS_GAP: return "gap";
	case PDI_UNOBS_LOST: return "lost";
	}
	return "?";
}

void pdi_unobserved_json(const struct pdi_unobserved_log *l, struct pdi_json *j, const char *(*fn_name)(unsigned fn))
{
	pdi_json_key(j, "unobserved");
	pdi_json_arr_begin(j);
	for (uint32_t i = 0; i < l->n; i++) {
		const struct pdi_unobserved *u = &l->v[i];

		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "function", u->fn == PDI_UNOBSERVED_ALL ? "all" : fn_name(u->fn));
		pdi_json_kv_str(j, "level", pdi_unobserved_level_name(u->level));
		pdi_json_kv_double(j, "observed_share", u->level == PDI_UNOBS_SAMPLED ? 1.0 / (double)(1u << u->duty_log2)
							 : u->level == PDI_UNOBS_ENTRY_ONLY ? 1.0 : 0.0);
		pdi_json_kv_uint(j, "from_ns", u->t_start);
		pdi_json_key(j, "to_ns");
		if (u->t_end)
			pdi_json_uint(j, u->t_end);
		else
			pdi_json_null(j);
		pdi_json_kv_uint(j, "rate_per_s", u->rate);
		pdi_json_kv_double(j, "full_cost_pct", (double)u->cost_ppm / 1e4);
		pdi_json_kv_bool(j, "from_earlier_runs", u->from_earlier_runs);
		if (u->from_earlier_runs)
			pdi_json_kv_str(j, "why", PDI_UNOBSERVED_EARLIER_RUNS);
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
	pdi_json_kv_uint(j, "unobserved_stretched", l->stretched);
}

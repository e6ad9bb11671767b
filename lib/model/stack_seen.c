/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_seen.c -- the bounded record of what a task's live stack said (stack_seen.h). */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "mpi_funcs.h"
#include "stack_seen.h"

void pdi_stack_seen_add(struct pdi_stack_seen_log *l, uint16_t fn, uint64_t t)
{
	struct pdi_stack_seen *last = l->n ? &l->v[l->n - 1] : NULL;

	if (last && last->fn == fn && t >= last->t_last && t - last->t_last <= PDI_STACK_SEEN_SAME_NS) {
		last->t_last = t;
		if (last->looks < UINT16_MAX)
			last->looks++;
		return;
	}
	if (l->n == PDI_STACK_SEEN_MAX) {
		memmove(&l->v[0], &l->v[1], (PDI_STACK_SEEN_MAX - 1) * sizeof(l->v[0]));
		l->n--;
		l->dropped++;
	}
	l->v[l->n++] = (struct pdi_stack_seen){.t_first = t, .t_last = t, .fn = fn, .looks = 1};
}

void pdi_stack_seen_text(const struct pdi_stack_seen *r, const char *(*fn_name)(unsigned fn), char *buf, size_t len)
{
	if (r->fn == PDI_STACK_SEEN_OUTSIDE)
		snprintf(buf, len, "computing outside MPI");
	else
		snprintf(buf, len, "in %s", fn_name(r->fn));
}

void pdi_stack_seen_json(const struct pdi_stack_seen_log *l, struct pdi_json *j, const char *(*fn_name)(unsigned fn))
{
	char doing[96];

	pdi_json_key(j, "stack_seen");
	pdi_json_arr_begin(j);
	for (uint32_t i = 0; i < l->n; i++) {
		pdi_stack_seen_text(&l->v[i], fn_name, doing, sizeof(doing));
		pdi_json_obj_begin(j);
		pdi_json_kv_str(j, "doing", doing);
		pdi_json_kv_uint(j, "from_ns", l->v[i].t_first);
		pdi_json_kv_uint(j, "to_ns", l->v[i].t_last);
		pdi_json_kv_uint(j, "looks", l->v[i].looks);
		pdi_json_obj_end(j);
	}
	pdi_json_arr_end(j);
}

uint64_t pdi_stack_seen_polling_since(const struct pdi_stack_seen_log *l, uint64_t now)
{
	uint64_t since = 0, next = now; /* the first look of the chain so far; what follows the record */

	for (uint32_t i = l->n; i-- > 0;) {
		const struct pdi_stack_seen *r = &l->v[i];

		if (r->fn == PDI_STACK_SEEN_OUTSIDE || !pdi_fn_polls(r->fn) || r->t_last > next ||
		    next - r->t_last > PDI_STACK_SEEN_SAME_NS)
			break;
		since = next = r->t_first;
	}
	return since;
}

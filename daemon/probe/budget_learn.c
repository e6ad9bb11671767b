/* SPDX-License-Identifier: GPL-2.0-only */
/* budget_learn.c -- the overhead budget's levels learned per program (see budget_learn.h). A
 * linear table: it is searched once per task begin and once per task end, against at most a few
 * hundred programs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget_learn.h"

struct entry {
	uint64_t program;  /* pdi_program_hash() */
	uint64_t step;     /* the step that last noted it */
	uint64_t used;     /* the table's clock at its last find or note: the least recent goes first */
	bool changed;      /* noted since pdi_budget_learned_changed() last gave it */
	uint8_t *levels;
};

struct pdi_budget_learned {
	struct entry *v;
	unsigned n, max, nfuncs;
	unsigned nchanged; /* entries changed */
	uint64_t clock;
};

int pdi_budget_learned_new(unsigned max, unsigned nfuncs, struct pdi_budget_learned **ret)
{
	struct pdi_budget_learned *l;

	if (!max || !nfuncs)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l || !(l->v = calloc(max, sizeof(*l->v)))) {
		free(l);
		return -ENOMEM;
	}
	l->max = max;
	l->nfuncs = nfuncs;
	*ret = l;
	return 0;
}

void pdi_budget_learned_free(struct pdi_budget_learned *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < l->n; i++)
		free(l->v[i].levels);
	free(l->v);
	free(l);
}

static struct entry *find(struct pdi_budget_learned *l, uint64_t program)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->v[i].program == program)
			return &l->v[i];
	return NULL;
}

const uint8_t *pdi_budget_learned_find(struct pdi_budget_learned *l, uint64_t program)
{
	struct entry *e = l && program ? find(l, program) : NULL;

	if (!e)
		return NULL;
	e->used = ++l->clock;
	return e->levels;
}

/* A slot for a new entry: a free one, else the least recently used one's (its levels kept for
 * reuse). */
static struct entry *make_room(struct pdi_budget_learned *l)
{
	struct entry *lru;

	if (l->n < l->max)
		return &l->v[l->n];
	lru = &l->v[0];
	for (unsigned i = 1; i < l->n; i++)
		if (l->v[i].used < lru->used)
			lru = &l->v[i];
	return lru;
}

/* A new entry for PROGRAM, in a free slot or the least recently used one's; NULL: no memory. */
static struct entry *add(struct pdi_budget_learned *l, uint64_t program)
{
	struct entry *e = make_room(l);

	if (!e->levels && !(e->levels = malloc(l->nfuncs)))
		return NULL;
	if (e == &l->v[l->n])
		l->n++;
	e->program = program;
	return e;
}

static bool any_degraded(const struct pdi_budget_learned *l, const uint8_t *levels)
{
	for (unsigned fn = 0; fn < l->nfuncs; fn++)
		if (levels[fn])
			return true;
	return false;
}

int pdi_budget_learned_note(struct pdi_budget_learned *l, uint64_t program, uint64_t step, const uint8_t *levels)
{
	struct entry *e = find(l, program);

	if (!e) {
		if (!any_degraded(l, levels))
			return 0;
		if (!(e = add(l, program)))
			return -ENOMEM;
		e->step = step + 1; /* not STEP: replaced below */
	}
	if (e->step != step)
		memcpy(e->levels, levels, l->nfuncs);
	else
		for (unsigned fn = 0; fn < l->nfuncs; fn++)
			if (levels[fn] > e->levels[fn])
				e->levels[fn] = levels[fn];
	e->step = step;
	e->used = ++l->clock;
	l->nchanged += !e->changed;
	e->changed = true;
	return 0;
}

int pdi_budget_learned_put(struct pdi_budget_learned *l, uint64_t program, uint64_t used, const uint8_t *levels)
{
	struct entry *e;

	if (!program || !any_degraded(l, levels))
		return 0;
	if (!(e = find(l, program)) && !(e = add(l, program)))
		return -ENOMEM;
	memcpy(e->levels, levels, l->nfuncs);
	e->step = 0; /* no step of this pdimond's */
	e->used = used;
	l->nchanged -= e->changed;
	e->changed = false;
	if (used > l->clock)
		l->clock = used;
	return 0;
}

int pdi_budget_learned_changed(struct pdi_budget_learned *l,
			       int (*cb)(void *ctx, uint64_t program, uint64_t used, const uint8_t *levels), void *ctx)
{
	for (unsigned i = 0; l && l->nchanged && i < l->n; i++) {
		struct entry *e = &l->v[i];
		int r;

		if (!e->changed)
			continue;
		if ((r = cb(ctx, e->program, e->used, e->levels)) < 0)
			return r;
		e->changed = false;
		l->nchanged--;
	}
	return 0;
}

unsigned pdi_budget_learned_count(const struct pdi_budget_learned *l)
{
	return l ? l->n : 0;
}

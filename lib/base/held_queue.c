/* SPDX-License-Identifier: GPL-2.0-only */
/* held_queue.c -- records kept in order, bounded all together (held_queue.h). */
#include <stdint.h>
#include <stdlib.h>

#include "held_queue.h"

/* a waiting process usually keeps a few records, a burst of a polling rank thousands */
#define FIRST_CAP 64

void *pdi_held_queue_push(struct pdi_held_queue *q, size_t size, unsigned *held_all, unsigned max)
{
	if (*held_all >= max || !size)
		return NULL;
	if (q->n == q->cap) {
		unsigned cap = q->cap ? 2 * q->cap : FIRST_CAP;
		void *v;

		if (cap < q->cap || cap > SIZE_MAX / size || !(v = realloc(q->v, size * cap)))
			return NULL;
		q->v = v;
		q->cap = cap;
	}
	(*held_all)++;
	return (char *)q->v + size * q->n++;
}

void pdi_held_queue_take(struct pdi_held_queue *q, unsigned *held_all, void **ret_v, unsigned *ret_n)
{
	*held_all -= q->n;
	*ret_v = q->v;
	*ret_n = q->n;
	*q = (struct pdi_held_queue){0};
}

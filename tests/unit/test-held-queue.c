/* SPDX-License-Identifier: GPL-2.0-only */
/* test-held-queue.c -- records kept in order, bounded by a count every queue of a kind shares. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "held_queue.h"

struct rec {
	uint64_t seq;
	char pad[150]; /* about the size of the daemon's records */
};

static struct rec *push(struct pdi_held_queue *q, unsigned *held, unsigned max, uint64_t seq)
{
	struct rec *r = pdi_held_queue_push(q, sizeof(*r), held, max);

	if (r)
		r->seq = seq;
	return r;
}

Test(held_queue, keeps_records_in_order_across_growth)
{
	struct pdi_held_queue q = {0};
	unsigned held = 0, n;
	void *v;

	for (uint64_t i = 0; i < 1000; i++)
		cr_assert_not_null(push(&q, &held, 5000, i));
	cr_assert_eq(held, 1000);
	pdi_held_queue_take(&q, &held, &v, &n);
	cr_assert_eq(n, 1000);
	cr_assert_eq(held, 0);
	cr_assert_eq(q.n, 0);
	cr_assert_null(q.v);
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(((struct rec *)v)[i].seq, i);
	free(v);
}

Test(held_queue, bound_is_shared_by_every_queue_of_a_kind)
{
	struct pdi_held_queue a = {0}, b = {0};
	unsigned held = 0, n;
	void *v;

	for (uint64_t i = 0; i < 70; i++)
		cr_assert_not_null(push(&a, &held, 100, i));
	for (uint64_t i = 0; i < 30; i++)
		cr_assert_not_null(push(&b, &held, 100, i));
	/* full: neither queue takes more, and a refusal changes nothing */
	cr_assert_null(push(&a, &held, 100, 70));
	cr_assert_null(push(&b, &held, 100, 30));
	cr_assert_eq(held, 100);
	cr_assert_eq(a.n, 70);
	cr_assert_eq(b.n, 30);
	/* A's records leave the count as they are taken out: B may keep as many again */
	pdi_held_queue_take(&a, &held, &v, &n);
	cr_assert_eq(held, 30);
	for (uint64_t i = 30; i < 100; i++)
		cr_assert_not_null(push(&b, &held, 100, i));
	cr_assert_null(push(&b, &held, 100, 100));
	free(v);
	pdi_held_queue_take(&b, &held, &v, &n);
	cr_assert_eq(n, 100);
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(((struct rec *)v)[i].seq, i);
	cr_assert_eq(held, 0);
	free(v);
}

Test(held_queue, empty_queue_takes_nothing)
{
	struct pdi_held_queue q = {0};
	unsigned held = 7, n = 1;
	void *v = &n;

	pdi_held_queue_take(&q, &held, &v, &n);
	cr_assert_null(v);
	cr_assert_eq(n, 0);
	cr_assert_eq(held, 7); /* other queues' records stay counted */
	/* a zero bound keeps nothing */
	held = 0;
	cr_assert_null(push(&q, &held, 0, 1));
	cr_assert_eq(q.n, 0);
}

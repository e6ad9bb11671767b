/* SPDX-License-Identifier: GPL-2.0-only */
/* test-gather.c -- the tree gather's pure parts: tree positions, subtrees, deadlines per
 * depth, the request and result encodings, and the order in which results are merged. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gather.h"

Test(gather, children_of_a_position)
{
	unsigned first;

	cr_expect_eq(pdi_gather_children(0, 10, 3, &first), 3);
	cr_expect_eq(first, 1);
	cr_expect_eq(pdi_gather_children(2, 10, 3, &first), 3);
	cr_expect_eq(first, 7);
	cr_expect_eq(pdi_gather_children(1, 6, 3, &first), 2); /* 4, 5 */
	cr_expect_eq(first, 4);
	cr_expect_eq(pdi_gather_children(3, 10, 3, &first), 0);
	cr_expect_eq(pdi_gather_children(0, 1, 32, &first), 0);
	cr_expect_eq(pdi_gather_children(0, 128, 128, &first), 127); /* flat */
}

Test(gather, height_and_deadlines_per_depth)
{
	cr_expect_eq(pdi_gather_height(1, 32), 0);
	cr_expect_eq(pdi_gather_height(2, 32), 1);
	cr_expect_eq(pdi_gather_height(33, 32), 1);
	cr_expect_eq(pdi_gather_height(34, 32), 2);
	cr_expect_eq(pdi_gather_height(128, 32), 2);
	cr_expect_eq(pdi_gather_height(1057, 32), 2); /* 1 + 32 + 1024 */
	cr_expect_eq(pdi_gather_height(1058, 32), 3);
	cr_expect_eq(pdi_gather_height(128, 128), 1);
	cr_expect_eq(pdi_gather_total_ms(1, 32, 2000), 2000); /* at least one level */
	cr_expect_eq(pdi_gather_total_ms(128, 32, 2000), 4000);
	cr_expect_eq(pdi_gather_total_ms(100000, 32, 2000), 8000);
	cr_expect_eq(pdi_gather_wait_ms(4000, 2000), 3000);
	cr_expect_eq(pdi_gather_wait_ms(900, 2000), 0);
}

/* Along any path down, each daemon waits less than its parent, by at least a margin, and
 * the deepest waiting daemons still wait at least one level. */
Test(gather, every_level_answers_before_its_parent_gives_up)
{
	const unsigned level = 2000;

	for (unsigned n = 2; n < 5000; n = n * 3 + 1)
		for (unsigned k = 2; k <= 64; k *= 2) {
			unsigned h = pdi_gather_height(n, k);
			uint64_t parent_waits = pdi_gather_total_ms(n, k, level);

			for (unsigned d = 1; d < h; d++) {
				/* the budget a daemon at depth d gets is what its parent waits */
				uint64_t waits = pdi_gather_wait_ms(parent_waits, level);

				cr_assert_leq(waits + level / 2, parent_waits);
				cr_assert_geq(waits, level, "n=%u k=%u depth %u waits %lu", n, k, d, (unsigned long)waits);
				parent_waits = waits;
			}
		}
}

Test(gather, subtree_is_a_tree_of_the_same_shape)
{
	unsigned *sub = malloc(300 * sizeof(*sub)), *seen = malloc(300 * sizeof(*seen));

	for (unsigned n = 1; n < 300; n += 7)
		for (unsigned k = 2; k <= 5; k++) {
			unsigned first, nc = pdi_gather_children(0, n, k, &first);

			memset(seen, 0, n * sizeof(*seen));
			seen[0] = 1;
			for (unsigned c = first; c < first + nc; c++) {
				unsigned m = pdi_gather_subtree(n, k, c, sub);

				cr_assert_eq(sub[0], c);
				for (unsigned i = 0; i < m; i++) {
					unsigned lf, gf, ln = pdi_gather_children(i, m, k, &lf);
					unsigned gn = pdi_gather_children(sub[i], n, k, &gf);

					seen[sub[i]]++;
					cr_assert_eq(ln, gn, "n=%u k=%u child %u local %u", n, k, c, i);
					for (unsigned j = 0; j < ln; j++)
						cr_assert_eq(sub[lf + j], gf + j);
				}
			}
			for (unsigned i = 0; i < n; i++)
				cr_assert_eq(seen[i], 1, "n=%u k=%u node %u", n, k, i);
		}
	unsigned n13[4];
	cr_expect_eq(pdi_gather_subtree(13, 3, 1, n13), 4);
	cr_expect(n13[0] == 1 && n13[1] == 4 && n13[2] == 5 && n13[3] == 6);
	free(sub);
	free(seen);
}

Test(gather, request_round_trip_and_truncation)
{
	char *nodes[] = {"n0", "n1", "node-two"};
	struct pdi_gather_request q = {.job = 42, .step = 7, .name = "42.7", .uid = 1000, .nonce = 0x1122334455667788ull,
				       .fanout = 32, .budget_ms = 4000, .level_ms = 2000, .nodes = nodes, .nnodes = 3};
	struct pdi_gather_request d;
	struct pdi_wire_writer w = {0};

	cr_assert_eq(pdi_gather_request_encode(&q, &w), 0);
	cr_assert_eq(pdi_gather_request_decode(w.buf, w.len, &d), 0);
	cr_expect(d.job == 42 && d.step == 7 && d.uid == 1000 && d.nonce == q.nonce);
	cr_expect(d.fanout == 32 && d.budget_ms == 4000 && d.level_ms == 2000 && d.nnodes == 3);
	cr_expect_str_eq(d.name, "42.7");
	cr_expect_str_eq(d.nodes[2], "node-two");
	pdi_gather_request_done(&d);
	for (size_t len = 0; len < w.len; len++)
		cr_assert_lt(pdi_gather_request_decode(w.buf, len, &d), 0, "prefix of %zu bytes", len);
	/* a count that the bytes cannot hold is refused before anything is allocated */
	memcpy(w.buf + w.len - 3 * 4 - 2 - 2 - 8 - 4, &(uint32_t){0xffffffffu}, 4);
	cr_expect_lt(pdi_gather_request_decode(w.buf, w.len, &d), 0);
	pdi_wire_writer_done(&w);
	q.fanout = 1;
	cr_assert_eq(pdi_gather_request_encode(&q, &w), 0);
	cr_expect_lt(pdi_gather_request_decode(w.buf, w.len, &d), 0, "fan-out below 2");
	pdi_wire_writer_done(&w);
}

Test(gather, result_round_trip)
{
	struct pdi_gather_result r = {.payload = (uint8_t *)strdup("abc"), .len = 3, .answered = 5}, d;
	struct pdi_wire_writer w = {0};

	cr_assert_eq(pdi_gather_result_add_missing(&r, "n3", "no answer before the deadline"), 0);
	cr_assert_eq(pdi_gather_result_add_missing(&r, "n9", "not reached: n3 above it is missing"), 0);
	cr_assert_eq(pdi_gather_result_encode(&r, &w), 0);
	cr_assert_eq(pdi_gather_result_decode(w.buf, w.len, &d), 0);
	cr_expect(d.answered == 5 && d.nmissing == 2 && d.len == 3 && !memcmp(d.payload, "abc", 3));
	cr_expect_str_eq(d.missing[1], "n9");
	cr_expect_str_eq(d.missing_why[0], "no answer before the deadline");
	pdi_gather_result_done(&d);
	for (size_t len = 0; len < w.len; len++)
		cr_assert_lt(pdi_gather_result_decode(w.buf, len, &d), 0, "prefix of %zu bytes", len);
	pdi_wire_writer_done(&w);
	pdi_gather_result_done(&r);
}

/* merge = concatenation, and a log of the calls: order is visible */
static unsigned merges;
static int concat(void *ctx, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, struct pdi_wire_writer *out)
{
	(void)ctx;
	merges++;
	pdi_wire_writer_done(out);
	out->buf = malloc(alen + blen);
	memcpy(out->buf, a, alen);
	memcpy(out->buf + alen, b, blen);
	out->len = out->cap = alen + blen;
	return 0;
}
static const struct pdi_gather_ops concat_ops = {.merge = concat};

static void put(struct pdi_gather_acc *a, unsigned slot, const char *payload, const char *missing)
{
	struct pdi_gather_result r = {.answered = payload ? 1 : 0};

	if (payload && *payload) {
		r.payload = (uint8_t *)strdup(payload);
		r.len = strlen(payload);
	}
	if (missing)
		pdi_gather_result_add_missing(&r, missing, "gone");
	pdi_gather_acc_put(a, slot, &r);
}

Test(gather, merged_in_tree_order_as_soon_as_contiguous)
{
	struct pdi_gather_acc a;
	struct pdi_gather_result r;

	merges = 0;
	cr_assert_eq(pdi_gather_acc_init(&a, &concat_ops, NULL, 5), 0);
	put(&a, 3, "D", NULL);
	put(&a, 1, "B", NULL);
	cr_expect_eq(a.next, 0, "nothing merges before this node's own part");
	put(&a, 0, "A", NULL);
	cr_expect_eq(a.next, 2);
	cr_expect_eq(merges, 1);
	put(&a, 4, NULL, "n4");
	put(&a, 2, "", NULL); /* answered, nothing to merge */
	cr_expect_eq(a.next, 5);
	put(&a, 2, "X", NULL); /* a second answer for a slot is ignored */
	cr_assert_eq(pdi_gather_acc_finish(&a, &r), 0);
	cr_expect_eq(r.len, 3);
	cr_expect(!memcmp(r.payload, "ABD", 3));
	cr_expect_eq(merges, 2);
	cr_expect_eq(r.answered, 4);
	cr_expect(r.nmissing == 1 && !strcmp(r.missing[0], "n4"));
	pdi_gather_result_done(&r);
	pdi_gather_acc_done(&a);
}

Test(gather, unfinished_accumulator_is_an_error)
{
	struct pdi_gather_acc a;
	struct pdi_gather_result r;

	cr_assert_eq(pdi_gather_acc_init(&a, &concat_ops, NULL, 2), 0);
	put(&a, 0, "A", NULL);
	cr_expect_eq(pdi_gather_acc_finish(&a, &r), -EINVAL);
	pdi_gather_acc_done(&a);
}

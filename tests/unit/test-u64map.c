/* SPDX-License-Identifier: GPL-2.0-only */
/* test-u64map.c -- the open-addressing u64 -> u32 map: lookups, overwrites, growth. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "u64map.h"

#define ENTRY_BYTES (sizeof(uint64_t) + sizeof(uint32_t))

/* Distinct keys spread over the whole 64-bit range; key_of(0) == 0. */
static uint64_t key_of(uint32_t i)
{
	return (uint64_t)i * 0xD6E8FEB86659FD93ull;
}

Test(u64map, empty_map)
{
	struct pdi_u64map m = {0};

	cr_assert_eq(pdi_u64map_get(&m, 0), PDI_U64MAP_NONE);
	cr_assert_eq(pdi_u64map_get(&m, 12345), PDI_U64MAP_NONE);
	cr_assert_eq(pdi_u64map_bytes(&m), 0);
	pdi_u64map_free(&m); /* freeing an unallocated map is fine */
	cr_assert_eq(m.mask, 0);
}

Test(u64map, key_zero_and_extremes)
{
	struct pdi_u64map m = {0};

	cr_assert_eq(pdi_u64map_put(&m, 0, 7), 0);
	cr_assert_eq(pdi_u64map_get(&m, 0), 7u);
	cr_assert_eq(pdi_u64map_get(&m, 1), PDI_U64MAP_NONE);
	cr_assert_eq(pdi_u64map_put(&m, UINT64_MAX, 0), 0);
	cr_assert_eq(pdi_u64map_put(&m, 1ull << 63, 9), 0);
	cr_assert_eq(pdi_u64map_get(&m, UINT64_MAX), 0u);
	cr_assert_eq(pdi_u64map_get(&m, 1ull << 63), 9u);
	cr_assert_eq(pdi_u64map_get(&m, 0), 7u);
	cr_assert_eq(m.used, 3);
	pdi_u64map_free(&m);
}

Test(u64map, many_keys)
{
	enum { N = 100000 };
	struct pdi_u64map m = {0};
	size_t bytes = 0;
	unsigned growths = 0;

	for (uint32_t i = 0; i < N; i++) {
		cr_assert_eq(pdi_u64map_put(&m, key_of(i), i), 0);
		if (pdi_u64map_bytes(&m) != bytes) {
			cr_assert_gt(pdi_u64map_bytes(&m), bytes, "the map never shrinks");
			bytes = pdi_u64map_bytes(&m);
			growths++;
		}
		/* capacity a power of two, load at most 3/4 */
		cr_assert_eq(m.mask & (m.mask + 1), 0);
		cr_assert_leq((uint64_t)m.used * 4, ((uint64_t)m.mask + 1) * 3);
	}
	cr_assert_eq(m.used, N);
	cr_assert_eq(pdi_u64map_bytes(&m), ((size_t)m.mask + 1) * ENTRY_BYTES);
	cr_assert_geq(pdi_u64map_bytes(&m), (size_t)N * ENTRY_BYTES);
	cr_assert_gt(growths, 10, "16 slots to >= 2^17 is at least 13 doublings, saw %u", growths);

	for (uint32_t i = 0; i < N; i++)
		cr_assert_eq(pdi_u64map_get(&m, key_of(i)), i, "key %u", i);
	cr_assert_eq(pdi_u64map_get(&m, 0), 0u, "key 0 holds value 0");
	/* keys never inserted */
	for (uint32_t i = N; i < 2 * N; i++)
		cr_assert_eq(pdi_u64map_get(&m, key_of(i)), PDI_U64MAP_NONE, "key %u", i);
	for (uint64_t k = 1; k < 1000; k++)
		cr_assert_eq(pdi_u64map_get(&m, k), PDI_U64MAP_NONE);
	pdi_u64map_free(&m);
	cr_assert_eq(pdi_u64map_bytes(&m), 0);
	cr_assert_eq(pdi_u64map_get(&m, key_of(1)), PDI_U64MAP_NONE);
}

Test(u64map, sequential_keys)
{
	/* small consecutive keys, the way site ids and indices look */
	struct pdi_u64map m = {0};

	for (uint32_t i = 0; i < 5000; i++)
		cr_assert_eq(pdi_u64map_put(&m, i, 5000 - i), 0);
	for (uint32_t i = 0; i < 5000; i++)
		cr_assert_eq(pdi_u64map_get(&m, i), 5000 - i);
	cr_assert_eq(pdi_u64map_get(&m, 5000), PDI_U64MAP_NONE);
	pdi_u64map_free(&m);
}

Test(u64map, overwrite)
{
	struct pdi_u64map m = {0};

	for (uint32_t i = 0; i < 100; i++)
		cr_assert_eq(pdi_u64map_put(&m, key_of(i), i), 0);
	for (uint32_t i = 0; i < 100; i += 2)
		cr_assert_eq(pdi_u64map_put(&m, key_of(i), 1000 + i), 0);
	cr_assert_eq(m.used, 100, "overwriting adds no entry");
	for (uint32_t i = 0; i < 100; i++)
		cr_assert_eq(pdi_u64map_get(&m, key_of(i)), i % 2 ? i : 1000 + i);
	/* overwriting the same key many times neither adds entries nor loses it */
	for (uint32_t v = 0; v < 1000; v++)
		cr_assert_eq(pdi_u64map_put(&m, 0, v), 0);
	cr_assert_eq(m.used, 100);
	cr_assert_eq(pdi_u64map_get(&m, 0), 999u);
	pdi_u64map_free(&m);
}

Test(u64map, bytes_grow_with_entries)
{
	struct pdi_u64map m = {0};

	cr_assert_eq(pdi_u64map_put(&m, 1, 1), 0);
	cr_assert_eq(pdi_u64map_bytes(&m), 16 * ENTRY_BYTES, "first allocation is 16 slots");
	for (uint32_t i = 2; i <= 12; i++)
		pdi_u64map_put(&m, i, i);
	cr_assert_eq(pdi_u64map_bytes(&m), 16 * ENTRY_BYTES, "12 entries fit 16 slots at 3/4 load");
	pdi_u64map_put(&m, 13, 13);
	cr_assert_eq(pdi_u64map_bytes(&m), 32 * ENTRY_BYTES, "the 13th doubles the table");
	for (uint32_t i = 1; i <= 13; i++)
		cr_assert_eq(pdi_u64map_get(&m, i), i, "rehash kept key %u", i);
	pdi_u64map_free(&m);
}

Test(u64map, grow_bytes_predicts_growth)
{
	struct pdi_u64map m = {0};

	for (uint32_t i = 0; i < 3000; i++) {
		size_t before = pdi_u64map_bytes(&m), predicted = pdi_u64map_grow_bytes(&m);

		cr_assert_eq(pdi_u64map_put(&m, key_of(i), i), 0);
		cr_assert_eq(pdi_u64map_bytes(&m) - before, predicted, "put %u", i);
	}
	pdi_u64map_free(&m);
}

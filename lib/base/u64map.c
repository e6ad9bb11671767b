/* SPDX-License-Identifier: GPL-2.0-only */
/* u64map.c -- growth of the open-addressing map; lookups are inline in u64map.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"

static void insert_slot(struct pdi_u64map *m, uint64_t key, uint32_t val)
{
	uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mask;

	while (m->vals[i] != PDI_U64MAP_NONE && m->keys[i] != key)
		i = (i + 1) & m->mask;
	if (m->vals[i] == PDI_U64MAP_NONE)
		m->used++;
	m->keys[i] = key;
	m->vals[i] = val;
}

static int grow(struct pdi_u64map *m)
{
	uint32_t cap = m->mask ? (m->mask + 1) * 2 : 16;
	struct pdi_u64map n = {0};

	if (cap == 0) /* wrapped: 2^32 slots */
		return -ENOMEM;
	n.keys = malloc(sizeof(*n.keys) * cap);
	n.vals = malloc(sizeof(*n.vals) * cap);
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	memset(n.vals, 0xff, sizeof(*n.vals) * cap);
	n.mask = cap - 1;
	for (uint32_t i = 0; m->mask && i <= m->mask; i++)
		if (m->vals[i] != PDI_U64MAP_NONE)
			insert_slot(&n, m->keys[i], m->vals[i]);
	pdi_u64map_free(m);
	*m = n;
	return 0;
}

/* Does one more key need a bigger table? The load stays under 3/4 so probe chains stay short. */
static bool full(const struct pdi_u64map *m)
{
	return !m->mask || (m->used + 1) * 4 > (m->mask + 1) * 3;
}

int pdi_u64map_put(struct pdi_u64map *m, uint64_t key, uint32_t val)
{
	if (full(m)) {
		int r = grow(m);
		if (r < 0)
			return r;
	}
	insert_slot(m, key, val);
	return 0;
}

void pdi_u64map_free(struct pdi_u64map *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct pdi_u64map){0};
}

size_t pdi_u64map_bytes(const struct pdi_u64map *m)
{
	return m->mask ? (size_t)(m->mask + 1) * (sizeof(*m->keys) + sizeof(*m->vals)) : 0;
}

size_t pdi_u64map_grow_bytes(const struct pdi_u64map *m)
{
	if (!full(m))
		return 0;
	/* grow() doubles the table, or starts it at 16 slots */
	return m->mask ? pdi_u64map_bytes(m) : 16 * (sizeof(*m->keys) + sizeof(*m->vals));
}

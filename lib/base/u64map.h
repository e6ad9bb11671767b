/* SPDX-License-Identifier: GPL-2.0-only */
/* u64map.h -- open-addressing map from a 64-bit key to a 32-bit index.
 *
 * The model's hot path is "find the state/edge for this key"; the objects themselves
 * live in dense arrays, so the map only stores indices and stays small. No deletion:
 * the model never forgets a state while it lives. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PDI_U64MAP_NONE UINT32_MAX

struct pdi_u64map {
	uint64_t *keys;
	uint32_t *vals; /* PDI_U64MAP_NONE marks an empty slot */
	uint32_t mask;  /* capacity - 1, capacity a power of two; 0 when unallocated */
	uint32_t used;
};

/* The value stored for KEY, or PDI_U64MAP_NONE. */
static inline uint32_t pdi_u64map_get(const struct pdi_u64map *m, uint64_t key)
{
	if (!m->mask)
		return PDI_U64MAP_NONE;
	for (uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mask;;
	     i = (i + 1) & m->mask) {
		if (m->vals[i] == PDI_U64MAP_NONE)
			return PDI_U64MAP_NONE;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

/* A string as a key (FNV-1a): equal strings, equal keys; different ones may collide, so
 * the caller compares what it finds. */
static inline uint64_t pdi_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* Insert or overwrite. 0, or -ENOMEM (the map is unchanged). */
int pdi_u64map_put(struct pdi_u64map *m, uint64_t key, uint32_t val);
void pdi_u64map_free(struct pdi_u64map *m);
size_t pdi_u64map_bytes(const struct pdi_u64map *m);
/* How much pdi_u64map_bytes() grows if a key not in the map is put: 0, or a new table. */
size_t pdi_u64map_grow_bytes(const struct pdi_u64map *m);

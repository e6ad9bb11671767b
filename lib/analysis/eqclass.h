/* SPDX-License-Identifier: GPL-2.0-only */
/* eqclass.h -- tasks with identical models collapsed into equivalence classes, so that
 * what is quadratic in the analyses (HAC, PDI's group pairs) runs over classes, not tasks.
 *
 * A digest is a 64-bit hash of what the analyses read of a model: per phase, in phase
 * order, the state keys with their visits, and the edges by (from key, to key) with their
 * counts and time distributions (Gaussian mean and spread, histogram buckets), and the
 * phase's time held and waiting for a CPU in quarter-seconds (model.h's usage). States and
 * edges hash independently of the order they were first seen in. Phase start and end
 * times, bytes and where the task is now are left out: the first differ between any two
 * tasks, no analysis compares bytes, and positions reach PDI separately.
 *
 * Times are quantized on a relative scale: times that differ by more than TOLERANCE
 * (relative to the smaller) never share a class; closer ones usually do, unless a
 * quantization boundary falls between them. TOLERANCE 0 is exact equality.
 *
 * Two models with equal digests are compared in full before they share a class: a hash
 * collision never merges different models. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "u64map.h"

uint64_t pdi_model_digest(const struct pdi_model *m, double tolerance);

/* Would A and B have equal digests, without relying on the hash: the full comparison. */
bool pdi_model_equivalent(const struct pdi_model *a, const struct pdi_model *b, double tolerance);

struct pdi_eqclass {
	const struct pdi_model *model; /* the representative: the first member's; NULL when keyed */
	uint64_t digest;               /* or the caller's key */
	uint32_t *members;             /* indices of the tasks, in the order they were added */
	uint32_t n, cap;
	uint32_t next; /* next class with the same digest (a collision), or PDI_U64MAP_NONE */
};

struct pdi_eqclasses {
	double tolerance;
	struct pdi_eqclass *classes;
	size_t n, cap;
	struct pdi_u64map by_digest; /* digest -> the first class with it */
};

void pdi_eqclasses_init(struct pdi_eqclasses *c, double tolerance);
void pdi_eqclasses_done(struct pdi_eqclasses *c);

/* Put the N tasks MEMBERS, whose model M has digest DIGEST, into the class of models
 * equivalent to M, or into a new class that M represents (M must outlive C). With M NULL,
 * DIGEST alone is the identity: tasks grouped by a key of the caller's (e.g. a position).
 * This is how classes made on different nodes merge. Returns 1 when a class was made, 0
 * when M joined one, -ENOMEM (C unchanged); *RET_CLASS (may be NULL) gets the class. */
int pdi_eqclass_add(struct pdi_eqclasses *c, const struct pdi_model *m, uint64_t digest, const uint32_t *members,
		    uint32_t n, uint32_t *ret_class);

/* Classes of MODELS[0..N) (members are indices into MODELS), in order of first member. */
int pdi_eqclass_build(const struct pdi_model *const *models, size_t n, double tolerance,
		      struct pdi_eqclasses *ret);

/* Classes of tasks with equal KEYS[0..N) (members are indices into KEYS). */
int pdi_eqclass_by_key(const uint64_t *keys, size_t n, struct pdi_eqclasses *ret);

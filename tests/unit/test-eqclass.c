/* SPDX-License-Identifier: GPL-2.0-only */
/* test-eqclass.c -- digests and equivalence classes: what makes two models one class. */
#include <criterion/criterion.h>

#include "eqclass.h"
#include "model.h"
#include "mpi_funcs.h"

#define PCONTROL 100

struct call_seq {
	const uint32_t *sites; /* PCONTROL marks a phase */
	size_t n;
	uint64_t gap;      /* ns of computation before each call */
	uint64_t duration; /* ns inside each call */
};

static void feed(struct pdi_model *m, const struct call_seq *s)
{
	uint64_t t = 1000;

	for (size_t i = 0; i < s->n; i++) {
		const char *fn = s->sites[i] == PCONTROL ? "MPI_Pcontrol" : "MPI_Send";
		struct pdi_call c = {.site = s->sites[i], .fn = (uint16_t)pdi_mpi_func_find(fn), .peer = PDI_NO_PEER};

		c.t_enter = (t += s->gap);
		c.t_exit = (t += s->duration);
		cr_assert_eq(pdi_model_add_call(m, &c), 0);
	}
}

static void model_of(struct pdi_model *m, const uint32_t *sites, size_t n, uint64_t gap)
{
	pdi_model_init(m, NULL);
	feed(m, &(struct call_seq){sites, n, gap, 1024});
}

/* Classes of the N models M, as each model's class number. */
static size_t classes_of(const struct pdi_model *m, size_t n, double tolerance, uint32_t *ret_class)
{
	const struct pdi_model *mp[8];
	struct pdi_eqclasses c;
	size_t k;

	for (size_t i = 0; i < n; i++)
		mp[i] = &m[i];
	cr_assert_eq(pdi_eqclass_build(mp, n, tolerance, &c), 0);
	for (size_t i = 0; i < c.n; i++) {
		cr_assert_eq(c.classes[i].model, mp[c.classes[i].members[0]], "the first member represents");
		for (uint32_t k = 0; k < c.classes[i].n; k++)
			ret_class[c.classes[i].members[k]] = (uint32_t)i;
	}
	k = c.n;
	pdi_eqclasses_done(&c);
	return k;
}

static const uint32_t loop[] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3};

Test(eqclass, identical_models_collapse)
{
	struct pdi_model m[3];
	uint32_t cls[3];

	for (int i = 0; i < 3; i++)
		model_of(&m[i], loop, 12, 2048);
	cr_assert_eq(pdi_model_digest(&m[0], 0), pdi_model_digest(&m[1], 0));
	cr_assert_eq(classes_of(m, 3, 0, cls), 1);
	for (int i = 0; i < 3; i++)
		pdi_model_done(&m[i]);
}

Test(eqclass, one_more_count_is_another_class)
{
	struct pdi_model m[2];
	uint32_t cls[2];

	model_of(&m[0], loop, 12, 2048);
	model_of(&m[1], loop, 10, 2048); /* one visit of 2 and of 3 fewer */
	cr_assert_eq(classes_of(m, 2, 0.5, cls), 2);
	pdi_model_done(&m[0]);
	pdi_model_done(&m[1]);
}

Test(eqclass, one_other_state_is_another_class)
{
	static const uint32_t other[] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 4};
	struct pdi_model m[2];
	uint32_t cls[2];

	model_of(&m[0], loop, 12, 2048);
	model_of(&m[1], other, 12, 2048);
	cr_assert_eq(classes_of(m, 2, 0.5, cls), 2);
	pdi_model_done(&m[0]);
	pdi_model_done(&m[1]);
}

Test(eqclass, times_collapse_within_the_tolerance_only)
{
	struct pdi_model m[3];
	uint32_t cls[3];

	model_of(&m[0], loop, 12, 2048);
	model_of(&m[1], loop, 12, 2048 + 8);  /* 0.4% */
	model_of(&m[2], loop, 12, 3072);      /* 50% */
	cr_assert_eq(classes_of(m, 3, 0, cls), 3, "tolerance 0 is exact");
	cr_assert_eq(classes_of(m, 3, 0.25, cls), 2);
	cr_assert_eq(cls[0], cls[1]);
	cr_assert_neq(cls[0], cls[2], "50%% apart is beyond a tolerance of 25%%");
	for (int i = 0; i < 3; i++)
		pdi_model_done(&m[i]);
}

Test(eqclass, the_order_states_were_first_seen_in_does_not_matter)
{
	static const uint32_t a[] = {7, 1, 7, 2, 7}, b[] = {7, 2, 7, 1, 7};
	struct pdi_model m[2];
	uint32_t cls[2];

	model_of(&m[0], a, 5, 2048);
	model_of(&m[1], b, 5, 2048);
	cr_assert_neq(m[0].phases[0].states[1].key, m[1].phases[0].states[1].key, "inserted in another order");
	cr_assert_eq(pdi_model_digest(&m[0], 0), pdi_model_digest(&m[1], 0));
	cr_assert_eq(classes_of(m, 2, 0, cls), 1);
	pdi_model_done(&m[0]);
	pdi_model_done(&m[1]);
}

Test(eqclass, the_order_of_phases_matters)
{
	static const uint32_t a[] = {PCONTROL, 1, 2, 1, 2, PCONTROL, 3, 4, 3, 4, PCONTROL};
	static const uint32_t b[] = {PCONTROL, 3, 4, 3, 4, PCONTROL, 1, 2, 1, 2, PCONTROL};
	struct pdi_model m[2];
	uint32_t cls[2];

	model_of(&m[0], a, 11, 2048);
	model_of(&m[1], b, 11, 2048);
	cr_assert_eq(m[0].nphases, 3);
	cr_assert_eq(classes_of(m, 2, 0, cls), 2);
	pdi_model_done(&m[0]);
	pdi_model_done(&m[1]);
}

Test(eqclass, empty_models_and_no_models)
{
	struct pdi_model m[3];
	struct pdi_eqclasses c;
	uint32_t cls[3];

	pdi_model_init(&m[0], NULL);
	pdi_model_init(&m[1], NULL);
	model_of(&m[2], loop, 12, 2048);
	cr_assert_eq(classes_of(m, 3, 0, cls), 2);
	cr_assert_eq(cls[0], cls[1]);
	cr_assert_eq(pdi_eqclass_build(NULL, 0, 0, &c), 0);
	cr_assert_eq(c.n, 0);
	pdi_eqclasses_done(&c);
	for (int i = 0; i < 3; i++)
		pdi_model_done(&m[i]);
}

Test(eqclass, one_task_is_one_class)
{
	struct pdi_model m;
	const struct pdi_model *mp = &m;
	struct pdi_eqclasses c;

	model_of(&m, loop, 12, 2048);
	cr_assert_eq(pdi_eqclass_build(&mp, 1, 0, &c), 0);
	cr_assert_eq(c.n, 1);
	cr_assert_eq(c.classes[0].n, 1);
	cr_assert_eq(c.classes[0].members[0], 0);
	cr_assert_eq(c.classes[0].model, &m);
	pdi_eqclasses_done(&c);
	pdi_model_done(&m);
}

Test(eqclass, a_hash_collision_never_merges)
{
	struct pdi_model m[3];
	struct pdi_eqclasses c;
	uint32_t cls[3], task[3] = {0, 1, 2};

	model_of(&m[0], loop, 12, 2048);
	model_of(&m[1], loop, 12, 3072);
	model_of(&m[2], loop, 12, 3072);
	pdi_eqclasses_init(&c, 0);
	/* the same made-up digest for all three */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pdi_eqclass_add(&c, &m[i], 42, &task[i], 1, &cls[i]), i < 2);
	cr_assert_eq(c.n, 2);
	cr_assert_neq(cls[0], cls[1]);
	cr_assert_eq(cls[1], cls[2]);
	cr_assert_eq(c.classes[cls[1]].n, 2);
	pdi_eqclasses_done(&c);
	for (int i = 0; i < 3; i++)
		pdi_model_done(&m[i]);
}

Test(eqclass, classes_of_two_nodes_merge)
{
	struct pdi_model node_a, node_b;
	struct pdi_eqclasses root;
	uint32_t on_a[] = {0, 1, 2}, on_b[] = {3, 4};

	model_of(&node_a, loop, 12, 2048);
	model_of(&node_b, loop, 12, 2048);
	pdi_eqclasses_init(&root, 0);
	cr_assert_eq(pdi_eqclass_add(&root, &node_a, pdi_model_digest(&node_a, 0), on_a, 3, NULL), 1);
	cr_assert_eq(pdi_eqclass_add(&root, &node_b, pdi_model_digest(&node_b, 0), on_b, 2, NULL), 0,
		     "node b's representative is not needed any more");
	cr_assert_eq(root.n, 1);
	cr_assert_eq(root.classes[0].n, 5);
	cr_assert_eq(root.classes[0].members[4], 4);
	pdi_eqclasses_done(&root);
	pdi_model_done(&node_a);
	pdi_model_done(&node_b);
}

Test(eqclass, tasks_grouped_by_a_key)
{
	static const uint64_t keys[] = {5, 7, 5, 5, 9};
	struct pdi_eqclasses c;

	cr_assert_eq(pdi_eqclass_by_key(keys, 5, &c), 0);
	cr_assert_eq(c.n, 3);
	cr_assert_eq(c.classes[0].n, 3);
	cr_assert_eq(c.classes[0].members[2], 3);
	cr_assert_eq(c.classes[1].members[0], 1);
	cr_assert_eq(c.classes[2].members[0], 4);
	cr_assert_null(c.classes[0].model);
	pdi_eqclasses_done(&c);
}

/* Call timings alike, but one task was held 2 s in its phase (stopped inside MPI while the
 * others waited for it in the same call): another class. Held 0.1 s more: the same. */
Test(eqclass, time_held_by_the_kernel_makes_another_class)
{
	struct pdi_model m[3];
	uint32_t cls[3];
	static const uint64_t held_ns[3] = {0, 100000000, 2000000000};

	for (int i = 0; i < 3; i++) {
		model_of(&m[i], loop, sizeof(loop) / sizeof(loop[0]), 4096);
		pdi_model_usage_add(&m[i], &(struct pdi_usage){.at_ns = 1});
		pdi_model_usage_add(&m[i], &(struct pdi_usage){.at_ns = 3000000001, .cpu_ns = 3000000000 - held_ns[i]});
	}
	cr_expect_eq(classes_of(m, 3, 0.05, cls), 2);
	cr_expect_eq(cls[0], cls[1]);
	cr_expect_neq(cls[0], cls[2]);
	for (int i = 0; i < 3; i++)
		pdi_model_done(&m[i]);
}

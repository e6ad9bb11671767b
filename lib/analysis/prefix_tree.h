/* SPDX-License-Identifier: GPL-2.0-only */
/* prefix_tree.h -- STAT's call graph prefix tree: the tasks' current call paths merged into one
 * tree whose nodes carry the set of tasks that passed through them, printed as rank ranges.
 *
 * Each node keeps only its own sorted rank list, never a bit vector sized for the whole job
 * (STAT V.B), so that a daemon holds only its own tasks and a parent daemon merges its
 * children's trees by merging sorted lists. Children are ordered by relative progress
 * (STAT-TO sec. 3) taken from visit counts: see pdi_ptree_finish(). Pure C, no I/O. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

/* The frame of the root, which every task passes through (STAT draws it as "/"). */
#define PDI_PTREE_ROOT "/"

struct pdi_ptree_node {
	const char *frame;   /* owned by the tree; PDI_PTREE_ROOT at the root */
	int *ranks;          /* the tasks here, sorted, no duplicates (after pdi_ptree_finish()) */
	size_t nranks;
	uint64_t progress_min; /* smallest progress among the tasks here: the least progressed */
	uint64_t progress_max;
	struct pdi_ptree_node **children; /* in progress order (after pdi_ptree_finish()) */
	size_t nchildren;
	/* private */
	size_t cap_ranks, cap_children;
	uint32_t id;
	bool ranks_sorted;
};

struct pdi_ptree;

int pdi_ptree_new(struct pdi_ptree **ret);
/* NULL ok. */
void pdi_ptree_free(struct pdi_ptree *t);

/* Add the task RANK whose current call path is FRAMES[0..N) (outermost first, e.g. "main",
 * "solve@solver.c:88", "MPI_Allreduce@solver.c:91"); PROGRESS is its visit count of its current
 * state: larger is further along. The strings are copied (once per distinct string). Adding a
 * rank twice on different paths (threads) lists it on both. -ENOMEM leaves at most nodes
 * without tasks behind, which nothing shows. */
int pdi_ptree_add(struct pdi_ptree *t, int rank, const char *const *frames, size_t n,
		  uint64_t progress);

/* Add every task of SRC to DST, as a parent daemon does with its children's trees: the rank
 * lists are merged in order. SRC is not changed except that pdi_ptree_finish() is applied to
 * it. The result is the tree built from the union of both trees' tasks. -ENOMEM leaves DST
 * holding part of SRC. */
int pdi_ptree_merge(struct pdi_ptree *dst, struct pdi_ptree *src);

/* Put rank lists and children in order. Children go least progressed first (by
 * progress_min, ties by frame name): in a hang the task behind all the others is the one to
 * look at (STAT-TO sec. 3), and following the first child from the root leads to it. Called
 * by pdi_ptree_root() and the renderers; cannot fail. */
void pdi_ptree_finish(struct pdi_ptree *t);

/* The root, finished; its nranks is the number of distinct tasks in the tree. */
const struct pdi_ptree_node *pdi_ptree_root(struct pdi_ptree *t);
/* How many nodes the tree has, the root included. */
size_t pdi_ptree_nodes(const struct pdi_ptree *t);

/* Renderers append to OUT (the JSON writer doubles as a text builder) and return 0, or
 * -ENOMEM when OUT failed. Nodes without tasks are left out. */

/* One line per node below the root, indented two spaces per level, like STAT's output:
 * "solve@solver.c:88  [0-3,5,7-9] (8 tasks)". */
int pdi_ptree_render_text(struct pdi_ptree *t, struct pdi_json *out);
/* One JSON value, the root: {"frame": "/", "ranks": "[0-3]", "count": 4, "progress": MIN,
 * "progress_max": MAX, "children": [...]}; "children" is left out at leaves. */
int pdi_ptree_render_json(struct pdi_ptree *t, struct pdi_json *out);
/* A Graphviz digraph; each node labelled with its frame, rank ranges and task count. */
int pdi_ptree_render_dot(struct pdi_ptree *t, struct pdi_json *out);

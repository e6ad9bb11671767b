/* SPDX-License-Identifier: GPL-2.0-only */
/* test-prefix-tree.c -- the merged call path prefix tree: merging, ranges, order, renderers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefix_tree.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const hung[] = {"main", "solve@solver.c:88", "MPI_Allreduce@solver.c:91"};
static const char *const stuck[] = {"main", "solve@solver.c:88", "norm@solver.c:60", "MPI_Recv@solver.c:40"};
static const char *const io[] = {"main", "write_out@io.c:12", "MPI_File_write@io.c:20"};

static struct pdi_ptree *tree(void)
{
	struct pdi_ptree *t;

	cr_assert_eq(pdi_ptree_new(&t), 0);
	return t;
}

static char *render(struct pdi_ptree *t, int (*fn)(struct pdi_ptree *, struct pdi_json *))
{
	struct pdi_json j;
	char *s;

	pdi_json_init(&j);
	cr_assert_eq(fn(t, &j), 0);
	s = pdi_json_steal(&j);
	cr_assert_not_null(s);
	return s;
}

static const struct pdi_ptree_node *child(const struct pdi_ptree_node *n, const char *frame)
{
	for (size_t i = 0; i < n->nchildren; i++)
		if (!strcmp(n->children[i]->frame, frame))
			return n->children[i];
	return NULL;
}

/* The ranks of a node as text */
static const char *ranks(const struct pdi_ptree_node *n)
{
	static char buf[256];
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n->nranks; i++)
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%d", i ? "," : "", n->ranks[i]);
	return buf;
}

/* 8 ranks: 3 stuck in norm's MPI_Recv, 0-2,4-7 minus 5 in the Allreduce, 5 writing */
static struct pdi_ptree *sample(void)
{
	struct pdi_ptree *t = tree();

	for (int r = 7; r >= 0; r--) {
		if (r == 3)
			cr_assert_eq(pdi_ptree_add(t, r, stuck, N(stuck), 41), 0);
		else if (r == 5)
			cr_assert_eq(pdi_ptree_add(t, r, io, N(io), 50), 0);
		else
			cr_assert_eq(pdi_ptree_add(t, r, hung, N(hung), 42), 0);
	}
	return t;
}

Test(prefix_tree, shared_prefixes_merge_into_one_node)
{
	struct pdi_ptree *t = sample();
	const struct pdi_ptree_node *root = pdi_ptree_root(t), *main_, *solve;

	cr_assert_str_eq(root->frame, PDI_PTREE_ROOT);
	cr_assert_eq(root->nranks, 8);
	cr_assert_eq(root->nchildren, 1);
	main_ = child(root, "main");
	cr_assert_not_null(main_);
	cr_assert_eq(main_->nranks, 8);
	cr_assert_eq(main_->nchildren, 2);
	solve = child(main_, "solve@solver.c:88");
	cr_assert_str_eq(ranks(solve), "0,1,2,3,4,6,7");
	cr_assert_str_eq(ranks(child(solve, "MPI_Allreduce@solver.c:91")), "0,1,2,4,6,7");
	cr_assert_str_eq(ranks(child(child(solve, "norm@solver.c:60"), "MPI_Recv@solver.c:40")), "3");
	cr_assert_str_eq(ranks(child(main_, "write_out@io.c:12")), "5");
	/* root, main, solve, allreduce, norm, recv, write_out, file_write */
	cr_assert_eq(pdi_ptree_nodes(t), 8);
	pdi_ptree_free(t);
}

Test(prefix_tree, least_progressed_child_first_then_by_name)
{
	struct pdi_ptree *t = sample();
	const struct pdi_ptree_node *main_ = pdi_ptree_root(t)->children[0], *solve;

	/* solve holds rank 3 at 41: before write_out at 50 */
	cr_assert_str_eq(main_->children[0]->frame, "solve@solver.c:88");
	cr_assert_eq(main_->children[0]->progress_min, 41);
	cr_assert_eq(main_->children[0]->progress_max, 42);
	solve = main_->children[0];
	cr_assert_str_eq(solve->children[0]->frame, "norm@solver.c:60");
	cr_assert_str_eq(solve->children[1]->frame, "MPI_Allreduce@solver.c:91");
	pdi_ptree_free(t);

	/* equal progress: by name */
	t = tree();
	cr_assert_eq(pdi_ptree_add(t, 0, (const char *[]){"b"}, 1, 7), 0);
	cr_assert_eq(pdi_ptree_add(t, 1, (const char *[]){"a"}, 1, 7), 0);
	cr_assert_eq(pdi_ptree_add(t, 2, (const char *[]){"c"}, 1, 3), 0);
	cr_assert_str_eq(pdi_ptree_root(t)->children[0]->frame, "c");
	cr_assert_str_eq(pdi_ptree_root(t)->children[1]->frame, "a");
	cr_assert_str_eq(pdi_ptree_root(t)->children[2]->frame, "b");
	pdi_ptree_free(t);
}

Test(prefix_tree, text_shows_rank_ranges_indented)
{
	struct pdi_ptree *t = sample();
	char *s = render(t, pdi_ptree_render_text);

	cr_assert_str_eq(s, "main  [0-7] (8 tasks)\n"
			    "  solve@solver.c:88  [0-4,6-7] (7 tasks)\n"
			    "    norm@solver.c:60  [3] (1 task)\n"
			    "      MPI_Recv@solver.c:40  [3] (1 task)\n"
			    "    MPI_Allreduce@solver.c:91  [0-2,4,6-7] (6 tasks)\n"
			    "  write_out@io.c:12  [5] (1 task)\n"
			    "    MPI_File_write@io.c:20  [5] (1 task)\n");
	free(s);
	pdi_ptree_free(t);
}

Test(prefix_tree, json_nests_children)
{
	struct pdi_ptree *t = tree();
	char *s;

	cr_assert_eq(pdi_ptree_add(t, 1, (const char *[]){"main", "MPI_Barrier@a.c:3"}, 2, 5), 0);
	cr_assert_eq(pdi_ptree_add(t, 0, (const char *[]){"main", "MPI_Barrier@a.c:3"}, 2, 4), 0);
	s = render(t, pdi_ptree_render_json);
	cr_assert_str_eq(s, "{\"frame\":\"/\",\"ranks\":\"[0-1]\",\"count\":2,\"progress\":4,\"progress_max\":5,"
			    "\"children\":[{\"frame\":\"main\",\"ranks\":\"[0-1]\",\"count\":2,\"progress\":4,\"progress_max\":5,"
			    "\"children\":[{\"frame\":\"MPI_Barrier@a.c:3\",\"ranks\":\"[0-1]\",\"count\":2,"
			    "\"progress\":4,\"progress_max\":5}]}]}");
	free(s);
	pdi_ptree_free(t);
}

/* Deeper than pdi_json's nesting limit: still one valid document, inside an enclosing one. */
Test(prefix_tree, json_of_a_deep_stack)
{
	struct pdi_ptree *t = tree();
	const char *frames[60];
	char names[60][8], *s;
	struct pdi_json j;
	int opens = 0, closes = 0;

	for (int i = 0; i < 60; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		frames[i] = names[i];
	}
	cr_assert_eq(pdi_ptree_add(t, 0, frames, 60, 1), 0);
	pdi_json_init(&j);
	pdi_json_obj_begin(&j);
	pdi_json_key(&j, "tree");
	cr_assert_eq(pdi_ptree_render_json(t, &j), 0);
	pdi_json_kv_int(&j, "after", 1);
	pdi_json_obj_end(&j);
	s = pdi_json_steal(&j);
	cr_assert_not_null(s);
	for (char *p = s; *p; p++) {
		opens += *p == '{' || *p == '[';
		closes += *p == '}' || *p == ']';
	}
	cr_assert_eq(opens, closes);
	cr_assert_eq(opens, 1 + 61 + 60 + 61); /* the document, 61 nodes, 60 children arrays, 61 "[0]" */
	cr_assert(strstr(s, "\"frame\":\"f59\",\"ranks\":\"[0]\""));
	cr_assert(strstr(s, "}]}]}]},\"after\":1}"));
	free(s);
	pdi_ptree_free(t);
}

Test(prefix_tree, dot_labels_frames_and_ranges)
{
	struct pdi_ptree *t = tree();
	char *s;

	cr_assert_eq(pdi_ptree_add(t, 2, (const char *[]){"main", "say \"hi\""}, 2, 1), 0);
	cr_assert_eq(pdi_ptree_add(t, 3, (const char *[]){"main"}, 1, 1), 0);
	s = render(t, pdi_ptree_render_dot);
	cr_assert_str_eq(s, "digraph prefix_tree {\n"
			    "\tnode [shape=box, fontname=\"monospace\"];\n"
			    "\tn0 [label=\"/\\n[2-3] (2 tasks)\"];\n"
			    "\tn0 -> n1;\n"
			    "\tn1 [label=\"main\\n[2-3] (2 tasks)\"];\n"
			    "\tn1 -> n2;\n"
			    "\tn2 [label=\"say \\\"hi\\\"\\n[2] (1 task)\"];\n"
			    "}\n");
	free(s);
	pdi_ptree_free(t);
}

Test(prefix_tree, empty_tree)
{
	struct pdi_ptree *t = tree();
	char *s;

	cr_assert_eq(pdi_ptree_root(t)->nranks, 0);
	cr_assert_eq(pdi_ptree_root(t)->nchildren, 0);
	s = render(t, pdi_ptree_render_text);
	cr_assert_str_eq(s, "");
	free(s);
	s = render(t, pdi_ptree_render_json);
	cr_assert_str_eq(s, "{\"frame\":\"/\",\"ranks\":\"[]\",\"count\":0,\"progress\":0,\"progress_max\":0}");
	free(s);
	pdi_ptree_free(t);
	pdi_ptree_free(NULL);
}

Test(prefix_tree, one_task)
{
	struct pdi_ptree *t = tree();
	char *s;

	cr_assert_eq(pdi_ptree_add(t, 12, hung, N(hung), 9), 0);
	s = render(t, pdi_ptree_render_text);
	cr_assert_str_eq(s, "main  [12] (1 task)\n"
			    "  solve@solver.c:88  [12] (1 task)\n"
			    "    MPI_Allreduce@solver.c:91  [12] (1 task)\n");
	free(s);
	pdi_ptree_free(t);
}

Test(prefix_tree, a_task_on_two_paths_and_twice_on_one)
{
	struct pdi_ptree *t = tree();
	const struct pdi_ptree_node *root;

	cr_assert_eq(pdi_ptree_add(t, 4, hung, N(hung), 1), 0);
	cr_assert_eq(pdi_ptree_add(t, 4, io, N(io), 1), 0); /* a second thread */
	cr_assert_eq(pdi_ptree_add(t, 1, hung, N(hung), 1), 0);
	cr_assert_eq(pdi_ptree_add(t, 4, hung, N(hung), 1), 0);
	root = pdi_ptree_root(t);
	cr_assert_str_eq(ranks(root), "1,4");
	cr_assert_str_eq(ranks(child(root->children[0], "write_out@io.c:12")), "4");
	cr_assert_str_eq(ranks(child(root->children[0], "solve@solver.c:88")), "1,4");
	pdi_ptree_free(t);
}

/* Render both to compare trees whole: the renderers show everything a user sees. */
static void assert_same(struct pdi_ptree *a, struct pdi_ptree *b)
{
	char *x = render(a, pdi_ptree_render_json), *y = render(b, pdi_ptree_render_json);

	cr_assert_str_eq(x, y);
	free(x);
	free(y);
}

static const char *const *path_of(int rank, size_t *n, uint64_t *progress)
{
	switch (rank % 5) {
	case 0:
		*n = N(stuck);
		*progress = 10 + (uint64_t)rank % 3;
		return stuck;
	case 1:
	case 2:
		*n = N(io);
		*progress = 20;
		return io;
	default:
		*n = N(hung);
		*progress = 30 + (uint64_t)rank % 7;
		return hung;
	}
}

static void add_rank(struct pdi_ptree *t, int rank)
{
	const char *const *p;
	uint64_t progress;
	size_t n;

	p = path_of(rank, &n, &progress);
	cr_assert_eq(pdi_ptree_add(t, rank, p, n, progress), 0);
}

Test(prefix_tree, merging_trees_equals_building_from_the_union)
{
	struct pdi_ptree *whole = tree(), *a = tree(), *b = tree(), *c = tree();

	for (int r = 0; r < 64; r++) {
		add_rank(whole, r);
		/* interleaved (round-robin placement) and contiguous (block placement) daemons */
		add_rank(r % 2 ? a : b, r);
	}
	for (int r = 63; r >= 0; r--)
		if (r % 2 == 0)
			add_rank(c, r);
	cr_assert_eq(pdi_ptree_merge(a, b), 0);
	assert_same(a, whole);
	/* merging ranks already there changes nothing */
	cr_assert_eq(pdi_ptree_merge(a, c), 0);
	assert_same(a, whole);
	pdi_ptree_free(a);
	pdi_ptree_free(b);
	pdi_ptree_free(c);

	/* contiguous blocks, merged in reverse order, into an empty tree */
	a = tree();
	b = tree();
	c = tree();
	for (int r = 0; r < 64; r++)
		add_rank(r < 32 ? a : b, r);
	cr_assert_eq(pdi_ptree_merge(c, b), 0);
	cr_assert_eq(pdi_ptree_merge(c, a), 0);
	assert_same(c, whole);
	cr_assert_eq(pdi_ptree_root(a)->nranks, 32); /* the source is left as it was */
	pdi_ptree_free(a);
	pdi_ptree_free(b);
	pdi_ptree_free(c);
	pdi_ptree_free(whole);
}

/* 100,000 tasks on a few dozen distinct 10-frame paths: must stay interactive. */
Test(prefix_tree, a_hundred_thousand_tasks)
{
	struct pdi_ptree *t = tree(), *u = tree();
	char names[40][10][48];
	const char *paths[40][10];
	const struct pdi_ptree_node *root;
	char *s;

	for (int p = 0; p < 40; p++)
		for (int f = 0; f < 10; f++) {
			/* paths share prefixes: frame f of path p depends on p's first f bits */
			snprintf(names[p][f], sizeof(names[p][f]), "func%d_%d@file%d.c:%d", f, p & ((1 << f) - 1), f,
				 100 + f);
			paths[p][f] = names[p][f];
		}
	for (int r = 0; r < 100000; r++) {
		int p = (int)(((unsigned)r * 2654435761u) >> 8) % 40;

		cr_assert_eq(pdi_ptree_add(r < 50000 ? t : u, r, paths[p], 10, (uint64_t)(r % 97)), 0);
	}
	cr_assert_eq(pdi_ptree_merge(t, u), 0);
	root = pdi_ptree_root(t);
	cr_assert_eq(root->nranks, 100000);
	cr_assert_eq(root->ranks[0], 0);
	cr_assert_eq(root->ranks[99999], 99999);
	s = render(t, pdi_ptree_render_text);
	cr_assert(strlen(s) > 0);
	free(s);
	pdi_ptree_free(t);
	pdi_ptree_free(u);
}

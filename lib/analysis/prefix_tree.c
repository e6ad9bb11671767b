/* SPDX-License-Identifier: GPL-2.0-only */
/* prefix_tree.c -- the merged call path prefix tree (STAT), its merge and its renderers.
 *
 * A job has many tasks but few distinct paths, so the work per frame must be a couple of
 * hash lookups: frame strings are interned once per tree, and a node's child is found by
 * (parent, frame) in one tree-wide map rather than by scanning sibling names. Rank lists are
 * appended unsorted and put in order once, when the tree is read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prefix_tree.h"
#include "ranges.h"
#include "u64map.h"

struct pdi_ptree {
	struct pdi_ptree_node **nodes; /* by id; nodes[0] is the root */
	size_t nnodes, cap_nodes;
	char **strs;                   /* interned frames, by id */
	size_t nstrs, cap_strs;
	struct pdi_u64map str_idx;     /* string hash (rehashed past collisions) -> strs index */
	struct pdi_u64map child_idx;   /* parent id << 32 | frame id -> node id */
	struct pdi_ptree_node **path;  /* scratch: the nodes of the path being added */
	size_t cap_path;
	bool dirty;                    /* something was added since pdi_ptree_finish() */
};

/* Make room for NEED elements of SIZE bytes in *V. */
static int reserve(void *v, size_t *cap, size_t need, size_t size)
{
	void **p = v;
	size_t ncap = *cap ? *cap : 4;
	void *nv;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	nv = realloc(*p, ncap * size);
	if (!nv)
		return -ENOMEM;
	*p = nv;
	*cap = ncap;
	return 0;
}

static uint64_t rehash(uint64_t h)
{
	h = (h + 0x9E3779B97F4A7C15ull) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* The id of string S in T, added if new. A 64-bit hash taken by another string moves on to
 * the next hash of the same sequence, so lookups retrace insertions exactly. */
static int intern(struct pdi_ptree *t, const char *s, uint32_t *ret)
{
	for (uint64_t h = pdi_hash_str(s);; h = rehash(h)) {
		uint32_t i = pdi_u64map_get(&t->str_idx, h);
		char *copy;

		if (i != PDI_U64MAP_NONE) {
			if (strcmp(t->strs[i], s))
				continue;
			*ret = i;
			return 0;
		}
		if (t->nstrs >= UINT32_MAX - 1 || reserve(&t->strs, &t->cap_strs, t->nstrs + 1, sizeof(*t->strs)) < 0)
			return -ENOMEM;
		copy = strdup(s);
		if (!copy || pdi_u64map_put(&t->str_idx, h, (uint32_t)t->nstrs) < 0) {
			free(copy);
			return -ENOMEM;
		}
		t->strs[t->nstrs] = copy;
		*ret = (uint32_t)t->nstrs++;
		return 0;
	}
}

static int new_node(struct pdi_ptree *t, uint32_t frame, struct pdi_ptree_node **ret)
{
	struct pdi_ptree_node *n;

	if (t->nnodes >= UINT32_MAX - 1 || reserve(&t->nodes, &t->cap_nodes, t->nnodes + 1, sizeof(*t->nodes)) < 0)
		return -ENOMEM;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->frame = t->strs[frame];
	n->id = (uint32_t)t->nnodes;
	n->ranks_sorted = true;
	t->nodes[t->nnodes++] = n;
	*ret = n;
	return 0;
}

/* PARENT's child named by frame id FRAME, created if new. */
static int get_child(struct pdi_ptree *t, struct pdi_ptree_node *parent, uint32_t frame,
		     struct pdi_ptree_node **ret)
{
	uint64_t key = (uint64_t)parent->id << 32 | frame;
	uint32_t i = pdi_u64map_get(&t->child_idx, key);
	struct pdi_ptree_node *c;
	int r;

	if (i != PDI_U64MAP_NONE) {
		*ret = t->nodes[i];
		return 0;
	}
	r = reserve(&parent->children, &parent->cap_children, parent->nchildren + 1,
		    sizeof(*parent->children));
	if (r < 0)
		return r;
	r = new_node(t, frame, &c);
	if (r < 0)
		return r;
	r = pdi_u64map_put(&t->child_idx, key, c->id);
	if (r < 0)
		return r; /* C stays an orphan in nodes[], freed with the tree */
	parent->children[parent->nchildren++] = c;
	t->dirty = true;
	*ret = c;
	return 0;
}

static void add_progress(struct pdi_ptree_node *n, bool first, uint64_t min, uint64_t max)
{
	if (first || min < n->progress_min)
		n->progress_min = min;
	if (first || max > n->progress_max)
		n->progress_max = max;
}

/* Append RANK, room for it having been made. */
static void append_rank(struct pdi_ptree_node *n, int rank, uint64_t progress)
{
	bool first = n->nranks == 0;

	add_progress(n, first, progress, progress);
	if (!first && rank == n->ranks[n->nranks - 1])
		return;
	if (!first && rank < n->ranks[n->nranks - 1])
		n->ranks_sorted = false;
	n->ranks[n->nranks++] = rank;
}

int pdi_ptree_new(struct pdi_ptree **ret)
{
	struct pdi_ptree *t = calloc(1, sizeof(*t));
	struct pdi_ptree_node *root;
	uint32_t frame;

	if (!t)
		return -ENOMEM;
	if (intern(t, PDI_PTREE_ROOT, &frame) < 0 || new_node(t, frame, &root) < 0) {
		pdi_ptree_free(t);
		return -ENOMEM;
	}
	*ret = t;
	return 0;
}

void pdi_ptree_free(struct pdi_ptree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nnodes; i++) {
		free(t->nodes[i]->ranks);
		free(t->nodes[i]->children);
		free(t->nodes[i]);
	}
	for (size_t i = 0; i < t->nstrs; i++)
		free(t->strs[i]);
	free(t->nodes);
	free(t->strs);
	free(t->path);
	pdi_u64map_free(&t->str_idx);
	pdi_u64map_free(&t->child_idx);
	free(t);
}

/* Most nodes of a call path tree have one or two children: comparing their names costs less
 * than hashing the frame. NULL when not found among a few. */
static struct pdi_ptree_node *few_children_find(const struct pdi_ptree_node *n, const char *frame)
{
	if (n->nchildren > 4)
		return NULL;
	for (size_t i = 0; i < n->nchildren; i++)
		if (!strcmp(n->children[i]->frame, frame))
			return n->children[i];
	return NULL;
}

/* First find every node of the path and make room for the rank in each, then append: a
 * failure half way leaves no node with only part of a task. */
int pdi_ptree_add(struct pdi_ptree *t, int rank, const char *const *frames, size_t n,
		  uint64_t progress)
{
	int r = reserve(&t->path, &t->cap_path, n + 1, sizeof(*t->path));

	if (r < 0)
		return r;
	t->path[0] = t->nodes[0];
	for (size_t i = 0; i <= n; i++) {
		struct pdi_ptree_node *node;
		uint32_t frame;

		if (i > 0 && !(t->path[i] = few_children_find(t->path[i - 1], frames[i - 1]))) {
			r = intern(t, frames[i - 1], &frame);
			if (r < 0)
				return r;
			r = get_child(t, t->path[i - 1], frame, &t->path[i]);
			if (r < 0)
				return r;
		}
		node = t->path[i];
		r = reserve(&node->ranks, &node->cap_ranks, node->nranks + 1, sizeof(*node->ranks));
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i <= n; i++)
		append_rank(t->path[i], rank, progress);
	t->dirty = true;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static void sort_ranks(struct pdi_ptree_node *n)
{
	size_t k = 0;

	if (n->ranks_sorted)
		return;
	qsort(n->ranks, n->nranks, sizeof(*n->ranks), cmp_int);
	for (size_t i = 0; i < n->nranks; i++)
		if (!k || n->ranks[i] != n->ranks[k - 1])
			n->ranks[k++] = n->ranks[i];
	n->nranks = k;
	n->ranks_sorted = true;
}

/* Relative progress (STAT-TO sec. 3): a subtree is as far along as its least progressed
 * task, and the least progressed goes first. */
static int cmp_progress(const void *a, const void *b)
{
	const struct pdi_ptree_node *x = *(const struct pdi_ptree_node *const *)a;
	const struct pdi_ptree_node *y = *(const struct pdi_ptree_node *const *)b;

	if (x->progress_min != y->progress_min)
		return x->progress_min < y->progress_min ? -1 : 1;
	return strcmp(x->frame, y->frame);
}

void pdi_ptree_finish(struct pdi_ptree *t)
{
	if (!t->dirty)
		return;
	for (size_t i = 0; i < t->nnodes; i++) {
		struct pdi_ptree_node *n = t->nodes[i];

		sort_ranks(n);
		if (n->nchildren > 1)
			qsort(n->children, n->nchildren, sizeof(*n->children), cmp_progress);
	}
	t->dirty = false;
}

const struct pdi_ptree_node *pdi_ptree_root(struct pdi_ptree *t)
{
	pdi_ptree_finish(t);
	return t->nodes[0];
}

size_t pdi_ptree_nodes(const struct pdi_ptree *t)
{
	return t->nnodes;
}

/* D's ranks merged with S's; both sorted. Ranks of disjoint daemons usually follow each
 * other, which is a plain append. */
static int merge_ranks(struct pdi_ptree_node *d, const struct pdi_ptree_node *s)
{
	size_t need = d->nranks + s->nranks, i = 0, j = 0, k = 0;
	int *m;

	if (!s->nranks)
		return 0;
	add_progress(d, d->nranks == 0, s->progress_min, s->progress_max);
	if (!d->nranks || s->ranks[0] > d->ranks[d->nranks - 1]) {
		if (reserve(&d->ranks, &d->cap_ranks, need, sizeof(*d->ranks)) < 0)
			return -ENOMEM;
		memcpy(d->ranks + d->nranks, s->ranks, s->nranks * sizeof(*s->ranks));
		d->nranks = need;
		return 0;
	}
	m = malloc(need * sizeof(*m));
	if (!m)
		return -ENOMEM;
	while (i < d->nranks || j < s->nranks) {
		int v = j >= s->nranks || (i < d->nranks && d->ranks[i] <= s->ranks[j]) ? d->ranks[i++] : s->ranks[j++];

		if (!k || m[k - 1] != v)
			m[k++] = v;
	}
	free(d->ranks);
	d->ranks = m;
	d->nranks = k;
	d->cap_ranks = need;
	return 0;
}

static int merge_node(struct pdi_ptree *dst, struct pdi_ptree_node *d, const struct pdi_ptree_node *s)
{
	int r = merge_ranks(d, s);

	for (size_t i = 0; r == 0 && i < s->nchildren; i++) {
		struct pdi_ptree_node *dc;
		uint32_t frame;

		if (!s->children[i]->nranks)
			continue;
		r = intern(dst, s->children[i]->frame, &frame);
		if (r == 0)
			r = get_child(dst, d, frame, &dc);
		if (r == 0)
			r = merge_node(dst, dc, s->children[i]);
	}
	return r;
}

int pdi_ptree_merge(struct pdi_ptree *dst, struct pdi_ptree *src)
{
	pdi_ptree_finish(src);
	pdi_ptree_finish(dst);
	dst->dirty = true; /* new children need ordering */
	return merge_node(dst, dst->nodes[0], src->nodes[0]);
}

/* ---- renderers ---- */

/* N's ranks as "[a-b,c]": in BUF when they fit, else malloc'd (free it when not BUF). */
static char *ranks_text(const struct pdi_ptree_node *n, char *buf, size_t len)
{
	size_t need = pdi_ranges_format(n->ranks, n->nranks, buf, len);
	char *big;

	if (need < len)
		return buf;
	big = malloc(need + 1);
	if (big)
		pdi_ranges_format(n->ranks, n->nranks, big, need + 1);
	return big;
}

static int text_node(struct pdi_json *out, const struct pdi_ptree_node *n, int depth)
{
	for (size_t i = 0; i < n->nchildren; i++) {
		const struct pdi_ptree_node *c = n->children[i];
		char buf[256], *ranks;
		int r;

		if (!c->nranks)
			continue;
		ranks = ranks_text(c, buf, sizeof(buf));
		if (!ranks)
			return -ENOMEM;
		pdi_json_printf(out, "%*s%s  %s (%zu task%s)\n", depth * 2, "", c->frame, ranks, c->nranks,
				c->nranks == 1 ? "" : "s");
		if (ranks != buf)
			free(ranks);
		r = text_node(out, c, depth + 1);
		if (r < 0)
			return r;
	}
	return 0;
}

int pdi_ptree_render_text(struct pdi_ptree *t, struct pdi_json *out)
{
	int r = text_node(out, pdi_ptree_root(t), 0);

	return r < 0 ? r : pdi_json_failed(out) ? -ENOMEM : 0;
}

static bool has_tasks_below(const struct pdi_ptree_node *n)
{
	for (size_t i = 0; i < n->nchildren; i++)
		if (n->children[i]->nranks)
			return true;
	return false;
}

static int json_node(struct pdi_json *j, const struct pdi_ptree_node *n);

static int json_children(struct pdi_json *j, const struct pdi_ptree_node *n)
{
	int r = 0;

	pdi_json_arr_begin(j);
	for (size_t i = 0; r == 0 && i < n->nchildren; i++)
		if (n->children[i]->nranks)
			r = json_node(j, n->children[i]);
	pdi_json_arr_end(j);
	return r;
}

/* Past pdi_json's nesting limit the children are written by a writer of their own and pasted
 * in as text: a deep stack (libunwind's, through the MPI library) must not fail the report. */
static int json_children_pasted(struct pdi_json *j, const struct pdi_ptree_node *n)
{
	static const char key[] = ",\"children\":";
	struct pdi_json sub;
	int r;

	pdi_json_init(&sub);
	r = json_children(&sub, n);
	if (r == 0 && pdi_json_failed(&sub))
		r = -ENOMEM;
	if (r == 0) {
		pdi_json_raw(j, key, sizeof(key) - 1);
		pdi_json_raw(j, sub.buf, sub.len);
	}
	pdi_json_free(&sub);
	return r;
}

static int json_node(struct pdi_json *j, const struct pdi_ptree_node *n)
{
	char buf[256], *ranks = ranks_text(n, buf, sizeof(buf));
	int r = 0;

	if (!ranks)
		return -ENOMEM;
	pdi_json_obj_begin(j);
	pdi_json_kv_str(j, "frame", n->frame);
	pdi_json_kv_str(j, "ranks", ranks);
	pdi_json_kv_uint(j, "count", n->nranks);
	pdi_json_kv_uint(j, "progress", n->progress_min);
	pdi_json_kv_uint(j, "progress_max", n->progress_max);
	if (ranks != buf)
		free(ranks);
	if (has_tasks_below(n)) {
		/* the children array and a child object open two more levels */
		if (j->depth + 2 < PDI_JSON_MAX_DEPTH) {
			pdi_json_key(j, "children");
			r = json_children(j, n);
		} else {
			r = json_children_pasted(j, n);
		}
	}
	pdi_json_obj_end(j);
	return r;
}

int pdi_ptree_render_json(struct pdi_ptree *t, struct pdi_json *out)
{
	int r = json_node(out, pdi_ptree_root(t));

	return r < 0 ? r : pdi_json_failed(out) ? -ENOMEM : 0;
}

static int dot_node(struct pdi_json *out, const struct pdi_ptree_node *n)
{
	char buf[256], *ranks = ranks_text(n, buf, sizeof(buf));
	int r = 0;

	if (!ranks)
		return -ENOMEM;
	pdi_json_printf(out, "\tn%u [label=\"", n->id);
	pdi_dot_escaped(out, n->frame);
	pdi_json_printf(out, "\\n%s (%zu task%s)\"];\n", ranks, n->nranks, n->nranks == 1 ? "" : "s");
	if (ranks != buf)
		free(ranks);
	for (size_t i = 0; r == 0 && i < n->nchildren; i++) {
		if (!n->children[i]->nranks)
			continue;
		pdi_json_printf(out, "\tn%u -> n%u;\n", n->id, n->children[i]->id);
		r = dot_node(out, n->children[i]);
	}
	return r;
}

int pdi_ptree_render_dot(struct pdi_ptree *t, struct pdi_json *out)
{
	int r;

	pdi_json_printf(out, "digraph prefix_tree {\n\tnode [shape=box, fontname=\"monospace\"];\n");
	r = dot_node(out, pdi_ptree_root(t));
	pdi_json_printf(out, "}\n");
	return r < 0 ? r : pdi_json_failed(out) ? -ENOMEM : 0;
}

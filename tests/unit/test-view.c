/* SPDX-License-Identifier: GPL-2.0-only */
/* test-view.c -- a node's part of a step as a payload, and two nodes' parts merged on the way
 * up the gather tree: sites renamed by name, identical models sharing one class, hostile
 * payloads refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "mpi_funcs.h"
#include "wire.h"

/* A node's view: NTASKS ring tasks (ranks FIRST..), sites named in ORDER (a permutation of
 * the four ring calls: another node numbers its sites in another order). */
struct node {
	struct pdi_site sites[4];
	struct pdi_model models[4];
	struct pdi_view_task tasks[4];
	struct pdi_view view;
};

static const char *const names[] = {"MPI_Irecv@ring.c:39", "MPI_Isend@ring.c:40", "MPI_Waitall@ring.c:41",
				    "MPI_Barrier@ring.c:47"};
static const char *const fns[] = {"MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Barrier"};

static void make_node(struct node *n, int first, const int order[4], unsigned ntasks, double slow_rank)
{
	memset(n, 0, sizeof(*n));
	for (int i = 0; i < 4; i++)
		n->sites[order[i]] = (struct pdi_site){.fn = (uint16_t)pdi_mpi_func_find(fns[i]), .name = (char *)names[i],
						       .caller = (char *)"main", .file = (char *)"ring.c", .line = 39 + i};
	for (unsigned t = 0; t < ntasks; t++) {
		uint64_t now = 0;

		pdi_model_init(&n->models[t], NULL);
		for (int it = 0; it < 20; it++)
			for (int i = 0; i < 4; i++) {
				struct pdi_call c = {.site = (uint32_t)order[i], .fn = (uint16_t)pdi_mpi_func_find(fns[i]),
						     .peer = PDI_NO_PEER};
				/* the same times on every node, but for one slow rank */
				now += (uint64_t)(1000 * (first + (int)t == slow_rank && i == 3 ? 50 : 1));
				c.t_enter = now;
				c.t_exit = (now += 500);
				cr_assert_eq(pdi_model_add_call(&n->models[t], &c), 0);
			}
		n->tasks[t] = (struct pdi_view_task){.rank = first + (int)t, .pid = 100 + first + (int)t,
						     .model = &n->models[t], .progress = 20};
		n->tasks[t].where = (struct pdi_where){.kind = PDI_WHERE_BLOCKED, .site = order[3]};
		strcpy(n->tasks[t].where.text, names[3]);
	}
	n->view = (struct pdi_view){.name = (char *)"7.0", .job_id = 7, .sites = n->sites, .nsites = 4,
				    .tasks = n->tasks, .ntasks = ntasks, .nodes = 1};
}

static void node_done(struct node *n)
{
	for (unsigned t = 0; t < n->view.ntasks; t++)
		pdi_model_done(&n->models[t]);
}

static void encode(const struct pdi_view *v, struct pdi_wire_writer *w)
{
	*w = (struct pdi_wire_writer){0};
	cr_assert_eq(pdi_view_encode(v, w), 0);
}

Test(view, round_trip)
{
	static const int order[4] = {0, 1, 2, 3};
	struct node n;
	struct pdi_wire_writer w;
	struct pdi_view v;

	make_node(&n, 0, order, 3, -1);
	n.view.tasks[1].where.by_stack = true; /* placed by its live stack (report/snapshot.c) */
	encode(&n.view, &w);
	cr_assert_eq(pdi_view_decode(w.buf, w.len, &v), 0);
	cr_assert_eq(v.ntasks, 3);
	cr_assert_eq(v.nsites, 4);
	cr_assert_eq(v.nown_models, 1, "three identical models travel once");
	cr_assert_str_eq(v.name, "7.0");
	for (unsigned t = 0; t < 3; t++) {
		cr_assert_eq(v.tasks[t].rank, (int)t);
		cr_assert_eq(v.tasks[t].where.kind, PDI_WHERE_BLOCKED);
		cr_assert_str_eq(pdi_view_site_name(&v, (uint64_t)v.tasks[t].where.site), names[3]);
		cr_assert_eq(v.tasks[t].model->calls, 80);
		cr_assert_eq(v.tasks[t].where.by_stack, t == 1);
	}
	pdi_view_done(&v);
	pdi_wire_writer_done(&w);
	node_done(&n);
}

/* Node B numbers its sites in another order: merged, its models and positions speak of the
 * same calls under A's numbers, and its models equal to A's share A's class. */
Test(view, merge_renames_sites_and_shares_classes)
{
	static const int order_a[4] = {0, 1, 2, 3}, order_b[4] = {3, 2, 0, 1};
	struct node a, b;
	struct pdi_wire_writer wa, wb, wm = {0};
	struct pdi_view v;
	char name[256];

	make_node(&a, 0, order_a, 2, -1);
	make_node(&b, 2, order_b, 2, 3); /* rank 3 slow: a class of its own */
	encode(&a.view, &wa);
	encode(&b.view, &wb);
	cr_assert_eq(pdi_view_merge(wa.buf, wa.len, wb.buf, wb.len, &wm), 0);
	cr_assert_eq(pdi_view_decode(wm.buf, wm.len, &v), 0);
	cr_assert_eq(v.ntasks, 4);
	cr_assert_eq(v.nsites, 4, "the same four calls");
	cr_assert_eq(v.nodes, 2);
	cr_assert_eq(v.nown_models, 2, "ranks 0-2 alike, rank 3 apart");
	for (unsigned t = 0; t < 4; t++) {
		const struct pdi_model *m = v.tasks[t].model;

		cr_assert_str_eq(pdi_view_site_name(&v, (uint64_t)v.tasks[t].where.site), names[3]);
		/* the Irecv -> Isend computation, by A's numbers */
		pdi_view_state_name(&v, pdi_state_comp(0, 1), name, sizeof(name));
		cr_assert_str_eq(name, "MPI_Irecv@ring.c:39 -> MPI_Isend@ring.c:40");
		cr_assert_neq(pdi_phase_state(&m->phases[0], pdi_state_comp(0, 1)), PDI_U64MAP_NONE, "rank %d",
			      v.tasks[t].rank);
	}
	pdi_view_done(&v);
	pdi_wire_writer_done(&wa);
	pdi_wire_writer_done(&wb);
	pdi_wire_writer_done(&wm);
	node_done(&a);
	node_done(&b);
}

Test(view, merge_with_nothing_is_the_other_part)
{
	static const int order[4] = {0, 1, 2, 3};
	struct node n;
	struct pdi_wire_writer w, m = {0};
	struct pdi_view v;

	make_node(&n, 0, order, 1, -1);
	encode(&n.view, &w);
	cr_assert_eq(pdi_view_merge(NULL, 0, w.buf, w.len, &m), 0);
	cr_assert_eq(pdi_view_decode(m.buf, m.len, &v), 0);
	cr_assert_eq(v.ntasks, 1);
	pdi_view_done(&v);
	pdi_wire_writer_done(&w);
	pdi_wire_writer_done(&m);
	node_done(&n);
}

/* Payloads come from the network: every truncation and thousands of corruptions are refused
 * or read, never a crash or a leak (ASan/LSan runs this suite). */
Test(view, hostile_payloads)
{
	static const int order[4] = {0, 1, 2, 3};
	struct node n;
	struct pdi_wire_writer w;
	struct pdi_view v;
	unsigned seed = 1;

	make_node(&n, 0, order, 2, 1);
	encode(&n.view, &w);
	for (size_t len = 0; len < w.len; len++)
		cr_assert_lt(pdi_view_decode(w.buf, len, &v), 0, "truncated at %zu of %zu", len, w.len);
	for (int k = 0; k < 4000; k++) {
		uint8_t *copy = malloc(w.len);

		memcpy(copy, w.buf, w.len);
		for (int f = 0; f < 1 + k % 4; f++) {
			seed = seed * 1103515245u + 12345u;
			copy[(seed >> 8) % w.len] ^= (uint8_t)(1u << (seed % 8));
		}
		if (pdi_view_decode(copy, w.len, &v) == 0)
			pdi_view_done(&v);
		free(copy);
	}
	cr_assert_eq(pdi_view_decode(w.buf, w.len, &v), 0);
	pdi_view_done(&v);
	pdi_wire_writer_done(&w);
	node_done(&n);
}

/* What a task is doing, in words: a task that ended is not computing, one asleep outside MPI is
 * not computing either, and a time under a second is not worth saying. */
Test(view, what_a_task_is_doing_in_words)
{
	struct pdi_view_task t = {.rank = 2, .running = true};
	char buf[400];

	t.where = (struct pdi_where){.kind = PDI_WHERE_COMPUTING, .text = "after MPI_Waitall@ring.c:41", .for_ns = 41000000000ull,
				     .act = {.kind = PDI_ACT_RUNNING, .cpu_pct = 100, .wait_pct = 0}};
	pdi_view_task_doing(&t, buf, sizeof(buf));
	cr_expect_str_eq(buf, "computing, 100% CPU, no MPI call for 41 s (after MPI_Waitall@ring.c:41)");
	t.where.act = (struct pdi_task_activity){.kind = PDI_ACT_SLEEPING, .cpu_pct = 0};
	pdi_view_task_doing(&t, buf, sizeof(buf));
	cr_expect_str_eq(buf, "asleep outside MPI (not computing), 0% CPU, no MPI call for 41 s (after MPI_Waitall@ring.c:41)");
	/* the step ended: nothing was read from /proc, and no time passed since */
	t.running = false;
	t.where.for_ns = 0;
	t.where.act = (struct pdi_task_activity){.kind = PDI_ACT_UNKNOWN};
	pdi_view_task_doing(&t, buf, sizeof(buf));
	cr_expect_str_eq(buf, "ended outside MPI without MPI_Finalize (after MPI_Waitall@ring.c:41)");
	t.where = (struct pdi_where){.kind = PDI_WHERE_BLOCKED, .text = "MPI_Barrier@ring.c:47"};
	pdi_view_task_doing(&t, buf, sizeof(buf));
	cr_expect_str_eq(buf, "ended inside MPI_Barrier@ring.c:47");
	/* live, in MPI for less than a second; then stopped there */
	t.running = true;
	t.where = (struct pdi_where){.kind = PDI_WHERE_IN_MPI, .text = "MPI_Barrier@ring.c:47", .for_ns = 300000000ull,
				     .act = {.kind = PDI_ACT_SLEEPING, .cpu_pct = 3}};
	pdi_view_task_doing(&t, buf, sizeof(buf));
	cr_expect_str_eq(buf, "waiting in MPI_Barrier@ring.c:47, 3% CPU");
	t.where.act.kind = PDI_ACT_STOPPED;
	t.where.for_ns = 9000000000ull;
	pdi_view_task_doing(&t, buf, sizeof(buf));
	cr_expect_str_eq(buf, "stopped (SIGSTOP or a debugger), no MPI progress for 9 s, in MPI_Barrier@ring.c:47");
	/* found in a call on its stack: how long, at least */
	t.where = (struct pdi_where){.kind = PDI_WHERE_BLOCKED, .site = -1, .for_ns = 20400000000ull, .by_stack = true,
				     .text = "MPI_Allreduce (on its stack: its probes did not see the call begin)",
				     .act = {.kind = PDI_ACT_RUNNING, .cpu_pct = 29, .wait_pct = 40}};
	pdi_view_task_doing(&t, buf, sizeof(buf));
	cr_expect_str_eq(buf, "waiting in MPI_Allreduce (on its stack: its probes did not see the call begin) for at least "
			      "20 s, 29% CPU");
}

/* A thread's shares of the time from its kernel counts: a run-queue wait is counted when it
 * ends, in one lump, so a look may see more waiting than time passed since the one before
 * ("waiting for one 215% of the time"); the shares are then of the time the counts cover. */
Test(view, cpu_shares_never_pass_the_time_the_counts_cover)
{
	struct pdi_task_activity a = {.cpu_pct = -1, .wait_pct = -1};

	/* half running, a quarter ready, a quarter asleep over 1 s */
	pdi_task_activity_shares(&a, 500000000, 250000000, 1000000000);
	cr_expect(a.cpu_pct == 50 && a.wait_pct == 25 && a.over_ns == 1000000000, "%d %d", a.cpu_pct, a.wait_pct);
	/* 2.15 s of waiting that ended in this 1 s look, 0.1 s run: of 2.25 s */
	pdi_task_activity_shares(&a, 100000000, 2150000000ull, 1000000000);
	cr_expect(a.cpu_pct == 4 && a.wait_pct == 95 && a.over_ns == 2250000000ull, "%d %d", a.cpu_pct, a.wait_pct);
	cr_expect_leq(a.cpu_pct + a.wait_pct, 100);
	/* nothing to divide by: left as it was */
	pdi_task_activity_shares(&a, 0, 0, 0);
	cr_expect(a.cpu_pct == 4 && a.wait_pct == 95);
}

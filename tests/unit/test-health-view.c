/* SPDX-License-Identifier: GPL-2.0-only */
/* test-health-view.c -- a step's view as the hang judge sees it and its analysis as the hang's
 * line (lib/health/health_view.h): what confirms a hang across a step's nodes, and what its user is
 * told, on small views whose answer is known. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health_view.h"
#include "mpi_funcs.h"

enum { WAITALL, BARRIER, NSITES };
#define NTASKS 4

static const char *const fns[NSITES] = {"MPI_Waitall", "MPI_Barrier"};

struct built {
	struct pdi_view v;
	struct pdi_view_task tasks[NTASKS];
	struct pdi_model models[NTASKS];
	struct pdi_site sites[NSITES];
	char names[NSITES][64];
};

/* 200 iterations of Waitall, 4 ms of computation, Barrier: every state short and well known. */
static void loop_model(struct pdi_model *m)
{
	uint64_t t = 1000;

	pdi_model_init(m, NULL);
	for (int i = 0; i < 200; i++)
		for (int s = 0; s < NSITES; s++) {
			struct pdi_call c = {.site = (uint32_t)s, .fn = (uint16_t)pdi_mpi_func_find(fns[s]),
					     .peer = PDI_NO_PEER};

			c.t_enter = (t += s == BARRIER ? 4000000 : 100000);
			c.t_exit = (t += 200000);
			cr_assert_eq(pdi_model_add_call(m, &c), 0);
		}
}

/* Rank ODD (-1: none) is where WHAT says, doing ACT, for FOR_S; the others wait in the Barrier
 * as long. */
static void build(struct built *b, int odd, enum pdi_where_kind what, int site, enum pdi_activity act, double for_s)
{
	memset(b, 0, sizeof(*b));
	for (int s = 0; s < NSITES; s++) {
		snprintf(b->names[s], sizeof(b->names[s]), "%s@loop.c:%d", fns[s], 20 + s);
		b->sites[s] = (struct pdi_site){.fn = (uint16_t)pdi_mpi_func_find(fns[s]), .name = b->names[s],
						.caller = "main", .file = "loop.c", .line = 20 + s};
	}
	b->v = (struct pdi_view){.name = "loop", .running = true, .sites = b->sites, .nsites = NSITES, .tasks = b->tasks,
				 .ntasks = NTASKS, .nodes = 2, .nodes_answered = 2, .started = 1000};
	for (int i = 0; i < NTASKS; i++) {
		struct pdi_where *w = &b->tasks[i].where;
		bool me = i == odd;

		loop_model(&b->models[i]);
		b->tasks[i] = (struct pdi_view_task){.rank = i, .pid = 100 + i, .running = true, .model = &b->models[i]};
		*w = (struct pdi_where){.kind = me ? what : PDI_WHERE_BLOCKED, .site = me ? site : BARRIER,
					.for_ns = (uint64_t)(for_s * 1e9)};
		w->act = (struct pdi_task_activity){.kind = me ? act : PDI_ACT_RUNNING, .cpu_pct = me && act == PDI_ACT_RUNNING ? 100 : me ? 0 : 100,
						    .wait_pct = 0};
		snprintf(w->text, sizeof(w->text), "%s%s", w->kind == PDI_WHERE_COMPUTING ? "after " : "", b->names[w->site]);
		b->tasks[i].progress = pdi_model_visits(&b->models[i], pdi_state_comm((uint32_t)w->site));
	}
}

static void unbuild(struct built *b)
{
	for (int i = 0; i < NTASKS; i++)
		pdi_model_done(&b->models[i]);
}

Test(health_view, tasks_of_a_view)
{
	struct built b;
	struct pdi_health_task t[NTASKS];

	build(&b, 1, PDI_WHERE_COMPUTING, WAITALL, PDI_ACT_RUNNING, 30);
	cr_assert_eq(pdi_health_tasks_of_view(&b.v, t), NTASKS);
	cr_expect_eq(t[1].motion, PDI_MOTION_COMPUTING);
	cr_expect_eq(t[0].motion, PDI_MOTION_WAITING);
	cr_expect_float_eq(t[0].idle_s, 30, 1e-9);
	/* the Barrier's calls, pooled over the tasks' one model class: 200 each, 0.2 ms */
	cr_expect_geq(t[0].state.n, 200);
	cr_expect_float_eq(t[0].state.mean_s, 200e-6, 1e-6);
	/* the computations after the Waitall: 4 ms */
	cr_expect_geq(t[1].state.n, 200);
	cr_expect_float_eq(t[1].state.mean_s, 4e-3, 1e-4);
	/* a stopped task, and one that sleeps without CPU */
	b.tasks[2].where.act.kind = PDI_ACT_STOPPED;
	b.tasks[3].where = b.tasks[1].where;
	b.tasks[3].where.act = (struct pdi_task_activity){.kind = PDI_ACT_SLEEPING, .cpu_pct = 0};
	b.tasks[0].running = false;
	cr_assert_eq(pdi_health_tasks_of_view(&b.v, t), NTASKS - 1, "an ended task is left out");
	cr_expect_eq(t[1].motion, PDI_MOTION_STOPPED);
	cr_expect_eq(t[2].motion, PDI_MOTION_IDLE);
	unbuild(&b);
}

/* Across nodes: a rank computing for 30 s in a state that always took 4 ms is a hang; the same
 * rank computing something never seen to end, or having just moved, is not. */
Test(health_view, judged_across_nodes)
{
	struct pdi_health_judge h;
	struct pdi_health_task t[NTASKS];
	struct pdi_health_verdict v;
	struct built b;
	unsigned n;

	pdi_health_init(&h, &pdi_health_params_default);
	h.run.kind[0].observed_s = h.run.kind[1].observed_s = 600; /* ten healthy minutes */
	build(&b, 1, PDI_WHERE_COMPUTING, WAITALL, PDI_ACT_RUNNING, 30);
	n = pdi_health_tasks_of_view(&b.v, t);
	pdi_health_judge_tasks(&h, t, n, &v);
	cr_expect_eq(v.health, PDI_HEALTH_HUNG, "quiet %.0f s, hung at %.0f s", v.quiet_s, v.threshold_s);
	cr_expect_eq(t[v.critical].rank, 1);
	t[1].state = (struct pdi_state_durations){0};
	pdi_health_judge_tasks(&h, t, n, &v);
	cr_expect_eq(v.health, PDI_HEALTH_OK, "a computation never seen: quiet %.0f s, hung at %.0f s", v.quiet_s,
		     v.threshold_s);
	b.tasks[1].where.for_ns = 200000000;
	n = pdi_health_tasks_of_view(&b.v, t);
	pdi_health_judge_tasks(&h, t, n, &v);
	cr_expect_eq(v.health, PDI_HEALTH_OK, "it moved 0.2 s ago");
	unbuild(&b);
}

static void diagnosis_of(struct built *b, char *buf, size_t len)
{
	struct pdi_analysis a;

	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	pdi_health_diagnosis(&a, buf, len);
	pdi_analysis_done(&a);
}

Test(health_view, the_line_names_the_stuck_rank)
{
	struct built b;
	char line[1200];

	build(&b, 1, PDI_WHERE_COMPUTING, WAITALL, PDI_ACT_RUNNING, 30);
	diagnosis_of(&b, line, sizeof(line));
	cr_expect(strstr(line, "least progressed [1], computing, 100% CPU, no MPI call for 30 s (after MPI_Waitall@loop.c:20)"),
		  "%s", line);
	cr_expect(strstr(line, "; the others wait in MPI_Barrier@loop.c:21"), "%s", line);
	unbuild(&b);
	/* one waiting just entered the Barrier (on another node, say) where the others are blocked:
	 * one place, said once */
	build(&b, 1, PDI_WHERE_COMPUTING, WAITALL, PDI_ACT_RUNNING, 30);
	b.tasks[3].where.kind = PDI_WHERE_IN_MPI;
	b.tasks[3].where.for_ns = 500000000;
	diagnosis_of(&b, line, sizeof(line));
	cr_expect(strstr(line, "least progressed [1], computing"), "%s", line);
	cr_expect(strstr(line, "; the others wait in MPI_Barrier@loop.c:21") && !strstr(line, "[3]"), "%s", line);
	unbuild(&b);
	/* stopped in the Barrier the others wait in: the kernel names it */
	build(&b, 3, PDI_WHERE_BLOCKED, BARRIER, PDI_ACT_STOPPED, 30);
	diagnosis_of(&b, line, sizeof(line));
	cr_expect(strstr(line, "least progressed [3], stopped (SIGSTOP or a debugger)"), "%s", line);
	unbuild(&b);
}

/* What the first node of a step does with the gathered view when its own tasks went quiet: a
 * rank elsewhere stuck in a short state confirms the hang, and the line names it; the same
 * rank having just moved, or computing something never seen to end, does not. */
Test(health_view, a_suspected_hang_confirmed_or_not)
{
	struct pdi_health_judge h;
	struct pdi_health_verdict v;
	struct pdi_analysis a;
	struct built b;
	char line[1200];

	pdi_health_init(&h, &pdi_health_params_default);
	h.run.kind[0].observed_s = h.run.kind[1].observed_s = 600;
	build(&b, 1, PDI_WHERE_COMPUTING, WAITALL, PDI_ACT_RUNNING, 30);
	cr_assert_eq(pdi_analysis_build(&b.v, NULL, &a), 0);
	cr_assert_eq(pdi_health_confirm(&h, &a, &v, line, sizeof(line)), 0);
	cr_expect_eq(v.health, PDI_HEALTH_HUNG, "quiet %.0f s, hung at %.0f s", v.quiet_s, v.threshold_s);
	cr_expect_float_eq(v.quiet_s, 30, 1e-6);
	cr_expect_eq(v.critical, -1);
	cr_expect(strstr(line, "least progressed [1], computing"), "%s", line);
	pdi_analysis_done(&a);
	b.tasks[1].where.for_ns = 200000000;
	cr_assert_eq(pdi_analysis_build(&b.v, NULL, &a), 0);
	cr_assert_eq(pdi_health_confirm(&h, &a, &v, line, sizeof(line)), 0);
	cr_expect_eq(v.health, PDI_HEALTH_OK, "rank 1 moved 0.2 s ago");
	pdi_analysis_done(&a);
	unbuild(&b);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* test-analysis.c -- the diagnosis (lib/analysis/analysis.c) and its renderings on a table of small
 * synthetic views with known verdicts: a clean run, a stall, hangs PDI must resolve, and the
 * bad input the analysis must say it cannot conclude on (no task, one task, no MPI call, lost
 * events, stripped call sites, a task gone mid-analysis) -- never a crash, never an
 * invented answer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "mpi_funcs.h"
#include "render.h"

enum { INIT, PCONTROL, IRECV, ISEND, WAITALL, BARRIER, NSITES };

#define MAX_TASKS 8

static const char *const fns[NSITES] = {"MPI_Init", "MPI_Pcontrol", "MPI_Irecv", "MPI_Isend", "MPI_Waitall",
					"MPI_Barrier"};

/* What a generated task goes through beside its program (ring_model_with()). */
struct ring_opts {
	int stall_phase;  /* computes 30 times longer in half the iterations (a 12 s stall); -1: none */
	int noise_phase;  /* every task computes 25 times longer (the machine, not the program); -1 */
	int stop_phase;   /* 3 s inside MPI_Waitall in iteration 10, for every task (they wait for the
			     stopped one); -1: none */
	bool stopped;     /* ... and this task is the one stopped: held, neither running nor runnable */
	bool spinning;    /* spins 3 s in its own code before the Barrier of iteration 10 of
			     SPIN_PHASE (its peers wait for it in the Barrier) */
	int spin_phase;   /* (a program phase > 0; 0: none) */
	bool wait_unseen; /* ... and this peer waits for it in a call no probe saw: its wait shows as
			     computation (a polling call the budget detached, HPCC's HPL) */
	bool sleeping;    /* ... or sleeps that long there instead (usleep): held, neither running
			     nor runnable, between its calls */
	double spin_s;    /* how long it spins (0: 3 s) */
	int more_from, more_to; /* program phases (> 0; 0: none) in which one task does MORE more
				   iterations of its usual work at its usual pace while the others
				   wait for it in the last Barrier (HPL's panel, issue 9) */
	int more;         /* ... this task's extra iterations (0: it is one that waits) */
	int own_work_phase; /* a program phase (> 0; 0: none) at whose end the task computes 3 s
			       before a call it makes nowhere else (a set-up step of the program) */
	int slow_from, slow_to; /* phases with interference on one task's CPU; -1: none */
	int slow_from_i;  /* ... from this iteration (of 40) of phase SLOW_FROM on (0: all of it) */
	bool slowed;      /* this task is that one: computes 60% longer and gets less CPU; the others
			     wait longer in the Barrier */
	double slow_share; /* the CPU share it gets then (0: 0.25) */
	double slow_factor; /* how much longer it computes then (0: 1.6) */
	double share;     /* the CPU share of every phase (0: 0.4) */
	double busy_share; /* ... but this one in phases [busy_from, busy_to] (the machine's load; 0: none) */
	int busy_from, busy_to;
	bool usage;       /* the daemon read the kernel's counts on its timer (READ_EVERY_NS) */
	int late_phase;   /* a program phase (> 0; 0: none) after which one task's cut falls LATE_S
			     later than its peers': the same stretch of waiting in a Barrier is its
			     phase's last and its peers' next phase's first (a cut on the wall clock,
			     placed at a task's next call: NWChem, issue 9, spin14) */
	bool late;        /* ... this task is that one */
	double late_s;
	bool late_computing; /* the stretch across the cut is computation, not waiting in a Barrier */
};

/* The extra iterations of ring_opts.more a waiting task waits for, at about 38 ms each. */
#define MORE_ITERS 30

/* The kernel's counts as a generated task goes: 40% of its time on a CPU and 60% waiting for
 * one (a loaded machine), or a share given, or held. */
struct clock {
	uint64_t t, cpu, wait;
};

static void advance(struct clock *k, uint64_t dt, double cpu_share, bool held)
{
	k->t += dt;
	if (held)
		return;
	k->cpu += (uint64_t)(cpu_share * (double)dt);
	k->wait += dt - (uint64_t)(cpu_share * (double)dt);
}

/* The daemon's timer (usage_interval_ms): a reading at the first call this long after the last. */
#define READ_EVERY_NS 50000000ull

static void add_call_read(struct pdi_model *m, const struct pdi_call *c, const struct clock *k, bool usage)
{
	cr_assert_eq(pdi_model_add_call(m, c), 0);
	if (usage && (!m->usage_now.at_ns || c->t_exit >= m->usage_now.at_ns + READ_EVERY_NS))
		pdi_model_usage_add(m, &(struct pdi_usage){.at_ns = k->t + 1, .cpu_ns = k->cpu, .wait_ns = k->wait});
}

/* A ring program's task: the prologue (model phase 0), then PHASES Pcontrol phases of 40
 * Irecv, Isend, Waitall, compute, Barrier iterations (about 1.2 s), with what O says. Jitter
 * is deterministic per rank. */
static void ring_model_with(struct pdi_model *m, int rank, int phases, const struct ring_opts *o)
{
	struct clock k = {0};
	unsigned seed = (unsigned)rank * 7919u + 13u;
	double spin_ns = (o->spin_s > 0 ? o->spin_s : 3.0) * 1e9;

	pdi_model_init(m, NULL);
	if (phases <= 0)
		return;
	advance(&k, 100000, 0.4, false);
	add_call_read(m, &(struct pdi_call){.site = INIT, .fn = (uint16_t)pdi_mpi_func_find(fns[INIT]),
					    .peer = PDI_NO_PEER, .t_exit = k.t},
		      &k, o->usage);
	for (int p = 0; p < phases; p++) {
		struct pdi_call c = {.site = PCONTROL, .fn = (uint16_t)pdi_mpi_func_find(fns[PCONTROL]), .peer = PDI_NO_PEER};
		bool slow = p >= o->slow_from && p <= o->slow_to && o->slow_from >= 0;
		bool busy = o->busy_share > 0 && p >= o->busy_from && p <= o->busy_to;
		double usual = busy ? o->busy_share : o->share > 0 ? o->share : 0.4;
		double share = slow && o->slowed ? (o->slow_share > 0 ? o->slow_share : 0.25) : usual;

		advance(&k, 1000, share, false);
		c.t_enter = k.t;
		advance(&k, 500, share, false);
		c.t_exit = k.t;
		add_call_read(m, &c, &k, o->usage);
		bool more = o->more_from > 0 && p >= o->more_from && p <= o->more_to;

		for (int i = 0; i < 40 + (more ? o->more : 0); i++)
			for (int s = IRECV; s <= BARRIER; s++) {
				struct pdi_call x = {.site = (uint32_t)s, .fn = (uint16_t)pdi_mpi_func_find(fns[s]),
						     .peer = PDI_NO_PEER};
				bool slow_i = slow && (p != o->slow_from || i >= o->slow_from_i);
				double share_i = slow_i ? share : usual;
				double gap = s == BARRIER ? 20e6 : 2e6; /* ns: 20 ms of computation */
				uint64_t in_mpi = 3000000;

				seed = seed * 1103515245u + 12345u;
				gap *= 0.9 + 0.2 * ((seed >> 16) % 1000) / 1000.0;
				if (s == BARRIER && p == o->stall_phase && i >= 20)
					gap *= 30;
				if (s == BARRIER && p == o->noise_phase)
					gap *= 25; /* every task: the machine, not the program */
				if (s == BARRIER && o->spin_phase > 0 && p == o->spin_phase && i == 10)
					o->sleeping ? advance(&k, (uint64_t)spin_ns, share_i, true)
					: o->spinning || o->wait_unseen ? (void)(gap += spin_ns)
									: (void)(in_mpi += (uint64_t)spin_ns);
				if (s == BARRIER && o->late_phase > 0 &&
				    ((o->late && p == o->late_phase && i == 39) ||
				     (!o->late && p == o->late_phase + 1 && i == 0)))
					o->late_computing ? (void)(gap += o->late_s * 1e9)
							  : (void)(in_mpi += (uint64_t)(o->late_s * 1e9));
				if (s == BARRIER && more && !o->more && i == 39)
					in_mpi += (uint64_t)(MORE_ITERS * 38e6); /* the worker's extra iterations */
				if (s == BARRIER && slow_i)
					o->slowed ? (void)(gap *= o->slow_factor > 0 ? o->slow_factor : 1.6)
						  : (void)(in_mpi += 12000000);
				advance(&k, (uint64_t)gap, share_i, false);
				x.t_enter = k.t;
				advance(&k, in_mpi, share_i, false);
				if (s == WAITALL && p == o->stop_phase && i == 10)
					advance(&k, 3000000000ull, share_i, o->stopped);
				x.t_exit = k.t;
				add_call_read(m, &x, &k, o->usage);
			}
		if (p == o->own_work_phase && p > 0) {
			struct pdi_call x = {.site = WAITALL, .fn = (uint16_t)pdi_mpi_func_find(fns[WAITALL]),
					     .peer = PDI_NO_PEER};

			advance(&k, 3000000000ull, usual, false); /* after the Barrier: nowhere else */
			x.t_enter = k.t;
			advance(&k, 3000, usual, false);
			x.t_exit = k.t;
			add_call_read(m, &x, &k, o->usage);
		}
	}
	/* the daemon reads the counts once more at MPI_Finalize: the last phase's end */
	if (o->usage)
		pdi_model_usage_add(m, &(struct pdi_usage){.at_ns = k.t + 1, .cpu_ns = k.cpu, .wait_ns = k.wait});
}

static void ring_model_noisy(struct pdi_model *m, int rank, int phases, int stall_phase, int noise_phase)
{
	ring_model_with(m, rank, phases,
			&(struct ring_opts){.stall_phase = stall_phase, .noise_phase = noise_phase, .stop_phase = -1,
					    .slow_from = -1, .slow_to = -1});
}

static void ring_model(struct pdi_model *m, int rank, int phases, int stall_phase)
{
	ring_model_noisy(m, rank, phases, stall_phase, -1);
}

struct task_spec {
	enum pdi_where_kind kind;
	int site;                 /* where it is, or after which call it computes; -1 unknown */
	enum pdi_activity act;
	uint64_t lost;
	int stall_phase;          /* -1: none */
	bool no_calls;            /* a model without a call */
	bool ended;
	uint64_t for_ns;          /* how long it has been there; 0: 5 s */
};

struct view_case {
	const char *name;
	unsigned ntasks;
	int phases;
	bool running;
	bool stripped;            /* sites named FUNC@obj+0xOFF, as without symbols */
	bool hung;                /* the hang judge holds it hung (for 20 s) */
	struct task_spec t[MAX_TASKS];
	/* the known verdict */
	const char *kind;
	const char *lp;           /* verdict.least_progressed; NULL: no PDI */
	int faulty_phase;         /* AutomaDeD's, -1: not checked */
	int faulty_rank;          /* AutomaDeD's, -1: not checked */
	int abnormal;             /* -1: not checked */
	const char *limit;        /* a limit that must be said, NULL: none checked */
};

#define DONE(at) {.kind = PDI_WHERE_FINISHED, .site = (at), .stall_phase = -1, .ended = true}

static const struct view_case cases[] = {
	{.name = "clean run", .ntasks = 4, .phases = 8,
	 .t = {DONE(BARRIER), DONE(BARRIER), DONE(BARRIER), DONE(BARRIER)},
	 .kind = "completed", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1},
	{.name = "stall of rank 2 in phase 5", .ntasks = 4, .phases = 8,
	 .t = {DONE(BARRIER), DONE(BARRIER), {.kind = PDI_WHERE_FINISHED, .site = BARRIER, .stall_phase = 5, .ended = true},
	       DONE(BARRIER)},
	 .kind = "completed", .faulty_phase = 6, .faulty_rank = 2, .abnormal = 1},
	{.name = "hang: rank 1 computes, the others wait in the Barrier", .ntasks = 4, .phases = 6, .running = true,
	 .t = {{.kind = PDI_WHERE_BLOCKED, .site = BARRIER, .stall_phase = -1},
	       {.kind = PDI_WHERE_COMPUTING, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = BARRIER, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = BARRIER, .stall_phase = -1}},
	 .kind = "hang", .lp = "[1]", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1},
	{.name = "hang: rank 3 stopped in the Waitall all others sit in", .ntasks = 4, .phases = 6, .running = true,
	 .t = {{.kind = PDI_WHERE_BLOCKED, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = WAITALL, .act = PDI_ACT_STOPPED, .stall_phase = -1}},
	 .kind = "hang", .lp = "[3]", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1},
	{.name = "hang: rank 0 stopped in the Waitall, the others moved on to the Barrier", .ntasks = 4, .phases = 6,
	 .running = true,
	 .t = {{.kind = PDI_WHERE_BLOCKED, .site = WAITALL, .act = PDI_ACT_STOPPED, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = BARRIER, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = BARRIER, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = BARRIER, .act = PDI_ACT_RUNNING, .stall_phase = -1}},
	 .kind = "hang", .lp = "[0]", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1},
	{.name = "hang: rank 2 computes after its Isend, the others wait in Waitall with no known peer", .ntasks = 4,
	 .phases = 6, .running = true,
	 .t = {{.kind = PDI_WHERE_BLOCKED, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_COMPUTING, .site = ISEND, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1}},
	 .kind = "hang", .lp = "[2]", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1},
	{.name = "hang the judge saw: rank 1 computes, the others poll in MPI_Waitall's stead, never long in one call",
	 .ntasks = 4, .phases = 6, .running = true, .hung = true,
	 .t = {{.kind = PDI_WHERE_IN_MPI, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 4000},
	       {.kind = PDI_WHERE_COMPUTING, .site = ISEND, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_COMPUTING, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 2000},
	       {.kind = PDI_WHERE_IN_MPI, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 3000}},
	 .kind = "hang", .lp = "[1]", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1},
	{.name = "polling the judge does not call hung: running", .ntasks = 4, .phases = 6, .running = true,
	 .t = {{.kind = PDI_WHERE_IN_MPI, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 4000},
	       {.kind = PDI_WHERE_COMPUTING, .site = ISEND, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_IN_MPI, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 2000},
	       {.kind = PDI_WHERE_IN_MPI, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 3000}},
	 .kind = "running", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1},
	{.name = "no task", .ntasks = 0, .phases = 4, .kind = "not_monitored", .faulty_phase = -1, .faulty_rank = -1,
	 .abnormal = 0, .limit = "no MPI task was monitored"},
	{.name = "one task", .ntasks = 1, .phases = 8, .t = {DONE(BARRIER)}, .kind = "completed", .faulty_phase = -1,
	 .faulty_rank = -1, .abnormal = 0, .limit = "a single task"},
	{.name = "one phase", .ntasks = 3, .phases = 1, .t = {DONE(BARRIER), DONE(BARRIER), DONE(BARRIER)},
	 .kind = "completed", .faulty_phase = -1, .faulty_rank = -1, .abnormal = 0, .limit = "AutomaDeD"},
	{.name = "no MPI calls", .ntasks = 2, .phases = 4,
	 .t = {{.kind = PDI_WHERE_NO_MPI, .site = -1, .no_calls = true, .stall_phase = -1, .ended = true},
	       {.kind = PDI_WHERE_NO_MPI, .site = -1, .no_calls = true, .stall_phase = -1, .ended = true}},
	 .kind = "incomplete", .faulty_phase = -1, .faulty_rank = -1, .abnormal = 0, .limit = "made no MPI call"},
	{.name = "lost events", .ntasks = 3, .phases = 8,
	 .t = {DONE(BARRIER), {.kind = PDI_WHERE_FINISHED, .site = BARRIER, .lost = 12, .stall_phase = -1, .ended = true},
	       DONE(BARRIER)},
	 .kind = "completed", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1, .limit = "lost events"},
	{.name = "stripped program", .ntasks = 3, .phases = 8, .stripped = true,
	 .t = {DONE(BARRIER), DONE(BARRIER), {.kind = PDI_WHERE_FINISHED, .site = BARRIER, .stall_phase = 4, .ended = true}},
	 .kind = "completed", .faulty_phase = 5, .faulty_rank = 2, .abnormal = 1},
	{.name = "a task gone mid-analysis", .ntasks = 3, .phases = 6, .running = true,
	 .t = {{.kind = PDI_WHERE_BLOCKED, .site = BARRIER, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_BLOCKED, .site = BARRIER, .act = PDI_ACT_RUNNING, .stall_phase = -1},
	       {.kind = PDI_WHERE_COMPUTING, .site = -1, .act = PDI_ACT_UNKNOWN, .stall_phase = -1, .ended = true}},
	 .kind = "hang", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1},
};

struct built {
	struct pdi_view v;
	struct pdi_model models[MAX_TASKS];
	struct pdi_site sites[NSITES];
	char names[NSITES][64];
};

static void build(const struct view_case *c, struct built *b)
{
	memset(b, 0, sizeof(*b));
	for (int s = 0; s < NSITES; s++) {
		if (c->stripped)
			snprintf(b->names[s], sizeof(b->names[s]), "%s@a.out+0x%x", fns[s], 0x1000 + 0x40 * s);
		else
			snprintf(b->names[s], sizeof(b->names[s]), "%s@ring.c:%d", fns[s], 10 + s);
		b->sites[s] = (struct pdi_site){.fn = (uint16_t)pdi_mpi_func_find(fns[s]), .name = b->names[s],
						.caller = c->stripped ? "" : "main", .file = c->stripped ? "" : "ring.c",
						.line = c->stripped ? 0 : 10 + s};
	}
	b->v = (struct pdi_view){.name = (char *)c->name, .running = c->running, .sites = b->sites, .nsites = NSITES,
				 .ntasks = c->ntasks, .nodes = 1, .nodes_answered = 1, .started = 1000, .hung = c->hung,
				 .hung_for_ns = c->hung ? 2000000000ull : 0};
	b->v.tasks = calloc(c->ntasks + 1, sizeof(*b->v.tasks));
	cr_assert_not_null(b->v.tasks);
	for (unsigned i = 0; i < c->ntasks; i++) {
		const struct task_spec *s = &c->t[i];
		struct pdi_view_task *t = &b->v.tasks[i];

		ring_model(&b->models[i], (int)i, s->no_calls ? 0 : c->phases, s->stall_phase);
		*t = (struct pdi_view_task){.rank = (int)i, .pid = 1000 + (int)i, .running = c->running && !s->ended,
					    .model = &b->models[i], .lost = s->lost,
					    .wall_offset_ns = 1000 * 1000000000ll - 50000}; /* MPI_Init at 1000 s */
		t->where = (struct pdi_where){.kind = s->kind, .site = s->site, .for_ns = s->for_ns ? s->for_ns : 5000000000ull};
		t->where.act = (struct pdi_task_activity){.kind = s->act, .cpu_pct = -1, .wait_pct = -1};
		if (s->site >= 0)
			snprintf(t->where.text, sizeof(t->where.text), "%s%s", s->kind == PDI_WHERE_COMPUTING ? "after " : "",
				 b->names[s->site]);
		if (s->site >= 0)
			t->progress = pdi_model_visits(t->model, pdi_state_comm((uint32_t)s->site));
	}
}

static void unbuild(const struct view_case *c, struct built *b)
{
	for (unsigned i = 0; i < c->ntasks; i++)
		pdi_model_done(&b->models[i]);
	free(b->v.tasks);
}

static bool has_limit(const struct pdi_analysis *a, const char *what)
{
	for (size_t i = 0; i < a->nlimits; i++)
		if (strstr(a->limits[i], what))
			return true;
	return false;
}

Test(analysis, table_of_views_with_known_verdicts)
{
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct view_case *c = &cases[k];
		struct built *b = malloc(sizeof(*b));
		struct pdi_analysis a;
		char *json, *text, *dot, *summary;

		cr_assert_not_null(b);
		build(c, b);
		cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0, "%s", c->name);
		cr_expect_str_eq(a.kind, c->kind, "%s: kind %s", c->name, a.kind);
		if (c->lp)
			cr_expect_str_eq(a.lp, c->lp, "%s: least progressed %s, want %s", c->name, a.lp, c->lp);
		if (c->faulty_phase >= 0) {
			int ranks[MAX_TASKS];
			size_t n = pdi_analysis_faulty_ranks(&a, ranks);

			cr_expect(a.has_automaded, "%s", c->name);
			cr_expect_eq(a.am.faulty_phase, (uint32_t)c->faulty_phase, "%s: phase %u", c->name, a.am.faulty_phase);
			cr_expect(n == 1 && ranks[0] == c->faulty_rank, "%s: %zu faulty ranks, first %d", c->name, n,
				  n ? ranks[0] : -1);
		}
		if (c->abnormal >= 0)
			cr_expect_eq(a.abnormal, c->abnormal == 1, "%s: abnormal %d", c->name, a.abnormal);
		if (c->limit)
			cr_expect(has_limit(&a, c->limit), "%s: no limit saying \"%s\"", c->name, c->limit);
		/* every rendering of every case, bad input included */
		json = pdi_render_json(&a);
		text = pdi_render_text(&a);
		dot = pdi_render_dot(&a);
		summary = pdi_render_summary(&a);
		cr_assert(json && text && dot && summary, "%s", c->name);
		cr_expect(strstr(json, "\"verdict\"") && strstr(json, "\"diagnosis\"") && strstr(json, "\"limits\""),
			  "%s", c->name);
		cr_expect(!strncmp(summary, "pdimon: ", 8), "%s", c->name);
		free(json);
		free(text);
		free(dot);
		free(summary);
		pdi_analysis_done(&a);
		unbuild(c, b);
		free(b);
	}
}

/* A name with a quote or a backslash stays inside its DOT label. */
Test(analysis, dot_labels_escape_names)
{
	const struct view_case *c = &cases[2]; /* a hang: PDI's graph is drawn */
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	char *dot;

	cr_assert_not_null(b);
	build(c, b);
	snprintf(b->names[BARRIER], sizeof(b->names[BARRIER]), "MPI_Barrier@we\"ird\\.c:15");
	for (unsigned i = 0; i < c->ntasks; i++)
		if (b->v.tasks[i].where.site == BARRIER)
			snprintf(b->v.tasks[i].where.text, sizeof(b->v.tasks[i].where.text), "%s", b->names[BARRIER]);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	dot = pdi_render_dot(&a);
	cr_assert_not_null(dot);
	cr_expect(strstr(dot, "we\\\"ird\\\\.c") != NULL, "%s", dot);
	cr_expect(strstr(dot, "we\"ird") == NULL, "%s", dot);
	free(dot);
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

/* Tasks that share one model object (a gathered view) are classed once, as one class. */
Test(analysis, shared_models_class_once)
{
	const struct view_case *c = &cases[0];
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;

	cr_assert_not_null(b);
	build(c, b);
	for (unsigned i = 1; i < c->ntasks; i++)
		b->v.tasks[i].model = &b->models[0];
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_eq(a.classes.n, 1);
	cr_expect_eq(a.classes.classes[0].n, c->ntasks);
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

/* Sample runs handed in (the daemon loads them from its store) are used, and said so. */
Test(analysis, sample_runs_handed_in)
{
	const struct view_case *c = &cases[1];
	struct built *b = malloc(sizeof(*b));
	struct pdi_model normal[4];
	const struct pdi_model *row[4];
	const struct pdi_model *const *rows[1] = {row};
	struct pdi_analysis a;

	cr_assert_not_null(b);
	build(c, b);
	for (int i = 0; i < 4; i++) {
		ring_model(&normal[i], i + 10, c->phases, -1);
		row[i] = &normal[i];
	}
	cr_assert_eq(pdi_analysis_build(&b->v, &(struct pdi_analysis_samples){.rows = rows, .nruns = 1}, &a), 0);
	cr_expect_eq(a.sample_runs, 1);
	cr_expect_eq(a.am.faulty_phase, 6); /* model phase 0 is the prologue */
	pdi_analysis_done(&a);
	for (int i = 0; i < 4; i++)
		pdi_model_done(&normal[i]);
	unbuild(c, b);
	free(b);
}

/* Every phase has its wall-clock window; the prologue and epilogue are set-up and tear-down;
 * the faulty phase is named with its window. */
Test(analysis, phases_a_person_can_place)
{
	const struct view_case *c = &cases[1]; /* the stall, 9 phases */
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	char *json, *summary;

	cr_assert_not_null(b);
	build(c, b);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_assert_eq(a.nphases, (uint32_t)c->phases + 1);
	cr_expect_eq(a.phases[0].kind, PDI_PHASE_SETUP);
	cr_expect_eq(a.phases[a.nphases - 1].kind, PDI_PHASE_TEARDOWN);
	for (uint32_t p = 1; p + 1 < a.nphases; p++)
		cr_expect_eq(a.phases[p].kind, PDI_PHASE_STEADY, "phase %u", p);
	for (uint32_t p = 0; p < a.nphases; p++) {
		cr_expect(a.phases[p].start_s >= 0 && a.phases[p].end_s > a.phases[p].start_s, "phase %u: %g - %g", p,
			  a.phases[p].start_s, a.phases[p].end_s);
		if (p) /* the union over tasks whose clocks differ: windows may overlap, never go back */
			cr_expect(a.phases[p].start_s >= a.phases[p - 1].start_s, "phase %u", p);
	}
	json = pdi_render_json(&a);
	summary = pdi_render_summary(&a);
	cr_assert(json && summary);
	cr_expect(strstr(json, "\"faulty_phase_window\"") && strstr(json, "\"start\":\"1970-01-01T00:16:40."), "%s", json);
	cr_expect(strstr(summary, "phase 6 (") && strstr(summary, " s after start ("), "%s", summary);
	free(json);
	free(summary);
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

/* A phase the machine slowed for every task (19 s more each) against one task's 12 s stall
 * in another: the stall is the faulty phase, by the time one task lost beyond the others. */
Test(analysis, a_stall_of_one_task_beats_a_slowdown_of_all)
{
	const struct view_case *c = &cases[0]; /* 4 tasks, 8 phases, clean */
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];

	cr_assert_not_null(b);
	build(c, b);
	for (unsigned i = 0; i < c->ntasks; i++) {
		pdi_model_done(&b->models[i]);
		ring_model_noisy(&b->models[i], (int)i, c->phases, i == 1 ? 5 : -1, 2);
	}
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_eq(a.am.faulty_phase, 6, "phase %u (imbalance %g, excess %g in phase 3)", a.am.faulty_phase,
		     a.am.lost.phase_s[6], a.am.phase_excess[3]);
	cr_expect(pdi_analysis_faulty_ranks(&a, ranks) == 1 && ranks[0] == 1);
	cr_expect(a.abnormal);
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

/* Builds case C with every task generated from OPTS, RANK's own options from THEIRS. */
static void build_with(const struct view_case *c, struct built *b, const struct ring_opts *opts, int rank,
		       const struct ring_opts *theirs)
{
	build(c, b);
	for (unsigned i = 0; i < c->ntasks; i++) {
		pdi_model_done(&b->models[i]);
		ring_model_with(&b->models[i], (int)i, c->phases, (int)i == rank ? theirs : opts);
	}
}

/* Builds case C with task I generated from OPTS[I]. */
static void build_each(const struct view_case *c, struct built *b, const struct ring_opts *const *opts)
{
	build(c, b);
	for (unsigned i = 0; i < c->ntasks; i++) {
		pdi_model_done(&b->models[i]);
		ring_model_with(&b->models[i], (int)i, c->phases, opts[i]);
	}
}

/* The faulty phase, ranks, and whether abnormal, of case C built with OPTS (RANK: THEIRS). */
static void expect_verdict(const struct ring_opts *opts, int rank, const struct ring_opts *theirs, int phase,
			   int abnormal, enum pdi_lost_kind kind, const char *what)
{
	const struct view_case *c = &cases[0]; /* 4 tasks, 8 phases, clean */
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];
	size_t n;

	cr_assert_not_null(b);
	build_with(c, b, opts, rank, theirs);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_eq(a.abnormal, abnormal, "%s: abnormal %d (z %g, %g s)", what, a.abnormal, a.noise_z, a.excess_s);
	if (phase >= 0) {
		n = pdi_analysis_faulty_ranks(&a, ranks);
		cr_expect_eq(a.am.faulty_phase, (uint32_t)phase, "%s: phase %u", what, a.am.faulty_phase);
		cr_expect(n == 1 && ranks[0] == rank, "%s: %zu ranks, first %d", what, n, n ? ranks[0] : -1);
		cr_expect(a.am.by_lost && a.am.lost.kind == kind, "%s: lost %s", what, pdi_lost_kind_names[a.am.lost.kind]);
	}
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

/* A rank that shows as computing while the overhead budget had one of its functions detached may
 * be blocked inside a call of it that no probe saw begin: the verdict says it cannot tell, and
 * does not single the rank out as computing outside MPI (issue 10). Seen in full, it is. */
Test(analysis, computing_while_detached_is_not_taken_for_computing)
{
	const struct view_case *c = &cases[5]; /* rank 2 computes after its Isend, the others wait */
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int fn = pdi_mpi_func_find("MPI_Waitall");

	cr_assert_not_null(b);
	cr_assert_str_eq(c->lp, "[2]");
	build(c, b);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_str_eq(a.lp, "[2]", "seen in full, rank 2 computes outside MPI");
	cr_expect(!has_limit(&a, "may be inside such a call"));
	pdi_analysis_done(&a);
	/* its Waitall detached before its last seen call, and still */
	cr_assert_eq(pdi_unobserved_begin(&b->models[2].unobserved, (uint16_t)fn, PDI_UNOBS_DETACHED, 8, 200000, 90000,
					  b->models[2].last_exit - 1),
		     0);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_str_eq(a.kind, "hang");
	cr_expect(strcmp(a.lp_by ? a.lp_by : "", "outside_mpi"), "rank 2 singled out as computing: %s", a.lp);
	cr_expect(has_limit(&a, "ranks [2] show as computing, but functions of theirs were probed in part"));
	pdi_analysis_done(&a);
	/* restored before its last seen call: seen in full since, so computing it is */
	pdi_unobserved_end(&b->models[2].unobserved, (uint16_t)fn, b->models[2].last_exit - 1);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_str_eq(a.lp, "[2]");
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

/* MPB with one rank spinning for good outside MPI (bench/apps.py hang-spin, a CI run on a loaded
 * machine): the overhead budget sampled MPI_Allreduce (1/2 of the time) from 0.31 s before the
 * spin until 2.16 s after, and the three waiting ranks entered theirs unseen. 22.5 s later every
 * rank showed as computing after the same call, each with 29-46% CPU: nothing but their stacks
 * told them apart, and the verdict named all four. Placed by their stacks (report/snapshot.c),
 * the three sit in MPI_Allreduce for at least the 20.4 s since the probes saw in full again,
 * and the spinning one is named alone. */
static const struct view_case thinned_mpb = {
	.name = "MPB: rank 1 spins, the others wait in an MPI_Allreduce their thinned probes missed", .ntasks = 4,
	.phases = 6, .running = true, .hung = true,
	.t = {{.kind = PDI_WHERE_COMPUTING, .site = BARRIER, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 22545330915},
	      {.kind = PDI_WHERE_COMPUTING, .site = BARRIER, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 22547070955},
	      {.kind = PDI_WHERE_COMPUTING, .site = BARRIER, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 22547518245},
	      {.kind = PDI_WHERE_COMPUTING, .site = BARRIER, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 22548192874}},
	.kind = "hang", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1};

/* FN of every task of B sampled from BEFORE_NS before its last seen call ended to AFTER_NS after. */
static void thin(struct built *b, unsigned ntasks, const char *fn, uint64_t before_ns, uint64_t after_ns)
{
	uint16_t f = (uint16_t)pdi_mpi_func_find(fn);

	for (unsigned i = 0; i < ntasks; i++) {
		struct pdi_model *m = &b->models[i];

		cr_assert_eq(pdi_unobserved_begin(&m->unobserved, f, PDI_UNOBS_SAMPLED, 1, 2774, 15034, m->last_exit - before_ns),
			     0);
		pdi_unobserved_end(&m->unobserved, f, m->last_exit + after_ns);
	}
}

/* Task T placed by its stack in FN, for at least FOR_NS (what place_by_stack() makes of it). */
static void in_call_by_stack(struct pdi_view_task *t, const char *fn, uint64_t for_ns)
{
	t->where.kind = PDI_WHERE_BLOCKED;
	t->where.site = -1;
	t->where.for_ns = for_ns;
	t->where.by_stack = true;
	snprintf(t->where.text, sizeof(t->where.text), "%s (on its stack: its probes did not see the call begin)", fn);
}

Test(analysis, a_spinning_rank_is_told_from_ranks_waiting_unseen_by_their_stacks)
{
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	char doing[700];

	cr_assert_not_null(b);
	build(&thinned_mpb, b);
	thin(b, 4, "MPI_Allreduce", 309000000, 2160000000);
	/* as pdimond saw it: four ranks alike, none can be taken for computing */
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_str_eq(a.kind, "hang");
	cr_expect(strcmp(a.lp_by ? a.lp_by : "", "outside_mpi"), "%s", a.lp);
	cr_expect(has_limit(&a, "ranks [0-3] show as computing, but functions of theirs were probed in part"));
	pdi_analysis_done(&a);
	/* as their stacks place them */
	for (unsigned i = 0; i < 4; i++)
		if (i != 1)
			in_call_by_stack(&b->v.tasks[i], "MPI_Allreduce", b->v.tasks[i].where.for_ns - 2160000000);
	b->v.tasks[1].where.by_stack = true;
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_str_eq(a.kind, "hang");
	cr_expect_str_eq(a.lp, "[1]", "least progressed %s (by %s)", a.lp, a.lp_by);
	cr_expect(!has_limit(&a, "may be inside such a call"));
	cr_expect(has_limit(&a, "ranks [0,2-3] are inside MPI calls their probes did not see begin"));
	pdi_view_task_doing(&b->v.tasks[0], doing, sizeof(doing));
	cr_expect(strstr(doing, "waiting in MPI_Allreduce") && strstr(doing, "for at least 20 s"), "%s", doing);
	pdi_analysis_done(&a);
	unbuild(&thinned_mpb, b);
	free(b);
}

/* meep, the same fault: rank 0's MPI_Waitsome was seen (7.4 s), ranks 1 and 2 entered theirs
 * while it was sampled (until 3.2 s after the spin), rank 3 spins after its own Waitsome. */
Test(analysis, a_spinning_rank_is_named_when_some_waits_were_seen_and_some_not)
{
	const struct view_case c = {
		.name = "meep: rank 3 spins, ranks 1-2 wait in Waitsome unseen, rank 0 seen", .ntasks = 4, .phases = 6,
		.running = true,
		.t = {{.kind = PDI_WHERE_BLOCKED, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 7400000000},
		      {.kind = PDI_WHERE_COMPUTING, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 7500000000},
		      {.kind = PDI_WHERE_COMPUTING, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 7700000000},
		      {.kind = PDI_WHERE_COMPUTING, .site = WAITALL, .act = PDI_ACT_RUNNING, .stall_phase = -1, .for_ns = 7500000000}},
		.kind = "hang", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1};
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;

	cr_assert_not_null(b);
	build(&c, b);
	thin(b, 4, "MPI_Waitall", 400000000, 3200000000);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect(strcmp(a.lp, "[3]"), "named by luck: %s", a.lp);
	pdi_analysis_done(&a);
	in_call_by_stack(&b->v.tasks[1], "MPI_Waitall", 4300000000);
	in_call_by_stack(&b->v.tasks[2], "MPI_Waitall", 4500000000);
	b->v.tasks[3].where.by_stack = true;
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_str_eq(a.kind, "hang");
	cr_expect_str_eq(a.lp, "[3]", "least progressed %s (by %s)", a.lp, a.lp_by);
	pdi_analysis_done(&a);
	unbuild(&c, b);
	free(b);
}

/* A task stopped 3 s inside MPI_Waitall: every task's Waitall took 3 s longer, so the call
 * timings look alike; the kernel's counts say which one was neither running nor runnable. */
Test(analysis, a_task_stopped_inside_mpi_is_named_by_the_time_it_was_held)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = 4, .slow_from = -1, .slow_to = -1,
				.usage = true};
	struct ring_opts stopped = all;

	stopped.stopped = true;
	expect_verdict(&all, 1, &stopped, 5, 1, PDI_LOST_HELD, "stopped in MPI");
}

/* The same stop, its peers not waiting in MPI the while (they had no message from it due, as
 * in meep's set-up): its time inside the call is longer than theirs, as a victim's sleeping in MPI
 * would be, but no task computed longer for it to wait for: named by the time held (issue 9). */
Test(analysis, a_task_stopped_inside_mpi_while_no_peer_waits_is_named_by_the_time_it_was_held)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true};
	struct ring_opts stopped = all;

	stopped.stop_phase = 4;
	stopped.stopped = true;
	expect_verdict(&all, 1, &stopped, 5, 1, PDI_LOST_HELD, "stopped in MPI, peers not waiting");
}

/* Monitor.transient_stall_phase (2 ranks, issue 9 item 8): rank 1 sleeps 3 s before its Barrier
 * (held: the kernel's counts say it slept more than its call timings say it computed, since the
 * load stretched its peer's computation in that phase by 0.2 s), while rank 0 waits for it in the
 * Barrier and, on a loaded machine, for a CPU most of that while. Rank 0 is a victim of rank 1's
 * time held, whichever of rank 1's figures, computing or held, is kept: rank 1 is named alone.
 * At loads near 31, before this was counted, rank 0's wait stood 1.12-1.61 s in five runs (named
 * beside rank 1 from 1.5 s) and once past 2.5 s (3 s / 1.2: "no task stands apart", nothing
 * abnormal); one of each is here. */
Test(analysis, a_task_waiting_for_a_cpu_in_mpi_is_a_victim_of_a_task_held_in_its_computation)
{
	const struct view_case c = {.name = "two ranks", .ntasks = 2, .phases = 8, .t = {DONE(BARRIER), DONE(BARRIER)},
				    .kind = "completed", .faulty_phase = -1, .faulty_rank = -1, .abnormal = -1};
	const double shares[] = {0.45, 0.2}; /* rank 0's CPU share in the phase: waits 1.7 s, 2.8 s longer */
	struct ring_opts waits = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .usage = true,
				  .spin_phase = 4, .slow_from = 4, .slow_to = 4, .slowed = true, .slow_factor = 1.25};
	struct ring_opts sleeps = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1,
				   .slow_to = -1, .usage = true, .spin_phase = 4, .sleeping = true};
	const struct ring_opts *opts[2] = {&waits, &sleeps};
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];
	size_t n;

	cr_assert_not_null(b);
	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++) {
		waits.slow_share = shares[i];
		build_each(&c, b, opts);
		cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
		n = pdi_analysis_faulty_ranks(&a, ranks);
		cr_expect(a.am.by_lost && a.am.lost.task == 1 && a.am.faulty_phase == 5,
			  "share %g: by_lost %d, task %zu, phase %u", shares[i], a.am.by_lost, a.am.lost.task,
			  a.am.faulty_phase);
		cr_expect(n == 1 && ranks[0] == 1, "share %g: %zu ranks, first %d (rank 0 lost %.2f s %s, rank 1 %.2f s %s)",
			  shares[i], n, n ? ranks[0] : -1, pdi_lost_of(&a.am.lost, 0, 5, NULL),
			  pdi_lost_kind_names[a.am.lost.kinds[0 * a.am.lost.nphases + 5]], pdi_lost_of(&a.am.lost, 1, 5, NULL),
			  pdi_lost_kind_names[a.am.lost.kinds[1 * a.am.lost.nphases + 5]]);
		cr_expect(a.abnormal, "share %g: nothing abnormal (task margin %.2f, next task %.2f s)", shares[i],
			  a.am.task_margin, a.am.lost.next_task_s);
		pdi_analysis_done(&a);
		unbuild(&c, b);
	}
	free(b);
}

/* The same stop in the last loop, the tear-down (phase 8), which AutomaDeD leaves out of its
 * comparison like the set-up: the time held still names it, there. */
Test(analysis, a_task_stopped_in_the_tear_down_is_named_there)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = 7, .slow_from = -1, .slow_to = -1,
				.usage = true};
	struct ring_opts stopped = all;

	stopped.stopped = true;
	expect_verdict(&all, 2, &stopped, 8, 1, PDI_LOST_HELD, "stopped in the tear-down");
}

/* A task spinning 3 s in its own code in the tear-down: no usual phase to compare it with, but
 * the stretch after the Waitall took 3 s where its 39 others took 20 ms: named there. */
Test(analysis, a_task_spinning_in_the_tear_down_is_named_there)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true, .spin_phase = 7};
	struct ring_opts spinning = all;

	spinning.spinning = true;
	expect_verdict(&all, 1, &spinning, 8, 1, PDI_LOST_COMPUTING, "spinning in the tear-down");
}

/* The same stretch where the spinner's probes could not see every call of the tear-down: a
 * function of its detached there, as NWChem's MPI_Win_flush_local_all was for 9.8 s in fault-free
 * runs at a load of 19, where a 2.3 s stretch between two seen calls was taken for a burst. It
 * may hold calls no probe saw: no burst. Sampled with calls still seen every second, it is one. */
Test(analysis, a_long_stretch_the_probes_were_blind_to_is_no_burst)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true, .spin_phase = 7};
	struct ring_opts spinning = all;
	const struct view_case *c = &cases[0];
	uint16_t fn = (uint16_t)pdi_mpi_func_find("MPI_Waitall");
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	struct pdi_phase *tear_down;

	cr_assert_not_null(b);
	spinning.spinning = true;
	for (int level = PDI_UNOBS_SAMPLED; level <= PDI_UNOBS_DETACHED; level++) {
		build_with(c, b, &all, 1, &spinning);
		tear_down = &b->models[1].phases[8];
		cr_assert_eq(pdi_unobserved_begin(&b->models[1].unobserved, fn, (uint8_t)level, 1, 2000, 10000,
						  tear_down->t_start + 1000000),
			     0);
		pdi_unobserved_end(&b->models[1].unobserved, fn, tear_down->t_end - 1000000);
		cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
		if (level == PDI_UNOBS_SAMPLED)
			cr_expect(a.am.by_lost && a.am.lost.kind == PDI_LOST_COMPUTING && a.am.faulty_phase == 8 &&
					  a.am.lost.task == 1,
				  "sampled, 1000 calls seen a second: still a burst (phase %u)", a.am.faulty_phase);
		else
			cr_expect(!(a.am.by_lost && a.am.lost.kind == PDI_LOST_COMPUTING && a.am.faulty_phase == 8),
				  "detached: taken for a burst (abnormal %d, %g s)", a.abnormal, a.am.lost.peak_s);
		pdi_analysis_done(&a);
		unbuild(c, b);
	}
	free(b);
}

/* A step of few phases (3 program phases: no usual phase to compare with): the kernel's counts
 * single out a task in the phase it lost its time in when it was held, or on a CPU, a stall's
 * worth longer than every peer there (AutomaDeD 3.3: the tasks compared within the phase). */
Test(analysis, the_kernel_singles_out_a_task_of_a_step_of_few_phases)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = 1, .slow_from = -1, .slow_to = -1,
				.usage = true};
	struct ring_opts stopped = all, busy = all, blind = all;
	struct pdi_model m[4];
	const struct pdi_model *models[4] = {&m[0], &m[1], &m[2], &m[3]};
	struct pdi_lost l = {.found = true, .task = 2, .peak = 2}; /* program phase 1 */

	stopped.stopped = true;
	for (int t = 0; t < 4; t++)
		ring_model_with(&m[t], t, 3, t == 2 ? &stopped : &all);
	cr_expect(pdi_lost_kernel_alone(&l, models, 4), "held 3 s while its peers waited for it in MPI");
	l.task = 1;
	cr_expect(!pdi_lost_kernel_alone(&l, models, 4), "a peer that waited is not singled out");
	l.task = 2;
	l.peak = 1;
	cr_expect(!pdi_lost_kernel_alone(&l, models, 4), "not in a phase it was not held in");
	pdi_model_done(&m[3]);
	blind.usage = false;
	ring_model_with(&m[3], 3, 3, &blind);
	l.peak = 2;
	cr_expect(!pdi_lost_kernel_alone(&l, models, 4), "a peer without the kernel's counts: not known");
	for (int t = 0; t < 4; t++)
		pdi_model_done(&m[t]);
	/* computing 12 s longer than its peers in the phase (a spin), at the same share of a CPU */
	all.stop_phase = busy.stop_phase = -1;
	busy.stall_phase = 1;
	for (int t = 0; t < 4; t++)
		ring_model_with(&m[t], t, 3, t == 2 ? &busy : &all);
	l.peak = 2;
	cr_expect(pdi_lost_kernel_alone(&l, models, 4), "on a CPU a stall's worth longer than every peer");
	for (int t = 0; t < 4; t++)
		pdi_model_done(&m[t]);
}

/* Interference on one task's CPU for three phases: found where it began, on that task. */
Test(analysis, interference_is_found_where_it_began)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = 3, .slow_to = 5,
				.usage = true};
	struct ring_opts slowed = all;

	slowed.slowed = true;
	expect_verdict(&all, 3, &slowed, 4, 1, PDI_LOST_COMPUTING, "interference");
}

/* A loaded machine that slows every task alike, in one phase: nothing abnormal. */
Test(analysis, a_machine_that_slows_every_task_is_no_fault)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = 3, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true};

	expect_verdict(&all, -1, &all, -1, 0, PDI_LOST_NONE, "machine");
}

/* The limit of a "nothing abnormal" verdict says why: a phase every task was slowed in alike
 * stands far beyond the step's variation, and it is no task's fault; saying "within the normal
 * variation" of it (as the verdict of Monitor.transient_stall_phase at a load of 42 did of 59.5
 * deviations and 2.99 s) misled. */
Test(analysis, nothing_abnormal_says_why)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = 3, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true};
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;

	cr_assert_not_null(b);
	build_with(&cases[0], b, &all, -1, &all);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect_not(a.abnormal);
	cr_expect(a.noise_z >= 8 && a.excess_s >= 1, "every task slowed 25 times: z %g, %g s", a.noise_z, a.excess_s);
	cr_expect(has_limit(&a, "longer than usual: beyond the normal variation, but no task stands apart in it"),
		  "%zu limits, the last: %s", a.nlimits, a.nlimits ? a.limits[a.nlimits - 1] : "");
	pdi_analysis_done(&a);
	unbuild(&cases[0], b);
	free(b);
}

/* How much longer than usual a phase took (automaded.h, phase_excess): a phase long by work of
 * its own, 3 s on every task in computations it makes nowhere else (NWChem's phase 2, issue 9),
 * is not longer than usual; a rank spinning 3 s in work it does in milliseconds elsewhere made
 * its phase longer. Model phase P + 1 is program phase P. */
static double phase_excess_of(const struct ring_opts *opts, int rank, const struct ring_opts *theirs, uint32_t p)
{
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	double excess;

	cr_assert_not_null(b);
	build_with(&cases[0], b, opts, rank, theirs);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_assert(a.has_automaded);
	excess = a.am.phase_excess[p];
	pdi_analysis_done(&a);
	unbuild(&cases[0], b);
	free(b);
	return excess;
}

Test(analysis, a_phase_long_by_work_of_its_own_is_not_longer_than_usual)
{
	struct ring_opts own = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true, .own_work_phase = 3};
	struct ring_opts spin = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				 .usage = true, .spin_phase = 3};
	struct ring_opts spinner = spin;
	double own_work, one;

	spinner.spinning = true;
	own_work = phase_excess_of(&own, -1, &own, 4);
	one = phase_excess_of(&spin, 1, &spinner, 4);
	cr_expect(own_work < PDI_EXCESS_FLOOR_S / 2, "3 s of its own work on every task: %g s longer than usual", own_work);
	cr_expect(one >= PDI_EXCESS_FLOOR_S, "a 3 s spin of one task: %g s longer than usual", one);
}

/* Not getting CPU (starved.h): one task's share of the CPU against its peers', on a machine where
 * every task waits for a CPU most of the time anyway. The verdicts the design guarantees. */
struct starved_case {
	const char *name;
	double share;        /* every task's CPU share (0: 0.4) */
	double victim_share; /* the slowed task's share in phases [from, to] */
	double victim_factor; /* how much longer it computes there */
	int from, to;        /* program phases (model phases from + 1 ...); -1: none */
	bool always;         /* the task gets VICTIM_SHARE in every phase (its placement) */
	int abnormal;
	int phase;           /* the faulty phase, -1: not checked */
	bool by_starved;     /* the phase and task were picked by the CPU share */
	int from_i;          /* it began in iteration FROM_I (of 40) of phase FROM (0: the first) */
};

static const struct starved_case starved_cases[] = {
	{"a fifth of its peers' share for 3 phases, hardly slower: found where it began", 0.4, 0.08, 1.2, 3, 5, false,
	 1, 4, true, 0},
	{"the same on a busier machine (every task 15%)", 0.15, 0.03, 1.2, 2, 4, false, 1, 3, true, 0},
	{"interference from the fifth phase to the end: a lasting shift, from where it began", 0.4, 0.08, 1.2, 4, 7,
	 false, 1, 5, true, 0},
	{"two thirds of its peers' share: a scheduler's unevenness, not interference", 0.4, 0.27, 1.0, 3, 5, false, 0,
	 -1, false, 0},
	{"a third of their share in every phase (its placement): its usual, no fault", 0.4, 0.13, 1.0, 0, 7, true, 0, -1,
	 false, 0},
	{"half their share for 3 phases: under the ratio, no fault", 0.4, 0.2, 1.0, 3, 5, false, 0, -1, false, 0},
	{"a fifth of their share for 5 of the 8 phases (most of a short step): its usual is the rest, found", 0.4, 0.08,
	 1.2, 1, 5, false, 1, 2, true, 0},
	{"a fifth of their share in the tear-down, which AutomaDeD leaves out: found there", 0.4, 0.08, 1.2, 7, 7,
	 false, 1, 8, true, 0},
};

/* SC on a machine whose load gave every task BUSY_SHARE in program phases [BUSY_FROM, BUSY_TO]
 * (BUSY_SHARE 0: none). */
static void expect_starved(const struct starved_case *sc, double busy_share, int busy_from, int busy_to)
{
	const struct view_case *c = &cases[0];
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = sc->from,
				.slow_to = sc->to, .usage = true, .share = sc->share,
				.busy_share = busy_share, .busy_from = busy_from, .busy_to = busy_to};
	struct ring_opts victim = all;
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];
	size_t n;
	char *text;

	victim.slowed = true;
	victim.slow_from_i = sc->from_i;
	victim.slow_share = sc->victim_share;
	victim.slow_factor = sc->victim_factor;
	/* the peers wait for it no longer than it computes longer */
	all.slow_from = all.slow_to = -1;
	cr_assert_not_null(b);
	build_with(c, b, &all, 2, &victim);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	if (sc->abnormal >= 0)
		cr_expect_eq(a.abnormal, sc->abnormal, "%s: abnormal %d (z %g, starved %d ratio %g z %g %g s)",
			     sc->name, a.abnormal, a.noise_z, a.am.starved.found, a.am.starved.ratio,
			     a.am.starved.z, a.am.starved.run_s);
	cr_expect_eq(a.am.by_starved, sc->by_starved, "%s: by_starved %d", sc->name, a.am.by_starved);
	if (sc->phase >= 0) {
		n = pdi_analysis_faulty_ranks(&a, ranks);
		cr_expect_eq(a.am.faulty_phase, (uint32_t)sc->phase, "%s: phase %u", sc->name, a.am.faulty_phase);
		cr_expect(n == 1 && ranks[0] == 2, "%s: %zu ranks, first %d", sc->name, n, n ? ranks[0] : -1);
		text = pdi_render_text(&a);
		cr_assert_not_null(text);
		cr_expect(strstr(text, "not getting CPU: rank 2 waited ") && strstr(text, " s for a CPU "), "%s: %s",
			  sc->name, text);
		free(text);
	}
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

Test(analysis, a_task_not_getting_cpu_is_named_with_its_phase)
{
	for (size_t i = 0; i < sizeof(starved_cases) / sizeof(starved_cases[0]); i++)
		expect_starved(&starved_cases[i], 0, 0, 0);
}

/* Where it began, when the machine's load changed the shares of all: every task got less before
 * the interference (GROMACS at load 17, issue 9: 5% of a CPU each for 8.4 s, then 8-10%, the hog
 * from the seventh phase), or less in the phase just before it (the scheduler settling as the hog
 * arrived). The first is no part of it, the second is. */
Test(analysis, a_task_not_getting_cpu_is_found_where_its_share_fell)
{
	const struct starved_case busier = {"every task got half as much before it (a busier machine): found where "
					    "it began, not at the start", 0.4, 0.08, 1.2, 5, 6, false, 1, 6, true, 0};
	const struct starved_case settling = {"every task got a quarter as much in the phase before it (the scheduler "
					      "settling): found there", 0.4, 0.08, 1.2, 5, 6, false, 1, 5, true, 0};

	expect_starved(&busier, 0.2, 0, 4);
	expect_starved(&settling, 0.1, 4, 4);
}

/* Where it began inside a phase (the kernel's counts read every quarter of a second, usage_log.h):
 * late in a phase, where the phase as a whole shows too little of it (HPCC, issue 9: the hog in
 * the last part of a 1 s phase, placed one phase late), or for most of a long phase, where the
 * rest of it dilutes it under the ratio (MPB: 6 s of a 6.6 s phase at 0.46 of its peers' share,
 * nothing found). */
Test(analysis, a_task_not_getting_cpu_is_found_inside_a_phase)
{
	const struct starved_case late = {"a fifth of its peers' share from the last sixth of a phase on: found in "
					  "that phase, not the next", 0.4, 0.08, 1.2, 4, 6, false, 1, 5, true, 34};
	const struct starved_case diluted = {"a third of its peers' share for the last two thirds of one phase (half "
					     "of it over the phase): found there", 0.4, 0.12, 1.5, 4, 4, false, 1, 5,
					     true, 14};

	expect_starved(&late, 0, 0, 0);
	expect_starved(&diluted, 0, 0, 0);
}

/* Interference in a step of few phases (3 program phases: AutomaDeD has no usual phase): the
 * task's share against its peers' in the same phases is a comparison within the phase, and
 * names it (HPCC, issue 9: a hog in its 3.4 s set-up, 5 phases compared, "too few phases"). */
Test(analysis, a_task_not_getting_cpu_is_named_in_a_step_of_few_phases)
{
	struct view_case c = cases[0];
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1,
				.slow_to = -1, .usage = true, .share = 0.4};
	struct ring_opts victim = all;
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];
	size_t n;

	c.phases = 3;
	victim.slowed = true;
	victim.slow_from = victim.slow_to = 1;
	victim.slow_share = 0.08;
	victim.slow_factor = 1.2;
	cr_assert_not_null(b);
	build_with(&c, b, &all, 2, &victim);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	n = pdi_analysis_faulty_ranks(&a, ranks);
	cr_expect(a.am.by_starved && a.abnormal, "by_starved %d abnormal %d (z %g)", a.am.by_starved, a.abnormal,
		  a.noise_z);
	cr_expect_eq(a.am.faulty_phase, 2u, "phase %u", a.am.faulty_phase);
	cr_expect(n == 1 && ranks[0] == 2, "%zu ranks, first %d", n, n ? ranks[0] : -1);
	pdi_analysis_done(&a);
	unbuild(&c, b);
	free(b);
}

/* A rank spinning 3 s in its own code on a full node takes CPU from a rank it shares a CPU with,
 * whose computation stretches by 2.4 s: that rank lost time too, but to the spinner (60% of a
 * CPU against its usual 80%, waiting for one the rest of the time), so the spinner is named
 * alone (NWChem, issue 9). The same stretch at more than its usual share is its own: both. */
Test(analysis, a_rank_that_lost_cpu_to_a_spinner_is_not_named_beside_it)
{
	const struct view_case *c = &cases[0]; /* 4 tasks, 8 phases */
	const double neighbour_share[] = {0.6, 0.9}; /* the usual share: 0.8 */

	for (size_t k = 0; k < 2; k++) {
		struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = 5,
					.slow_to = 5, .usage = true, .spin_phase = 5, .share = 0.8};
		struct ring_opts spinner = all, neighbour = all;
		struct built *b = malloc(sizeof(*b));
		struct pdi_analysis a;
		int ranks[MAX_TASKS];
		size_t n;

		spinner.spinning = true;
		neighbour.slowed = true;
		neighbour.slow_factor = 4;
		neighbour.slow_share = neighbour_share[k];
		cr_assert_not_null(b);
		build_with(c, b, &all, 1, &spinner);
		pdi_model_done(&b->models[0]);
		ring_model_with(&b->models[0], 0, c->phases, &neighbour);
		cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
		n = pdi_analysis_faulty_ranks(&a, ranks);
		cr_expect(a.am.by_lost && a.am.lost.kind == PDI_LOST_COMPUTING && a.am.faulty_phase == 6,
			  "share %g: phase %u, by lost %d (%s)", neighbour_share[k], a.am.faulty_phase, a.am.by_lost,
			  pdi_lost_kind_names[a.am.lost.kind]);
		if (k == 0)
			cr_expect(n == 1 && ranks[0] == 1, "the spinner alone: %zu ranks, first %d", n, n ? ranks[0] : -1);
		else
			cr_expect(n == 2 && ranks[0] == 0 && ranks[1] == 1, "both: %zu ranks, first %d", n,
				  n ? ranks[0] : -1);
		pdi_analysis_done(&a);
		unbuild(c, b);
		free(b);
	}
}

/* A rank spinning 3 s in program phase 4 of 7 at its usual 40% of a CPU, where three cases of
 * what its peers' counts show (issue 9, spin11): it must be named, alone, in that phase, and the
 * peer it took the CPU from must not. CASE 0: its peers wait for it in MPI (their waits grow),
 * yielding the CPU as they poll: the one sharing its CPU gets 5%, the others 20% (HPCC at a load
 * of 15: the spinner kept its usual 14%, its peers fell to 3-7%, and the neighbour was named).
 * CASE 1: the same, but its peers wait in calls no probe saw, so nothing lost shows in the
 * models: only the kernel's counts tell (HPCC at a load of 13: on a CPU 0.70 s against its
 * peers' 0.07-0.17 s, and ranks 0 and 3 were named). CASE 2: its peers wait in MPI at their usual
 * share, it spins at 60% of a CPU, and a blip in program phase 1 left it a quarter of its peers'
 * share for the phase (NWChem at a load of 28: the blip's phase was named, "nothing abnormal").
 * CASE 3: a low load, where its peers busy-poll as they wait: it has a CPU to itself (97% of its
 * time on one), only 2.2 times as long as the peers polling (45%), and the one sharing its CPU
 * gets 12%, its computation 4 times as long (meep at a load of 5, lead: rank 2 "waited 4.5 s for
 * a CPU" was named). CASE 4: the same low load, but every peer waits in calls no probe saw (the
 * budget sampled them): no computation stands out, the one sharing its CPU (15% of its time on
 * one, the others 42%, under a third of their share) waited longer for a CPU than its peers, and
 * that was the finding (GROMACS at a load of 5, lead: rank 1 "waiting" 1.3 s was named). CASE 5:
 * a node loaded beyond its cores, every peer waiting in calls no probe saw: the spinner on a CPU
 * 30% of its time, its peers 11%, the one sharing its CPU 3% (HPCC at a load of 20, spin13: on a
 * CPU 2.7 times as long as any peer, no CPU to itself, and its neighbour was named). CASE 6: the
 * same, but the spinner at 50%, its peers 11.5%, the one sharing its CPU 6%: none fell to a third
 * of its peers' share, and the neighbour's 0.25 s of waiting beyond its peers was all the time
 * lost (GROMACS at a load of 15, spin13: phase 9 of 4.2 s, the spinner on a CPU 2.14 s, the others
 * 0.49 s at most, "nothing abnormal"). CASE 7: the same node, every peer waiting in calls no probe
 * saw at 13% of its time on a CPU, the one sharing its CPU too, the spinner at 60%: nobody lost
 * anything the call timings or the waits for a CPU show, nor fell to a third of its peers' share;
 * only the spinner's lead on a CPU tells (NWChem at a load of 10, spin14: on a CPU 2.83 s in a
 * phase of 4.75 s, its peers 0.61 s at most; a blip elsewhere was named, "nothing abnormal"). */
static void expect_spinner_named(int k)
{
	const struct view_case *c = &cases[0]; /* 4 tasks, 8 phases */
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1,
				.slow_to = -1, .usage = true, .spin_phase = 4, .share = 0.4};
	struct ring_opts spinner = all, neighbour = all, other = all;
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];
	size_t n;

	spinner.spinning = true;
	if (k == 7) {
		spinner.busy_share = 0.6;
		other.busy_share = neighbour.busy_share = 0.13;
		spinner.busy_from = spinner.busy_to = neighbour.busy_from = neighbour.busy_to = 4;
		other.busy_from = other.busy_to = 4;
		neighbour.wait_unseen = other.wait_unseen = true;
	} else if (k >= 5) {
		spinner.busy_share = k == 5 ? 0.3 : 0.5;
		other.busy_share = k == 5 ? 0.11 : 0.115;
		neighbour.busy_share = k == 5 ? 0.03 : 0.06;
		spinner.busy_from = spinner.busy_to = neighbour.busy_from = neighbour.busy_to = 4;
		other.busy_from = other.busy_to = 4;
		neighbour.wait_unseen = other.wait_unseen = true;
	} else if (k < 2) {
		neighbour.busy_share = k ? 0.02 : 0.05;
		other.busy_share = k ? 0.1 : 0.2;
		neighbour.busy_from = neighbour.busy_to = other.busy_from = other.busy_to = 4;
		neighbour.wait_unseen = other.wait_unseen = k == 1;
	} else if (k == 4) {
		spinner.busy_share = 0.97;
		other.busy_share = 0.42;
		spinner.busy_from = spinner.busy_to = other.busy_from = other.busy_to = 4;
		other.wait_unseen = neighbour.wait_unseen = true;
		neighbour.slowed = true;
		neighbour.slow_from = neighbour.slow_to = 4;
		neighbour.slow_share = 0.15;
		neighbour.slow_factor = 1;
	} else if (k == 3) {
		spinner.busy_share = 0.97;
		other.busy_share = 0.45;
		spinner.busy_from = spinner.busy_to = other.busy_from = other.busy_to = 4;
		neighbour.slowed = true;
		neighbour.slow_from = neighbour.slow_to = 4;
		neighbour.slow_share = 0.12;
		neighbour.slow_factor = 4;
	} else {
		spinner.busy_share = 0.6;
		spinner.busy_from = spinner.busy_to = 4;
		spinner.slowed = true;
		spinner.slow_from = spinner.slow_to = 1;
		spinner.slow_share = 0.1;
		spinner.slow_factor = 1;
	}
	cr_assert_not_null(b);
	build_each(c, b, (const struct ring_opts *[]){&other, &spinner, &neighbour, &other});
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	n = pdi_analysis_faulty_ranks(&a, ranks);
	cr_expect(a.abnormal, "case %d: abnormal %d (z %g, %g s)", k, a.abnormal, a.noise_z, a.excess_s);
	cr_expect_eq(a.am.faulty_phase, 5u, "case %d: phase %u (by lost %d, by starved %d)", k, a.am.faulty_phase,
		     a.am.by_lost, a.am.by_starved);
	cr_expect(n == 1 && ranks[0] == 1, "case %d: %zu ranks, first %d (by lost %d, by starved %d)", k, n,
		  n ? ranks[0] : -1, a.am.by_lost, a.am.by_starved);
	if (k == 1 || k >= 4) {
		char *text = pdi_render_text(&a);

		cr_assert_not_null(text);
		cr_expect(strstr(text, "took the CPU: rank 1 on a CPU "), "case %d: %s", k, text);
		free(text);
	}
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

Test(analysis, a_spinning_rank_is_named_not_the_peer_it_took_the_cpu_from)
{
	for (int k = 0; k < 8; k++)
		expect_spinner_named(k);
}

/* A rank spinning SPIN_S in program phase 2, and another whose cut after program phase 4 fell
 * LATE_S later than its peers' across a stretch of waiting in a Barrier (or of COMPUTING), on a
 * node where every task waits for a CPU 90% of its time from there on. The late cut moved time
 * from one phase into the other, no loss: the spinner is named, in its phase, alone, above the
 * 1.2 margin. */
static void expect_spin_beats_late_cut(double spin_s, double late_s, bool computing)
{
	const struct view_case *c = &cases[0]; /* 4 tasks, 8 phases */
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1,
				.slow_to = -1, .usage = true, .spin_phase = 2, .spin_s = spin_s, .late_phase = 4,
				.late_s = late_s, .late_computing = computing, .busy_share = 0.1, .busy_from = 4,
				.busy_to = 8};
	struct ring_opts spinner = all, late = all;
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];
	size_t n;

	spinner.spinning = true;
	late.late = true;
	cr_assert_not_null(b);
	build_each(c, b, (const struct ring_opts *[]){&all, &spinner, &all, &late});
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	n = pdi_analysis_faulty_ranks(&a, ranks);
	cr_expect(a.am.by_lost && a.am.lost.kind == PDI_LOST_COMPUTING && a.am.faulty_phase == 3,
		  "phase %u, by lost %d (%s)", a.am.faulty_phase, a.am.by_lost, pdi_lost_kind_names[a.am.lost.kind]);
	cr_expect(a.am.phase_margin >= 1.2, "phase margin %g (other phase %g s)", a.am.phase_margin,
		  a.am.lost.other_phase_s);
	cr_expect(a.abnormal, "abnormal %d (z %g, %g s)", a.abnormal, a.noise_z, a.excess_s);
	cr_expect(n == 1 && ranks[0] == 1, "%zu ranks, first %d", n, n ? ranks[0] : -1);
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

/* NWChem at a load of 17, issue 9, spin14: the spinner computed 1.01 s longer than its peers in
 * phase 6; rank 1's cut fell 0.9 s late after phase 26, which gave it 0.85 s "lost" waiting there
 * and 0.8 s less than its peers in phase 27; the phase margin was 1.19, "nothing abnormal". */
Test(analysis, a_late_cut_is_no_loss_against_a_spin)
{
	expect_spin_beats_late_cut(1.2, 1.2, false);
}

/* NWChem at a load of 20, issue 9, seed 962: rank 2 spun 1.43 s beyond its peers in phase 5 and
 * "computed" 1.27 s beyond them in phase 38, 1.16 s of it waiting for a CPU beyond theirs, then
 * 0.91 s less than they did in phase 39 after its cut fell late; the phase margin was 1.12. */
Test(analysis, a_late_cut_across_a_computation_waiting_for_a_cpu_is_no_loss_against_a_spin)
{
	expect_spin_beats_late_cut(1.43, 1.27, true);
}

/* A rank stopped 3 s inside MPI in program phase 2, and another that computed 4 s longer than its
 * peers in phase 5 (a loaded machine stretching the program's own imbalance: NWChem at a load of
 * 37, issue 9, spin11, 2.8 s in an 11 s phase against 2.6 s held). No healthy task is held for
 * seconds: the stopped rank is named, in its phase. */
Test(analysis, a_task_held_for_seconds_beats_a_longer_computation_elsewhere)
{
	const struct view_case *c = &cases[0]; /* 4 tasks, 8 phases */
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = 2, .slow_from = -1,
				.slow_to = -1, .usage = true, .spin_phase = 5, .spin_s = 4};
	struct ring_opts stopped = all, longer = all;
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];
	size_t n;

	stopped.stopped = true;
	longer.spinning = true;
	cr_assert_not_null(b);
	build_each(c, b, (const struct ring_opts *[]){&all, &longer, &stopped, &all});
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	n = pdi_analysis_faulty_ranks(&a, ranks);
	cr_expect(a.abnormal, "abnormal %d (z %g, %g s)", a.abnormal, a.noise_z, a.excess_s);
	cr_expect(a.am.by_lost && a.am.lost.kind == PDI_LOST_HELD && a.am.faulty_phase == 3,
		  "phase %u, by lost %d (%s)", a.am.faulty_phase, a.am.by_lost, pdi_lost_kind_names[a.am.lost.kind]);
	cr_expect(n == 1 && ranks[0] == 2, "%zu ranks, first %d", n, n ? ranks[0] : -1);
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

/* Task I of B seen by its live stack in FN ("" outside MPI) in the middle of phase P of its
 * model, LOOKS looks 3 s apart. */
static void seen(struct built *b, unsigned i, const char *fn, uint32_t p, unsigned looks)
{
	struct pdi_model *m = &b->models[i];
	uint64_t t = (m->phases[p].t_start + m->phases[p].t_end) / 2;

	for (unsigned k = 0; k < looks; k++)
		pdi_stack_seen_add(&m->stack_seen, *fn ? (uint16_t)pdi_mpi_func_find(fn) : PDI_STACK_SEEN_OUTSIDE,
				   t + k * 3000000000ull);
}

/* meep, a rank spinning 4 s outside MPI while the budget sampled every rank's calls: the ended
 * step's models show the same long stretch on every rank and AutomaDeD finds nothing; the looks
 * at live stacks during the step saw rank 2 computing while the others waited in MPI_Waitall. */
Test(analysis, a_rank_seen_computing_while_its_peers_waited_is_named)
{
	const struct view_case *c = &cases[0]; /* 4 tasks, 8 phases, clean */
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];
	char *json, *text;

	cr_assert_not_null(b);
	build(c, b);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_assert(!a.abnormal && !a.by_stack, "the clean run is quiet");
	pdi_analysis_done(&a);
	seen(b, 2, "", 4, 2);
	seen(b, 0, "MPI_Waitall", 4, 2);
	seen(b, 1, "MPI_Waitall", 4, 1);
	seen(b, 3, "MPI_Waitall", 4, 1);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect(a.abnormal && a.by_stack);
	cr_expect_eq(a.stack.phase, 4);
	cr_expect_eq(a.stack.waiting, 3);
	cr_expect(pdi_analysis_faulty_ranks(&a, ranks) == 1 && ranks[0] == 2);
	json = pdi_render_json(&a);
	text = pdi_render_text(&a);
	cr_assert(json && text);
	cr_expect(strstr(json, "\"method\":\"stack\"") && strstr(json, "\"faulty_phase\":4") &&
			  strstr(json, "\"stack_seen\":[{\"doing\":\"computing outside MPI\""),
		  "%s", json);
	cr_expect(strstr(text, "rank 2 stalled the others in phase 4") && strstr(text, "rank 0 in MPI_Waitall") &&
			  strstr(text, "Live stacks read while the probes were thinned"),
		  "%s", text);
	free(json);
	free(text);
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
}

/* What the looks must show before they name a rank: it alone computing, at least half of its
 * peers waiting then (all of them in set-up and tear-down); and they never overrule a verdict
 * naming another. */
Test(analysis, looks_that_single_no_rank_out_name_none)
{
	static const struct {
		const char *what;
		int computing[2];      /* ranks seen outside MPI, -1: none */
		int waiting[3];
		uint32_t phase;
		bool named;
	} looks[] = {
		{"two ranks computing at once", {2, 3}, {0, 1, -1}, 4, false},
		{"one peer of three waiting", {2, -1}, {0, -1, -1}, 4, false},
		{"two peers of three waiting in the set-up", {2, -1}, {0, 1, -1}, 0, false},
		{"all three peers waiting in the set-up", {2, -1}, {0, 1, 3}, 0, true},
		{"two peers of three waiting in the steady state, the third not seen", {2, -1}, {0, 1, -1}, 5, false},
		{"all three peers waiting", {2, -1}, {0, 1, 3}, 5, true},
	};

	for (size_t k = 0; k < sizeof(looks) / sizeof(looks[0]); k++) {
		const struct view_case *c = &cases[0];
		struct built *b = malloc(sizeof(*b));
		struct pdi_analysis a;

		cr_assert_not_null(b);
		build(c, b);
		for (unsigned i = 0; i < 2; i++)
			if (looks[k].computing[i] >= 0)
				seen(b, (unsigned)looks[k].computing[i], "", looks[k].phase, 1);
		for (unsigned i = 0; i < 3; i++)
			if (looks[k].waiting[i] >= 0)
				seen(b, (unsigned)looks[k].waiting[i], "MPI_Allreduce", looks[k].phase, 1);
		cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
		cr_expect_eq(a.by_stack, looks[k].named, "%s", looks[k].what);
		cr_expect_eq(a.abnormal, looks[k].named, "%s", looks[k].what);
		pdi_analysis_done(&a);
		unbuild(c, b);
		free(b);
	}
	/* the computing rank's hot function thinned before its look */
	static const struct {
		uint8_t level;
		uint32_t rate;
		bool counts;
	} marks[] = {
		{PDI_UNOBS_SAMPLED, 20000, true},   /* 1/4 at 20,000 calls a second: thousands seen */
		{PDI_UNOBS_SAMPLED, 0, false},      /* at a rate not measured (learned from earlier runs) */
		{PDI_UNOBS_DETACHED, 20000, false}, /* a tiny budget: its still second was no stillness */
	};
	for (size_t k = 0; k < sizeof(marks) / sizeof(*marks); k++) {
		const struct view_case *c = &cases[0];
		struct built *b = malloc(sizeof(*b));
		struct pdi_analysis a;

		cr_assert_not_null(b);
		build(c, b);
		cr_assert_eq(pdi_unobserved_begin(&b->models[2].unobserved, (uint16_t)pdi_mpi_func_find("MPI_Waitall"),
						  marks[k].level, 2, marks[k].rate, 5000, b->models[2].phases[5].t_start),
			     0);
		seen(b, 2, "", 5, 1);
		seen(b, 0, "MPI_Waitall", 5, 1);
		seen(b, 1, "MPI_Waitall", 5, 1);
		seen(b, 3, "MPI_Waitall", 5, 1);
		cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
		cr_expect_eq(a.by_stack, marks[k].counts, "mark %zu: by stack %d", k, a.by_stack);
		pdi_analysis_done(&a);
		unbuild(c, b);
		free(b);
	}
	{
		/* one peer of three seen waiting: enough only where AutomaDeD's phase stood out and its
		 * task did not (any_peer) */
		const struct view_case *c = &cases[0];
		struct built *b = malloc(sizeof(*b));
		struct pdi_stack_evidence e;

		cr_assert_not_null(b);
		build(c, b);
		seen(b, 1, "", 5, 1);
		seen(b, 3, "MPI_Test", 5, 1);
		b->models[3].stack_seen.v[0].t_first += 2100000000; /* HPCC's: 2.1 s after rank 1's look */
		b->models[3].stack_seen.v[0].t_last += 2100000000;
		pdi_stack_evidence(&b->v, false, &e);
		cr_expect(!e.found);
		pdi_stack_evidence(&b->v, true, &e);
		cr_expect(e.found && e.rank == 1 && e.phase == 5 && e.waiting == 1 && e.peer_rank == 3);
		unbuild(c, b);
		free(b);
	}
	{
		const struct view_case *c = &cases[1]; /* rank 2 stalled in phase 5: AutomaDeD names it */
		struct built *b = malloc(sizeof(*b));
		struct pdi_analysis a;
		int ranks[MAX_TASKS];

		cr_assert_not_null(b);
		build(c, b);
		seen(b, 0, "", 3, 1);
		seen(b, 1, "MPI_Waitall", 3, 1);
		seen(b, 2, "MPI_Waitall", 3, 1);
		seen(b, 3, "MPI_Waitall", 3, 1);
		cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
		cr_expect(a.abnormal && !a.by_stack && a.stack.found);
		cr_expect(pdi_analysis_faulty_ranks(&a, ranks) == 1 && ranks[0] == 2);
		pdi_analysis_done(&a);
		unbuild(c, b);
		free(b);
	}
}

/* Earlier normal runs of the program as AutomaDeD's sample runs (3.4): healthy runs in which
 * rank 1 computes 1.5 s longer than its peers in one phase (HPL's own imbalance on a loaded
 * machine, issue 9) say that this much is the program's usual, so a step that shows it is no
 * fault; judged against its own phases only, whose other phases vary by milliseconds, it is.
 * A 4 s stall still beats them; and clean earlier runs leave the documented floor. */
struct earlier {
	struct pdi_model runs[3][4];
	const struct pdi_model *row[3][4];
	const struct pdi_model *const *rows[3];
	struct pdi_analysis_samples samples;
};

static void earlier_runs(struct earlier *e, int imbalance_phase, double imbalance_s)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true, .spin_phase = imbalance_phase, .spin_s = imbalance_s};
	struct ring_opts one = all;

	one.spinning = true;
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < 4; i++) {
			ring_model_with(&e->runs[r][i], i + 10 * (r + 1), 8, i == 1 ? &one : &all);
			e->row[r][i] = &e->runs[r][i];
		}
		e->rows[r] = e->row[r];
	}
	e->samples = (struct pdi_analysis_samples){.rows = e->rows, .nruns = 3};
}

static void earlier_done(struct earlier *e)
{
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < 4; i++)
			pdi_model_done(&e->runs[r][i]);
}

/* Case 0 (4 tasks, 8 phases) with rank RANK spinning SPIN_S in program phase 5, judged against
 * RUNS (NULL: none): whether abnormal, and the analysis's baseline and words into RET_*. */
static bool judged(int rank, double spin_s, const struct pdi_analysis_samples *runs, struct pdi_baseline *ret_baseline,
		   char *words, size_t len)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true, .spin_phase = 5, .spin_s = spin_s};
	struct ring_opts spinning = all;
	struct built *b = malloc(sizeof(*b));
	struct pdi_analysis a;
	int ranks[MAX_TASKS];
	bool abnormal;

	cr_assert_not_null(b);
	spinning.spinning = true;
	build_with(&cases[0], b, &all, rank, &spinning);
	cr_assert_eq(pdi_analysis_build(&b->v, runs, &a), 0);
	abnormal = a.abnormal;
	if (abnormal)
		cr_expect(pdi_analysis_faulty_ranks(&a, ranks) == 1 && ranks[0] == rank, "rank %d not named alone", rank);
	*ret_baseline = a.baseline;
	pdi_analysis_confidence_text(&a, words, len);
	pdi_analysis_done(&a);
	unbuild(&cases[0], b);
	free(b);
	return abnormal;
}

Test(analysis, earlier_runs_that_lose_as_much_by_themselves_make_no_fault)
{
	struct earlier e;
	struct pdi_baseline base;
	char words[160];

	earlier_runs(&e, 3, 1.5);
	cr_expect(judged(1, 1.5, NULL, &base, words, sizeof(words)), "own phases only: 1.5 s beats the floor");
	cr_expect_eq(base.runs, 0);
	cr_expect_float_eq(base.floor_s, PDI_EXCESS_FLOOR_S, 1e-9);
	cr_expect(strstr(words, "against this step's own phases only"), "%s", words);

	cr_expect_not(judged(1, 1.5, &e.samples, &base, words, sizeof(words)), "earlier runs lost 1.5 s too");
	cr_expect_eq(base.runs, 3);
	cr_expect(base.excess_s > 1.4 && base.excess_s < 1.7, "the earlier runs' most: %g s", base.excess_s);
	cr_expect_float_eq(base.floor_s, PDI_BASELINE_MARGIN * base.excess_s, 1e-9);
	cr_expect(strstr(words, "none, against 3 earlier runs of the program"), "%s", words);

	cr_expect(judged(2, 4.0, &e.samples, &base, words, sizeof(words)), "a 4 s stall beats them");
	cr_expect(strstr(words, "against 3 earlier runs of the program"), "%s", words);
	earlier_done(&e);
}

Test(analysis, clean_earlier_runs_leave_the_documented_floor)
{
	struct earlier e;
	struct pdi_baseline base;
	char words[160];

	earlier_runs(&e, 0, 0); /* no imbalance */
	cr_expect(judged(1, 1.5, &e.samples, &base, words, sizeof(words)), "1.5 s against clean earlier runs");
	cr_expect_eq(base.runs, 3);
	cr_expect_lt(base.excess_s, 0.5 * PDI_EXCESS_FLOOR_S, "clean runs: %g s", base.excess_s);
	cr_expect_float_eq(base.floor_s, PDI_EXCESS_FLOOR_S, 1e-9);
	earlier_done(&e);
}

/* The z of a step whose other phases mostly score 0 (a MAD of 0) but for one: measured by the
 * phases that differ, not by a tiny fraction of a median of 0 (an HPCC run without fault stood
 * 5e15 deviations above the others: phase scores 0, 1273, 5022, 0, 0, 0). Phases all alike
 * still make any excess stand far above them. */
Test(analysis, a_phase_among_mostly_silent_ones_stands_by_the_ones_that_differ)
{
	double score[6] = {0, 1273, 5022, 0, 0, 0}, excess[6] = {0}, lost[6] = {0};
	struct pdi_automaded am = {.first_phase = 0, .end_phase = 6, .faulty_phase = 2, .phase_score = score,
				   .phase_excess = excess, .lost = {.phase_s = lost}};
	struct pdi_evidence e;

	pdi_evidence_of(&am, &e);
	/* mean absolute deviation of 0, 1273, 0, 0, 0 from their median 0: 254.6, x 1.2533 */
	cr_expect_float_eq(e.z, 5022 / (1.2533 * 1273 / 5), 1e-6, "z %g", e.z);

	score[1] = 0;
	pdi_evidence_of(&am, &e);
	cr_expect_gt(e.z, 1e6, "the others all alike: z %g", e.z);
}

/* Earlier runs of one phase (NWChem's, when the budget its earlier runs learned thinned the
 * collectives its phases are cut on from the start) have no phase to line up with the step's:
 * they are no sample runs, and the step is judged against its own phases, as it says. */
Test(analysis, earlier_runs_of_one_phase_are_no_sample_runs)
{
	struct built *b = malloc(sizeof(*b));
	struct pdi_model one[4];
	const struct pdi_model *row[4];
	const struct pdi_model *const *rows[1] = {row};
	struct pdi_analysis a;
	char words[160];

	cr_assert_not_null(b);
	build(&cases[1], b); /* rank 2 stalls */
	for (int i = 0; i < 4; i++) {
		ring_model(&one[i], i + 10, 0, -1); /* fewer than two phases to line up */
		cr_assert_lt(one[i].nphases, 2);
		row[i] = &one[i];
	}
	cr_assert_eq(pdi_analysis_build(&b->v, &(struct pdi_analysis_samples){.rows = rows, .nruns = 1}, &a), 0);
	cr_expect_eq(a.sample_runs, 0);
	cr_expect(a.abnormal);
	cr_expect_eq(a.am.faulty_phase, 6);
	cr_expect_gt(a.am.ntop, 0, "the characteristic transitions, against its own phases");
	pdi_analysis_confidence_text(&a, words, sizeof(words));
	cr_expect(strstr(words, "against this step's own phases only"), "%s", words);
	pdi_analysis_done(&a);
	for (int i = 0; i < 4; i++)
		pdi_model_done(&one[i]);
	unbuild(&cases[1], b);
	free(b);
}

/* A rank that does more of its usual work in two phases, at its usual pace, while its peers wait
 * for it (HPL's panel: HPCC's fault-free runs at a load of 15-19 lost 1.0-1.1 s this way, issue
 * 9) is the program's nature, judged against its own phases only; a rank spinning as long in one
 * phase, in work it does in milliseconds elsewhere, is still named there (pace.h). */
Test(analysis, more_work_at_the_usual_pace_is_no_fault_the_same_work_slower_is)
{
	const struct view_case *c = &cases[0]; /* 4 tasks, 8 phases */
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true, .more_from = 3, .more_to = 4};
	struct ring_opts worker = all;
	struct built *b = malloc(sizeof(*b));
	struct pdi_baseline base;
	struct pdi_analysis a;
	char words[160];

	cr_assert_not_null(b);
	worker.more = MORE_ITERS;
	build_with(c, b, &all, 1, &worker);
	cr_assert_eq(pdi_analysis_build(&b->v, NULL, &a), 0);
	cr_expect(pdi_phase_computation_s(&b->models[1].phases[4]) - pdi_phase_computation_s(&b->models[0].phases[4]) > 0.7,
		  "the worker computes longer: the case is HPL's");
	cr_expect_not(a.abnormal, "more of the usual work: abnormal (phase %u, z %g, %g s, lost %g s)", a.am.faulty_phase,
		      a.noise_z, a.excess_s, a.am.lost.total_s);
	cr_expect_str_eq(a.confidence, "none");
	pdi_analysis_done(&a);
	unbuild(c, b);
	free(b);
	cr_expect(judged(1, 1.6, NULL, &base, words, sizeof(words)), "a 1.6 s spin: %s", words);
}

/* The analysis of case 0 (4 tasks, 8 phases) with task RANK from THEIRS and the others from OPTS,
 * into A, with its JSON, text and summary renderings; where_done() frees them all. */
struct rendered {
	struct built *b;
	struct pdi_analysis a;
	char *json, *text, *summary;
};

static void where_went(const struct ring_opts *opts, int rank, const struct ring_opts *theirs, struct rendered *r)
{
	r->b = malloc(sizeof(*r->b));
	cr_assert_not_null(r->b);
	build_with(&cases[0], r->b, opts, rank, theirs);
	cr_assert_eq(pdi_analysis_build(&r->b->v, NULL, &r->a), 0);
	r->json = pdi_render_json(&r->a);
	r->text = pdi_render_text(&r->a);
	r->summary = pdi_render_summary(&r->a);
	cr_assert(r->json && r->text && r->summary);
}

static void where_done(struct rendered *r)
{
	free(r->json);
	free(r->text);
	free(r->summary);
	pdi_analysis_done(&r->a);
	unbuild(&cases[0], r->b);
	free(r->b);
}

/* Where the time one task lost against its peers names the phase and the task, the first
 * characteristic transition is where it went, in every rendering: the computation before the
 * Barrier a rank stalled in (12 s), the MPI_Waitall a rank was stopped in (3 s) while its peers
 * went on. A rank stopped in a call its peers waited in as long shows in no transition of its
 * own: the scores order them, as they do whenever the finding is not time lost. */
Test(analysis, the_transitions_say_where_the_time_went)
{
	struct ring_opts all = {.stall_phase = -1, .noise_phase = -1, .stop_phase = -1, .slow_from = -1, .slow_to = -1,
				.usage = true};
	struct ring_opts stalled = all, stopped = all, waited = all, stopped_waited;
	struct rendered r;

	stalled.stall_phase = 5;
	where_went(&all, 1, &stalled, &r);
	cr_expect(r.a.am.by_lost && r.a.am.faulty_phase == 6, "by lost %d, phase %u", r.a.am.by_lost,
		  r.a.am.faulty_phase);
	cr_assert_geq(r.a.am.ntop, 1);
	cr_expect(r.a.am.top[0].from == pdi_state_comp(WAITALL, BARRIER) && r.a.am.top[0].to == pdi_state_comm(BARRIER));
	cr_expect_gt(r.a.am.top[0].lost_s, 10.0, "%g s", r.a.am.top[0].lost_s);
	cr_expect(strstr(r.json, "\"transitions\":[{\"from\":\"MPI_Waitall@ring.c:14 -> MPI_Barrier@ring.c:15\""),
		  "%s", r.json);
	cr_expect(strstr(r.json, "\"lost_s\":1"), "the seconds, in JSON");
	cr_expect(strstr(r.text, "where the faulty task lost its time first") && strstr(r.text, "longer than on its peers"),
		  "%s", r.text);
	cr_expect(strstr(r.summary, "at MPI_Waitall@ring.c:14 -> MPI_Barrier@ring.c:15 => MPI_Barrier@ring.c:15"), "%s",
		  r.summary);
	where_done(&r);

	stopped.stop_phase = 4;
	stopped.stopped = true;
	where_went(&all, 1, &stopped, &r);
	cr_assert(r.a.am.by_lost && r.a.am.lost.kind == PDI_LOST_HELD && r.a.am.ntop >= 1);
	cr_expect(r.a.am.top[0].from == pdi_state_comm(WAITALL), "the call it was stopped in");
	cr_expect(r.a.am.top[0].lost_s > 2.9 && r.a.am.top[0].lost_s < 3.1, "%g s", r.a.am.top[0].lost_s);
	where_done(&r);

	waited.stop_phase = 4;
	stopped_waited = waited;
	stopped_waited.stopped = true;
	where_went(&waited, 1, &stopped_waited, &r);
	cr_assert(r.a.am.by_lost && r.a.am.lost.kind == PDI_LOST_HELD && r.a.am.ntop >= 1);
	cr_expect_not(r.a.am.lost.has_at, "%g s in a transition", r.a.am.lost.at_s);
	for (size_t k = 0; k < r.a.am.ntop; k++) {
		cr_expect_eq(r.a.am.top[k].lost_s, 0.0);
		cr_expect(k == 0 || r.a.am.top[k].score <= r.a.am.top[k - 1].score, "by their scores");
	}
	cr_expect_not(strstr(r.text, "where the faulty task lost its time first"), "%s", r.text);
	where_done(&r);
}

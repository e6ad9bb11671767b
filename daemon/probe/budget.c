/* SPDX-License-Identifier: GPL-2.0-only */
/* budget.c -- holding every task within max_overhead_pct: measure, degrade, restore, mark.
 *
 * Time is cut in periods of one second, each of PDI_BUDGET_SLOTS slots; the budget timer fires
 * at every slot. A function probed in time slices is on during the first 1/2^k of each period,
 * the same slots for every task of the node, so that tasks of a step miss the same stretches
 * and their models stay comparable. Rates are counted from the calls the daemon receives, over
 * the time the function's probes were on: a sliced or detached function is still measured. A
 * rate that rises is acted on at the next slot; a function is restored, one per period, once
 * it has kept its level two periods, to the fullest level that leaves the task at half its
 * budget, so that a polling burst costs fidelity only while it lasts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "budget.h"
#include "budget_change.h"
#include "daemon.h"
#include "entry_place.h"
#include "log.h"
#include "mpi_funcs.h"
#include "probe_change.h"
#include "probe_targets.h"
#include "program.h"
#include "retired.h"
#include "task_activity.h"
#include "tracer.h"
#include "u64map.h"

#define PERIOD_NS 1000000000ull
#define SLOT_NS (PERIOD_NS / PDI_BUDGET_SLOTS)
/* A detached function is re-measured in the first slot of the 2nd and 3rd periods after it was
 * detached, then of every 4th: a burst that made it so is often over within seconds (restored
 * as soon as a slice sees so, the run keeps its fidelity), and one that goes on costs a slot
 * every 4 s. Not the 1st: a level is held RESTORE_AFTER periods before it is restored anyway. */
#define DETACHED_EVERY 4
#define RESTORE_AFTER 2  /* periods at one level before it is restored */
/* periods a level learned from earlier runs is held before it is restored: a run's first seconds
 * are often its set-up (LAMMPS reads its input for 0.3 s, with no MPI_Send), where a sampled
 * function's slices see no call; restored after two periods, it was degraded again a slot after
 * the loop began, at full cost meanwhile and a probe change each way */
#define LEARNED_HOLD 4
/* Replaced links a task may hold before its probes only go off. */
#define RETIRED_MAX 32

/* Calls whose end the model can do without: nonblocking completion tests and probes. */
static bool entry_only_ok(unsigned fn)
{
	return pdi_fn_polls(fn);
}

const char *pdi_budget_level_name(unsigned level, char *buf, unsigned len)
{
	if (level == 0)
		return "full";
	if (level == 1)
		return "entry only";
	if (level >= PDI_BUDGET_DETACHED)
		return "detached";
	snprintf(buf, len, "sampled 1/%u", 1u << pdi_budget_duty_log2(level));
	return buf;
}

/* What FN (F) of a task costs on this node: a hit's trap and pdimond's programs (entry and return,
 * or entry alone); the kernel's visit of the links of every other process probed on the same
 * instruction and pdimond's own work on the call, which a job that fills its node's cores pays too;
 * and pdimond's work to switch its probes, which sampled and detached levels make. */
static struct pdi_budget_price price_of(const struct pdi_daemon *d, const struct pdi_budget_fn *f, unsigned fn)
{
	const struct pdi_probe_costs *c = &d->probe_costs;
	bool stepped = f->kind != PDI_INSN_EMULATED;

	return (struct pdi_budget_price){.hit_ns = stepped ? c->full_stepped : c->full_emulated,
					 .entry_hit_ns = stepped ? c->entry_only_stepped : c->entry_only_emulated,
					 .shared_ns = c->per_other_task * c->others + c->ingest_per_event,
					 .switch_ns = c->switch_cost,
					 .entry_only = entry_only_ok(fn)};
}

/* The next level up or down from LEVEL for FN (entry only exists for some functions). */
static unsigned next_level(unsigned fn, unsigned level, int dir)
{
	return pdi_budget_next_level(&(struct pdi_budget_price){.entry_only = entry_only_ok(fn)}, level, dir);
}

/* The share of its time FN at LEVEL takes from a task of B (budget_price.h). */
static double contribution(const struct pdi_daemon *d, const struct pdi_budget_task *b, unsigned fn, unsigned level)
{
	struct pdi_budget_price p;

	/* a function not called costs nothing at a level that makes no switches: most of the
	 * probed functions, priced several times a slot for every task (perf, LAMMPS: pricing them
	 * was a fifth of the slot timer's CPU) */
	if (b->fn[fn].rate == 0 && pdi_budget_switches_per_period(level) == 0)
		return 0;
	p = price_of(d, &b->fn[fn], fn);
	return pdi_budget_cost(&p, b->fn[fn].rate, level, PERIOD_NS / 1e9, b->cpu_share);
}

/* Runnable time a look must have seen for its share to mean something: a thread that slept
 * through it says nothing about what a hit costs it when it runs. */
#define SHARE_MIN_READY_NS 50000000ull

double pdi_budget_cpu_share(double last, uint64_t run, uint64_t wait)
{
	double share;

	if (run + wait < SHARE_MIN_READY_NS)
		return last;
	share = ((double)run / (double)(run + wait) + last) / 2;
	return share < 1.0 / PDI_BUDGET_SHARE_BOUND ? 1.0 / PDI_BUDGET_SHARE_BOUND : share > 1 ? 1 : share;
}

/* At each period, and at each slot until its first look that means something: the share of its
 * ready time T's MPI thread ran since the last look (schedstat). That first look is taken whole:
 * until then the task counts as having a core of its own, which on a loaded node underrates its
 * hits for most of a short run (a LAMMPS run of 2 s here was half over before the budget acted). */
static void measure_cpu_share(struct pdi_task *t)
{
	struct pdi_budget_task *b = t->budget;
	pid_t tid = t->usage_tid ? t->usage_tid : t->pid;
	uint64_t run, wait;

	if (pdi_task_schedstat(t->pid, tid, &run, &wait) < 0)
		return;
	if (b->run_ns && run >= b->run_ns && wait >= b->wait_ns) {
		uint64_t dr = run - b->run_ns, dw = wait - b->wait_ns;

		if (!b->share_seen && dr + dw < SHARE_MIN_READY_NS)
			return; /* not yet: the next slot looks at a longer stretch */
		b->cpu_share = pdi_budget_cpu_share(b->share_seen ? b->cpu_share : (double)dr / (double)(dr + dw), dr, dw);
		b->share_seen = true;
	}
	b->run_ns = run;
	b->wait_ns = wait;
}

#define LIBRARIES_COUNTED 8 /* distinct MPI libraries a node probes at once, at most counted */

struct library_tasks {
	dev_t dev;
	ino_t ino;
	unsigned n;
};

/* Other processes' links on the probes of a task: the most running tasks probed in one library,
 * less the task, plus the link of pdimond's own that keeps the library's probes registered
 * (startup.c). Counted for the node rather than per task: a node's ranks share their library, and
 * where two libraries are probed, the less crowded one's tasks are charged as the other's. Links
 * that other tools put on the library are not seen. One pass over the tasks (a slot's work must
 * not grow with their square on a node of hundreds of ranks); past LIBRARIES_COUNTED distinct
 * libraries, the tasks of the others are not counted. */
static unsigned others_on_library(const struct pdi_daemon *d)
{
	struct library_tasks lib[LIBRARIES_COUNTED];
	unsigned nlib = 0, most = 0;

	for (unsigned i = 0; i < d->reg.ntasks; i++) {
		const struct pdi_task *t = d->reg.tasks[i];
		unsigned k = 0;

		if (t->state != PDI_TASK_RUNNING || !t->budget || !t->att.targets)
			continue;
		while (k < nlib && (lib[k].dev != t->att.targets->dev || lib[k].ino != t->att.targets->ino))
			k++;
		if (k == nlib) {
			if (nlib == LIBRARIES_COUNTED)
				continue;
			lib[nlib++] = (struct library_tasks){.dev = t->att.targets->dev, .ino = t->att.targets->ino};
		}
		if (++lib[k].n > most)
			most = lib[k].n;
	}
	return most;
}

/* The level F's task would have it at: its step's, or more where its own cost needs more. */
static unsigned needed_level(const struct pdi_budget_fn *f)
{
	return f->need > f->level ? f->need : f->level;
}

/* The share of B's time its probes take, at its functions' levels (or NEEDED, at the levels its
 * own cost needs where more). Every decision starts from a task's cost, so the node's figures
 * that change while tasks run (the tasks sharing a library, pdimond's CPU per call) are brought
 * up to date here, once per slot. */
static double task_cost(struct pdi_daemon *d, const struct pdi_budget_task *b, bool needed)
{
	double c = 0;

	if (d->probe_costs.others_at_ns != d->budget_last_ns) {
		d->probe_costs.others_at_ns = d->budget_last_ns;
		d->probe_costs.others = others_on_library(d);
		pdi_probe_costs_sample_ingest(&d->probe_costs, d->events, d->budget_last_ns);
	}

	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		c += contribution(d, b, fn, needed ? needed_level(&b->fn[fn]) : b->fn[fn].level);
	return c;
}

/* Is a function detached in period DETACHED re-measured in period PERIOD (in its first slot)? */
static bool remeasured_in(uint64_t detached, uint64_t period)
{
	uint64_t since = period - detached;

	return since == 2 || since == 3 || (since && since % DETACHED_EVERY == 0);
}

/* The probes FN (F) should have in slot SLOT of period PERIOD at its level. */
static enum pdi_probe_mode mode_in_slot(unsigned fn, const struct pdi_budget_fn *f, uint64_t slot, uint64_t period)
{
	unsigned level = f->level;
	bool on;

	if (level == 0)
		return PDI_PROBE_FULL;
	if (level == 1)
		return PDI_PROBE_ENTRY_ONLY;
	if (level < PDI_BUDGET_DETACHED)
		on = slot < (PDI_BUDGET_SLOTS >> pdi_budget_duty_log2(level));
	else
		on = slot == 0 && remeasured_in(f->detached_period, period);
	if (!on)
		return PDI_PROBE_OFF;
	return entry_only_ok(fn) ? PDI_PROBE_ENTRY_ONLY : PDI_PROBE_FULL;
}

/* FN of T goes from its level to LEVEL at NOW, as BY (a task of its step; NULL: earlier runs of its
 * program) needs: said in the log and marked in the model. */
static void set_level(struct pdi_daemon *d, struct pdi_task *t, unsigned fn, unsigned level, const struct pdi_task *by,
		      uint64_t now)
{
	struct pdi_budget_fn *f = &t->budget->fn[fn];
	double full = contribution(d, t->budget, fn, 0);
	char a[32], b[32], why[64] = "";

	if (!by)
		snprintf(why, sizeof(why), ", as earlier runs of its program needed");
	else if (by != t)
		snprintf(why, sizeof(why), ", as rank %d of its step needs", by->rank);
	log_info("pid %d (rank %d) of step %s: %s %s -> %s: %.0f calls/s, fully probed %.1f%% of its time "
		 "(max_overhead_pct %g)%s", (int)t->pid, t->rank, t->step->name, pdi_mpi_funcs[fn].name,
		 pdi_budget_level_name(f->level, a, sizeof(a)), pdi_budget_level_name(level, b, sizeof(b)), f->rate,
		 full * 100, d->cfg.max_overhead_pct, why);
	if (level >= PDI_BUDGET_DETACHED && f->level < PDI_BUDGET_DETACHED)
		f->detached_period = (now - d->budget_epoch_ns) / PERIOD_NS;
	f->level = (uint8_t)level;
	f->learned = !by;
	if (level == 0)
		pdi_unobserved_end(&t->model.unobserved, (uint16_t)fn, now);
	else
		(void)pdi_unobserved_begin(&t->model.unobserved, (uint16_t)fn,
					   level == 1			      ? PDI_UNOBS_ENTRY_ONLY
					   : level < PDI_BUDGET_DETACHED ? PDI_UNOBS_SAMPLED
									   : PDI_UNOBS_DETACHED,
					   (uint8_t)pdi_budget_duty_log2(level), (uint32_t)(f->rate < 4e9 ? f->rate : 4e9),
					   (uint32_t)(full * 1e6 < 4e9 ? full * 1e6 : 4e9), now);
	if (level && !by)
		pdi_unobserved_from_earlier_runs(&t->model.unobserved, (uint16_t)fn);
}

/* What T's own cost, as measured in this run, needs for FN becomes LEVEL. */
static void set_need(struct pdi_budget_fn *f, unsigned level)
{
	f->need = (uint8_t)level;
	f->stable = 0;
	f->need_learned = false;
	if (level > f->peak)
		f->peak = (uint8_t)level;
}

/* Is T's list of replaced links still to close at its bound? Then its probes only go off until
 * the closes catch up: a sampled function misses slices its mark already allows for, and nothing
 * is restored. The list then holds at most the bound plus two links per function. */
static bool closes_behind(const struct pdi_task *t)
{
	return pdi_retired_count(t) >= RETIRED_MAX;
}

/* Over budget: one step down for the function that costs most, until it fits. The task's need
 * says so; its level, and its step's other tasks', follow in step_sync() (one mark per slot). */
static void degrade(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_budget_task *b = t->budget;
	double max = d->cfg.max_overhead_pct / 100;

	for (unsigned iter = 0; iter < 8 * pdi_mpi_nfuncs && task_cost(d, b, true) > max; iter++) {
		unsigned worst = pdi_mpi_nfuncs, worst_to = 0;
		double wc = 0;

		for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
			const struct pdi_budget_fn *f = &b->fn[fn];
			struct pdi_budget_price p;
			unsigned l = needed_level(f), to;
			double c = contribution(d, b, fn, l);

			/* one that costs under 1% of the budget cannot bring the task within it: thinning
			 * it would only lose its calls (an overestimated rate elsewhere must not detach
			 * every probe of the task) */
			if (l >= PDI_BUDGET_DETACHED || c <= wc || c < max / 100)
				continue;
			/* a thinner level that costs less: a sampled one switched twice a period can
			 * cost more than full probes of a function called a few thousand times a second */
			p = price_of(d, f, fn);
			to = pdi_budget_cheaper_level(&p, f->rate, l, PERIOD_NS / 1e9, b->cpu_share);
			if (contribution(d, b, fn, to) >= c)
				continue;
			wc = c;
			worst = fn;
			worst_to = to;
		}
		if (worst == pdi_mpi_nfuncs)
			break;
		set_need(&b->fn[worst], worst_to);
	}
}

/* Under budget: one function whose need the task kept two periods needs no more than the fullest
 * level that leaves the task at half its budget (its other functions at their step's levels),
 * the cheapest such step first. Its level follows in step_sync(), once no other task of the step
 * needs more. DETACHED_ONLY: only a detached function (its re-measuring slice just counted). */
static void restore(struct pdi_daemon *d, struct pdi_task *t, bool detached_only)
{
	struct pdi_budget_task *b = t->budget;
	double max = d->cfg.max_overhead_pct / 100, base = task_cost(d, b, true), best_cost = 0;
	unsigned best = pdi_mpi_nfuncs, best_level = 0;

	if (closes_behind(t))
		return;
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		struct pdi_budget_fn *f = &b->fn[fn];
		double now_c;

		/* a level learned from earlier runs stays until a rate of this run says otherwise */
		if (f->need == 0 || f->stable < (f->need_learned ? LEARNED_HOLD : RESTORE_AFTER) || !f->rated ||
		    (detached_only && f->level < PDI_BUDGET_DETACHED))
			continue;
		now_c = contribution(d, b, fn, needed_level(f));
		for (unsigned l = 0; l < f->need; l = next_level(fn, l, +1)) {
			double c = base - now_c + contribution(d, b, fn, l);

			if (c > max / 2)
				continue;
			if (best == pdi_mpi_nfuncs || c < best_cost) {
				best = fn;
				best_level = l;
				best_cost = c;
			}
			break;
		}
	}
	if (best < pdi_mpi_nfuncs)
		set_need(&b->fn[best], best_level);
}

/* The running tasks of T's step on this node (those the budget holds) take one level per
 * function, the most any of them needs: they are compared with each other (AutomaDeD's
 * clusters, PDI's order, phases cut at the same collectives), and a task seen differently
 * would differ for that reason alone. Once per slot for a step (STEP_SYNCED_NS), in one pass
 * over its tasks and functions. */
static void step_sync(struct pdi_daemon *d, struct pdi_task *t, uint64_t now)
{
	const struct pdi_step *s = t->step;

	if (t->budget->step_synced_ns == now)
		return;
	for (unsigned i = 0; i < s->ntasks; i++)
		if (s->tasks[i]->state == PDI_TASK_RUNNING && s->tasks[i]->budget)
			s->tasks[i]->budget->step_synced_ns = now;
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		const struct pdi_task *by = t;
		unsigned want = 0;

		for (unsigned i = 0; i < s->ntasks; i++) {
			const struct pdi_task *u = s->tasks[i];

			if (u->state == PDI_TASK_RUNNING && u->budget && u->budget->fn[fn].need > want) {
				want = u->budget->fn[fn].need;
				by = u;
			}
		}
		for (unsigned i = 0; i < s->ntasks; i++) {
			struct pdi_task *u = s->tasks[i];

			if (u->state == PDI_TASK_RUNNING && u->budget && u->budget->fn[fn].level != want)
				set_level(d, u, fn, want, want ? by : u, now);
		}
	}
}

/* Without uprobe_multi: each function's perf links replaced in place, on the loop (old kernels). */
static void set_modes_in_place(struct pdi_daemon *d, struct pdi_task *t, const uint8_t *modes)
{
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		int r = modes[fn] == PDI_PROBE_KEEP ? 0 : pdi_tracer_set_mode(d->tracer, &t->att, t->pid, fn, modes[fn]);

		if (r < 0)
			log_warning_errno_limited((uint64_t)t->pid, r, "pid %d: cannot change the probes of %s: %m",
						  (int)t->pid, pdi_mpi_funcs[fn].name);
	}
}

/* Probes as the levels want them in this slot: one change for all the functions that differ,
 * attached on a worker (none while the last one is); the links replaced are closed on a worker
 * (retired.h: a return link once no call in flight needs it). */
static void apply(struct pdi_daemon *d, struct pdi_task *t, uint64_t slot, uint64_t period)
{
	uint8_t modes[PDI_LINK_GEN_FUNCS];
	bool behind = closes_behind(t);
	unsigned switched = 0;
	int r;

	memset(modes, PDI_PROBE_KEEP, sizeof(modes));
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs && !pdi_budget_change_pending(t); fn++) {
		enum pdi_probe_mode m = mode_in_slot(fn, &t->budget->fn[fn], slot, period);

		if (pdi_attachment_mode(&t->att, fn) == m || (behind && m != PDI_PROBE_OFF))
			continue;
		modes[fn] = (uint8_t)m;
		switched++;
	}
	r = switched ? pdi_budget_change(d, t, modes) : 0;
	/* what pdimond's other threads spend on them is charged per switch (calibrate.h) */
	if (switched && r == 0)
		d->probe_costs.switches += switched;
	if (r == -EOPNOTSUPP)
		set_modes_in_place(d, t, modes);
	else if (r < 0 && r != -EBUSY)
		log_warning_errno_limited((uint64_t)t->pid, r, "pid %d: cannot change its probes: %m", (int)t->pid);
	pdi_retired_close(d, t);
}

static void arm(struct pdi_daemon *d, bool on)
{
	struct itimerspec its = {0};

	if (d->budget_fd < 0 || d->budget_armed == on)
		return;
	if (on) {
		its.it_interval.tv_nsec = (long)SLOT_NS;
		its.it_value.tv_nsec = (long)SLOT_NS;
	}
	if (timerfd_settime(d->budget_fd, 0, &its, NULL) == 0)
		d->budget_armed = on;
}

int pdi_budget_open(struct pdi_daemon *d)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PDI_SRC(PDI_SRC_BUDGET, 0)};

	d->budget_fd = -1;
	if (d->cfg.max_overhead_pct <= 0)
		return 0;
	if (d->cfg.budget_programs && pdi_budget_learned_new(d->cfg.budget_programs, pdi_mpi_nfuncs, &d->budget_learned) < 0)
		return -ENOMEM;
	d->budget_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d->budget_fd < 0)
		return -errno;
	if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->budget_fd, &ev) < 0)
		return -errno;
	d->budget_epoch_ns = d->budget_last_ns = pdi_now_ns();
	return 0;
}

void pdi_budget_close(struct pdi_daemon *d)
{
	if (d->budget_fd >= 0)
		close(d->budget_fd);
	d->budget_fd = -1;
	pdi_budget_learned_free(d->budget_learned);
	d->budget_learned = NULL;
}

/* T joins its step at NOW with the levels its step's running tasks have (its probes follow at the
 * next slot), so that it is seen as they are from its start. */
static void step_join(struct pdi_daemon *d, struct pdi_task *t, uint64_t now)
{
	const struct pdi_step *s = t->step;

	for (unsigned i = 0; i < s->ntasks; i++) {
		const struct pdi_task *u = s->tasks[i];

		if (u == t || u->state != PDI_TASK_RUNNING || !u->budget)
			continue;
		for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
			if (u->budget->fn[fn].level > t->budget->fn[fn].level)
				set_level(d, t, fn, u->budget->fn[fn].level, u, now);
	}
}

/* Has T's step a running task the budget holds, other than T? */
static bool step_has_others(const struct pdi_task *t)
{
	for (unsigned i = 0; i < t->step->ntasks; i++) {
		const struct pdi_task *u = t->step->tasks[i];

		if (u != t && u->state == PDI_TASK_RUNNING && u->budget)
			return true;
	}
	return false;
}

/* T, the first running task of its step, starts at NOW at the levels earlier runs of its program
 * needed: its own need says so (a short run is over before it could measure its way down), and the
 * usual rule restores each once this run's rate of it is measured and low. */
static void learned_start(struct pdi_daemon *d, struct pdi_task *t, uint64_t now)
{
	struct pdi_budget_task *b = t->budget;
	const uint8_t *levels = pdi_budget_learned_find(d->budget_learned, b->program);

	for (unsigned fn = 0; levels && fn < pdi_mpi_nfuncs; fn++) {
		unsigned l = levels[fn] > PDI_BUDGET_DETACHED ? PDI_BUDGET_DETACHED : levels[fn];

		if (l == 1 && !entry_only_ok(fn))
			l = next_level(fn, 0, +1);
		if (!l)
			continue;
		/* not set_need(): not this run's measure, and forgotten if this run's rate restores it */
		b->fn[fn].need = (uint8_t)l;
		b->fn[fn].stable = 0;
		b->fn[fn].need_learned = true;
		set_level(d, t, fn, l, NULL, now);
	}
}

int pdi_budget_task_begin(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_budget_task *b;
	const struct pdi_probe_targets *pt = t->att.targets;

	if (d->budget_fd < 0 || !pt)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b || !(b->fn = calloc(pdi_mpi_nfuncs, sizeof(*b->fn)))) {
		free(b);
		return -ENOMEM;
	}
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		b->fn[fn].kind = PDI_INSN_EMULATED;
	b->cpu_share = 1; /* until measured: a core of its own */
	/* a function with a single-stepped probe (of its two symbols) pays that */
	for (unsigned i = 0; i < pt->n; i++)
		if (pt->kinds[i] == PDI_INSN_STEPPED)
			b->fn[PDI_COOKIE_FN(pt->cookies[i])].kind = PDI_INSN_STEPPED;
	b->begun_ns = b->period_start_ns = pdi_now_ns();
	t->budget = b;
	b->program = d->budget_learned ? pdi_program_hash(t->step) : 0;
	if (b->program && !step_has_others(t))
		learned_start(d, t, b->period_start_ns);
	step_join(d, t, b->period_start_ns);
	arm(d, true);
	return 0;
}

void pdi_budget_task_end(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_budget_task *b = t->budget;
	uint64_t now = pdi_now_ns();
	uint8_t peaks[PDI_LINK_GEN_FUNCS];

	if (!b)
		return;
	log_info("pid %d (rank %d) of step %s: its probes took %.1f ms of its %.1f ms by the budget's account "
		 "(max_overhead_pct %g)", (int)t->pid, t->rank, t->step->name, b->charged_ns / 1e6,
		 (double)(now - b->begun_ns) / 1e6, d->cfg.max_overhead_pct);
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		pdi_unobserved_end(&t->model.unobserved, (uint16_t)fn, now);
		peaks[fn] = b->fn[fn].need_learned && b->fn[fn].need > b->fn[fn].peak ? b->fn[fn].need : b->fn[fn].peak;
	}
	/* what this run needed, and a learned level it kept to its end, is what the program's next
	 * run starts at; a learned level this run's rates restored is forgotten */
	if (b->program && pdi_budget_learned_note(d->budget_learned, b->program, pdi_hash_str(t->step->name), peaks) < 0)
		log_warning_limited(0, "Cannot remember the budget levels of %s: out of memory", t->step->name);
	pdi_budget_task_free(t->budget);
	t->budget = NULL;
}

void pdi_budget_on_timer(struct pdi_daemon *d)
{
	uint64_t expirations, now = pdi_now_ns(), last = d->budget_last_ns, slot, period;
	/* the slot in which a re-measuring slice's calls (slot 0) have surely been drained and
	 * counted; past the period (a long drain_interval_ms): read at the period's end as any */
	uint64_t counted_slot = (SLOT_NS + (uint64_t)d->cfg.drain_interval_ms * 1000000) / SLOT_NS + 1;
	bool new_period, read_slice, any = false;

	if (read(d->budget_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		log_warning("Cannot read the budget timer: %m");
	period = (now - d->budget_epoch_ns) / PERIOD_NS;
	slot = (now - d->budget_epoch_ns) % PERIOD_NS / SLOT_NS;
	new_period = period != (d->budget_last_ns - d->budget_epoch_ns) / PERIOD_NS;
	read_slice = !new_period && slot >= counted_slot && (last - d->budget_epoch_ns) % PERIOD_NS / SLOT_NS < counted_slot;
	d->budget_last_ns = now;
	/* calls are counted as they are drained (drain_interval_ms, or a full wake-up): a rate
	 * lags by that much, which the period-long averages absorb */
	for (unsigned i = 0; i < d->reg.ntasks; i++) {
		struct pdi_task *t = d->reg.tasks[i];
		struct pdi_budget_task *b = t->budget;

		if (t->state != PDI_TASK_RUNNING || !b)
			continue;
		any = true;
		b->charged_ns += b->cost * (double)(now - (last > b->begun_ns ? last : b->begun_ns));
		if (new_period)
			b->period_start_ns = now;
		if (new_period || !b->share_seen)
			measure_cpu_share(t);
		bool remeasured = false;

		for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
			struct pdi_budget_fn *f = &b->fn[fn];

			if (pdi_attachment_mode(&t->att, fn) != PDI_PROBE_OFF)
				f->observed_ns += now - (f->on_from_ns > last ? f->on_from_ns : last);
			/* a rate that rises is believed at once, after two slots of it */
			if (f->observed_ns >= 2 * SLOT_NS) {
				double r = (double)f->hits * 1e9 / (double)f->observed_ns;

				if (r > f->rate)
					f->rate = r;
				f->rated = true;
			}
			/* a detached function's slice counted: its rate now, not at the period's end */
			if (read_slice && f->level >= PDI_BUDGET_DETACHED && remeasured_in(f->detached_period, period) &&
			    f->observed_ns >= SLOT_NS / 2) {
				f->rate = (double)f->hits * 1e9 / (double)f->observed_ns;
				f->rated = remeasured = true;
			}
			if (new_period) {
				if (f->observed_ns >= SLOT_NS / 2) {
					f->rate = (double)f->hits * 1e9 / (double)f->observed_ns;
					f->rated = true;
				}
				f->hits = f->observed_ns = 0;
				if (f->stable < UINT16_MAX)
					f->stable++;
			}
		}
		degrade(d, t);
		if (new_period || remeasured)
			restore(d, t, !new_period);
	}
	/* then every step's tasks take its levels, and their probes follow */
	for (unsigned i = 0; i < d->reg.ntasks; i++) {
		struct pdi_task *t = d->reg.tasks[i];

		if (t->state != PDI_TASK_RUNNING || !t->budget)
			continue;
		step_sync(d, t, now);
		t->budget->cost = task_cost(d, t->budget, false);
		apply(d, t, slot, period);
	}
	if (!any)
		arm(d, false);
}

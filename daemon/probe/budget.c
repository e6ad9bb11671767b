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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "budget.h"
#include "daemon.h"
#include "entry_place.h"
#include "log.h"
#include "mpi_funcs.h"
#include "probe_targets.h"
#include "tracer.h"
#include "view_local.h"

#define PERIOD_NS 1000000000ull
#define SLOT_NS (PERIOD_NS / PDI_BUDGET_SLOTS)
#define DETACHED_EVERY 4 /* a detached function is re-measured in one slot every 4 periods */
#define RESTORE_AFTER 2  /* periods at one level before it is restored */

/* Calls whose end the model can do without: nonblocking completion tests and probes. */
static bool entry_only_ok(unsigned fn)
{
	const struct pdi_mpi_func *f = &pdi_mpi_funcs[fn];

	return f->cls == PDI_FC_TEST || !strcmp(f->name, "MPI_Iprobe") || !strcmp(f->name, "MPI_Improbe");
}

unsigned pdi_budget_duty_log2(unsigned level)
{
	return level < 2 ? 0 : level < PDI_BUDGET_DETACHED ? level - 1 : 8;
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

/* The next level up or down from LEVEL for FN (entry only exists for some functions). */
static unsigned next_level(unsigned fn, unsigned level, int dir)
{
	unsigned l = dir > 0 ? level + 1 : level - 1;

	if (l == 1 && !entry_only_ok(fn))
		l = dir > 0 ? 2 : 0;
	return l;
}

/* What one hit of FN costs a task of B at LEVEL, in ns: the kernel visits the links of every
 * process probed on that instruction (the task's neighbours on the library, and the link that
 * keeps it registered), so a node with more ranks pays more per hit; and pdimond's own work on
 * the call, which a job that fills its node's cores pays too. */
static double hit_cost(const struct pdi_daemon *d, const struct pdi_budget_task *b, unsigned fn, unsigned level)
{
	bool entry_only = level == 1 || (level >= 2 && entry_only_ok(fn));
	const struct pdi_probe_costs *c = &d->probe_costs;
	double crowd = c->per_other_task * b->neighbours + c->ingest_per_event;

	if (b->fn[fn].kind == PDI_INSN_EMULATED)
		return crowd + (entry_only ? c->entry_only_emulated : c->full_emulated);
	return crowd + (entry_only ? c->entry_only_stepped : c->full_stepped);
}

/* The share of its time FN at LEVEL takes from a task of B. The task pays its hits out of the CPU
 * it gets: a rank that waits for its core (more ranks than cores, or a loaded node) makes fewer
 * calls per second, but each costs it that much more of its progress. */
static double contribution(const struct pdi_daemon *d, const struct pdi_budget_task *b, unsigned fn, unsigned level)
{
	return b->fn[fn].rate * hit_cost(d, b, fn, level) * 1e-9 / (double)(1u << pdi_budget_duty_log2(level)) /
	       b->cpu_share;
}

#define MIN_CPU_SHARE 0.05
#define SHARE_EVERY 8 /* slots between two looks at a task's CPU share: a burst is seen within 1/4 s */

/* The share of the time its main thread (the one that makes its MPI calls) was ready to run
 * that it ran, since the last look (/proc/PID/task/PID/schedstat: time on a CPU, time waiting
 * for one); a thread that sleeps is not charged for it. Kept when it cannot be read. */
static void measure_cpu_share(struct pdi_budget_task *b, pid_t pid)
{
	char buf[128];
	uint64_t run_ns, wait_ns;

	if (pdi_task_proc_read(pid, pid, "schedstat", buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%" SCNu64 " %" SCNu64, &run_ns, &wait_ns) != 2)
		return;
	if (b->run_ns && run_ns >= b->run_ns && wait_ns >= b->wait_ns && run_ns + wait_ns > b->run_ns + b->wait_ns) {
		double share = (double)(run_ns - b->run_ns) / (double)(run_ns - b->run_ns + wait_ns - b->wait_ns);

		b->cpu_share = share < MIN_CPU_SHARE ? MIN_CPU_SHARE : share;
	}
	b->run_ns = run_ns;
	b->wait_ns = wait_ns;
}

static double task_cost(const struct pdi_daemon *d, const struct pdi_budget_task *b)
{
	double c = 0;

	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		c += contribution(d, b, fn, b->fn[fn].level);
	return c;
}

/* The other running tasks probed in the same library as T, plus the link that keeps its probes
 * registered (startup.c). */
static unsigned neighbours(const struct pdi_daemon *d, const struct pdi_task *t)
{
	const struct pdi_probe_targets *pt = t->att.targets;
	unsigned n = 1;

	for (unsigned i = 0; pt && i < d->reg.ntasks; i++) {
		const struct pdi_task *o = d->reg.tasks[i];

		if (o != t && o->state == PDI_TASK_RUNNING && o->att.targets && o->att.targets->dev == pt->dev &&
		    o->att.targets->ino == pt->ino)
			n++;
	}
	return n;
}

/* The probes FN should have in slot SLOT of period PERIOD at LEVEL. */
static enum pdi_probe_mode mode_in_slot(unsigned fn, unsigned level, uint64_t slot, uint64_t period)
{
	bool on;

	if (level == 0)
		return PDI_PROBE_FULL;
	if (level == 1)
		return PDI_PROBE_ENTRY_ONLY;
	if (level < PDI_BUDGET_DETACHED)
		on = slot < (PDI_BUDGET_SLOTS >> pdi_budget_duty_log2(level));
	else
		on = slot == 0 && period % DETACHED_EVERY == 0;
	if (!on)
		return PDI_PROBE_OFF;
	return entry_only_ok(fn) ? PDI_PROBE_ENTRY_ONLY : PDI_PROBE_FULL;
}

/* FN of T goes from its level to LEVEL at NOW: said in the log and marked in the model. */
static void set_level(struct pdi_daemon *d, struct pdi_task *t, unsigned fn, unsigned level, uint64_t now)
{
	struct pdi_budget_fn *f = &t->budget->fn[fn];
	double full = contribution(d, t->budget, fn, 0);
	char a[32], b[32];

	log_info("pid %d (rank %d) of step %s: %s %s -> %s: %.0f calls/s, fully probed %.1f%% of its time "
		 "(max_overhead_pct %g)", (int)t->pid, t->rank, t->step->name, pdi_mpi_funcs[fn].name,
		 pdi_budget_level_name(f->level, a, sizeof(a)), pdi_budget_level_name(level, b, sizeof(b)), f->rate,
		 full * 100, d->cfg.max_overhead_pct);
	f->level = (uint8_t)level;
	f->stable = 0;
	if (level == 0)
		pdi_unobserved_end(&t->model.unobserved, (uint16_t)fn, now);
	else
		(void)pdi_unobserved_begin(&t->model.unobserved, (uint16_t)fn,
					   level == 1			      ? PDI_UNOBS_ENTRY_ONLY
					   : level < PDI_BUDGET_DETACHED ? PDI_UNOBS_SAMPLED
									   : PDI_UNOBS_DETACHED,
					   (uint8_t)pdi_budget_duty_log2(level), (uint32_t)(f->rate < 4e9 ? f->rate : 4e9),
					   (uint32_t)(full * 1e6 < 4e9 ? full * 1e6 : 4e9), now);
}

/* Over budget: one step down for the function that costs most, until it fits. */
static void degrade(struct pdi_daemon *d, struct pdi_task *t, uint64_t now)
{
	struct pdi_budget_task *b = t->budget;
	double max = d->cfg.max_overhead_pct / 100;

	for (unsigned iter = 0; iter < 8 * pdi_mpi_nfuncs && (b->cost = task_cost(d, b)) > max; iter++) {
		unsigned worst = pdi_mpi_nfuncs;
		double wc = 0;

		for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
			double c = contribution(d, b, fn, b->fn[fn].level);

			if (b->fn[fn].level < PDI_BUDGET_DETACHED && c > wc) {
				wc = c;
				worst = fn;
			}
		}
		if (worst == pdi_mpi_nfuncs)
			break;
		set_level(d, t, worst, next_level(worst, b->fn[worst].level, +1), now);
	}
}

/* Under budget: one function that kept its level goes back to the fullest level that leaves
 * the task at half its budget, the cheapest such step first. */
static void restore(struct pdi_daemon *d, struct pdi_task *t, uint64_t now)
{
	struct pdi_budget_task *b = t->budget;
	double max = d->cfg.max_overhead_pct / 100, base = task_cost(d, b), best_cost = 0;
	unsigned best = pdi_mpi_nfuncs, best_level = 0;

	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		struct pdi_budget_fn *f = &b->fn[fn];
		double now_c;

		if (f->level == 0 || f->stable < RESTORE_AFTER)
			continue;
		now_c = contribution(d, b, fn, f->level);
		for (unsigned l = 0; l < f->level; l = next_level(fn, l, +1)) {
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
		set_level(d, t, best, best_level, now);
}

/* Probes as the levels want them in this slot; a probe move that left a gap is marked. */
static void apply(struct pdi_daemon *d, struct pdi_task *t, uint64_t slot, uint64_t period, uint64_t now)
{
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
		enum pdi_probe_mode m = mode_in_slot(fn, t->budget->fn[fn].level, slot, period);
		uint64_t gap = 0;
		int r;

		if (pdi_attachment_mode(&t->att, fn) == m)
			continue;
		r = pdi_tracer_set_mode(d->tracer, &t->att, t->pid, fn, m, &gap);
		if (r < 0)
			log_warning_errno(r, "pid %d: cannot change the probes of %s, so it is not probed: %m", (int)t->pid,
					  pdi_mpi_funcs[fn].name);
		if (gap)
			(void)pdi_unobserved_add(&t->model.unobserved, PDI_UNOBSERVED_ALL, PDI_UNOBS_GAP, now - gap, now);
	}
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
	/* the loop's work while no task ran is no call's: the next period starts the count */
	d->budget_loop_cpu_ns = 0;
}

int pdi_budget_open(struct pdi_daemon *d)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PDI_SRC(PDI_SRC_BUDGET, 0)};

	d->budget_fd = -1;
	if (d->cfg.max_overhead_pct <= 0)
		return 0;
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
	t->budget = b;
	arm(d, true);
	return 0;
}

void pdi_budget_task_end(struct pdi_daemon *d, struct pdi_task *t)
{
	uint64_t now = pdi_now_ns();

	(void)d;
	if (!t->budget)
		return;
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++)
		pdi_unobserved_end(&t->model.unobserved, (uint16_t)fn, now);
	pdi_budget_task_free(t->budget);
	t->budget = NULL;
}

#define INGEST_MIN_EVENTS 1000 /* a period with fewer calls says too little about their cost */

static uint64_t loop_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* pdimond's CPU per call it took in over the last period, on the loop's thread (where calls are
 * drained into the models; its other work there is small beside them in a busy period). */
static void measure_ingest(struct pdi_daemon *d)
{
	uint64_t cpu = loop_cpu_ns(), events = d->events - d->budget_events;

	if (d->budget_loop_cpu_ns && events >= INGEST_MIN_EVENTS && cpu > d->budget_loop_cpu_ns)
		d->probe_costs.ingest_per_event = (double)(cpu - d->budget_loop_cpu_ns) / (double)events;
	d->budget_loop_cpu_ns = cpu;
	d->budget_events = d->events;
}

void pdi_budget_on_timer(struct pdi_daemon *d)
{
	uint64_t expirations, now = pdi_now_ns(), elapsed, slot, period;
	bool new_period, any = false;

	if (read(d->budget_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		log_warning("Cannot read the budget timer: %m");
	elapsed = now - d->budget_last_ns;
	period = (now - d->budget_epoch_ns) / PERIOD_NS;
	slot = (now - d->budget_epoch_ns) % PERIOD_NS / SLOT_NS;
	new_period = period != (d->budget_last_ns - d->budget_epoch_ns) / PERIOD_NS;
	d->budget_last_ns = now;
	if (new_period)
		measure_ingest(d);
	/* calls count for the period they were made in, once drained (drain_interval_ms, or a full
	 * wake-up): a rate lags by that much, which the period-long averages absorb */
	for (unsigned i = 0; i < d->reg.ntasks; i++) {
		struct pdi_task *t = d->reg.tasks[i];
		struct pdi_budget_task *b = t->budget;

		if (t->state != PDI_TASK_RUNNING || !b)
			continue;
		any = true;
		if (new_period)
			b->period_ns = d->budget_epoch_ns + period * PERIOD_NS;
		b->neighbours = neighbours(d, t);
		if (slot % SHARE_EVERY == 0 || new_period)
			measure_cpu_share(b, t->pid);
		for (unsigned fn = 0; fn < pdi_mpi_nfuncs; fn++) {
			struct pdi_budget_fn *f = &b->fn[fn];

			if (pdi_attachment_mode(&t->att, fn) != PDI_PROBE_OFF)
				f->observed_ns += elapsed;
			/* a rate that rises is believed at once, after two slots of it */
			if (f->observed_ns >= 2 * SLOT_NS) {
				double r = (double)f->hits * 1e9 / (double)f->observed_ns;

				if (r > f->rate)
					f->rate = r;
			}
			if (new_period) {
				if (f->observed_ns >= SLOT_NS / 2)
					f->rate = (double)f->hits * 1e9 / (double)f->observed_ns;
				f->hits = f->observed_ns = 0;
				if (f->stable < UINT16_MAX)
					f->stable++;
			}
		}
		degrade(d, t, now);
		if (new_period)
			restore(d, t, now);
		b->cost = task_cost(d, b);
		apply(d, t, slot, period, now);
	}
	if (!any)
		arm(d, false);
}

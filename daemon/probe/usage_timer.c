/* SPDX-License-Identifier: GPL-2.0-only */
/* usage_timer.c -- every running task's kernel counts, read on a timer of their own (usage_timer.h). */
#include <errno.h>
#include <inttypes.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"
#include "log.h"
#include "task_activity.h"
#include "usage_timer.h"

/* The period is set again when the one the cost asks for differs from it by more than this
 * share: a timerfd_settime() per tick for a figure that moves by a few percent buys nothing. */
#define RESET_SHARE 0.25

static void arm(struct pdi_daemon *d, uint64_t period_ns)
{
	struct itimerspec its = {0};

	if (d->usage_fd < 0)
		return;
	its.it_interval.tv_sec = (time_t)(period_ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(period_ns % 1000000000ull);
	its.it_value = its.it_interval;
	if (timerfd_settime(d->usage_fd, 0, &its, NULL) < 0) {
		log_warning("Cannot set the usage timer to %" PRIu64 " ms, ignoring: %m", period_ns / 1000000);
		return;
	}
	d->usage_armed_ns = period_ns;
}

/* The period now (ns): usage_interval_ms, or longer where so many tasks run that the readings, at
 * what one costs the loop, would take more than PDI_USAGE_LOOP_SHARE of a CPU. */
static uint64_t wanted_period_ns(const struct pdi_daemon *d)
{
	uint64_t base = (uint64_t)d->cfg.usage_interval_ms * 1000000ull;
	double dear = (double)d->usage_tasks * d->usage_cost_ns / PDI_USAGE_LOOP_SHARE;

	return dear > (double)base ? (uint64_t)dear : base;
}

int pdi_usage_timer_open(struct pdi_daemon *d)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PDI_SRC(PDI_SRC_USAGE, 0)};

	d->usage_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d->usage_fd < 0)
		return -errno;
	if (epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, d->usage_fd, &ev) < 0)
		return -errno;
	return 0;
}

void pdi_usage_timer_close(struct pdi_daemon *d)
{
	if (d->usage_fd >= 0)
		close(d->usage_fd);
	d->usage_fd = -1;
	d->usage_armed_ns = 0;
}

void pdi_usage_timer_start(struct pdi_daemon *d)
{
	if (!d->usage_armed_ns)
		arm(d, wanted_period_ns(d));
}

void pdi_usage_timer_reconfigure(struct pdi_daemon *d)
{
	if (d->usage_armed_ns)
		arm(d, wanted_period_ns(d));
}

void pdi_usage_timer_on_tick(struct pdi_daemon *d)
{
	uint64_t expirations, cpu = pdi_thread_cpu_ns(), period;
	unsigned n = 0;

	if (read(d->usage_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		log_warning("Cannot read the usage timer: %m");
	for (unsigned i = 0; i < d->reg.ntasks; i++) {
		struct pdi_task *t = d->reg.tasks[i];

		if (t->state != PDI_TASK_RUNNING || !t->usage_tid)
			continue; /* its MPI thread is not known yet: its first call names it (ingest.c) */
		pdi_task_usage_read(t, 0, pdi_now_ns());
		n++;
	}
	if (!n) {
		arm(d, 0); /* no task to read: stopped until one calls MPI */
		if (d->usage_reads)
			log_info("Read the kernel's counts of tasks %" PRIu64 " times so far, %.1f us of the loop's CPU "
				 "each", d->usage_reads, (double)d->usage_cpu_ns / 1e3 / (double)d->usage_reads);
		return;
	}
	cpu = pdi_thread_cpu_ns() - cpu;
	d->usage_reads += n;
	d->usage_cpu_ns += cpu;
	/* the cost per task, smoothed over about 8 ticks: one tick slowed by a page fault or a
	 * preemption must not stretch the period */
	d->usage_cost_ns = d->usage_cost_ns > 0 ? (7 * d->usage_cost_ns + (double)cpu / n) / 8 : (double)cpu / n;
	d->usage_tasks = n;
	period = wanted_period_ns(d);
	if ((double)period > (1 + RESET_SHARE) * (double)d->usage_armed_ns ||
	    (double)period < (1 - RESET_SHARE) * (double)d->usage_armed_ns)
		arm(d, period);
}

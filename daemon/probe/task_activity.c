/* SPDX-License-Identifier: GPL-2.0-only */
/* task_activity.c -- what the node's kernel says a monitored task is doing: stopped by a
 * signal, in uninterruptible sleep (and in which kernel function), running, or ready but not
 * getting a CPU. Where a task is in MPI is not the whole truth: a stopped rank sits in
 * MPI_Send exactly like the ranks waiting on it. Read from /proc/PID/task/TID (stat, wchan,
 * schedstat) of a task the registry pins with a pidfd; CPU use and run-queue wait are rates
 * since the previous look at the same thread, kept in the task. The same counts, read on the
 * usage timer (usage_timer.h), give every phase its share (lib/model/model.h, struct pdi_usage). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "step_group.h"
#include "task_activity.h"

ssize_t pdi_task_proc_read(pid_t pid, pid_t tid, const char *file, char *buf, size_t len)
{
	char path[96];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", (int)pid, (int)tid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* The first two counts of a schedstat line: time on a CPU, time waiting for one. */
static int schedstat_parse(const char *buf, uint64_t *ret_run, uint64_t *ret_wait)
{
	uint64_t run, wait;

	if (sscanf(buf, "%" SCNu64 " %" SCNu64, &run, &wait) != 2)
		return -ENODATA;
	*ret_run = run;
	*ret_wait = wait;
	return 0;
}

int pdi_task_schedstat(pid_t pid, pid_t tid, uint64_t *ret_run, uint64_t *ret_wait)
{
	char buf[128];

	if (pdi_task_proc_read(pid, tid, "schedstat", buf, sizeof(buf)) <= 0)
		return -ENODATA;
	return schedstat_parse(buf, ret_run, ret_wait);
}

/* The counts of T's MPI thread, from its schedstat held open (T->usage_fd): the usage timer reads
 * every running task tens of times a second, and a pread() of a file kept open costs a sixth of
 * an open, read and close (0.8 us against 4.6 us here). An fd that no longer reads (the thread is
 * gone) is closed. 0, or -errno. */
static int usage_counts(struct pdi_task *t, uint64_t *ret_run, uint64_t *ret_wait)
{
	char buf[128];
	ssize_t n;

	if (t->usage_fd < 0) {
		snprintf(buf, sizeof(buf), "/proc/%d/task/%d/schedstat", (int)t->pid, (int)t->usage_tid);
		t->usage_fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (t->usage_fd < 0)
			return -errno;
	}
	n = pread(t->usage_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		close(t->usage_fd);
		t->usage_fd = -1;
		return n < 0 ? -errno : -ENODATA;
	}
	buf[n] = '\0';
	return schedstat_parse(buf, ret_run, ret_wait);
}

void pdi_task_usage_read(struct pdi_task *t, pid_t tid, uint64_t now_ns)
{
	struct pdi_usage u = {.at_ns = now_ns};

	if (t->state != PDI_TASK_RUNNING)
		return;
	if (!t->usage_tid)
		t->usage_tid = tid > 0 ? tid : t->pid;
	if (usage_counts(t, &u.cpu_ns, &u.wait_ns) == 0) {
		u.group_ns = pdi_step_group_ns(t->step, now_ns); /* once a tick for all its tasks */
		pdi_model_usage_add(&t->model, &u);
	}
}

/* The state letter of /proc/.../stat: after the last ')' (the command may hold any byte). */
static char stat_state(const char *stat)
{
	const char *p = strrchr(stat, ')');

	return p && p[1] == ' ' ? p[2] : '?';
}

/* Is thread TID of process PID, seen in a tracing stop, held there by another tracer than us? A
 * stack walk (probe/stackwalk.c) holds it for a few ms, on a worker, while the loop may look at it
 * for another view: that stop is not the task's; a debugger's is. The tracer is read after the
 * state: a walk that ended in between has left no tracer (0), never another one. The walk traces
 * from a thread of its own, and TracerPid names that thread, not pdimond's main one: any thread
 * of ours is us. */
int pdi_task_tracer(pid_t pid, pid_t tid, pid_t *ret)
{
	char buf[2048];
	const char *p;
	ssize_t n = pdi_task_proc_read(pid, tid, "status", buf, sizeof(buf));

	if (n <= 0)
		return n < 0 ? (int)n : -EBADMSG;
	if (!(p = strstr(buf, "\nTracerPid:")))
		return -EBADMSG;
	*ret = (pid_t)strtol(p + 11, NULL, 10);
	return 0;
}

bool pdi_task_traced_by_another(pid_t pid, pid_t tid)
{
	char path[64];
	pid_t tracer;

	if (pdi_task_tracer(pid, tid, &tracer) < 0)
		return false;
	if (tracer <= 0 || tracer == getpid())
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tracer);
	return access(path, F_OK) != 0;
}

void pdi_task_activity_read(struct pdi_task *t, pid_t tid, uint64_t now_ns, struct pdi_task_activity *ret)
{
	struct pdi_task_activity a = {.kind = PDI_ACT_UNKNOWN, .cpu_pct = -1, .wait_pct = -1};
	struct pdi_cpu_seen *seen = &t->cpu_seen;
	char buf[1024];
	uint64_t run_ns, wait_ns;

	if (tid <= 0)
		tid = t->pid;
	if (pdi_task_proc_read(t->pid, tid, "stat", buf, sizeof(buf)) <= 0) {
		*ret = a;
		return;
	}
	switch (stat_state(buf)) {
	case 'T': a.kind = PDI_ACT_STOPPED; break;
	case 't': a.kind = pdi_task_traced_by_another(t->pid, tid) ? PDI_ACT_STOPPED : PDI_ACT_UNKNOWN; break;
	case 'D': a.kind = PDI_ACT_DISK; break;
	case 'R': a.kind = PDI_ACT_RUNNING; break;
	case 'S': case 'I': a.kind = PDI_ACT_SLEEPING; break;
	default: break;
	}
	if (pdi_task_proc_read(t->pid, tid, "wchan", buf, sizeof(buf)) > 0 && strcmp(buf, "0"))
		snprintf(a.wchan, sizeof(a.wchan), "%.*s", (int)sizeof(a.wchan) - 1, buf);
	if (pdi_task_schedstat(t->pid, tid, &run_ns, &wait_ns) == 0) {
		if (seen->tid == tid && seen->at_ns && now_ns > seen->at_ns && run_ns >= seen->run_ns &&
		    wait_ns >= seen->wait_ns) {
			pdi_task_activity_shares(&a, run_ns - seen->run_ns, wait_ns - seen->wait_ns, now_ns - seen->at_ns);
			/* ready more than it runs: another process takes its CPU */
			if (a.kind == PDI_ACT_RUNNING && a.wait_pct > 50 && a.wait_pct > a.cpu_pct)
				a.kind = PDI_ACT_STARVED;
		}
		*seen = (struct pdi_cpu_seen){.at_ns = now_ns, .run_ns = run_ns, .wait_ns = wait_ns, .tid = tid};
	}
	*ret = a;
}

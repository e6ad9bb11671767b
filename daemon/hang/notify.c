/* SPDX-License-Identifier: GPL-2.0-only */
/* notify.c -- one line on a running step's user's output (notify.h).
 *
 * The task's standard error is borrowed with pidfd_getfd(2) (the task pinned by its pidfd,
 * so a recycled pid cannot receive it). A copy shares the task's open file description: its
 * offset and O_APPEND hold for a file, but setting O_NONBLOCK on it would change the task's
 * own descriptor. So a pipe or a terminal is opened anew through /proc/self/fd (a new
 * description of the same pipe or terminal, non-blocking, whose flags are ours), a socket is
 * sent to with MSG_DONTWAIT, and only a regular file is written through the shared copy. One
 * write of at most PIPE_BUF bytes: atomic, never interleaved with the task's own output, and
 * on a full pipe it fails with EAGAIN instead of waiting (the line is then lost, and said so
 * in the log). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "health_state.h"
#include "log.h"
#include "notify.h"
#include "worker.h"

#define LINE_MAX_ 1024 /* well under PIPE_BUF: one atomic write */
#define DRAIN_MS 2000  /* how long a follow-up that ends the task waits for the pipe's reader */
#define FORWARD_MS 1000 /* and then for the reader to pass the line on */

struct notify_job {
	struct pdi_job job;
	struct pdi_daemon *d;
	char *step;
	time_t started;
	int pidfd;         /* our own copy of the task's pidfd */
	int rank;
	char line[LINE_MAX_];
	size_t len;
	pdi_hang_then_fn then;
	const char *how;   /* "a pipe", "a terminal"...: how it went out; NULL when it did not */
	char why[160];     /* why not */
};

/* TEXT to a new non-blocking description of what FD (ours) refers to. */
static ssize_t write_reopened(int fd, const char *text, size_t len)
{
	char path[64];
	ssize_t n;
	int w;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	w = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (w < 0)
		return -errno;
	n = write(w, text, len);
	n = n < 0 ? -errno : n;
	close(w);
	return n;
}

/* What is still in the pipe FD when its reader's step is killed is lost, and so may be what
 * the reader took but has not passed on (slurmstepd forwards to srun as it goes, and a step
 * cancelled at once may end before): a follow-up that ends the task (a cancel) waits, up to
 * DRAIN_MS, for the reader (slurmstepd, mpirun) to take it, then FORWARD_MS for it to pass it
 * on. A cancel comes after minutes of grace: a few seconds more cost nothing. */
static void wait_drained(int fd)
{
	const struct timespec tick = {0, 10 * 1000000}, forward = {FORWARD_MS / 1000, 0};
	int left;

	for (unsigned waited = 0; waited < DRAIN_MS && ioctl(fd, FIONREAD, &left) == 0 && left > 0; waited += 10)
		(void)nanosleep(&tick, NULL);
	(void)nanosleep(&forward, NULL);
}

static void job_run(struct pdi_job *pj)
{
	struct notify_job *j = pdi_job_of(pj, struct notify_job, job);
	int fd = (int)syscall(SYS_pidfd_getfd, j->pidfd, STDERR_FILENO, 0);
	struct stat st;
	ssize_t n = 0;

	if (fd < 0) {
		snprintf(j->why, sizeof(j->why), "cannot borrow its standard error: %s", strerror(errno));
		return;
	}
	if (fstat(fd, &st) < 0) {
		n = -errno;
	} else if (S_ISFIFO(st.st_mode)) {
		j->how = "a pipe";
		n = write_reopened(fd, j->line, j->len);
		if (n > 0 && j->then)
			wait_drained(fd);
	} else if (S_ISSOCK(st.st_mode)) {
		j->how = "a socket";
		n = send(fd, j->line, j->len, MSG_DONTWAIT | MSG_NOSIGNAL);
		n = n < 0 ? -errno : n;
	} else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
		snprintf(j->why, sizeof(j->why), "its standard error is /dev/null");
	} else if (S_ISCHR(st.st_mode)) {
		j->how = "a terminal";
		n = write_reopened(fd, j->line, j->len);
	} else if (S_ISREG(st.st_mode)) {
		j->how = "a file";
		n = write(fd, j->line, j->len);
		n = n < 0 ? -errno : n;
	} else {
		snprintf(j->why, sizeof(j->why), "its standard error is neither a pipe, a socket, a terminal nor a file");
	}
	close(fd);
	if (n < 0 || (j->how && (size_t)n != j->len)) {
		snprintf(j->why, sizeof(j->why), "writing to %s: %s", j->how ? j->how : "it",
			 n == -EAGAIN ? "full, not waited for" : n < 0 ? strerror((int)-n) : "cut short");
		j->how = NULL;
	}
}

static void job_done(struct pdi_job *pj, bool cancelled)
{
	struct notify_job *j = pdi_job_of(pj, struct notify_job, job);
	struct pdi_step *s = pdi_registry_find_step(&j->d->reg, j->step);

	if (cancelled)
		snprintf(j->why, sizeof(j->why), "pdimond is stopping");
	if (j->how && !cancelled)
		log_info("Step %s: told its user through rank %d's standard error (%s)", j->step, j->rank, j->how);
	else
		log_warning_limited(0, "Step %s: could not tell its user through rank %d's standard error: %s", j->step,
				    j->rank, j->why);
	if (s && s->started == j->started)
		pdi_step_health_acted(s, "notified", j->how && !cancelled, "rank %d's standard error%s%s%s", j->rank,
				  j->how ? " (" : ": ", j->how ? j->how : j->why, j->how ? ")" : "");
	if (s && s->started == j->started && j->then && !cancelled)
		j->then(j->d, s);
	close(j->pidfd);
	free(j->step);
	free(j);
}

void pdi_hang_notify_user(struct pdi_daemon *d, struct pdi_step *s, const char *line, pdi_hang_then_fn then)
{
	struct pdi_task *t = NULL;
	struct notify_job *j;
	int r = -ENOMEM;

	for (unsigned i = 0; i < s->ntasks; i++) {
		struct pdi_task *x = s->tasks[i];

		if (x->state == PDI_TASK_RUNNING && (!t || (x->rank >= 0 && (t->rank < 0 || x->rank < t->rank))))
			t = x;
	}
	if (!t)
		goto then;
	j = calloc(1, sizeof(*j));
	if (j) {
		j->job = (struct pdi_job){.run = job_run, .done = job_done};
		j->then = then;
		j->d = d;
		j->rank = t->rank;
		j->started = s->started;
		j->pidfd = fcntl(t->pidfd, F_DUPFD_CLOEXEC, 3);
		j->step = strdup(s->name);
		j->len = (size_t)snprintf(j->line, sizeof(j->line), "pdimon: %s\n", line);
		if (j->len >= sizeof(j->line)) {
			/* cut, and still one line */
			j->len = sizeof(j->line) - 1;
			j->line[j->len - 1] = '\n';
		}
		r = j->pidfd < 0 ? -errno : !j->step ? -ENOMEM : pdi_workers_submit(d->workers, &j->job);
	}
	if (r < 0) {
		log_warning_errno_limited(0, r, "Step %s: cannot tell its user: %m", s->name);
		if (j && j->pidfd >= 0)
			close(j->pidfd);
		if (j)
			free(j->step);
		free(j);
		goto then;
	}
	return;
then:
	if (then)
		then(d, s);
}

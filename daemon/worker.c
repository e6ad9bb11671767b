/* SPDX-License-Identifier: GPL-2.0-only */
/* worker.c -- a pool of threads for the loop's slow jobs (worker.h): a FIFO of jobs to run,
 * a FIFO of finished ones, and an eventfd that tells the loop when the latter is not empty.
 *
 * One mutex guards both lists and the counters; a job moves between threads only through
 * them, so everything the loop wrote into it before submitting is visible to run(), and
 * everything run() wrote is visible to done().
 *
 * Idle threads sleep on a semaphore, posted once per queued job, not on a condition variable:
 * glibc's pthread_cond_signal() may wait for the waiters it woke earlier to run (to switch its
 * groups of waiters), so the loop would wait for a worker, niced below it on a busy node, to be
 * scheduled -- or, for as long as a debugger holds it, for a stopped one. sem_post() never waits. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "worker.h"

struct fifo {
	struct pdi_job *head, *tail;
	unsigned n;
};

struct pdi_workers {
	char name[16];
	unsigned max_threads, max_queued, nthreads, busy;
	pthread_t *threads;
	struct pdi_job **running;  /* per thread: its job, NULL when idle */
	pthread_mutex_t lock;
	sem_t work;                /* posted per job queued, and per thread when the pool stops */
	struct fifo queued, finished;
	bool stopping;
	bool at_loop_priority;     /* its threads keep the loop's nice value */
	int efd;
	uint64_t completed;
};

struct thread_arg {
	struct pdi_workers *w;
	unsigned index;
};

static void fifo_push(struct fifo *f, struct pdi_job *j)
{
	j->next = NULL;
	if (f->tail)
		f->tail->next = j;
	else
		f->head = j;
	f->tail = j;
	f->n++;
}

static struct pdi_job *fifo_pop(struct fifo *f)
{
	struct pdi_job *j = f->head;

	if (j) {
		f->head = j->next;
		if (!f->head)
			f->tail = NULL;
		f->n--;
		j->next = NULL;
	}
	return j;
}

static struct fifo fifo_take(struct fifo *f)
{
	struct fifo all = *f;

	*f = (struct fifo){0};
	return all;
}

static void wake_loop(struct pdi_workers *w)
{
	uint64_t one = 1;

	/* only fails when the counter would overflow: the loop is far behind, and awake */
	(void)!write(w->efd, &one, sizeof(one));
}

static void *thread_main(void *p)
{
	struct thread_arg arg = *(struct thread_arg *)p;
	struct pdi_workers *w = arg.w;
	int prio;

	free(p);
	errno = 0;
	prio = getpriority(PRIO_PROCESS, (id_t)gettid());
	if (errno == 0 && !w->at_loop_priority)
		(void)setpriority(PRIO_PROCESS, (id_t)gettid(), prio - PDI_LOOP_NICE);
	for (;;) {
		struct pdi_job *j;

		while (sem_wait(&w->work) < 0)
			; /* EINTR */
		pthread_mutex_lock(&w->lock);
		if (w->stopping)
			break;
		j = fifo_pop(&w->queued); /* one per post: there is one */
		w->busy++;
		w->running[arg.index] = j;
		pthread_mutex_unlock(&w->lock);

		j->run(j);

		pthread_mutex_lock(&w->lock);
		w->running[arg.index] = NULL;
		w->busy--;
		w->completed++;
		fifo_push(&w->finished, j);
		wake_loop(w);
		pthread_mutex_unlock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

void pdi_workers_at_loop_priority(struct pdi_workers *w)
{
	w->at_loop_priority = true;
}

int pdi_workers_new(const char *name, unsigned max_threads, unsigned max_queued, struct pdi_workers **ret)
{
	struct pdi_workers *w;
	int r;

	if (max_threads == 0)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->threads = calloc(max_threads, sizeof(*w->threads));
	w->running = calloc(max_threads, sizeof(*w->running));
	if (!w->threads || !w->running) {
		r = -ENOMEM;
		goto fail;
	}
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		r = -errno;
		goto fail;
	}
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->max_threads = max_threads;
	w->max_queued = max_queued;
	if (sem_init(&w->work, 0, 0) < 0) {
		r = -errno;
		close(w->efd);
		goto fail;
	}
	pthread_mutex_init(&w->lock, NULL);
	*ret = w;
	return 0;
fail:
	free(w->threads);
	free(w->running);
	free(w);
	return r;
}

/* One more thread, with every signal blocked. Under the lock. */
static int add_thread(struct pdi_workers *w)
{
	struct thread_arg *arg = malloc(sizeof(*arg));
	sigset_t all, old;
	char tname[16];
	int r;

	if (!arg)
		return -ENOMEM;
	*arg = (struct thread_arg){.w = w, .index = w->nthreads};
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&w->threads[w->nthreads], NULL, thread_main, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		free(arg);
		return r;
	}
	snprintf(tname, sizeof(tname), "pdi-%.11s", w->name);
	(void)pthread_setname_np(w->threads[w->nthreads], tname);
	w->nthreads++;
	return 0;
}

int pdi_workers_start_all(struct pdi_workers *w)
{
	int r = 0;

	pthread_mutex_lock(&w->lock);
	while (r == 0 && w->nthreads < w->max_threads)
		r = add_thread(w);
	pthread_mutex_unlock(&w->lock);
	return r;
}

int pdi_workers_submit(struct pdi_workers *w, struct pdi_job *job)
{
	int r = 0;

	pthread_mutex_lock(&w->lock);
	if (w->stopping) {
		pthread_mutex_unlock(&w->lock);
		return -ESHUTDOWN;
	}
	if (w->max_queued && w->queued.n >= w->max_queued) {
		pthread_mutex_unlock(&w->lock);
		return -EBUSY;
	}
	job->queued_ns = pdi_now_ns();
	fifo_push(&w->queued, job);
	/* a thread for every job that no idle thread will take, up to the limit */
	if (w->queued.n > w->nthreads - w->busy && w->nthreads < w->max_threads)
		r = add_thread(w);
	if (r < 0 && w->nthreads == 0) {
		/* nobody would ever run it: give it back (it is the only one queued) */
		w->queued = (struct fifo){0};
		pthread_mutex_unlock(&w->lock);
		return log_warning_errno(-EAGAIN, "Cannot start a %s worker thread: %s", w->name, strerror(-r));
	}
	if (r < 0)
		log_warning("Cannot start another %s worker thread, the %u running ones will do: %s", w->name,
			    w->nthreads, strerror(-r));
	pthread_mutex_unlock(&w->lock);
	(void)sem_post(&w->work); /* fails only past SEM_VALUE_MAX jobs queued */
	return 0;
}

int pdi_workers_fd(const struct pdi_workers *w)
{
	return w->efd;
}

unsigned pdi_workers_dispatch(struct pdi_workers *w)
{
	struct fifo done;
	struct pdi_job *j;
	uint64_t count;
	unsigned n = 0;

	if (read(w->efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		log_warning("Cannot read the %s workers' eventfd: %m", w->name);
	pthread_mutex_lock(&w->lock);
	done = fifo_take(&w->finished);
	pthread_mutex_unlock(&w->lock);
	/* outside the lock: done() may submit follow-up jobs */
	while ((j = fifo_pop(&done))) {
		j->done(j, false);
		n++;
	}
	return n;
}

static bool idle(struct pdi_workers *w)
{
	bool r;

	pthread_mutex_lock(&w->lock);
	r = !w->queued.n && !w->busy && !w->finished.n;
	pthread_mutex_unlock(&w->lock);
	return r;
}

bool pdi_workers_wait_idle_until(struct pdi_workers *w, uint64_t deadline_ns)
{
	for (;;) {
		uint64_t now;

		(void)pdi_workers_dispatch(w);
		if (idle(w))
			return true;
		now = pdi_now_ns();
		if (now >= deadline_ns)
			return false;
		/* a job that finishes after the check has written the eventfd already */
		(void)poll(&(struct pollfd){.fd = w->efd, .events = POLLIN}, 1,
			   deadline_ns == UINT64_MAX ? -1 : (int)((deadline_ns - now + 999999) / 1000000));
	}
}

void pdi_workers_wait_idle(struct pdi_workers *w)
{
	(void)pdi_workers_wait_idle_until(w, UINT64_MAX);
}

void pdi_workers_free(struct pdi_workers *w)
{
	struct fifo cancelled;
	struct pdi_job *j;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	cancelled = fifo_take(&w->queued);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->nthreads; i++)
		(void)sem_post(&w->work);
	/* the running jobs finish: each one bounds its own time */
	for (unsigned i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	(void)pdi_workers_dispatch(w);
	while ((j = fifo_pop(&cancelled)))
		j->done(j, true);
	/* a done() above may have tried to submit: refused with -ESHUTDOWN, nothing queued */
	pthread_mutex_destroy(&w->lock);
	sem_destroy(&w->work);
	close(w->efd);
	free(w->threads);
	free(w->running);
	free(w);
}

void pdi_workers_stats(struct pdi_workers *w, struct pdi_workers_stats *ret)
{
	uint64_t now = pdi_now_ns(), oldest = 0;

	pthread_mutex_lock(&w->lock);
	if (w->queued.head)
		oldest = w->queued.head->queued_ns;
	for (unsigned i = 0; i < w->nthreads; i++)
		if (w->running[i] && (!oldest || w->running[i]->queued_ns < oldest))
			oldest = w->running[i]->queued_ns;
	*ret = (struct pdi_workers_stats){.threads = w->nthreads, .busy = w->busy, .queued = w->queued.n,
					  .completed = w->completed, .oldest_ns = oldest ? now - oldest : 0};
	pthread_mutex_unlock(&w->lock);
}

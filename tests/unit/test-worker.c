/* SPDX-License-Identifier: GPL-2.0-only */
/* test-worker.c -- the worker pool's contract (daemon/worker.h): run() on a worker thread,
 * done() on the loop exactly once, an ordered lane with one thread, a bounded and lazily
 * created set of threads, cancellation at shutdown, and the eventfd that wakes the loop. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "worker.h"

struct job {
	struct pdi_job job;
	int id;
	pthread_t ran_on, done_on;
	int runs, dones;
	bool cancelled;
	unsigned sleep_ms;
	int *order;            /* where run() writes its id, in the order of runs */
	atomic_int *next, *concurrent, *max_concurrent;
	sigset_t mask;         /* the signal mask run() saw */
	struct pdi_workers *resubmit_to; /* done() submits a follow-up job here */
	struct job *follow_up;
	int submit_result;     /* what that submission returned */
};

static void sleep_ms(unsigned ms)
{
	nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000}, NULL);
}

static void job_run(struct pdi_job *pj)
{
	struct job *j = pdi_job_of(pj, struct job, job);

	j->ran_on = pthread_self();
	j->runs++;
	pthread_sigmask(SIG_SETMASK, NULL, &j->mask);
	if (j->concurrent) {
		int now = atomic_fetch_add(j->concurrent, 1) + 1, max = atomic_load(j->max_concurrent);

		while (now > max && !atomic_compare_exchange_weak(j->max_concurrent, &max, now))
			;
	}
	if (j->order)
		j->order[atomic_fetch_add(j->next, 1)] = j->id;
	sleep_ms(j->sleep_ms);
	if (j->concurrent)
		atomic_fetch_sub(j->concurrent, 1);
}

static void job_done(struct pdi_job *pj, bool cancelled)
{
	struct job *j = pdi_job_of(pj, struct job, job);

	j->done_on = pthread_self();
	j->dones++;
	j->cancelled = cancelled;
	if (j->resubmit_to && j->follow_up)
		j->submit_result = pdi_workers_submit(j->resubmit_to, &j->follow_up->job);
}

static void job_init(struct job *j, int id)
{
	*j = (struct job){.job = {.run = job_run, .done = job_done}, .id = id};
}

/* Dispatch on this thread until N done() calls have been made, waiting on the eventfd. */
static void dispatch_until(struct pdi_workers *w, unsigned n)
{
	unsigned seen = 0;

	while (seen < n) {
		struct pollfd p = {.fd = pdi_workers_fd(w), .events = POLLIN};

		cr_assert_eq(poll(&p, 1, 10000), 1, "the eventfd never became readable");
		seen += pdi_workers_dispatch(w);
	}
}

Test(worker, runs_on_a_worker_and_finishes_on_the_loop)
{
	struct pdi_workers *w;
	struct job j;

	cr_assert_eq(pdi_workers_new("test", 2, 0, &w), 0);
	job_init(&j, 1);
	cr_assert_eq(pdi_workers_submit(w, &j.job), 0);
	dispatch_until(w, 1);
	cr_expect_eq(j.runs, 1);
	cr_expect_eq(j.dones, 1);
	cr_expect_not(j.cancelled);
	cr_expect(!pthread_equal(j.ran_on, pthread_self()), "run() ran on the loop's thread");
	cr_expect(pthread_equal(j.done_on, pthread_self()), "done() ran off the loop's thread");
	pdi_workers_free(w);
	cr_expect_eq(j.dones, 1, "done() called again at free");
}

Test(worker, eventfd_is_quiet_until_a_job_finishes)
{
	struct pdi_workers *w;
	struct pollfd p;
	struct job j;

	cr_assert_eq(pdi_workers_new("test", 1, 0, &w), 0);
	p = (struct pollfd){.fd = pdi_workers_fd(w), .events = POLLIN};
	cr_expect_eq(poll(&p, 1, 0), 0);
	job_init(&j, 1);
	j.sleep_ms = 50;
	cr_assert_eq(pdi_workers_submit(w, &j.job), 0);
	cr_expect_eq(poll(&p, 1, 0), 0, "readable before the job finished");
	cr_expect_eq(pdi_workers_dispatch(w), 0);
	cr_expect_eq(poll(&p, 1, 10000), 1);
	cr_expect_eq(pdi_workers_dispatch(w), 1);
	cr_expect_eq(poll(&p, 1, 0), 0, "still readable once dispatched");
	pdi_workers_free(w);
}

Test(worker, one_thread_is_an_ordered_lane)
{
	enum { N = 50 };
	atomic_int next = 0, concurrent = 0, max_concurrent = 0;
	struct pdi_workers *w;
	struct job *jobs = calloc(N, sizeof(*jobs));
	int order[N];

	cr_assert_eq(pdi_workers_new("lane", 1, 0, &w), 0);
	for (int i = 0; i < N; i++) {
		job_init(&jobs[i], i);
		jobs[i].order = order;
		jobs[i].next = &next;
		jobs[i].concurrent = &concurrent;
		jobs[i].max_concurrent = &max_concurrent;
		jobs[i].sleep_ms = i % 5 == 0;
		cr_assert_eq(pdi_workers_submit(w, &jobs[i].job), 0);
	}
	pdi_workers_wait_idle(w);
	for (int i = 0; i < N; i++) {
		cr_expect_eq(order[i], i, "job %d ran in position %d", order[i], i);
		cr_expect_eq(jobs[i].dones, 1);
	}
	cr_expect_eq(max_concurrent, 1, "two jobs of a one-thread pool ran at once");
	pdi_workers_free(w);
	free(jobs);
}

Test(worker, threads_are_created_on_demand_and_bounded)
{
	enum { N = 12, MAX = 3 };
	atomic_int concurrent = 0, max_concurrent = 0;
	struct pdi_workers_stats st;
	struct pdi_workers *w;
	struct job jobs[N];

	cr_assert_eq(pdi_workers_new("pool", MAX, 0, &w), 0);
	pdi_workers_stats(w, &st);
	cr_expect_eq(st.threads, 0, "threads exist before any job (pdimond forks after creating pools)");
	for (int i = 0; i < N; i++) {
		job_init(&jobs[i], i);
		jobs[i].concurrent = &concurrent;
		jobs[i].max_concurrent = &max_concurrent;
		jobs[i].sleep_ms = 30;
		cr_assert_eq(pdi_workers_submit(w, &jobs[i].job), 0);
	}
	pdi_workers_stats(w, &st);
	cr_expect_eq(st.threads, MAX);
	cr_expect_gt(st.queued + st.busy, 0);
	cr_expect_gt(st.oldest_ns, 0);
	pdi_workers_wait_idle(w);
	pdi_workers_stats(w, &st);
	cr_expect_eq(st.threads, MAX, "threads are kept, not recreated");
	cr_expect_eq(st.completed, N);
	cr_expect_eq(st.queued + st.busy, 0);
	cr_expect_eq(st.oldest_ns, 0);
	cr_expect_leq(max_concurrent, MAX);
	cr_expect_gt(max_concurrent, 1, "a pool of %d threads never ran two jobs at once", MAX);
	pdi_workers_free(w);
}

Test(worker, free_cancels_what_has_not_started_and_waits_for_the_rest)
{
	enum { N = 6 };
	struct pdi_workers *w;
	struct job jobs[N];
	int ran = 0, cancelled = 0;

	cr_assert_eq(pdi_workers_new("stop", 1, 0, &w), 0);
	for (int i = 0; i < N; i++) {
		job_init(&jobs[i], i);
		jobs[i].sleep_ms = 100;
		cr_assert_eq(pdi_workers_submit(w, &jobs[i].job), 0);
	}
	sleep_ms(20); /* the first one is running (or about to) */
	pdi_workers_free(w);
	for (int i = 0; i < N; i++) {
		cr_expect_eq(jobs[i].dones, 1, "job %d: done() called %d times", i, jobs[i].dones);
		cr_expect_eq(jobs[i].cancelled, jobs[i].runs == 0, "job %d: cancelled iff it never ran", i);
		cr_expect(pthread_equal(jobs[i].done_on, pthread_self()));
		ran += jobs[i].runs;
		cancelled += jobs[i].cancelled;
	}
	cr_expect_eq(ran + cancelled, N);
	cr_expect_lt(ran, N, "free() waited for jobs that had not started");
}

Test(worker, done_may_submit_a_follow_up)
{
	struct pdi_workers *a, *b;
	struct job first, second;

	cr_assert_eq(pdi_workers_new("a", 2, 0, &a), 0);
	cr_assert_eq(pdi_workers_new("b", 1, 0, &b), 0);
	job_init(&first, 1);
	job_init(&second, 2);
	first.resubmit_to = b;
	first.follow_up = &second;
	cr_assert_eq(pdi_workers_submit(a, &first.job), 0);
	pdi_workers_wait_idle(a);
	pdi_workers_wait_idle(b);
	cr_expect_eq(first.submit_result, 0);
	cr_expect_eq(second.runs, 1);
	cr_expect_eq(second.dones, 1);
	pdi_workers_free(a);
	pdi_workers_free(b);
}

/* A job whose done() submits it again, as long as the pool takes it: a chain with no end. */
struct chain {
	struct pdi_job job;
	struct pdi_workers *w;
	int runs, cancelled;
};

static void chain_run(struct pdi_job *pj)
{
	pdi_job_of(pj, struct chain, job)->runs++;
	sleep_ms(20);
}

static void chain_done(struct pdi_job *pj, bool cancelled)
{
	struct chain *c = pdi_job_of(pj, struct chain, job);

	if (cancelled)
		c->cancelled++;
	else
		(void)pdi_workers_submit(c->w, &c->job);
}

Test(worker, wait_idle_until_ends_a_chain_at_its_deadline)
{
	struct chain c = {.job = {.run = chain_run, .done = chain_done}};
	struct timespec t0, t1;
	double waited;

	cr_assert_eq(pdi_workers_new("chain", 1, 0, &c.w), 0);
	cr_assert_eq(pdi_workers_submit(c.w, &c.job), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_not(pdi_workers_wait_idle_until(c.w, pdi_now_ns() + 200000000ull), "a chain with no end went idle");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_expect_geq(waited, 0.19, "returned %.3f s into a 0.2 s wait", waited);
	cr_expect_lt(waited, 5.0, "a 0.2 s wait took %.3f s", waited);
	cr_expect_geq(c.runs, 2, "the chain ran %d times in 0.2 s", c.runs);
	/* what is queued then is cancelled, once, and what runs finishes */
	pdi_workers_free(c.w);
	cr_expect_leq(c.cancelled, 1);
}

Test(worker, workers_block_every_signal)
{
	struct pdi_workers *w;
	struct job j;

	cr_assert_eq(pdi_workers_new("sig", 1, 0, &w), 0);
	job_init(&j, 1);
	cr_assert_eq(pdi_workers_submit(w, &j.job), 0);
	dispatch_until(w, 1);
	cr_expect(sigismember(&j.mask, SIGTERM));
	cr_expect(sigismember(&j.mask, SIGHUP));
	cr_expect(sigismember(&j.mask, SIGCHLD));
	pdi_workers_free(w);
}

Test(worker, refuses_zero_threads_and_submissions_while_stopping)
{
	struct pdi_workers *w;
	struct job blocker, queued, follow_up;

	cr_expect_eq(pdi_workers_new("zero", 0, 0, &w), -EINVAL);
	cr_assert_eq(pdi_workers_new("stop", 1, 0, &w), 0);
	job_init(&blocker, 1);
	blocker.sleep_ms = 50;
	job_init(&queued, 2);
	job_init(&follow_up, 3);
	queued.resubmit_to = w;
	queued.follow_up = &follow_up;
	cr_assert_eq(pdi_workers_submit(w, &blocker.job), 0);
	cr_assert_eq(pdi_workers_submit(w, &queued.job), 0);
	pdi_workers_free(w); /* QUEUED is cancelled; its done() tries to submit */
	cr_expect_eq(queued.dones, 1);
	cr_expect_eq(queued.submit_result, -ESHUTDOWN);
	cr_expect_eq(follow_up.runs + follow_up.dones, 0);
}

Test(worker, a_full_queue_refuses_and_leaves_the_job_to_the_caller)
{
	struct pdi_workers *w;
	struct job running, waiting, refused;

	cr_assert_eq(pdi_workers_new("full", 1, 1, &w), 0);
	job_init(&running, 1);
	running.sleep_ms = 100;
	job_init(&waiting, 2);
	job_init(&refused, 3);
	cr_assert_eq(pdi_workers_submit(w, &running.job), 0);
	/* the first one may still be queued: wait until the thread has taken it */
	for (struct pdi_workers_stats st = {0}; pdi_workers_stats(w, &st), st.queued;)
		sleep_ms(1);
	cr_assert_eq(pdi_workers_submit(w, &waiting.job), 0);
	cr_expect_eq(pdi_workers_submit(w, &refused.job), -EBUSY);
	pdi_workers_wait_idle(w);
	cr_expect_eq(refused.runs + refused.dones, 0);
	cr_expect_eq(waiting.dones, 1);
	pdi_workers_free(w);
}

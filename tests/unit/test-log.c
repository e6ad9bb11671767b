/* SPDX-License-Identifier: GPL-2.0-only */
/* test-log.c -- the daemon's log: the errno helpers evaluate each argument once, lines are
 * whole, and the rate limiters keep log.h's contract (first line of a key, bursts per
 * interval, a cap per site, every suppressed line reported exactly once, with a line of the
 * site quoted rather than its format). */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define MS 1000000ull

/* stderr into a temporary file for the test (Criterion runs each test in its own process). */
static FILE *captured;

static void capture(void)
{
	captured = tmpfile();
	cr_assert(captured);
	cr_assert(dup2(fileno(captured), STDERR_FILENO) >= 0);
}

/* Everything logged since capture(), as one string (free it). */
static char *logged(void)
{
	long n = lseek(fileno(captured), 0, SEEK_END);
	char *s = calloc(1, (size_t)n + 1);

	cr_assert(s);
	cr_assert_eq(pread(fileno(captured), s, (size_t)n, 0), n);
	return s;
}

static unsigned count(const char *s, const char *what)
{
	unsigned n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* The sum of N over S's lines: "... (N similar lines suppressed)" and the flush's
 * "pdimond: warning: N more lines like ...". */
static unsigned long reported(const char *s)
{
	unsigned long total = 0, n;
	char *copy = strdup(s), *save = NULL;

	cr_assert(copy);
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *w = strstr(line, "warning: "), *par = strrchr(line, '(');

		if (w && strstr(w, " more line") && sscanf(w, "warning: %lu more line", &n) == 1)
			total += n;
		else if (par && sscanf(par, "(%lu similar line", &n) == 1)
			total += n;
	}
	free(copy);
	return total;
}

static uint64_t fake_now;
static uint64_t fake_clock(void)
{
	return fake_now;
}

static void use_fake_clock(void)
{
	fake_now = 1000 * MS;
	pdi_log_clock = fake_clock;
}

/* ---- the errno helpers (issue 10's review: the macros evaluated their argument twice) ---- */

static unsigned calls;
static int failing_call(void)
{
	calls++;
	return -EIO;
}

Test(log, errno_helper_evaluates_its_result_once)
{
	char *s;
	int r;

	capture();
	calls = 0;
	r = log_error_errno(failing_call(), "reading the thing: %m");
	cr_expect_eq(calls, 1, "the result expression ran %u times", calls);
	cr_expect_eq(r, -EIO);
	s = logged();
	cr_expect(strstr(s, strerror(EIO)), "%%m is the result: %s", s);
	free(s);
}

static const char *clobbers_errno(void)
{
	errno = ENOENT;
	return "argument";
}

Test(log, errno_helper_m_is_its_result_whatever_the_arguments_do)
{
	char *s;

	capture();
	errno = EPERM;
	cr_expect_eq(log_warning_errno(-EIO, "%s: %m", clobbers_errno()), -EIO);
	s = logged();
	cr_expect(strstr(s, strerror(EIO)) && !strstr(s, strerror(ENOENT)), "%%m must be EIO: %s", s);
	free(s);
	cr_expect_eq(errno, ENOENT, "errno is the caller's"); /* set by the argument, kept by the log */
}

Test(log, below_the_level_is_silent_and_still_returns)
{
	char *s;

	capture();
	pdi_log_level = PDI_LOG_INFO;
	calls = 0;
	cr_expect_eq(pdi_log_errno(PDI_LOG_DEBUG, failing_call(), "hidden %m"), -EIO);
	cr_expect_eq(calls, 1);
	log_debug("hidden too");
	s = logged();
	cr_expect_str_empty(s);
	free(s);
}

Test(log, an_overlong_message_is_one_cut_line)
{
	char *big = malloc(10000), *s;

	memset(big, 'x', 9999);
	big[9999] = '\0';
	capture();
	log_warning("%s", big);
	log_warning("next");
	s = logged();
	cr_expect_eq(count(s, "\n"), 2, "two whole lines");
	cr_expect(strstr(s, "x...\n"), "cut with an ellipsis");
	cr_expect(strstr(s, "pdimond: warning: next\n"));
	free(s);
	free(big);
}

/* ---- rate limiting ---- */

static void refuse(uint64_t key, int i)
{
	log_warning_limited(key, "refusing request %d of key %llu", i, (unsigned long long)key);
}

Test(log, first_line_then_a_burst_per_interval_and_the_count)
{
	char *s;

	capture();
	use_fake_clock();
	for (int i = 0; i < 100; i++)
		refuse(7, i);
	s = logged();
	cr_expect_eq(count(s, "warning: refusing request"), PDI_RATELIMIT_BURST, "%s", s);
	cr_expect(strstr(s, "request 0 of key 7"), "the first line is logged");
	cr_expect_eq(reported(s), 0, "nothing reported within the interval");
	free(s);
	/* the next interval: its first line says how many were held back */
	fake_now += PDI_RATELIMIT_INTERVAL_MS * MS;
	refuse(7, 100);
	s = logged();
	cr_expect(strstr(s, "refusing request 100 of key 7 (95 similar lines suppressed)\n"), "%s", s);
	free(s);
}

Test(log, one_key_flooding_does_not_hide_another_keys_first_line)
{
	char *s;

	capture();
	use_fake_clock();
	for (int i = 0; i < 1000; i++)
		refuse(1, i);
	refuse(2, 0);
	s = logged();
	cr_expect(strstr(s, "request 0 of key 2\n"), "another user's first refusal is logged: %s", s);
	free(s);
}

Test(log, many_keys_are_capped_per_site_and_every_line_is_accounted)
{
	const unsigned n = 5000;
	unsigned lines;
	char *s;

	capture();
	use_fake_clock();
	for (unsigned i = 0; i < n; i++)
		refuse(i + 1, (int)i); /* an attacker with many addresses */
	pdi_log_ratelimit_flush();
	s = logged();
	lines = count(s, "warning: refusing request");
	cr_expect_eq(lines, PDI_RATELIMIT_SITE_BURSTS * PDI_RATELIMIT_BURST, "site cap: %u lines", lines);
	free(s);
	/* once the interval is over the flush reports the rest, with the site and its format */
	fake_now += PDI_RATELIMIT_INTERVAL_MS * MS;
	pdi_log_ratelimit_flush();
	s = logged();
	cr_expect_eq(lines + reported(s), n, "logged %u + reported %lu == %u:\n%s", lines, reported(s), n, s);
	cr_expect(strstr(s, "like \"refusing request 19 of key 20\" suppressed (") && strstr(s, "test-log.c:"), "%s", s);
	free(s);
	/* and only once */
	fake_now += PDI_RATELIMIT_INTERVAL_MS * MS;
	pdi_log_ratelimit_flush();
	s = logged();
	cr_expect_eq(lines + reported(s), n);
	free(s);
}

Test(log, flush_waits_for_the_interval_and_reports_once)
{
	char *s;

	capture();
	use_fake_clock();
	for (int i = 0; i < 10; i++)
		refuse(3, i);
	fake_now += PDI_RATELIMIT_INTERVAL_MS * MS / 2;
	pdi_log_ratelimit_flush();
	s = logged();
	cr_expect_eq(reported(s), 0, "not before the interval is over: %s", s);
	free(s);
	fake_now += PDI_RATELIMIT_INTERVAL_MS * MS;
	pdi_log_ratelimit_flush();
	pdi_log_ratelimit_flush();
	s = logged();
	cr_expect_eq(reported(s), 10 - PDI_RATELIMIT_BURST, "%s", s);
	free(s);
	/* the key's next line is not charged with the count again */
	refuse(3, 10);
	s = logged();
	cr_expect(strstr(s, "request 10 of key 3\n"), "%s", s);
	cr_expect_eq(reported(s), 10 - PDI_RATELIMIT_BURST);
	free(s);
}

Test(log, the_report_quotes_a_line_logged_not_its_format)
{
	char *long_name = malloc(1000), *s, *report;

	capture();
	use_fake_clock();
	for (int i = 0; i < 10; i++)
		refuse(7, i);
	fake_now += PDI_RATELIMIT_INTERVAL_MS * MS;
	pdi_log_ratelimit_flush();
	s = logged();
	report = strstr(s, "more lines like");
	cr_assert(report, "%s", s);
	cr_expect(strstr(s, "5 more lines like \"refusing request 4 of key 7\" suppressed (") &&
		  strstr(report, "test-log.c:"), "%s", s);
	cr_expect_null(strchr(report, '%'), "no format in the report: %s", report);
	free(s);
	/* a long line is quoted cut, and the report stays one line */
	memset(long_name, 'n', 999);
	long_name[999] = '\0';
	for (int i = 0; i < 10; i++)
		log_warning_limited(8, "refusing step %s", long_name);
	fake_now += PDI_RATELIMIT_INTERVAL_MS * MS;
	pdi_log_ratelimit_flush();
	s = logged();
	report = strstr(s, "more lines like \"refusing step nnn");
	cr_assert(report, "%s", s);
	cr_expect(strstr(report, "n...\" suppressed ("), "%s", report);
	cr_expect_eq(count(report, "\n"), 1, "%s", report);
	cr_expect_lt(strlen(report), PDI_RATELIMIT_EXAMPLE + 100);
	free(s);
	free(long_name);
}

Test(log, limited_errno_helper_returns_its_result_and_sets_m)
{
	char *s;

	capture();
	use_fake_clock();
	calls = 0;
	for (int i = 0; i < 20; i++)
		cr_expect_eq(log_warning_errno_limited(9, failing_call(), "peer: %m"), -EIO);
	cr_expect_eq(calls, 20, "evaluated once per call");
	s = logged();
	cr_expect_eq(count(s, strerror(EIO)), PDI_RATELIMIT_BURST);
	free(s);
}

Test(log, below_the_level_limited_lines_are_not_counted)
{
	char *s;

	capture();
	use_fake_clock();
	pdi_log_level = PDI_LOG_WARNING;
	for (int i = 0; i < 50; i++)
		log_info_limited(1, "quiet %d", i);
	fake_now += PDI_RATELIMIT_INTERVAL_MS * MS;
	pdi_log_ratelimit_flush();
	s = logged();
	cr_expect_str_empty(s);
	free(s);
}

/* Threads share the limiters: every line is whole and accounted for. */
#define THREADS 4
#define PER_THREAD 2000

static void *flood(void *arg)
{
	for (int i = 0; i < PER_THREAD; i++)
		log_warning_limited((uintptr_t)arg % 3, "thread line %d %s", i, "with some text to make it long");
	return NULL;
}

Test(log, threads_share_a_limiter)
{
	pthread_t t[THREADS];
	unsigned lines;
	char *s;

	capture();
	use_fake_clock();
	for (uintptr_t i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, flood, (void *)i), 0);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	fake_now += PDI_RATELIMIT_INTERVAL_MS * MS;
	pdi_log_ratelimit_flush();
	s = logged();
	lines = count(s, "warning: thread line");
	cr_expect_eq(count(s, "\n"), lines + 1, "whole lines, then one report: %s", s);
	cr_expect_eq(lines + reported(s), THREADS * PER_THREAD);
	free(s);
}

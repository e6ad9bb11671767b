/* SPDX-License-Identifier: GPL-2.0-only */
/* log.c -- the daemon's log: one line per message on stderr (or syslog), prefixed by its
 * level, and the rate limiters for lines others can cause (the contract is in log.h).
 *
 * One mutex guards every limiter: a limited line is rare next to what the daemon does,
 * and the critical section only counts (the line is formatted and written outside it). */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#define LINE_MAX_BYTES 2048 /* a longer message is cut, with "..." */

int pdi_log_level = PDI_LOG_INFO;
bool pdi_log_to_syslog;

uint64_t (*pdi_log_clock)(void) = pdi_now_ns;

static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pdi_ratelimit *limiters; /* every site that ever logged, for the flush */
static atomic_ulong pending;            /* lines counted and not yet reported, all sites */

/* Write MSG (without newline) as one line at LEVEL: a single write, so that lines from
 * several threads never interleave. ERRNO is kept. */
static void emit(int level, const char *msg)
{
	static const char *const names[] = {[PDI_LOG_ERR] = "error", [PDI_LOG_WARNING] = "warning",
					    [PDI_LOG_INFO] = "info", [PDI_LOG_DEBUG] = "debug"};
	const char *name = level >= 0 && level < (int)ELEMENTSOF(names) && names[level] ? names[level] : "log";
	char line[LINE_MAX_BYTES + 64];
	int saved = errno, n;

	if (pdi_log_to_syslog) {
		syslog(LOG_DAEMON | level, "%s", msg);
		errno = saved;
		return;
	}
	/* <N> is how journald reads the priority off stderr; a terminal gets plain lines */
	if (isatty(STDERR_FILENO))
		n = snprintf(line, sizeof(line), "pdimond: %s: %s\n", name, msg);
	else
		n = snprintf(line, sizeof(line), "<%d>pdimond: %s: %s\n", level, name, msg);
	if (n >= (int)sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n);
	errno = saved;
}

/* FMT with AP into BUF (LINE_MAX_BYTES), cut with "..." when longer; errno as the caller's
 * for %m. */
static void format_msg(char *buf, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, LINE_MAX_BYTES, fmt, ap);

	if (n >= LINE_MAX_BYTES)
		memcpy(buf + LINE_MAX_BYTES - 4, "...", 4);
}

void pdi_log(int level, const char *fmt, ...)
{
	char msg[LINE_MAX_BYTES];
	int saved = errno;
	va_list ap;

	if (level > pdi_log_level)
		return;
	va_start(ap, fmt);
	format_msg(msg, fmt, ap);
	va_end(ap);
	emit(level, msg);
	errno = saved;
}

int pdi_log_errno(int level, int r, const char *fmt, ...)
{
	char msg[LINE_MAX_BYTES];
	int saved = errno;
	va_list ap;

	if (level > pdi_log_level)
		return r;
	errno = r < 0 ? -r : r;
	va_start(ap, fmt);
	format_msg(msg, fmt, ap);
	va_end(ap);
	emit(level, msg);
	errno = saved;
	return r;
}

/* ---- rate limiting ---- */

/* KEY's slot in RL: found, free, or the least recently seen one taken over (its count
 * kept as the site's). Under limit_lock. */
static struct pdi_ratelimit_key *key_slot(struct pdi_ratelimit *rl, uint64_t key)
{
	struct pdi_ratelimit_key *oldest = &rl->keys[0];

	for (unsigned i = 0; i < PDI_RATELIMIT_KEYS; i++) {
		struct pdi_ratelimit_key *k = &rl->keys[i];

		if (k->used && k->key == key)
			return k;
		if (!k->used) {
			oldest = k;
			break;
		}
		if (k->last_ns < oldest->last_ns)
			oldest = k;
	}
	rl->forgotten += oldest->suppressed;
	*oldest = (struct pdi_ratelimit_key){.key = key, .used = true};
	return oldest;
}

/* Whether a line of KEY at NOW is logged; *RET_REPORT: the key's count to report with it. */
static bool admit(struct pdi_ratelimit *rl, int level, uint64_t key, uint64_t now, unsigned long *ret_report)
{
	uint64_t interval = (uint64_t)rl->interval_ms * 1000000ull;
	struct pdi_ratelimit_key *k;
	bool first;

	*ret_report = 0;
	if (!rl->registered) {
		rl->registered = true;
		rl->level = level;
		rl->next = limiters;
		limiters = rl;
		rl->site_window_ns = now;
	}
	if (now - rl->site_window_ns >= interval) {
		rl->site_window_ns = now;
		rl->site_logged = 0;
	}
	k = key_slot(rl, key);
	first = k->last_ns == 0 && k->logged == 0;
	k->last_ns = now ? now : 1;
	if (!first && now - k->window_ns >= interval) {
		k->window_ns = now;
		k->logged = 0;
	}
	if (first)
		k->window_ns = now;
	if ((first || k->logged < rl->burst) && rl->site_logged < PDI_RATELIMIT_SITE_BURSTS * rl->burst) {
		k->logged++;
		rl->site_logged++;
		*ret_report = k->suppressed;
		atomic_fetch_sub(&pending, k->suppressed);
		k->suppressed = 0;
		return true;
	}
	k->suppressed++;
	atomic_fetch_add(&pending, 1);
	return false;
}

int pdi_log_ratelimited(struct pdi_ratelimit *rl, int level, uint64_t key, int r, const char *fmt, ...)
{
	char msg[LINE_MAX_BYTES];
	unsigned long report;
	int saved = errno;
	size_t len;
	bool ok;
	va_list ap;

	if (level > pdi_log_level)
		return r;
	pthread_mutex_lock(&limit_lock);
	ok = admit(rl, level, key, pdi_log_clock(), &report);
	pthread_mutex_unlock(&limit_lock);
	if (!ok)
		return r;
	errno = r < 0 ? -r : saved;
	va_start(ap, fmt);
	format_msg(msg, fmt, ap);
	va_end(ap);
	len = strlen(msg);
	/* what the flush's report quotes: a real line of the site, never its format */
	pthread_mutex_lock(&limit_lock);
	if (len < sizeof(rl->example)) {
		memcpy(rl->example, msg, len + 1);
	} else {
		memcpy(rl->example, msg, sizeof(rl->example) - 4);
		memcpy(rl->example + sizeof(rl->example) - 4, "...", 4);
	}
	pthread_mutex_unlock(&limit_lock);
	if (report && len < sizeof(msg))
		(void)snprintf(msg + len, sizeof(msg) - len, " (%lu similar line%s suppressed)", report,
			       report == 1 ? "" : "s");
	emit(level, msg);
	errno = saved;
	return r;
}

/* RL's lines counted, whose interval is over at NOW, taken for a report. Under limit_lock. */
static unsigned long take_due(struct pdi_ratelimit *rl, uint64_t now)
{
	uint64_t interval = (uint64_t)rl->interval_ms * 1000000ull;
	unsigned long n = 0;

	/* forgotten keys' lines once the site's interval is over: one report per interval */
	if (rl->forgotten && now - rl->site_window_ns >= interval) {
		n = rl->forgotten;
		rl->forgotten = 0;
		rl->site_window_ns = now;
		rl->site_logged = 0;
	}
	for (unsigned i = 0; i < PDI_RATELIMIT_KEYS; i++) {
		struct pdi_ratelimit_key *k = &rl->keys[i];

		if (k->used && k->suppressed && now - k->window_ns >= interval) {
			n += k->suppressed;
			k->suppressed = 0;
			/* the key's next line opens a new interval, as after a quiet one */
			k->window_ns = now - interval;
		}
	}
	return n;
}

void pdi_log_ratelimit_flush(void)
{
	int saved = errno;

	if (atomic_load(&pending) == 0)
		return;
	pthread_mutex_lock(&limit_lock);
	uint64_t now = pdi_log_clock();
	for (struct pdi_ratelimit *rl = limiters; rl; rl = rl->next) {
		unsigned long n = take_due(rl, now);
		char msg[LINE_MAX_BYTES];

		if (!n)
			continue;
		atomic_fetch_sub(&pending, n);
		/* a rare line, written under the lock: the flush is the only writer here */
		if (rl->example[0])
			(void)snprintf(msg, sizeof(msg), "%lu more line%s like \"%s\" suppressed (%s:%d)", n,
				       n == 1 ? "" : "s", rl->example, rl->file, rl->line);
		else /* a line counted before the site's first logged one was written down */
			(void)snprintf(msg, sizeof(msg), "%lu more line%s suppressed (%s:%d)", n, n == 1 ? "" : "s",
				       rl->file, rl->line);
		emit(rl->level, msg);
	}
	pthread_mutex_unlock(&limit_lock);
	errno = saved;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* log.h -- logging with a level: stderr in the foreground, syslog once daemonized; and
 * rate-limited lines for everything a user or a peer can make the daemon say at will.
 *
 * Every function here is thread-safe, keeps errno, and writes each line whole (one
 * write), so lines from worker threads never interleave. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { PDI_LOG_ERR = 3, PDI_LOG_WARNING = 4, PDI_LOG_INFO = 6, PDI_LOG_DEBUG = 7 };

extern int pdi_log_level;
extern bool pdi_log_to_syslog; /* once daemonized, stderr goes nowhere */

void pdi_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Log with errno set to -R (for %m) and return R (a negative errno), so that callers can
 * write: return log_error_errno(r, "Cannot ...: %m"). A function, not a macro: R and the
 * arguments are evaluated once each, and %m is -R whatever the arguments did to errno. */
int pdi_log_errno(int level, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_error_errno(r, ...) pdi_log_errno(PDI_LOG_ERR, r, __VA_ARGS__)
#define log_warning_errno(r, ...) pdi_log_errno(PDI_LOG_WARNING, r, __VA_ARGS__)
#define log_error(...) pdi_log(PDI_LOG_ERR, __VA_ARGS__)
#define log_warning(...) pdi_log(PDI_LOG_WARNING, __VA_ARGS__)
#define log_info(...) pdi_log(PDI_LOG_INFO, __VA_ARGS__)
#define log_debug(...) pdi_log(PDI_LOG_DEBUG, __VA_ARGS__)

/* ---- rate-limited lines ----
 *
 * Use them for every line that someone other than the administrator can cause: a refused
 * D-Bus call, peer connection or credential, a task that cannot be watched, a bad file in
 * a user's maps. The daemon must say what it refused, and a flood of refusals must not
 * become a flood of log lines (nor a CPU or disk cost) for everybody else.
 *
 * The contract, per call site (each use of a macro below is its own limiter):
 *  - Lines carry a KEY the caller chooses: who caused them (a uid, a pid, a peer address
 *    hashed with pdi_hash_str() from u64map.h, ...), 0 when the site has no one to tell
 *    apart. Each key is limited on its own, so one user's flood cannot hide another
 *    user's first refusal.
 *  - A key's first line is logged. After it, at most BURST lines of that key are logged
 *    per INTERVAL_MS (counting from the first line logged in the interval); the others are
 *    counted, not logged.
 *  - Whatever the keys, the site logs at most PDI_RATELIMIT_SITE_BURSTS x BURST lines per
 *    interval: an attacker with many keys (addresses, uids) is bounded too, and its
 *    lines beyond that are counted.
 *  - Nothing counted is lost: the key's next logged line after its interval ends with
 *    " (N similar lines suppressed)", and pdi_log_ratelimit_flush() reports what is still
 *    pending once its interval is over, as one line per site that quotes the site's last
 *    line logged (cut at PDI_RATELIMIT_EXAMPLE bytes) and names the site (file:line):
 *      12 more lines like "Refusing GetStep x for uid 1000: not its step" suppressed (bus.c:210)
 *    The daemon calls the flush from its periodic timer.
 *  - Memory is fixed per site: it remembers PDI_RATELIMIT_KEYS keys, the one seen least
 *    recently is forgotten first (its pending count moves to the site's own count, so it
 *    is still reported), and a forgotten key's next line counts as a first line again.
 *  - A line below pdi_log_level costs nothing and is not counted.
 *
 *	log_warning_limited(uid, "Refusing GetStep %s for uid %u: not its step", name, uid);
 *	return log_warning_errno_limited(key, r, "Peer %s: %m, closing", peer);
 */
#define PDI_RATELIMIT_INTERVAL_MS 10000 /* the default interval */
#define PDI_RATELIMIT_BURST 5           /* the default lines per key per interval */
#define PDI_RATELIMIT_SITE_BURSTS 4     /* a site logs at most this many bursts per interval */
#define PDI_RATELIMIT_KEYS 16           /* keys a site tells apart at once */
#define PDI_RATELIMIT_EXAMPLE 160       /* bytes of a line the flush's report quotes */

struct pdi_ratelimit_key {
	uint64_t key;
	uint64_t window_ns, last_ns; /* when its interval began; when it was last seen */
	unsigned logged;             /* lines logged in its interval */
	unsigned long suppressed;    /* lines counted since the last report */
	bool used;
};

/* One call site's state: declared static by the macros, never freed; zero-initialised
 * apart from what PDI_RATELIMIT_INIT sets. */
struct pdi_ratelimit {
	const char *file;
	int line;
	unsigned interval_ms, burst;
	bool registered;             /* on the list pdi_log_ratelimit_flush() walks */
	struct pdi_ratelimit *next;
	uint64_t site_window_ns;
	unsigned site_logged;
	unsigned long forgotten;     /* suppressed lines of forgotten keys, not yet reported */
	int level;                   /* the site's level, for the flush's report */
	char example[PDI_RATELIMIT_EXAMPLE]; /* the site's last line logged (cut), which the
					      * flush's report quotes */
	struct pdi_ratelimit_key keys[PDI_RATELIMIT_KEYS];
};

#define PDI_RATELIMIT_INIT(interval, n) {.file = __FILE__, .line = __LINE__, .interval_ms = (interval), .burst = (n)}

/* Log FMT at LEVEL through limiter RL for KEY (see the contract above), with errno set to
 * -R for %m when R < 0 (errno untouched otherwise). Returns R. */
int pdi_log_ratelimited(struct pdi_ratelimit *rl, int level, uint64_t key, int r, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Report, one line per site, the lines counted and not yet reported whose interval is
 * over. Cheap when nothing is pending: call it periodically. */
void pdi_log_ratelimit_flush(void);

/* The clock the limiters read (CLOCK_MONOTONIC, ns); tests may replace it. */
extern uint64_t (*pdi_log_clock)(void);

/* A limiter with its own INTERVAL_MS and BURST at this call site. */
#define pdi_log_limited(level, key, r, interval_ms, burst, ...)                                   \
	({                                                                                       \
		static struct pdi_ratelimit pdi_rl_ = PDI_RATELIMIT_INIT(interval_ms, burst);     \
		pdi_log_ratelimited(&pdi_rl_, level, key, r, __VA_ARGS__);                        \
	})
#define log_error_limited(key, ...)                                                               \
	pdi_log_limited(PDI_LOG_ERR, key, 0, PDI_RATELIMIT_INTERVAL_MS, PDI_RATELIMIT_BURST, __VA_ARGS__)
#define log_warning_limited(key, ...)                                                             \
	pdi_log_limited(PDI_LOG_WARNING, key, 0, PDI_RATELIMIT_INTERVAL_MS, PDI_RATELIMIT_BURST, __VA_ARGS__)
#define log_info_limited(key, ...)                                                                \
	pdi_log_limited(PDI_LOG_INFO, key, 0, PDI_RATELIMIT_INTERVAL_MS, PDI_RATELIMIT_BURST, __VA_ARGS__)
#define log_warning_errno_limited(key, r, ...)                                                    \
	pdi_log_limited(PDI_LOG_WARNING, key, r, PDI_RATELIMIT_INTERVAL_MS, PDI_RATELIMIT_BURST, __VA_ARGS__)

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

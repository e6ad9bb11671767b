/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_local.c -- srun: when the step is over, print pdimon's verdict to the user's
 * terminal and write the full JSON report next to them (an HTML page where the report's name
 * ends in .html: spank_html.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "spank_ctx.h"
#include "spank_local.h"

/* Write TEXT to PATH whole or not at all: a full disk leaves any earlier report intact.
 * The temporary file beside PATH gets an unpredictable name and is created, never opened:
 * O_EXCL (mkostemps), so that nobody who may write to that directory can plant a symlink
 * or a file of theirs under the name and have srun write through it as the user. */
static int write_report(const char *path, const char *text, char *why, size_t whylen)
{
	char tmp[PATH_MAX + 16];
	size_t len = strlen(text);
	mode_t mask;
	int fd, r = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX.tmp", path) >= (int)sizeof(tmp)) {
		snprintf(why, whylen, "path too long");
		return -ENAMETOOLONG;
	}
	fd = mkostemps(tmp, 4, O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -errno;
	}
	/* mkostemps makes it 0600: the report is 0644 less the umask, as documented */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0644 & ~mask) < 0)
		r = -errno;
	for (size_t done = 0; done < len && r == 0;) {
		ssize_t n = write(fd, text + done, len - done);
		if (n < 0)
			r = -errno;
		else
			done += (size_t)n;
	}
	if (r == 0 && (write(fd, "\n", 1) != 1 || fsync(fd) < 0))
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		snprintf(why, whylen, "%s", strerror(-r));
		(void)unlink(tmp);
	}
	return r;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The report once pdimond has seen the step end (slurmstepd tells it, maybe after srun
 * got here), or the latest one when that takes longer than wait_ms: real time, calls
 * included. srun's waits between calls count against the plugin's budget as its calls
 * do: a call that finds the budget spent, or pdimond silent, ends the wait with the latest
 * report, if any. */
static int fetch_report(const char *step, void **ret_reply, char *why, size_t whylen)
{
	uint64_t until = pdimon_now_ms() + pdimon_ctx.wait_ms;
	void *last = NULL;
	int r;

	for (;;) {
		const char *json, *summary;
		void *reply = NULL;
		uint64_t now;
		unsigned nap;

		r = pdimon_bus_call("GetReport", why, whylen, &reply, "s", step);
		if (r < 0)
			break;
		r = pdimon_bus_reply_report(reply, &json, &summary);
		if (r < 0) {
			snprintf(why, whylen, "pdimond's report is unreadable: %s", strerror(-r));
			pdimon_bus_reply_free(reply);
			break;
		}
		pdimon_bus_reply_free(last);
		last = reply;
		now = pdimon_now_ms();
		if (now >= until || strstr(json, "\"state\":\"ended\""))
			break;
		nap = until - now < 100 ? (unsigned)(until - now) : 100;
		if (nap > pdimon_budget_left_ms())
			nap = pdimon_budget_left_ms();
		sleep_ms(nap);
		pdimon_budget_spend(nap);
	}
	if (!last)
		return r;
	*ret_reply = last;
	return 0;
}

/* srun knows its step once it has an allocation; at exit Slurm 22.05 no longer answers
 * spank_get_item for it, so the ids are taken now (or from srun's own environment). */
int pdimon_local_user_init(spank_t sp)
{
	const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");

	if (spank_get_item(sp, S_JOB_ID, &pdimon_ctx.job_id) == ESPANK_SUCCESS &&
	    spank_get_item(sp, S_JOB_STEPID, &pdimon_ctx.step_id) == ESPANK_SUCCESS)
		pdimon_ctx.have_step = true;
	else if (job && step) {
		pdimon_ctx.job_id = (uint32_t)strtoul(job, NULL, 10);
		pdimon_ctx.step_id = (uint32_t)strtoul(step, NULL, 10);
		pdimon_ctx.have_step = true;
	}
	return 0;
}

int pdimon_local_exit(spank_t sp)
{
	uint32_t job, stepid;
	char step[32], path[PATH_MAX], why[512];
	const char *json, *summary;
	void *reply = NULL;

	(void)sp;
	if (!pdimon_ctx.have_step || pdimon_skip_step(pdimon_ctx.step_id))
		return 0;
	job = pdimon_ctx.job_id;
	stepid = pdimon_ctx.step_id;
	snprintf(step, sizeof(step), "%u.%u", job, stepid);
	if (fetch_report(step, &reply, why, sizeof(why)) < 0) {
		fprintf(stderr, PDI_PREFIX "step %s was not monitored: %s\n", step, why);
		return 0;
	}
	(void)pdimon_bus_reply_report(reply, &json, &summary);
	fputs(summary, stderr);
	if (pdimon_ctx.report[0])
		snprintf(path, sizeof(path), "%s", pdimon_ctx.report);
	else
		snprintf(path, sizeof(path), "pdimon-%s.json", step);
	if (pdimon_html_wanted(path)) {
		if (pdimon_write_html(path, json, why, sizeof(why)) == 0) {
			fprintf(stderr, PDI_PREFIX "full report in %s\n", path);
			pdimon_bus_reply_free(reply);
			return 0;
		}
		fprintf(stderr, PDI_PREFIX "cannot write the HTML report %s: %s; writing the JSON report instead\n",
			path, why);
		snprintf(strrchr(path, '.'), sizeof(path) - (size_t)(strrchr(path, '.') - path), ".json");
	}
	if (write_report(path, json, why, sizeof(why)) == 0)
		fprintf(stderr, PDI_PREFIX "full report in %s\n", path);
	else
		fprintf(stderr, PDI_PREFIX "cannot write the report to %s: %s\n", path, why);
	pdimon_bus_reply_free(reply);
	return 0;
}

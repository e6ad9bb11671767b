/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_pdimon.c -- the SPANK plugin's entry points: options, then a dispatch on the
 * context (srun: print the verdict; slurmstepd: register tasks with pdimond).
 *
 * The plugin never fails a job and slows it by at most its budget: every call to pdimond
 * takes at most what is left of the step's budget_ms, a pdimond that does not answer is
 * not called again for the step (spank_budget.c), every hook returns success, and what
 * went wrong is said in one line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spank_ctx.h"
#include "spank_local.h"
#include "spank_remote.h"

SPANK_PLUGIN(pdimon, 1);

static const char valid_options[] = "off, on, report=PATH, phases=pcontrol, phases=auto, size=N, "
				    "on-hang=report|command|cancel, notify=on|off";

/* on-hang=ACTION and notify=on|off: what pdimond does when the step hangs, and whether it says
 * so on the step's output (pdimond checks them again). */
static bool health_option(struct pdimon_ctx *c, const char *o)
{
	if (!strcmp(o, "on-hang=report") || !strcmp(o, "on-hang=command") || !strcmp(o, "on-hang=cancel"))
		snprintf(c->on_hang, sizeof(c->on_hang), "%s", o + 8);
	else if (!strcmp(o, "notify=on") || !strcmp(o, "notify=off"))
		c->notify_off = !strcmp(o, "notify=off");
	else
		return false;
	return true;
}

/* size=N: a whole number 1..2^62 (pdimond checks it again) */
static bool valid_size(const char *v)
{
	unsigned long long x;
	char *end;

	if (*v < '0' || *v > '9' || strlen(v) >= sizeof(pdimon_ctx.input_size))
		return false;
	errno = 0;
	x = strtoull(v, &end, 10);
	return !errno && !*end && x > 0 && x <= 1ull << 62;
}

/* --pdi-monitor[=OPTS]: OPTS a comma list. Called in srun and again in slurmstepd. */
static int option_cb(int val, const char *optarg, int remote)
{
	char buf[PATH_MAX + 64], *save = NULL;
	struct pdimon_ctx c = pdimon_ctx;

	(void)val;
	(void)remote;
	c.enabled = true;
	if (!optarg || !*optarg)
		goto done;
	if (strlen(optarg) >= sizeof(buf)) {
		slurm_error(PDI_PREFIX "--pdi-monitor options are too long");
		return -1;
	}
	strcpy(buf, optarg);
	for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		if (!strcmp(o, "off"))
			c.enabled = false;
		else if (!strcmp(o, "on"))
			c.enabled = true;
		else if (!strncmp(o, "report=", 7) && o[7])
			snprintf(c.report, sizeof(c.report), "%s", o + 7);
		else if (!strcmp(o, "phases=pcontrol") || !strcmp(o, "phases=auto"))
			snprintf(c.options, sizeof(c.options), "%s", o);
		else if (!strncmp(o, "size=", 5) && valid_size(o + 5))
			snprintf(c.input_size, sizeof(c.input_size), "%s", o + 5);
		else if (health_option(&c, o))
			;
		else {
			slurm_error(PDI_PREFIX "invalid --pdi-monitor option '%s'; valid: %s", o, valid_options);
			return -1;
		}
	}
done:
	pdimon_ctx = c;
	return 0;
}

static struct spank_option monitor_option = {
	"pdi-monitor", "[off|report=PATH|phases=pcontrol|auto|size=N|on-hang=report|command|cancel|notify=off]",
	"Monitor this step's MPI tasks with pdimon and print where it went wrong when it ends "
	"(comma-separated options: off, report=PATH, phases=pcontrol|auto, size=N: the input size, for pdimon trends, "
	"on-hang=report|command|cancel: what pdimond does when the step hangs, notify=off: no line on the step's "
	"output while it runs)",
	2, 0, option_cb};

/* KEY=N with N milliseconds in 1..600000 */
static bool parse_ms(const char *arg, const char *key, unsigned *ret)
{
	size_t n = strlen(key);
	unsigned long v;
	char *end;

	if (strncmp(arg, key, n))
		return false;
	v = strtoul(arg + n, &end, 10);
	if (end == arg + n || *end || v == 0 || v > 600000)
		return false;
	*ret = (unsigned)v;
	return true;
}

/* plugstack.conf arguments: default=on|off bus=ADDRESS cli=PATH timeout_ms=N wait_ms=N budget_ms=N */
static void parse_plugstack(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		if (!strcmp(av[i], "default=on"))
			pdimon_ctx.enabled = true;
		else if (!strcmp(av[i], "default=off"))
			pdimon_ctx.enabled = false;
		else if (!strncmp(av[i], "bus=", 4))
			snprintf(pdimon_ctx.bus, sizeof(pdimon_ctx.bus), "%s", av[i] + 4);
		else if (!strncmp(av[i], "cli=", 4))
			snprintf(pdimon_ctx.cli, sizeof(pdimon_ctx.cli), "%s", av[i] + 4);
		else if (!parse_ms(av[i], "timeout_ms=", &pdimon_ctx.timeout_ms) &&
			 !parse_ms(av[i], "wait_ms=", &pdimon_ctx.wait_ms) &&
			 !parse_ms(av[i], "budget_ms=", &pdimon_ctx.budget_ms))
			slurm_error(PDI_PREFIX "unknown plugstack argument '%s' (default=on|off, bus=ADDRESS, "
				    "cli=PATH, timeout_ms=N, wait_ms=N, budget_ms=N), ignoring", av[i]);
	}
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
		return 0;
	parse_plugstack(ac, av);
	if (spank_option_register(sp, &monitor_option) != ESPANK_SUCCESS)
		slurm_error(PDI_PREFIX "cannot register --pdi-monitor");
	return 0;
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!pdimon_ctx.enabled || spank_context() != S_CTX_LOCAL)
		return 0;
	return pdimon_local_user_init(sp);
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!pdimon_ctx.enabled || spank_context() != S_CTX_REMOTE)
		return 0;
	return pdimon_remote_task_post_fork(sp);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!pdimon_ctx.enabled)
		return 0;
	switch (spank_context()) {
	case S_CTX_REMOTE: return pdimon_remote_exit(sp);
	case S_CTX_LOCAL: return pdimon_local_exit(sp);
	default: return 0;
	}
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* test-slurm-nodes.c -- a step's nodes from scontrol (daemon/cluster/slurm_nodes.c), with a
 * stand-in scontrol first in PATH: the node list parsed, a failing scontrol, and one that
 * never answers (a stopped slurmctld) given up at the deadline, not waited for. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "slurm_nodes.h"

static char dir[64];

static void fake_scontrol(const char *script)
{
	char path[128], newpath[4096];
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/pdimon-scontrol-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/scontrol", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", script);
	fclose(f);
	chmod(path, 0755);
	snprintf(newpath, sizeof(newpath), "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	setenv("PATH", newpath, 1);
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

Test(slurm_nodes, the_step_nodes_in_slurm_order, .fini = cleanup)
{
	char **nodes = NULL;
	unsigned n = 0;

	fake_scontrol("case \"$*\" in\n"
		      "'-o show step 7.1') echo 'StepId=7.1 UserId=0 NodeList=b[2-3],a1 Partition=debug' ;;\n"
		      "'show hostnames b[2-3],a1') printf 'b2\\nb3\\na1\\n' ;;\n"
		      "*) exit 1 ;;\nesac");
	cr_assert_eq(pdi_slurm_step_nodes(7, 1, 5000, &nodes, &n), 0);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(nodes[0], "b2");
	cr_expect_str_eq(nodes[1], "b3");
	cr_expect_str_eq(nodes[2], "a1");
	for (unsigned i = 0; i < n; i++)
		free(nodes[i]);
	free(nodes);
}

Test(slurm_nodes, a_step_slurm_does_not_know, .fini = cleanup)
{
	char **nodes = (char **)0x1;
	unsigned n = 42;

	fake_scontrol("echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1");
	cr_expect_eq(pdi_slurm_step_nodes(9, 0, 5000, &nodes, &n), -ENOENT);
	cr_expect_eq(nodes, (char **)0x1, "output touched on failure");
	cr_expect_eq(n, 42);
}

/* A scontrol that runs SCRIPT is given up at a deadline of 300 ms, not when it ends. */
static void expect_given_up(const char *script)
{
	struct timespec t0;
	char **nodes = NULL;
	unsigned n = 0;
	double ms;

	fake_scontrol(script);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(pdi_slurm_step_nodes(9, 0, 300, &nodes, &n), -ETIMEDOUT);
	ms = ms_since(&t0);
	cr_expect_lt(ms, 5000, "gave up after %.0f ms, with a deadline of 300 ms", ms);
}

Test(slurm_nodes, a_silent_scontrol_is_given_up_at_the_deadline, .fini = cleanup)
{
	/* slurmctld stopped: scontrol waits for it far longer than our deadline, and says nothing */
	expect_given_up("exec sleep 30");
}

Test(slurm_nodes, a_scontrol_that_stops_halfway_is_given_up_too, .fini = cleanup)
{
	expect_given_up("printf 'StepId=9.0 NodeList='; exec sleep 30");
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* spank_remote.c -- slurmstepd: register each task with the node's pdimond right after
 * the fork (before it executes the program, so none of its MPI calls is missed), and end
 * the step when slurmstepd exits.
 *
 * With the tasks goes what the daemons need to gather the step across nodes: this node's
 * name and, until one registration of this slurmstepd succeeded, the step's node list. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <slurm/slurm.h>

#include "spank_ctx.h"
#include "spank_remote.h"

/* The step's nodes, Slurm's compressed SLURM_STEP_NODELIST ("n[1-4]") as the task sees it. */
static char *step_nodelist(spank_t sp)
{
	size_t len = 1024;

	for (;;) {
		char *buf = malloc(len);
		spank_err_t e;

		if (!buf)
			return NULL;
		e = spank_getenv(sp, "SLURM_STEP_NODELIST", buf, (int)len);
		if (e == ESPANK_SUCCESS)
			return buf;
		free(buf);
		if (e != ESPANK_NOSPACE || len >= (64u << 20))
			return NULL;
		len *= 4;
	}
}

/* Append S to the malloc'd string *BUF of length *LEN; -ENOMEM. */
static int append(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 1 > *cap) {
		size_t c = (*cap ? *cap : 256);
		char *p;

		while (*len + n + 1 > c)
			c *= 2;
		p = realloc(*buf, c);
		if (!p)
			return -ENOMEM;
		*buf = p;
		*cap = c;
	}
	memcpy(*buf + *len, s, n + 1);
	*len += n;
	return 0;
}

/* The RegisterTask options: the user's ("phases=..."), then node=THIS and, with WITH_NODES,
 * ntasks=N and nodes=A+B+... expanded with Slurm's own hostlist code (slurmstepd exports it) so that
 * pdimond need not link libslurm; '+' is in no host name. A million nodes are a few MB,
 * sent once per node and step. Without a node list (not in the task's environment) only
 * the user's options; malloc'd, NULL when out of memory. */
static char *register_options(spank_t sp, bool with_nodes)
{
	char *out = NULL, *list, *host;
	size_t len = 0, cap = 0;
	uint32_t nodeid, ntasks, i = 0;
	hostlist_t hl;
	int r;

	r = append(&out, &len, &cap, pdimon_ctx.options);
	if (r >= 0 && pdimon_ctx.input_size[0])
		r = append(&out, &len, &cap, len ? ",size=" : "size=");
	if (r >= 0 && pdimon_ctx.input_size[0])
		r = append(&out, &len, &cap, pdimon_ctx.input_size);
	/* what the user chose about hangs */
	if (r >= 0 && pdimon_ctx.on_hang[0])
		r = append(&out, &len, &cap, len ? ",on-hang=" : "on-hang=");
	if (r >= 0 && pdimon_ctx.on_hang[0])
		r = append(&out, &len, &cap, pdimon_ctx.on_hang);
	if (r >= 0 && pdimon_ctx.notify_off)
		r = append(&out, &len, &cap, len ? ",notify=off" : "notify=off");
	list = step_nodelist(sp);
	if (r < 0 || !list || spank_get_item(sp, S_JOB_NODEID, &nodeid) != ESPANK_SUCCESS)
		goto done;
	hl = slurm_hostlist_create(list);
	if (!hl)
		goto done;
	/* THIS: the NODEID-th of the list, as Slurm names it (NodeName, maybe not the host name) */
	while (r >= 0 && (host = slurm_hostlist_shift(hl))) {
		if (i == nodeid)
			r = append(&out, &len, &cap, len ? ",node=" : "node=");
		if (r >= 0 && i == nodeid)
			r = append(&out, &len, &cap, host);
		free(host);
		i++;
	}
	slurm_hostlist_destroy(hl);
	if (r >= 0 && with_nodes) {
		hl = slurm_hostlist_create(list);
		r = hl ? append(&out, &len, &cap, len ? ",nodes=" : "nodes=") : -ENOMEM;
		for (bool first = true; r >= 0 && (host = slurm_hostlist_shift(hl)); first = false) {
			r = append(&out, &len, &cap, first ? "" : "+");
			if (r >= 0)
				r = append(&out, &len, &cap, host);
			free(host);
		}
		if (hl)
			slurm_hostlist_destroy(hl);
	}
	/* the step's task count: a gather that misses a node can then say which ranks it lacks */
	if (r >= 0 && with_nodes && spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) == ESPANK_SUCCESS) {
		char num[32];

		snprintf(num, sizeof(num), ",ntasks=%u", ntasks);
		r = append(&out, &len, &cap, num);
	}
done:
	free(list);
	if (r < 0) {
		free(out);
		return NULL;
	}
	return out;
}

int pdimon_remote_task_post_fork(spank_t sp)
{
	uint32_t job, step, rank;
	pid_t pid;
	uid_t uid;
	char why[256], *options;
	int r;

	if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS || pdimon_skip_step(step))
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
		slurm_info(PDI_PREFIX "cannot read the task's ids from Slurm; step %u.%u not monitored", job, step);
		return 0;
	}
	/* the node list once per slurmstepd: pdimond keeps the first it is given */
	options = register_options(sp, !pdimon_ctx.registered);
	if (!options) {
		slurm_info(PDI_PREFIX "task %u of step %u.%u not monitored: out of memory", rank, job, step);
		return 0;
	}
	r = pdimon_bus_call("RegisterTask", why, sizeof(why), NULL, "uuuuus", job, step, rank, (uint32_t)pid,
			    (uint32_t)uid, options);
	free(options);
	/* once pdimond gave no answer the other tasks are skipped at once, and said at the end */
	if (r < 0 && r != -ETIME)
		slurm_info(PDI_PREFIX "task %u of step %u.%u not monitored: %s%s", rank, job, step, why,
			   pdimon_ctx.budget.gave_up ? "; pdimond is not asked again for this step" : "");
	if (r < 0)
		return 0;
	pdimon_ctx.registered = true;
	return 0;
}

int pdimon_remote_exit(spank_t sp)
{
	uint32_t job, step;
	char why[256];

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return 0;
	if (pdimon_ctx.budget.skipped)
		slurm_info(PDI_PREFIX "%u more tasks of step %u.%u not monitored: %s", pdimon_ctx.budget.skipped, job,
			   step, pdimon_ctx.budget.why[0] ? pdimon_ctx.budget.why : "the plugin's time budget is spent");
	if (pdimon_ctx.registered && pdimon_bus_call("EndStep", why, sizeof(why), NULL, "uu", job, step) < 0)
		slurm_info(PDI_PREFIX "cannot end step %u.%u: %s", job, step, why);
	return 0;
}

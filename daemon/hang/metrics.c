/* SPDX-License-Identifier: GPL-2.0-only */
/* metrics.c -- pdimond's numbers for the site's monitoring (hang.h): `pdimon status --json`
 * and a Prometheus text-format file in node-exporter's textfile-collector directory, written
 * every metrics_interval_s off the loop, atomically (a temporary file renamed over the last
 * one, as the collector's documentation asks), so that a scrape never reads half a file.
 * A file rather than an HTTP endpoint: no port to open, secure or bound on every node, and
 * the site's node exporter already serves the node's other numbers with its own TLS and
 * access rules (doc/design/hang-detection.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "budget.h"
#include "daemon.h"
#include "file_replace.h"
#include "health_state.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "mpi_funcs.h"
#include "tracer.h"
#include "worker.h"

#define NS 1000000000ull

void pdi_hang_metrics_alarm(struct pdi_daemon *d, enum pdi_health health, double latency_s)
{
	struct pdi_hang *h = &d->hang;

	h->alarms[health]++;
	if (health == PDI_HEALTH_OK)
		return;
	h->latency_count++;
	h->latency_sum_s += latency_s;
	if (latency_s > h->latency_max_s)
		h->latency_max_s = latency_s;
}

void pdi_hang_numbers(struct pdi_daemon *d, struct pdi_hang_numbers *ret)
{
	struct pdi_hang_numbers n = {.events = d->events, .events_per_s = d->events_per_s,
				     .latency_count = d->hang.latency_count, .latency_sum_s = d->hang.latency_sum_s,
				     .latency_max_s = d->hang.latency_max_s};

	memcpy(n.alarms, d->hang.alarms, sizeof(n.alarms));
	for (unsigned i = 0; i < d->reg.ntasks; i++) {
		const struct pdi_task *t = d->reg.tasks[i];
		bool running = t->state == PDI_TASK_RUNNING;

		n.events_lost += running ? pdi_tracer_lost(d->tracer, t->pid) : t->lost;
		if (!running)
			continue;
		n.tasks++;
		for (unsigned fn = 0; t->budget && fn < pdi_mpi_nfuncs; fn++)
			n.probes_degraded += t->budget->fn[fn].level != 0;
	}
	for (unsigned i = 0; i < d->reg.nsteps; i++)
		n.steps += pdi_step_running(d->reg.steps[i]);
	pdi_hang_counts(d, n.by_health);
	*ret = n;
}

void pdi_hang_status_json(struct pdi_daemon *d, struct pdi_json *j)
{
	struct pdi_hang_numbers n;

	pdi_hang_numbers(d, &n);
	pdi_json_kv_uint(j, "probes_degraded", n.probes_degraded);
	pdi_json_key(j, "steps_by_health");
	pdi_json_obj_begin(j);
	for (unsigned k = 0; k < 3; k++)
		pdi_json_kv_uint(j, pdi_health_names[k], n.by_health[k]);
	pdi_json_obj_end(j);
	pdi_json_key(j, "health_alarms");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "hung", n.alarms[PDI_HEALTH_HUNG]);
	pdi_json_kv_uint(j, "slow", n.alarms[PDI_HEALTH_SLOW]);
	pdi_json_kv_uint(j, "resumed", n.alarms[PDI_HEALTH_OK]);
	pdi_json_obj_end(j);
	pdi_json_key(j, "detection_latency_s");
	pdi_json_obj_begin(j);
	pdi_json_kv_uint(j, "count", n.latency_count);
	pdi_json_kv_double(j, "mean", n.latency_count ? n.latency_sum_s / (double)n.latency_count : 0);
	pdi_json_kv_double(j, "max", n.latency_max_s);
	pdi_json_obj_end(j);
}

char *pdi_hang_metrics_text(const struct pdi_hang_numbers *n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
#define METRIC(name, type, help) fprintf(f, "# HELP pdimon_" name " " help "\n# TYPE pdimon_" name " " type "\n")
	METRIC("steps_monitored", "gauge", "Steps with a task running on this node.");
	fprintf(f, "pdimon_steps_monitored %u\n", n->steps);
	METRIC("tasks_monitored", "gauge", "MPI tasks monitored on this node.");
	fprintf(f, "pdimon_tasks_monitored %u\n", n->tasks);
	METRIC("events_total", "counter", "MPI calls ingested since pdimond started.");
	fprintf(f, "pdimon_events_total %" PRIu64 "\n", n->events);
	METRIC("events_per_second", "gauge", "MPI calls ingested per second, over the last second.");
	fprintf(f, "pdimon_events_per_second %.3f\n", n->events_per_s);
	METRIC("events_lost_total", "counter", "MPI calls the BPF side could not queue (the ring buffer was full).");
	fprintf(f, "pdimon_events_lost_total %" PRIu64 "\n", n->events_lost);
	METRIC("probes_degraded", "gauge", "Probed functions of running tasks degraded by the overhead budget.");
	fprintf(f, "pdimon_probes_degraded %u\n", n->probes_degraded);
	METRIC("steps", "gauge", "Running steps judged on this node, by health.");
	for (unsigned k = 0; k < 3; k++)
		fprintf(f, "pdimon_steps{health=\"%s\"} %u\n", pdi_health_names[k], n->by_health[k]);
	METRIC("health_alarms_total", "counter", "Episodes announced: a step judged hung or slow, or moving again.");
	fprintf(f, "pdimon_health_alarms_total{health=\"hung\"} %" PRIu64 "\n", n->alarms[PDI_HEALTH_HUNG]);
	fprintf(f, "pdimon_health_alarms_total{health=\"slow\"} %" PRIu64 "\n", n->alarms[PDI_HEALTH_SLOW]);
	fprintf(f, "pdimon_health_alarms_total{health=\"ok\"} %" PRIu64 "\n", n->alarms[PDI_HEALTH_OK]);
	METRIC("detection_latency_seconds", "summary", "From the start of a hang or slowdown to its announcement.");
	fprintf(f, "pdimon_detection_latency_seconds_sum %.3f\n", n->latency_sum_s);
	fprintf(f, "pdimon_detection_latency_seconds_count %" PRIu64 "\n", n->latency_count);
	METRIC("detection_latency_seconds_max", "gauge", "The longest detection latency since pdimond started.");
	fprintf(f, "pdimon_detection_latency_seconds_max %.3f\n", n->latency_max_s);
#undef METRIC
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

struct metrics_job {
	struct pdi_job job;
	struct pdi_daemon *d;
	char *path, *text;
	int err;
};

static void metrics_run(struct pdi_job *pj)
{
	struct metrics_job *j = pdi_job_of(pj, struct metrics_job, job);

	j->err = pdi_file_replace(j->path, j->text, strlen(j->text), false);
}

static void metrics_done(struct pdi_job *pj, bool cancelled)
{
	struct metrics_job *j = pdi_job_of(pj, struct metrics_job, job);
	struct pdi_hang *h = &j->d->hang;

	h->metrics_busy = false;
	if (!cancelled && j->err < 0 && !h->metrics_failed)
		log_warning_errno(j->err, "Cannot write the metrics file %s, ignoring until it works again: %m", j->path);
	else if (!cancelled && j->err == 0 && h->metrics_failed)
		log_info("Metrics file %s written again", j->path);
	if (!cancelled)
		h->metrics_failed = j->err < 0;
	free(j->path);
	free(j->text);
	free(j);
}

void pdi_hang_metrics_tick(struct pdi_daemon *d, uint64_t now_ns)
{
	struct pdi_hang *h = &d->hang;
	struct pdi_hang_numbers n;
	struct metrics_job *j;

	if (!d->cfg.metrics_path || h->metrics_busy || now_ns < h->metrics_due_ns || !d->workers)
		return;
	h->metrics_due_ns = now_ns + (uint64_t)d->cfg.metrics_interval_s * NS;
	pdi_hang_numbers(d, &n);
	j = calloc(1, sizeof(*j));
	if (j) {
		j->job = (struct pdi_job){.run = metrics_run, .done = metrics_done};
		j->d = d;
		j->path = strdup(d->cfg.metrics_path);
		j->text = pdi_hang_metrics_text(&n);
	}
	if (!j || !j->path || !j->text || pdi_workers_submit(d->workers, &j->job) < 0) {
		if (j) {
			free(j->path);
			free(j->text);
			free(j);
		}
		return; /* again at the next interval */
	}
	h->metrics_busy = true;
}

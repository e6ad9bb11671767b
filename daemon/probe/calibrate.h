/* SPDX-License-Identifier: GPL-2.0-only */
/* calibrate.h -- what one probe hit costs on this node: measured when pdimond starts, and
 * pdimond's own share measured while tasks run. */
#pragma once

#include <stdint.h>

struct pdi_tracer;

/* Nanoseconds of CPU a probed call costs, pdimond's own BPF programs included. */
struct pdi_probe_costs {
	double full_emulated;       /* entry on an emulated instruction, and the return */
	double full_stepped;        /* entry on a single-stepped instruction, and the return */
	double entry_only_emulated; /* entry only (the budget dropped the return probe) */
	double entry_only_stepped;
	double per_other_task;      /* added to every hit by each other process probed on the same
	                             * instruction: the kernel visits every link on a probe, whatever
	                             * its pid filter (measured with entry and return links) */
	double ingest_per_event;    /* pdimond's own CPU per call it takes in (drain and model), which
	                             * a job that fills its node's cores pays too: measured while tasks
	                             * run (pdi_probe_costs_sample_ingest), 0 until then */
	double switch_cost;         /* pdimond's CPU off its loop per switch of a function's probes on
	                             * or off (the budget's attaches and closes on workers, the
	                             * kernel's register walks in them), which such a job pays too:
	                             * measured with ingest_per_event, 0 until then */
	uint64_t switches;          /* switches the budget made so far (budget.c counts them) */
	unsigned others;            /* other processes' links on a task's probes (the budget counts
	                             * them, budget.c) */
	uint64_t others_at_ns;      /* when they were counted */
	uint64_t sample_ns, sample_cpu_ns, sample_events; /* the last sample of the loop's work */
	uint64_t sample_off_loop_ns, sample_switches;     /* and of the workers' */
};

/* Time ROUNDS x N calls of two functions of pdimond's own (one starting with an emulated push,
 * one with a single-stepped RIP-relative load) without probes and with pdimond's probes, then
 * with the links of other processes (an idle child of ours) added, and keep the medians of the
 * differences. Timed in CPU time: on a loaded node wall time counts whatever else runs. Takes
 * a few tens of ms. 0 or negative errno (RET then holds conservative defaults: the figures
 * measured on a PVM guest). */
int pdi_probe_calibrate(struct pdi_tracer *t, struct pdi_probe_costs *ret);

/* On the loop's thread (which drains calls into the models), at NOW (CLOCK_MONOTONIC), EVENTS
 * calls taken in since start: once a second, C's ingest_per_event becomes the loop's CPU per call
 * over the last second (averaged with the previous figure), when enough calls came for that to
 * mean something; and C's switch_cost the CPU of pdimond's other threads over the switches the
 * budget made in that second (C->switches), when it made a few. After a pause (no task ran, or
 * the loop stalled) the count starts again. */
void pdi_probe_costs_sample_ingest(struct pdi_probe_costs *c, uint64_t events, uint64_t now);

/* SPDX-License-Identifier: GPL-2.0-only */
/* usage_timer.h -- the kernel's counts of every running task's MPI thread, read on a timer of
 * their own (usage_timer.c).
 *
 * A phase's share of the CPU is measured over its own time, from its first call to the next
 * phase's (lib/model/model.h, pdi_model_usage_add()): the counts at a first call are interpolated
 * between the readings either side of it, so the readings must come evenly, tens of ms apart,
 * whatever the task's calls do. Read on the ingestion path instead (when pdimond took a phase's
 * first call in), they came a batch of the ring buffer late, and a process that began to share a
 * rank's CPU in the last 20-150 ms of a phase showed first in the next (issue 9).
 *
 * Bounded in cost: each tick reads each running task once (a pread() of its schedstat, held
 * open), and the period stretches so that the loop spends at most PDI_USAGE_LOOP_SHARE of one CPU
 * on it, by the cost it measured on its own clock (usage13: 7 us a task at a load of 19, so 4
 * ranks every 50 ms take 0.06% of a CPU and 128 ranks are read every 90 ms). The timer runs only
 * while some task is read. Its CPU is the loop's, which the overhead budget charges to the calls
 * it takes in (calibrate.h: ingest_per_event). */
#pragma once

#include <stdint.h>

struct pdi_daemon;

/* The loop's CPU the readings may take at most: a share of one CPU (a node of 64-128 ranks has
 * as many cores: 0.01-0.02% of the node). */
#define PDI_USAGE_LOOP_SHARE 0.01

/* The timer (a timerfd the loop polls): 0, or -errno. */
int pdi_usage_timer_open(struct pdi_daemon *d);
void pdi_usage_timer_close(struct pdi_daemon *d);
/* A task's MPI thread became known (its first call was taken in): the timer runs. */
void pdi_usage_timer_start(struct pdi_daemon *d);
/* usage_interval_ms changed (a reload): a running timer takes the new period. */
void pdi_usage_timer_reconfigure(struct pdi_daemon *d);
/* The timer fired: every running task with an MPI thread known is read; the period is set again
 * from what the readings cost; with none left to read, the timer stops. */
void pdi_usage_timer_on_tick(struct pdi_daemon *d);

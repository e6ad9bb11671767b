/* SPDX-License-Identifier: GPL-2.0-only */
/* step_detach.h -- the probe links of a step's exited tasks, closed together once the step's
 * processes are gone (why: step_detach.c). */
#pragma once

struct pdi_daemon;
struct pdi_step;
struct pdi_task;

/* A bound on how long an exited task's links wait for the rest of its step: a rank that runs on
 * after the others pays, at each of its probe hits, one call for every link left on the probe. */
#define PDI_STEP_DETACH_WAIT_NS (1000ull * 1000000ull)

/* T ends: its links join its step's batch when its process has exited, else (a task given up
 * while it runs) they are closed on a worker now, as pdi_detach_later() does. */
void pdi_step_detach_task(struct pdi_daemon *d, struct pdi_task *t);
/* After a task of S ended: S's batch is closed together on a worker once S has no running task. */
void pdi_step_detach_settle(struct pdi_daemon *d, struct pdi_step *s);
/* On the loop's timer: batches that waited PDI_STEP_DETACH_WAIT_NS are closed. */
void pdi_step_detach_tick(struct pdi_daemon *d);

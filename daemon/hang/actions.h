/* SPDX-License-Identifier: GPL-2.0-only */
/* actions.h -- what a site has pdimond do about a hung step (the io-watchdog precedent):
 * run its command, or cancel the step. Both off the loop, bounded in time, logged, and kept
 * in the step's report. */
#pragma once

struct pdi_daemon;
struct pdi_step;

/* Run on_hang_command for step S, whose hang LINE describes: argv [command, step, "hung"],
 * with PDIMON_STEP, PDIMON_JOB_ID, PDIMON_STEP_ID, PDIMON_HEALTH, PDIMON_SINCE (seconds since
 * the epoch), PDIMON_VERDICT (LINE) and PDIMON_NODE in its environment; killed after
 * on_hang_command_timeout_s. */
void pdi_hang_run_command(struct pdi_daemon *d, struct pdi_step *s, const char *line);

/* Cancel step S: a Slurm step with `scancel JOB.STEP` (all of its nodes), any other with
 * SIGTERM to its tasks here. */
void pdi_hang_cancel(struct pdi_daemon *d, struct pdi_step *s, const char *line);

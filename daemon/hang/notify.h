/* SPDX-License-Identifier: GPL-2.0-only */
/* notify.h -- a step's health said on its user's output while the job runs: one line
 * through the standard error of one of its tasks, which Slurm carries to srun's terminal or
 * to the batch job's output file (doc/design/hang-detection.md weighs the alternatives). */
#pragma once

struct pdi_daemon;
struct pdi_step;

/* "pdimon: LINE" on the standard error of S's lowest-ranked task running here, off the loop:
 * written only if it cannot block (a pipe or a terminal opened anew non-blocking, a socket
 * sent to without waiting, a file through the task's own description so that its offset and
 * append mode hold), never touching the task's own descriptors' flags, never more than one
 * atomic write; what happened is logged and kept as the step's action. */
typedef void (*pdi_hang_then_fn)(struct pdi_daemon *d, struct pdi_step *s);
/* THEN (NULL: nothing) runs on the loop once the line is out or given up, while S runs: what
 * must not overtake the line (cancelling the step would end the task it goes through). */
void pdi_hang_notify_user(struct pdi_daemon *d, struct pdi_step *s, const char *line, pdi_hang_then_fn then);

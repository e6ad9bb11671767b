/* SPDX-License-Identifier: GPL-2.0-only */
/* step_health.h -- pdimond's judgement of its live steps, once a second from the drain timer:
 * each step's tasks fed to the hang judge (lib/health/health.h), and when the verdict changes, the
 * step's episode acted on once: a diagnosis, one log line, a D-Bus signal, one line on the
 * user's output while the job runs, and the site's action (a command, or cancelling the step
 * after a grace period). A step of several nodes is judged on its first node, and a hang it
 * suspects is confirmed across all of them by the gather before anything is said.
 * doc/design/hang-detection.md argues all of it. What the judge keeps of a step, and the
 * answers read from it, are health_state.h's. */
#pragma once

#include <stdint.h>

struct pdi_daemon;
struct pdi_step;

/* Once a second, from the drain timer: judge every live step of this node that it roots. */
void pdi_hang_tick(struct pdi_daemon *d);

/* How long a task of S may sit in one MPI call before a view calls it blocked: the site's
 * hang_timeout_ms when it set one, none once S is judged hung, else the quiet S is judged hung
 * after now (what its own history makes plausible). */
uint64_t pdi_hang_blocked_after_ns(const struct pdi_daemon *d, const struct pdi_step *s);

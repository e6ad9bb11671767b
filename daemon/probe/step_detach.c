/* SPDX-License-Identifier: GPL-2.0-only */
/* step_detach.c -- the probe links of a step's exited tasks, closed together once the step's
 * processes are gone.
 *
 * Closing a uprobe link unregisters each of its probes, and each unregistration walks every
 * address space that maps the library, asking every remaining link's filter in each
 * (kernel/events/uprobes.c); every close also waits for an RCU grace period of its own. A step's
 * N tasks closed one by one as each exits, while the others still map the library, cost N^3
 * filter calls per probe and N grace periods in turn. Measured without a daemon at 64 processes
 * (bench/attach_scale.py --order, bench/README.md "Attaching before the library is mapped, and
 * closing after the processes exit"): 128 links closed one after the other took 9.9-21.3 s with
 * the processes alive and 7.4-10.9 s after they exited; closed together after they exited,
 * 0.14-0.46 s. Closes hold the kernel's dup_mmap_sem as attaches do, so they also slowed the
 * start of the next step on the node. An exited task's links are dead weight (the pid filter
 * names a process that is gone), so they wait in the step's batch for its last running task. */
#include "clock.h"
#include "daemon.h"
#include "detach.h"
#include "ident.h"
#include "log.h"
#include "registry.h"
#include "step_detach.h"

void pdi_step_detach_task(struct pdi_daemon *d, struct pdi_task *t)
{
	if (!pdi_pidfd_exited(t->pidfd) || !pdi_detach_batch_add(&t->step->closing, &t->att))
		pdi_detach_later(d->workers, &t->att);
}

static void close_batch(struct pdi_daemon *d, struct pdi_step *s, const char *why)
{
	log_debug("Step %s: closing the probe links of %u exited tasks together (%s)", s->name,
		  pdi_detach_batch_count(s->closing), why);
	pdi_detach_batch_submit(d->workers, &s->closing);
}

void pdi_step_detach_settle(struct pdi_daemon *d, struct pdi_step *s)
{
	if (s->closing && pdi_step_running_tasks(s) == 0)
		close_batch(d, s, "no task left running");
}

void pdi_step_detach_tick(struct pdi_daemon *d)
{
	uint64_t now = pdi_now_ns();

	for (unsigned i = 0; i < d->reg.nsteps; i++) {
		struct pdi_step *s = d->reg.steps[i];

		if (s->closing && now - pdi_detach_batch_since(s->closing) >= PDI_STEP_DETACH_WAIT_NS)
			close_batch(d, s, "waited long enough");
	}
}

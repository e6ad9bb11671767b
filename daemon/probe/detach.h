/* SPDX-License-Identifier: GPL-2.0-only */
/* detach.h -- a task's probes removed off the loop: the kernel unregisters each uprobe as its
 * link closes, which took 0.4 to 0.9 s for a task's 86 probes on a loaded machine. */
#pragma once

struct pdi_attachment;
struct pdi_workers;

/* Take A's links (A keeps its object, datatypes and counts, with no link left) and close
 * them on a worker of W; on the loop's own time only when no worker takes them. */
void pdi_detach_later(struct pdi_workers *w, struct pdi_attachment *a);

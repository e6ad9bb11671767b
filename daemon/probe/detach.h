/* SPDX-License-Identifier: GPL-2.0-only */
/* detach.h -- probes removed off the loop: the kernel unregisters each uprobe as its link
 * closes, and a close waits for an RCU grace period: 0.4 to 0.9 s for a task's 86 probes on a
 * loaded machine, 25 ms to 1 s for one link the overhead budget replaced. Meanwhile the loop
 * would not drain the ring buffer, which overflows under a polling job. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct pdi_attachment;
struct pdi_workers;
struct pdi_detach_batch;

/* Take all of A's links (A keeps its object, datatypes and counts, with no link left) and close
 * them on a worker of W; on the loop's own time only when no worker takes them. */
void pdi_detach_later(struct pdi_workers *w, struct pdi_attachment *a);
/* Close the *N link fds of the malloc'd array *FDS (a list of links the budget replaced, which
 * it takes: NULL and 0 after) on a worker of W, all at once (close_together.h). *IN_FLIGHT
 * counts such jobs not done yet (up while queued, down when closed), for the caller to bound
 * them. Without memory the list stays the caller's. */
void pdi_detach_list_later(struct pdi_workers *w, int **fds, unsigned *n, unsigned *in_flight);
/* Close the N link fds FDS (a malloc'd array, which it takes) on a worker of W; on the caller's
 * time only when no worker takes them. *IN_FLIGHT (NULL: none) counts as above. */
void pdi_detach_fds_later(struct pdi_workers *w, int *fds, unsigned n, unsigned *in_flight);

/* Links kept to be closed together later (probe/step_detach.h: a step's, once its processes are
 * gone). Move all of A's links into the batch *B (made when NULL), as pdi_detach_later() takes
 * them; false without memory, and A keeps them. */
bool pdi_detach_batch_add(struct pdi_detach_batch **b, struct pdi_attachment *a);
/* When the first links came into B (pdi_now_ns()); 0 for NULL. */
uint64_t pdi_detach_batch_since(const struct pdi_detach_batch *b);
/* How many attachments gave B their links; 0 for NULL. */
unsigned pdi_detach_batch_count(const struct pdi_detach_batch *b);
/* Close the links of *B all at once (close_together.h) on a worker of W, or on the caller's time
 * when no worker takes them (W NULL: now); *B is NULL after. NULL *B ok. */
void pdi_detach_batch_submit(struct pdi_workers *w, struct pdi_detach_batch **b);

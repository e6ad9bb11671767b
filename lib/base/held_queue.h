/* SPDX-License-Identifier: GPL-2.0-only */
/* held_queue.h -- records kept in arrival order while what they wait for is done elsewhere,
 * bounded all together.
 *
 * pdimond keeps a process's events while a worker attaches its probes (ahead_attach.c), and a
 * task's calls while a worker reads what naming their site needs (site_warm.c). Each keeps one
 * queue per waiting process, and every queue of a kind counts its records in one shared bound:
 * a node of many ranks must not keep more than that kind's limit in all. */
#pragma once

#include <stddef.h>

struct pdi_held_queue {
	void *v;           /* N records of the queue's record size, in arrival order */
	unsigned n, cap;   /* records kept; room allocated */
};

/* Room for one more record of SIZE bytes at the end of Q, counted in *HELD_ALL (the records of
 * every queue of its kind); NULL, nothing changed, when *HELD_ALL has reached MAX or memory is
 * short. */
void *pdi_held_queue_push(struct pdi_held_queue *q, size_t size, unsigned *held_all, unsigned max);

/* Q's records taken out, in order, into *RET_V (to free()) and *RET_N: they leave *HELD_ALL
 * before they are handled, which may keep records again, and Q is empty. */
void pdi_held_queue_take(struct pdi_held_queue *q, unsigned *held_all, void **ret_v, unsigned *ret_n);

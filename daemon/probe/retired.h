/* SPDX-License-Identifier: GPL-2.0-only */
/* retired.h -- when the links the overhead budget replaced are closed.
 *
 * A replaced link keeps its breakpoints until its close has unregistered them (an RCU grace
 * period, tens of ms): meanwhile every call of its function traps, and BPF drops the entry
 * (link_is_current()). So the replaced entry links of a task are closed at once, all together,
 * from the switch on. A replaced return link is different: the uretprobe of a call entered
 * before the switch runs the return programs of the links registered when the call returns, and
 * when the switch left its function with no return probe in the task (detached, a slice ended,
 * entry only), the replaced link is the only one that can still end that call. Closed at the
 * switch, a rank waiting in MPI_Allreduce while its function was detached never showed its return,
 * and its thread stayed "in MPI_Allreduce" for good. So a task's replaced return links are closed
 * once none of its threads has a call in flight, entered before the last of them was replaced,
 * of a function without a return probe now (the in-flight map, tracer.h), or after
 * PDI_RETURNS_HOLD_NS at most: then those calls are marked as having lost their return
 * (pdi_attachment_return_lost()), and their readers place such a thread by its stack. */
#pragma once

#include <stdint.h>

#define PDI_RETURNS_HOLD_NS 2000000000ull

struct pdi_daemon;
struct pdi_event;
struct pdi_task;

/* On the loop, at a switch of T's probes, at every budget slot and when a call they may be held
 * for ends (below): close T's replaced entry links on a worker, and its replaced return links when
 * no call may need them any more, or when held long enough (as above). Never waits: a map lookup
 * per thread of T (its thread list read once after each switch, threads.h); a close job already
 * full for the node (4 at once) leaves them for the next call. */
void pdi_retired_close(struct pdi_daemon *d, struct pdi_task *t);
/* T's call E was taken in: if it was in flight when T's return links were last replaced (entered
 * before, ended after), it may be the call they are held for, and they may go now rather than
 * at the next slot (pdi_retired_close()). A comparison for any other call. */
void pdi_retired_call_ended(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_event *e);
/* The links T holds, still to close. */
unsigned pdi_retired_count(const struct pdi_task *t);

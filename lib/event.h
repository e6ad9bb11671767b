/* SPDX-License-Identifier: GPL-2.0-only */
/* event.h -- the records the BPF programs hand to pdimond, shared by both sides.
 *
 * Fixed-width fields only, no pointers: this header is compiled by clang for the
 * BPF target and by gcc for user space. */
#pragma once

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PDI_NARGS 6 /* register arguments captured at entry (x86-64 SysV) */
#define PDI_NREQS 8 /* request handles captured at entry of Wait/Test{all,any,some} */

/* The BPF attach cookie: which function a probe stands for and how to find the
 * MPI_Request its call creates or completes. */
#define PDI_COOKIE_FN(c) ((__u32)((c)&0xffff))
#define PDI_COOKIE_REQ_ARG(c) ((__u32)(((c) >> 16) & 0xff)) /* 1-based argument index, 0 = none */
#define PDI_COOKIE_REQ_MODE(c) ((__u32)(((c) >> 24) & 0x3))
/* MPICH's MPI_Request is an int, Open MPI's a pointer */
#define PDI_COOKIE_REQ_SIZE(c) ((((c) >> 26) & 1) ? 4 : 8)
#define PDI_COOKIE_MAKE(fn, arg, mode, int_handles)                                                \
	((__u64)(fn) | ((__u64)(arg) << 16) | ((__u64)(mode) << 24) | ((__u64)!!(int_handles) << 26))
/* The overhead budget dropped this function's return probe: the entry emits the call (a
 * nonblocking call whose end the model can do without, see daemon/probe/budget.c). */
#define PDI_COOKIE_ENTRY_ONLY (1ull << 27)

enum pdi_req_mode {
	PDI_REQ_NONE = 0,
	PDI_REQ_OUT = 1,   /* *arg is written by the call (Isend, Irecv, Ibarrier...): read it at return */
	PDI_REQ_IN = 2,    /* *arg is the request being completed (Wait, Test): read it at entry */
	PDI_REQ_ARRAY = 3, /* arg is an array of requests, count in arg 1 (Waitall...): read at entry */
};

enum pdi_event_kind {
	PDI_EV_CALL = 1, /* a completed MPI call */
	PDI_EV_INIT = 2, /* a process of a watched tree entered MPI_Init: attach to it */
};

#define PDI_EVF_NO_EXIT 1 /* the call's end was not seen: t_exit is its entry (an entry-only probe)
			   * or when its end was noticed (its return probe went while it ran) */

/* One completed MPI call, emitted at return. */
struct pdi_event {
	__u32 kind;      /* enum pdi_event_kind */
	__u32 pid;       /* thread group id: the task */
	__u32 tid;       /* thread */
	__u16 fn;        /* index into pdi_mpi_funcs[] */
	__u16 flags;     /* PDI_EVF_* */
	__u64 callsite;  /* return address at entry: the exact call site */
	__u64 t_enter;   /* CLOCK_MONOTONIC ns */
	__u64 t_exit;    /* CLOCK_MONOTONIC ns */
	__u64 args[PDI_NARGS];
	__u64 req;       /* request handle read as the cookie says (0 when none) */
	__s64 ret;       /* return value of the call */
};

/* What a thread is doing right now, kept in the BPF "inflight" map (key: pid_tgid), one
 * entry per thread for its life: updating it in place costs far less than inserting and
 * deleting one per call. The daemon reads it to know where a task is blocked (ACTIVE > 0);
 * the return probe turns it into a pdi_event. */
struct pdi_inflight {
	__u64 cookie;
	__u64 callsite;
	__u64 t_enter;
	__u64 args[PDI_NARGS];
	__u64 req_ptr;            /* where to read the request at return (PDI_REQ_OUT) */
	__u64 reqs[PDI_NREQS];    /* requests being completed (PDI_REQ_IN/ARRAY) */
	__u32 active;             /* 1 while the application's MPI call is in progress, else 0 */
	__u32 nreqs;
	__u64 sp;                 /* stack pointer at its entry: calls below it are nested in it */
	__u64 ra;                 /* its return address as found at entry (CALLSITE may be another) */
};

/* The I-th request handle an in-flight completion call waits on. MPICH's 32-bit handles
 * are read as raw bytes, packed two to a slot. */
static inline __u64 pdi_inflight_req(const struct pdi_inflight *f, unsigned i)
{
	if (PDI_COOKIE_REQ_SIZE(f->cookie) == 4)
		return ((const __u32 *)f->reqs)[i];
	return f->reqs[i];
}

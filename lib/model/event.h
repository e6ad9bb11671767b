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
/* The 1-based argument position of a collective's communicator (0 = none): bits 32-39. */
#define PDI_COOKIE_COMM_ARG(c) ((__u32)(((c) >> 32) & 0xff))
#define PDI_COOKIE_WITH_COMM(c, comm_arg) ((c) | ((__u64)((comm_arg) & 0xff) << 32))
/* The generation of the link a probe belongs to (bits 40-55). The overhead budget replaces a
 * function's links while it runs; an old link keeps firing until its close, which waits for an
 * RCU grace period, completes on a worker. BPF takes a call only from the links of the
 * generation struct pdi_link_gens names for the process and function: exactly once, with no gap
 * and no duplicate, whenever the close completes. */
#define PDI_COOKIE_GEN(c) ((__u16)((c) >> 40))
#define PDI_COOKIE_WITH_GEN(c, g) (((c) & ~(0xffffull << 40)) | ((__u64)(__u16)(g) << 40))
#define PDI_LINK_GEN_FUNCS 128 /* at least the number of probed functions (mpi_funcs.c) */

/* A process's current link generation per function; a process without one has only links of
 * generation 0. */
struct pdi_link_gens {
	__u16 gen[PDI_LINK_GEN_FUNCS];
};

enum pdi_req_mode {
	PDI_REQ_NONE = 0,
	PDI_REQ_OUT = 1,   /* *arg is written by the call (Isend, Irecv, Ibarrier...): read it at return */
	PDI_REQ_IN = 2,    /* *arg is the request being completed (Wait, Test): read it at entry */
	PDI_REQ_ARRAY = 3, /* arg is an array of requests, count in arg 1 (Waitall...): read at entry */
};

enum pdi_event_kind {
	PDI_EV_CALL = 1,   /* a completed MPI call */
	PDI_EV_INIT = 2,   /* a process of a watched tree entered MPI_Init: attach to it (args[0]: the
	                    * watched pid it descends from, args[3]: its start, start_boottime ns) */
	PDI_EV_FRAMES = 3, /* a call's stack, where its call chain met a hop not known yet */
	PDI_EV_EXEC = 4,   /* a process of a watched tree executed a program: attach ahead of MPI_Init
	                    * (args[0]: the watched pid it descends from) */
};

/* The MPI_Init trap's cookie: the function, and which of the trapped libraries it sits in
 * (PDI_EV_INIT's args[1]). */
#define PDI_TRAP_COOKIE(fn, lib) ((__u64)(fn) | ((__u64)(lib) << 48))
#define PDI_TRAP_LIB(c) ((__u32)((c) >> 48))

/* ---- the application's call site past the MPI library (doc/design/call-sites.md) ----
 *
 * The return address at a probed entry may lie in code that only forwards the call: the
 * MPI library's Fortran bindings, or a library such as ScaLAPACK. For such a return
 * address pdimond tells BPF where the next one is (struct pdi_hop: a CFA rule taken from
 * the object's .eh_frame), and BPF follows the chain per call, up to PDI_HOP_MAX hops. */
#define PDI_HOP_MAX 16         /* return addresses followed past the first */
#define PDI_HOP_RANGES 8       /* code ranges of one process whose frames are hopped over */
#define PDI_FRAMES_BYTES 4096  /* stack a PDI_EV_FRAMES record carries, from the stopping frame */

enum pdi_hop_kind {
	PDI_HOP_BINDING = 1, /* MPI library or its Fortran bindings: skipped, not named */
	PDI_HOP_LIBRARY = 2, /* a library calling MPI for the application: skipped, kept as context */
	PDI_HOP_STOP = 3,    /* no usable frame rule here: the chain ends at this address */
};

/* How a call chain ended: the caller/via fields are final only with PDI_CHAIN_DONE. */
enum pdi_chain_end {
	PDI_CHAIN_DONE = 0,    /* reached code outside every hop range: the application's */
	PDI_CHAIN_UNKNOWN = 1, /* stopped at a return address whose hop is not known yet */
	PDI_CHAIN_CUT = 2,     /* PDI_HOP_MAX hops and still inside hop ranges */
	PDI_CHAIN_STOP = 3,    /* a PDI_HOP_STOP frame, or the stack could not be read */
};

struct pdi_hop_key {
	__u32 tgid;
	__u32 pad;
	__u64 ra; /* a return address in the process, inside one of its hop ranges */
};

/* The frame a return address RA (stored at SP) returns into, and how to find that frame's own
 * return address: CFA = (cfa_bp ? BP : SP) + cfa_off; the next return address is at CFA - 8
 * (which is the next SP); the caller's BP is at CFA + bp_off, or unchanged when bp_off is 0. */
struct pdi_hop {
	__s32 cfa_off;
	__s16 bp_off;
	__u8 cfa_bp;
	__u8 kind; /* enum pdi_hop_kind */
};

/* Per process: the code whose frames are hopped over ([start, end) pairs). */
struct pdi_hop_ranges {
	__u64 start[PDI_HOP_RANGES];
	__u64 end[PDI_HOP_RANGES];
	__u32 n;
	__u32 frames_budget; /* PDI_EV_FRAMES records the process may still cause */
};

/* A call's stack from the frame where its chain met an unknown hop (PDI_CHAIN_UNKNOWN), sent
 * at entry: pdimond resolves the rest of the chain from it, installs the hops and names this
 * call as later calls on the same path will be named. */
struct pdi_frames {
	__u32 kind;     /* PDI_EV_FRAMES */
	__u32 pid;
	__u32 tid;
	__u32 len;      /* bytes of STACK read, from SP up */
	__u32 hops;     /* hops BPF made before RA */
	__u32 pad;
	__u64 t_enter;  /* the call's, as its PDI_EV_CALL will carry it */
	__u64 ra;       /* the return address whose hop is unknown: *(u64 *)sp */
	__u64 sp;
	__u64 bp;       /* the frame pointer register as it is in RA's frame */
	__u64 via;      /* the outermost library return address passed so far, 0 if none */
	__u8 stack[PDI_FRAMES_BYTES];
};

#define PDI_EVF_NOT_HELD 2 /* PDI_EV_INIT: the process's probes, attached ahead, saw this MPI_Init
			    * enter, so it was not stopped there */
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
	__u64 caller;    /* first return address outside MPI, its bindings and libraries (= callsite
			  * when there is nothing to hop over); final when chain == PDI_CHAIN_DONE */
	__u64 via;       /* return address into the outermost library frame passed, 0 if none */
	__u64 t_enter;   /* CLOCK_MONOTONIC ns */
	__u64 t_exit;    /* CLOCK_MONOTONIC ns */
	__u64 args[PDI_NARGS];
	__u64 req;       /* request handle read as the cookie says (0 when none) */
	__u64 comm;      /* a collective's communicator handle (0 when none) */
	__s64 ret;       /* return value of the call */
	__u32 chain;     /* enum pdi_chain_end */
	__u32 pad;
};

/* What a thread is doing right now, kept in the BPF "inflight" map (key: pid_tgid), one
 * entry per thread for its life: updating it in place costs far less than inserting and
 * deleting one per call. The daemon reads it to know where a task is blocked (ACTIVE > 0);
 * the return probe turns it into a pdi_event. */
struct pdi_inflight {
	__u64 cookie;
	/* as in pdi_event; with SITE_AT_RETURN, 0 while the call is in flight and no reader has
	 * asked for it: pdi_tracer_inflight() fills it in from the kernel (mpitrace.bpf.c) */
	__u64 callsite;
	__u64 caller;
	__u64 via;
	__u64 comm;               /* a collective's communicator handle */
	__u64 t_enter;
	__u64 args[PDI_NARGS];
	__u64 req_ptr;            /* where to read the request at return (PDI_REQ_OUT) */
	__u64 reqs[PDI_NREQS];    /* requests being completed (PDI_REQ_IN/ARRAY) */
	__u32 active;             /* 1 while the application's MPI call is in progress, else 0 */
	__u32 nreqs;
	__u64 sp;                 /* stack pointer at its entry: calls below it are nested in it */
	__u32 chain;              /* enum pdi_chain_end */
	__u32 site_at_return;     /* 1: the return probe takes the call site (from the registers) */
	/* What the entry probe needs of the thread's process, copied from the maps link_gens and
	 * hop_ranges as they were at PROCS_EPOCH (mpitrace.bpf.c, procs_epoch; 0: never): while the
	 * epoch stands, a call makes no lookup of its own in either map. */
	__u64 procs_epoch;
	struct pdi_hop_ranges ranges; /* n = 0: none (its frames_budget unused: the map's counts) */
	__u32 gens_none;              /* the process has no link_gens entry: only generation 0 */
	__u32 pad2;
};

/* The I-th request handle an in-flight completion call waits on. MPICH's 32-bit handles
 * are read as raw bytes, packed two to a slot. */
static inline __u64 pdi_inflight_req(const struct pdi_inflight *f, unsigned i)
{
	if (PDI_COOKIE_REQ_SIZE(f->cookie) == 4)
		return ((const __u32 *)f->reqs)[i];
	return f->reqs[i];
}

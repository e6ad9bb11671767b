/* SPDX-License-Identifier: GPL-2.0-only */
/* callchain.h -- the application's call site past the MPI library, its Fortran bindings and
 * the libraries that call MPI for the application (ScaLAPACK, PETSc, ...): which code of a
 * process BPF hops over, the hops it follows, and the calls seen before a hop was known.
 * The design and its costs: doc/design/call-sites.md. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"

struct pdi_daemon;
struct pdi_task;
struct pdi_elfobj;

/* One call's chain: where it returns to, and the application's call site behind it. */
struct pdi_chain {
	uint64_t callsite; /* the return address at entry */
	uint64_t caller;   /* the first return address in the application's code */
	uint64_t via;      /* the return address into the outermost library frame, 0 if none */
	uint32_t end;      /* enum pdi_chain_end: caller is the application's only when DONE */
};

/* What the chains of a task cost and what they could not resolve (pdimon show). */
struct pdi_chain_stats {
	uint32_t ranges;     /* code ranges hopped over */
	uint32_t hops;       /* hops known (installed for BPF) */
	uint32_t refused;    /* return addresses without a frame rule BPF can follow */
	uint64_t frames;     /* stacks sent by BPF for calls on paths not known yet */
	uint64_t unresolved; /* calls named by a partial chain (hops still unknown, stack too short) */
};

/* What an object is to call-site naming: code whose frames are hopped over (binding or
 * library, enum pdi_hop_kind), or the application's (0). OBJPATH names it as the process maps
 * it; IS_EXE: it is the process's executable (never hopped over, even when it carries MPI). */
int pdi_chains_classify(struct pdi_elfobj *o, const char *objpath, bool is_exe, char *const *library_globs,
			unsigned nglobs);

/* Start following T's call chains: find the code to hop over in its mappings and tell BPF.
 * A process with nothing to hop over but the MPI library costs BPF one failed lookup per call.
 * 0 or negative errno (the task is then monitored with return addresses as call sites). */
int pdi_chains_begin(struct pdi_daemon *d, struct pdi_task *t);
/* T has ended: forget its hops in BPF and here; its statistics stay (idempotent). */
void pdi_chains_end(struct pdi_daemon *d, struct pdi_task *t);
/* Free all of T's chain state (with the task). */
void pdi_chains_free(struct pdi_task *t);

/* A PDI_EV_FRAMES record of T: resolve the rest of that call's chain from its stack, install
 * the hops it passes, and keep the result for the call's PDI_EV_CALL. */
void pdi_chains_on_frames(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_frames *f);
/* Complete *CH, the chain BPF left for T's call entered at T_ENTER by thread TID, from the
 * call's frames record if BPF could not finish it. True if *CH is final (or was already). */
bool pdi_chains_complete(const struct pdi_task *t, pid_t tid, uint64_t t_enter, struct pdi_chain *ch);
/* The final chain of a completed call (pdi_chains_complete()); a chain that stays partial is
 * counted, and its unknown hop installed for the next calls. */
void pdi_chains_finish(struct pdi_daemon *d, struct pdi_task *t, pid_t tid, uint64_t t_enter, struct pdi_chain *ch);
/* The chain of the call T is stopped in (MPI_Init's trap), whose return address CH->callsite
 * is at SP (rbp BP): read its stack from the process and resolve it like a frames record. */
void pdi_chains_of_stopped(struct pdi_daemon *d, struct pdi_task *t, uint64_t sp, uint64_t bp, struct pdi_chain *ch);

void pdi_chains_stats(const struct pdi_task *t, struct pdi_chain_stats *ret);

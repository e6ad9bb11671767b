/* SPDX-License-Identifier: GPL-2.0-only */
/* mpi_funcs.h -- the MPI functions pdimon probes, and where each keeps its arguments.
 *
 * Only communication and synchronisation calls are here: probing local calls
 * (MPI_Wtime, MPI_Comm_rank, type queries) costs a trap per call and tells nothing
 * about where a job went wrong. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum pdi_fn_class {
	PDI_FC_SEND,     /* blocking send */
	PDI_FC_RECV,     /* blocking receive */
	PDI_FC_ISEND,    /* nonblocking send: creates a request */
	PDI_FC_IRECV,    /* nonblocking receive: creates a request */
	PDI_FC_SENDRECV, /* send and receive in one call */
	PDI_FC_START,    /* persistent request start */
	PDI_FC_WAIT,     /* blocking completion */
	PDI_FC_TEST,     /* nonblocking completion */
	PDI_FC_PROBE,    /* blocking probe (Probe, Mprobe): waits for a matching message */
	PDI_FC_IPROBE,   /* nonblocking probe (Iprobe, Improbe): returns at once, found or not */
	PDI_FC_COLL,     /* blocking collective */
	PDI_FC_ICOLL,    /* nonblocking collective */
	PDI_FC_RMA,      /* one-sided synchronisation */
	PDI_FC_IO,       /* collective MPI-IO */
	PDI_FC_INIT,     /* MPI_Init, MPI_Init_thread */
	PDI_FC_FINALIZE, /* MPI_Finalize */
	PDI_FC_PCONTROL, /* MPI_Pcontrol: phase markers */
};

struct pdi_mpi_func {
	const char *name; /* "MPI_Send"; its profiling twin is "P" + name */
	uint8_t cls;      /* enum pdi_fn_class */
	/* 1-based argument positions, 0 when the call has no such argument */
	uint8_t peer_arg;  /* dest or source rank (point-to-point, RMA target) */
	uint8_t tag_arg;
	uint8_t count_arg;
	uint8_t type_arg;
	uint8_t root_arg;  /* root of a rooted collective */
	uint8_t req_arg;   /* where the MPI_Request is, see enum pdi_req_mode */
	uint8_t req_mode;
};

extern const struct pdi_mpi_func pdi_mpi_funcs[];
extern const unsigned pdi_mpi_nfuncs;

/* The name of function FN, "?" when out of range. */
const char *pdi_mpi_func_name(unsigned fn);

/* Index of the function called NAME (with or without the P prefix), or -ENOENT. */
int pdi_mpi_func_find(const char *name);

static inline bool pdi_fn_is_collective(unsigned fn)
{
	uint8_t c = pdi_mpi_funcs[fn].cls;
	return c == PDI_FC_COLL || c == PDI_FC_ICOLL || c == PDI_FC_IO;
}

/* The 1-based argument position of FN's communicator, 0 when it has none (collectives only:
 * phases are cut on collectives of communicators that span the step). */
unsigned pdi_mpi_comm_arg(unsigned fn);

/* Is FN a nonblocking completion test or probe (Test*, Iprobe, Improbe)? A task calling it over
 * and over polls: those calls alone are no progress. A blocking probe (Probe, Mprobe) is not one:
 * it returns only once a message has come, which is progress (a master's Mprobe/Mrecv loop, whose
 * Mrecv is not probed, would otherwise look like a task polling without progress), and a task
 * waiting in it is blocked like one in a receive. False out of range. */
static inline bool pdi_fn_polls(unsigned fn)
{
	return fn < pdi_mpi_nfuncs && (pdi_mpi_funcs[fn].cls == PDI_FC_TEST || pdi_mpi_funcs[fn].cls == PDI_FC_IPROBE);
}

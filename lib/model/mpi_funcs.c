/* SPDX-License-Identifier: GPL-2.0-only */
/* mpi_funcs.c -- the table of probed MPI functions and their argument layouts.
 *
 * Positions follow the MPI-3.1 C bindings. Arguments past the sixth live on the stack;
 * the BPF entry probe reads them from there (see bpf/mpitrace.bpf.c). */
#include <errno.h>
#include <string.h>

#include "event.h"
#include "mpi_funcs.h"

#define F(n, c, peer, tag, cnt, type, root) {#n, PDI_FC_##c, peer, tag, cnt, type, root, 0, PDI_REQ_NONE}
#define R(n, c, peer, tag, cnt, type, root, rarg, rmode)                                              \
	{#n, PDI_FC_##c, peer, tag, cnt, type, root, rarg, PDI_REQ_##rmode}

const struct pdi_mpi_func pdi_mpi_funcs[] = {
	/* point-to-point, blocking */
	F(MPI_Send, SEND, 4, 5, 2, 3, 0),
	F(MPI_Bsend, SEND, 4, 5, 2, 3, 0),
	F(MPI_Ssend, SEND, 4, 5, 2, 3, 0),
	F(MPI_Rsend, SEND, 4, 5, 2, 3, 0),
	F(MPI_Recv, RECV, 4, 5, 2, 3, 0),
	F(MPI_Sendrecv, SENDRECV, 4, 5, 2, 3, 0),
	F(MPI_Sendrecv_replace, SENDRECV, 4, 5, 2, 3, 0),
	/* point-to-point, nonblocking: the request is written at arg 7 */
	R(MPI_Isend, ISEND, 4, 5, 2, 3, 0, 7, OUT),
	R(MPI_Ibsend, ISEND, 4, 5, 2, 3, 0, 7, OUT),
	R(MPI_Issend, ISEND, 4, 5, 2, 3, 0, 7, OUT),
	R(MPI_Irsend, ISEND, 4, 5, 2, 3, 0, 7, OUT),
	R(MPI_Irecv, IRECV, 4, 5, 2, 3, 0, 7, OUT),
	R(MPI_Start, START, 0, 0, 0, 0, 0, 1, IN),
	R(MPI_Startall, START, 0, 0, 0, 0, 0, 2, ARRAY),
	/* completion */
	R(MPI_Wait, WAIT, 0, 0, 0, 0, 0, 1, IN),
	R(MPI_Waitall, WAIT, 0, 0, 0, 0, 0, 2, ARRAY),
	R(MPI_Waitany, WAIT, 0, 0, 0, 0, 0, 2, ARRAY),
	R(MPI_Waitsome, WAIT, 0, 0, 0, 0, 0, 2, ARRAY),
	R(MPI_Test, TEST, 0, 0, 0, 0, 0, 1, IN),
	R(MPI_Testall, TEST, 0, 0, 0, 0, 0, 2, ARRAY),
	R(MPI_Testany, TEST, 0, 0, 0, 0, 0, 2, ARRAY),
	R(MPI_Testsome, TEST, 0, 0, 0, 0, 0, 2, ARRAY),
	/* probes: the blocking ones wait for a message, the nonblocking ones are polled */
	F(MPI_Probe, PROBE, 1, 2, 0, 0, 0),
	F(MPI_Iprobe, IPROBE, 1, 2, 0, 0, 0),
	F(MPI_Mprobe, PROBE, 1, 2, 0, 0, 0),
	F(MPI_Improbe, IPROBE, 1, 2, 0, 0, 0),
	/* blocking collectives */
	F(MPI_Barrier, COLL, 0, 0, 0, 0, 0),
	F(MPI_Bcast, COLL, 0, 0, 2, 3, 4),
	F(MPI_Reduce, COLL, 0, 0, 3, 4, 6),
	F(MPI_Allreduce, COLL, 0, 0, 3, 4, 0),
	F(MPI_Gather, COLL, 0, 0, 2, 3, 7),
	F(MPI_Gatherv, COLL, 0, 0, 2, 3, 8),
	F(MPI_Scatter, COLL, 0, 0, 5, 6, 7),
	F(MPI_Scatterv, COLL, 0, 0, 6, 7, 8),
	F(MPI_Allgather, COLL, 0, 0, 2, 3, 0),
	F(MPI_Allgatherv, COLL, 0, 0, 2, 3, 0),
	F(MPI_Alltoall, COLL, 0, 0, 2, 3, 0),
	F(MPI_Alltoallv, COLL, 0, 0, 0, 0, 0),
	F(MPI_Alltoallw, COLL, 0, 0, 0, 0, 0),
	F(MPI_Reduce_scatter, COLL, 0, 0, 0, 4, 0),
	F(MPI_Reduce_scatter_block, COLL, 0, 0, 3, 4, 0),
	F(MPI_Scan, COLL, 0, 0, 3, 4, 0),
	F(MPI_Exscan, COLL, 0, 0, 3, 4, 0),
	/* a communicator's copy spans the same tasks: the new handle is read at return like a
	 * request (phases are cut on collectives of the communicators that span the step) */
	R(MPI_Comm_dup, COLL, 0, 0, 0, 0, 0, 2, OUT),
	/* nonblocking collectives */
	R(MPI_Ibarrier, ICOLL, 0, 0, 0, 0, 0, 2, OUT),
	R(MPI_Ibcast, ICOLL, 0, 0, 2, 3, 4, 6, OUT),
	R(MPI_Ireduce, ICOLL, 0, 0, 3, 4, 6, 8, OUT),
	R(MPI_Iallreduce, ICOLL, 0, 0, 3, 4, 0, 7, OUT),
	R(MPI_Igather, ICOLL, 0, 0, 2, 3, 7, 9, OUT),
	R(MPI_Igatherv, ICOLL, 0, 0, 2, 3, 8, 10, OUT),
	R(MPI_Iscatter, ICOLL, 0, 0, 5, 6, 7, 9, OUT),
	R(MPI_Iscatterv, ICOLL, 0, 0, 6, 7, 8, 10, OUT),
	R(MPI_Iallgather, ICOLL, 0, 0, 2, 3, 0, 8, OUT),
	R(MPI_Iallgatherv, ICOLL, 0, 0, 2, 3, 0, 9, OUT),
	R(MPI_Ialltoall, ICOLL, 0, 0, 2, 3, 0, 8, OUT),
	R(MPI_Ialltoallv, ICOLL, 0, 0, 0, 0, 0, 10, OUT),
	R(MPI_Ireduce_scatter, ICOLL, 0, 0, 0, 4, 0, 7, OUT),
	R(MPI_Ireduce_scatter_block, ICOLL, 0, 0, 3, 4, 0, 7, OUT),
	R(MPI_Iscan, ICOLL, 0, 0, 3, 4, 0, 7, OUT),
	R(MPI_Iexscan, ICOLL, 0, 0, 3, 4, 0, 7, OUT),
	/* one-sided synchronisation */
	F(MPI_Win_fence, RMA, 0, 0, 0, 0, 0),
	F(MPI_Win_lock, RMA, 2, 0, 0, 0, 0),
	F(MPI_Win_unlock, RMA, 1, 0, 0, 0, 0),
	F(MPI_Win_lock_all, RMA, 0, 0, 0, 0, 0),
	F(MPI_Win_unlock_all, RMA, 0, 0, 0, 0, 0),
	F(MPI_Win_flush, RMA, 1, 0, 0, 0, 0),
	F(MPI_Win_flush_all, RMA, 0, 0, 0, 0, 0),
	F(MPI_Win_flush_local, RMA, 1, 0, 0, 0, 0),
	F(MPI_Win_flush_local_all, RMA, 0, 0, 0, 0, 0),
	F(MPI_Win_post, RMA, 0, 0, 0, 0, 0),
	F(MPI_Win_start, RMA, 0, 0, 0, 0, 0),
	F(MPI_Win_complete, RMA, 0, 0, 0, 0, 0),
	F(MPI_Win_wait, RMA, 0, 0, 0, 0, 0),
	/* collective MPI-IO */
	F(MPI_File_open, IO, 0, 0, 0, 0, 0),
	F(MPI_File_close, IO, 0, 0, 0, 0, 0),
	F(MPI_File_set_view, IO, 0, 0, 0, 0, 0),
	F(MPI_File_sync, IO, 0, 0, 0, 0, 0),
	F(MPI_File_read_all, IO, 0, 0, 3, 4, 0),
	F(MPI_File_write_all, IO, 0, 0, 3, 4, 0),
	F(MPI_File_read_at_all, IO, 0, 0, 4, 5, 0),
	F(MPI_File_write_at_all, IO, 0, 0, 4, 5, 0),
	F(MPI_File_read_ordered, IO, 0, 0, 3, 4, 0),
	F(MPI_File_write_ordered, IO, 0, 0, 3, 4, 0),
	/* life cycle and phase markers */
	F(MPI_Init, INIT, 0, 0, 0, 0, 0),
	F(MPI_Init_thread, INIT, 0, 0, 0, 0, 0),
	F(MPI_Finalize, FINALIZE, 0, 0, 0, 0, 0),
	F(MPI_Pcontrol, PCONTROL, 0, 0, 0, 0, 0),
};

const unsigned pdi_mpi_nfuncs = sizeof(pdi_mpi_funcs) / sizeof(pdi_mpi_funcs[0]);
_Static_assert(sizeof(pdi_mpi_funcs) / sizeof(pdi_mpi_funcs[0]) <= PDI_LINK_GEN_FUNCS,
	       "struct pdi_link_gens has a generation per probed function");

unsigned pdi_mpi_comm_arg(unsigned fn)
{
	/* the communicator comes last among a blocking collective's arguments */
	static const struct {
		const char *name;
		uint8_t pos;
	} coll[] = {
		{"MPI_Barrier", 1},	   {"MPI_Bcast", 5},	     {"MPI_Reduce", 7},	    {"MPI_Allreduce", 6},
		{"MPI_Gather", 8},	   {"MPI_Gatherv", 9},	     {"MPI_Scatter", 8},	    {"MPI_Scatterv", 9},
		{"MPI_Allgather", 7},	   {"MPI_Allgatherv", 8},   {"MPI_Alltoall", 7},	    {"MPI_Alltoallv", 9},
		{"MPI_Alltoallw", 9},	   {"MPI_Reduce_scatter", 6}, {"MPI_Reduce_scatter_block", 6},
		{"MPI_Scan", 6},	   {"MPI_Exscan", 6},	     {"MPI_Comm_dup", 1},
	};
	const struct pdi_mpi_func *f;

	if (fn >= pdi_mpi_nfuncs)
		return 0;
	f = &pdi_mpi_funcs[fn];
	if (f->cls == PDI_FC_ICOLL)
		return f->req_arg - 1; /* just before the request it creates */
	if (f->cls != PDI_FC_COLL)
		return 0;
	for (unsigned i = 0; i < sizeof(coll) / sizeof(coll[0]); i++)
		if (!strcmp(coll[i].name, f->name))
			return coll[i].pos;
	return 0;
}

int pdi_mpi_func_find(const char *name)
{
	if (name[0] == 'P' && strncmp(name, "PMPI_", 5) == 0)
		name++;
	for (unsigned i = 0; i < pdi_mpi_nfuncs; i++)
		if (strcmp(pdi_mpi_funcs[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

const char *pdi_mpi_func_name(unsigned fn)
{
	return fn < pdi_mpi_nfuncs ? pdi_mpi_funcs[fn].name : "?";
}

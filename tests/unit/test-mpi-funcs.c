/* SPDX-License-Identifier: GPL-2.0-only */
/* test-mpi-funcs.c -- the table of probed MPI functions: lookup, contents, request modes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "event.h"
#include "mpi_funcs.h"

static int find(const char *name)
{
	int i = pdi_mpi_func_find(name);

	cr_assert_geq(i, 0, "%s is in the table", name);
	cr_assert_lt((unsigned)i, pdi_mpi_nfuncs);
	cr_assert_str_eq(pdi_mpi_funcs[i].name, name[0] == 'P' ? name + 1 : name);
	return i;
}

static bool is_nonblocking_name(const char *name)
{
	return !strncmp(name, "MPI_I", 5) && strcmp(name, "MPI_Iprobe") && strcmp(name, "MPI_Improbe") &&
	       strncmp(name, "MPI_Init", 8);
}

Test(mpi_funcs, find_with_and_without_profiling_prefix)
{
	static const char *const names[] = {"MPI_Send", "MPI_Isend", "MPI_Waitall", "MPI_Barrier",
					    "MPI_Allreduce", "MPI_Pcontrol", "MPI_Init", "MPI_Finalize"};

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char pname[64] = "P";

		strcat(pname, names[i]);
		cr_assert_eq(find(names[i]), find(pname), "%s and %s", names[i], pname);
	}
}

Test(mpi_funcs, every_entry_is_found_at_its_index)
{
	for (unsigned i = 0; i < pdi_mpi_nfuncs; i++) {
		char pname[64] = "P";

		cr_assert_eq(pdi_mpi_func_find(pdi_mpi_funcs[i].name), (int)i, "%s", pdi_mpi_funcs[i].name);
		strcat(pname, pdi_mpi_funcs[i].name);
		cr_assert_eq(pdi_mpi_func_find(pname), (int)i, "%s", pname);
	}
}

Test(mpi_funcs, unknown_is_enoent)
{
	cr_assert_eq(pdi_mpi_func_find("MPI_Nonexistent"), -ENOENT);
	cr_assert_eq(pdi_mpi_func_find(""), -ENOENT);
	cr_assert_eq(pdi_mpi_func_find("P"), -ENOENT);
	cr_assert_eq(pdi_mpi_func_find("PMPI_"), -ENOENT);
	cr_assert_eq(pdi_mpi_func_find("mpi_send"), -ENOENT, "names are case-sensitive");
	cr_assert_eq(pdi_mpi_func_find("MPI_Send_"), -ENOENT, "no prefix matching");
	cr_assert_eq(pdi_mpi_func_find("MPI_Sen"), -ENOENT);
	cr_assert_eq(pdi_mpi_func_find("PPMPI_Send"), -ENOENT, "only one P is stripped");
	cr_assert_eq(pdi_mpi_func_find("XMPI_Send"), -ENOENT);
}

Test(mpi_funcs, local_calls_are_not_probed)
{
	static const char *const local[] = {
		"MPI_Wtime",	 "MPI_Wtick",	 "MPI_Comm_rank",     "MPI_Comm_size", "MPI_Type_size",
		"MPI_Get_count", "MPI_Initialized", "MPI_Finalized", "MPI_Abort",     "PMPI_Wtime",
		"PMPI_Comm_rank", "MPI_Type_commit", "MPI_Get_processor_name",
	};

	for (unsigned i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		cr_assert_eq(pdi_mpi_func_find(local[i]), -ENOENT, "%s is local and must not be probed", local[i]);
}

Test(mpi_funcs, names_are_unique_and_well_formed)
{
	cr_assert_gt(pdi_mpi_nfuncs, 0);
	cr_assert_lt(pdi_mpi_nfuncs, 0x10000u, "function indices fit the u16 fn fields");
	for (unsigned i = 0; i < pdi_mpi_nfuncs; i++) {
		cr_assert_not_null(pdi_mpi_funcs[i].name);
		cr_assert_eq(strncmp(pdi_mpi_funcs[i].name, "MPI_", 4), 0, "%s", pdi_mpi_funcs[i].name);
		for (unsigned k = i + 1; k < pdi_mpi_nfuncs; k++)
			cr_assert_str_neq(pdi_mpi_funcs[i].name, pdi_mpi_funcs[k].name, "entries %u and %u", i, k);
	}
}

Test(mpi_funcs, nonblocking_calls_write_a_request)
{
	unsigned n = 0;

	for (unsigned i = 0; i < pdi_mpi_nfuncs; i++) {
		const struct pdi_mpi_func *f = &pdi_mpi_funcs[i];
		bool nb_class = f->cls == PDI_FC_ISEND || f->cls == PDI_FC_IRECV || f->cls == PDI_FC_ICOLL;

		if (is_nonblocking_name(f->name)) {
			n++;
			cr_assert_eq(f->req_mode, PDI_REQ_OUT, "%s writes its request", f->name);
			cr_assert(nb_class, "%s has a nonblocking class", f->name);
		}
		/* and the other way round: only nonblocking calls create requests (MPI_Comm_dup's
		 * new communicator is read the same way, see mpi_funcs.c) */
		if (strcmp(f->name, "MPI_Comm_dup") != 0)
			cr_assert_eq(f->req_mode == PDI_REQ_OUT, nb_class, "%s: req_mode %u, class %u", f->name,
				     f->req_mode, f->cls);
		if (f->req_mode == PDI_REQ_NONE)
			cr_assert_eq(f->req_arg, 0, "%s", f->name);
		else
			cr_assert_gt(f->req_arg, 0, "%s", f->name);
	}
	cr_assert_geq(n, 5 + 16, "Isend family, Irecv and the nonblocking collectives");
}

Test(mpi_funcs, request_argument_positions)
{
	/* MPI-3.1 C bindings: the request is the last argument */
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Isend")].req_arg, 7);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Irecv")].req_arg, 7);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Ibarrier")].req_arg, 2);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Iallreduce")].req_arg, 7);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Ialltoallv")].req_arg, 10);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Wait")].req_mode, PDI_REQ_IN);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Wait")].req_arg, 1);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Test")].req_mode, PDI_REQ_IN);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Start")].req_mode, PDI_REQ_IN);
	/* arrays of requests come with their count in argument 1 */
	static const char *const arrays[] = {"MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Testall",
					     "MPI_Testany", "MPI_Testsome", "MPI_Startall"};
	for (unsigned i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++) {
		cr_assert_eq(pdi_mpi_funcs[find(arrays[i])].req_mode, PDI_REQ_ARRAY, "%s", arrays[i]);
		cr_assert_eq(pdi_mpi_funcs[find(arrays[i])].req_arg, 2, "%s", arrays[i]);
	}
}

Test(mpi_funcs, peer_and_root_positions)
{
	const struct pdi_mpi_func *f;

	f = &pdi_mpi_funcs[find("MPI_Send")];
	cr_assert_eq(f->peer_arg, 4);
	cr_assert_eq(f->tag_arg, 5);
	cr_assert_eq(f->count_arg, 2);
	cr_assert_eq(f->type_arg, 3);
	f = &pdi_mpi_funcs[find("MPI_Recv")];
	cr_assert_eq(f->peer_arg, 4);
	cr_assert_eq(f->tag_arg, 5);
	f = &pdi_mpi_funcs[find("MPI_Probe")];
	cr_assert_eq(f->peer_arg, 1);
	cr_assert_eq(f->tag_arg, 2);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Bcast")].root_arg, 4);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Reduce")].root_arg, 6);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Gather")].root_arg, 7);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Barrier")].root_arg, 0);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Allreduce")].root_arg, 0);
}

Test(mpi_funcs, classes)
{
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Isend")].cls, PDI_FC_ISEND);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Irecv")].cls, PDI_FC_IRECV);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Waitall")].cls, PDI_FC_WAIT);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Pcontrol")].cls, PDI_FC_PCONTROL);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Iprobe")].cls, PDI_FC_IPROBE);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Mprobe")].cls, PDI_FC_PROBE);
	cr_assert_eq(pdi_mpi_funcs[find("MPI_Init_thread")].cls, PDI_FC_INIT);

	cr_assert(pdi_fn_is_collective(find("MPI_Barrier")));
	cr_assert(pdi_fn_is_collective(find("MPI_Ibarrier")));
	cr_assert(pdi_fn_is_collective(find("MPI_File_write_all")));
	cr_assert_not(pdi_fn_is_collective(find("MPI_Send")));
	cr_assert_not(pdi_fn_is_collective(find("MPI_Pcontrol")));
	cr_assert_not(pdi_fn_is_collective(find("MPI_Win_fence")));
}

/* A task that calls a nonblocking test or probe over and over polls (no progress by itself); one
 * in a blocking probe waits for a message, and its return is progress, as a receive's is. */
Test(mpi_funcs, polling_calls)
{
	static const char *const polls[] = {"MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome",
					    "MPI_Iprobe", "MPI_Improbe"};
	static const char *const waits[] = {"MPI_Probe", "MPI_Mprobe", "MPI_Recv", "MPI_Wait", "MPI_Waitall",
					    "MPI_Barrier", "MPI_Isend", "MPI_Ibarrier", "MPI_Pcontrol"};
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(polls) / sizeof(polls[0]); i++)
		cr_assert(pdi_fn_polls(find(polls[i])), "%s polls", polls[i]);
	for (unsigned i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		cr_assert_not(pdi_fn_polls(find(waits[i])), "%s does not poll", waits[i]);
	for (unsigned i = 0; i < pdi_mpi_nfuncs; i++)
		n += pdi_fn_polls(i);
	cr_assert_eq(n, sizeof(polls) / sizeof(polls[0]), "no other function polls");
	cr_assert_not(pdi_fn_polls(pdi_mpi_nfuncs), "out of range");
}

Test(mpi_funcs, communicator_positions)
{
	/* the communicator comes last in a blocking collective, just before the request in a
	 * nonblocking one; the others have none that cuts phases */
	cr_assert_eq(pdi_mpi_comm_arg((unsigned)pdi_mpi_func_find("MPI_Barrier")), 1);
	cr_assert_eq(pdi_mpi_comm_arg((unsigned)pdi_mpi_func_find("MPI_Reduce")), 7);
	cr_assert_eq(pdi_mpi_comm_arg((unsigned)pdi_mpi_func_find("MPI_Alltoallw")), 9);
	cr_assert_eq(pdi_mpi_comm_arg((unsigned)pdi_mpi_func_find("MPI_Iallreduce")), 6);
	cr_assert_eq(pdi_mpi_comm_arg((unsigned)pdi_mpi_func_find("MPI_Comm_dup")), 1);
	cr_assert_eq(pdi_mpi_comm_arg((unsigned)pdi_mpi_func_find("MPI_Send")), 0);
	cr_assert_eq(pdi_mpi_comm_arg((unsigned)pdi_mpi_func_find("MPI_File_write_all")), 0);
	cr_assert_eq(pdi_mpi_comm_arg(pdi_mpi_nfuncs), 0);
	for (unsigned i = 0; i < pdi_mpi_nfuncs; i++)
		if (pdi_mpi_funcs[i].cls == PDI_FC_COLL || pdi_mpi_funcs[i].cls == PDI_FC_ICOLL)
			cr_assert_gt(pdi_mpi_comm_arg(i), 0, "%s", pdi_mpi_funcs[i].name);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* test-stack-frames.c -- a task placed by the frames of its live stack (stack_frames.h): in a
 * call, computing, or nothing said; and a signal handler read as what the thread runs now. */
#include <criterion/criterion.h>

#include "stack_frames.h"

#define N(v) (sizeof(v) / sizeof((v)[0]))

static struct pdi_frames_place place(char *const *frames, size_t n)
{
	struct pdi_frames_place p;

	memset(&p, 0x5a, sizeof(p));
	pdi_stack_frames_place(frames, n, &p);
	return p;
}

Test(stack_frames, in_the_outermost_mpi_call)
{
	char *f[] = {"_start@hpcc+0x1a4", "__libc_start_main@libc.so.6+0x271", "main@hpcc+0x55",
		     "HPL_bcast@hpcc+0x9c", "PMPI_Testany@libmpi.so.40+0x88", "opal_progress@libopen-pal.so.40+0x2c"};
	struct pdi_frames_place p = place(f, N(f));

	cr_assert_eq(p.kind, PDI_PLACED_IN_CALL);
	cr_assert_str_eq(p.fn, "MPI_Testany");
	cr_assert_eq(p.call, 4);
}

Test(stack_frames, computing_only_when_the_walk_went_past_mpi)
{
	char *program[] = {"_start@meep+0x1a4", "main@meep+0x55", "step_db@meep+0x91c"};
	char *short_walk[] = {"main@meep+0x55", "step_db@meep+0x91c"};
	char *inside_mpi[] = {"opal_progress@libopen-pal.so.40+0x2c", "mca_btl_vader_component_progress@x.so+0x40",
			      "memcpy@libc.so.6+0x20"};
	char *trampoline[] = {PDI_FRAME_UPROBES, "foo@meep+0x10", "bar@meep+0x20"};

	cr_assert_eq(place(program, N(program)).kind, PDI_PLACED_OUTSIDE_MPI);
	cr_assert_eq(place(program, N(program)).call, 0);
	cr_assert_eq(place(short_walk, N(short_walk)).kind, PDI_PLACED_UNKNOWN);
	cr_assert_eq(place(inside_mpi, N(inside_mpi)).kind, PDI_PLACED_UNKNOWN);
	cr_assert_eq(place(trampoline, N(trampoline)).kind, PDI_PLACED_UNKNOWN);
	cr_assert_eq(place(NULL, 0).kind, PDI_PLACED_UNKNOWN);
}

/* HPCC hang-spin, seed 5 (hang-detection.md): the agent's handler spins, entered as a probed
 * MPI_Test returned through its trampoline, which ends the walk. Read as a whole the walk
 * says nothing (a trampoline); the handler's own frames say it computes. */
Test(stack_frames, a_handler_that_interrupted_a_return_through_a_trampoline)
{
	char *f[] = {PDI_FRAME_UPROBES, PDI_FRAME_SIGNAL, "spin@libpdimon-spin-agent.so+0x1375"};
	char *deeper[] = {PDI_FRAME_UPROBES, PDI_FRAME_SIGNAL, "on_alarm@app+0x40", "crunch@app:81",
			  "clock_gettime@libc.so.6+0x1c"};

	cr_assert_eq(place(f, N(f)).kind, PDI_PLACED_OUTSIDE_MPI);
	cr_assert_eq(place(deeper, N(deeper)).kind, PDI_PLACED_OUTSIDE_MPI);
}

/* The handler runs now; the MPI call it interrupted goes on only when it returns. */
Test(stack_frames, a_handler_above_an_mpi_call_computes)
{
	char *f[] = {"_start@hpcc+0x1a4", "main@hpcc+0x55", "PMPI_Test@libmpi.so.40+0x31",
		     "opal_progress@libopen-pal.so.40+0x2c", PDI_FRAME_SIGNAL, "spin@libpdimon-spin-agent.so+0x1375"};

	cr_assert_eq(place(f, N(f)).kind, PDI_PLACED_OUTSIDE_MPI);
	cr_assert_str_eq(place(f, N(f)).fn, "");
}

Test(stack_frames, a_handler_in_mpi_or_mpi_code_in_a_handler)
{
	char *calls[] = {"_start@a+0x1", "main@a+0x2", "compute@a+0x3", PDI_FRAME_SIGNAL, "on_term@a+0x4",
			 "PMPI_Abort@libmpi.so.40+0x10", "opal_progress@libopen-pal.so.40+0x2c"};
	char *library_handler[] = {"_start@a+0x1", "main@a+0x2", "compute@a+0x3", PDI_FRAME_SIGNAL,
				   "ucs_handle_error@libucs.so.0+0x10"};
	char *returning[] = {"_start@a+0x1", "main@a+0x2", "compute@a+0x3", PDI_FRAME_SIGNAL};
	struct pdi_frames_place p = place(calls, N(calls));

	cr_assert_eq(p.kind, PDI_PLACED_IN_CALL);
	cr_assert_str_eq(p.fn, "MPI_Abort");
	cr_assert_eq(p.call, 5);
	cr_assert_eq(place(library_handler, N(library_handler)).kind, PDI_PLACED_UNKNOWN);
	/* stopped as the handler returned: nothing of it to read, and what it interrupted is not read either */
	cr_assert_eq(place(returning, N(returning)).kind, PDI_PLACED_UNKNOWN);
}

/* Nested handlers: the innermost is what runs. */
Test(stack_frames, the_innermost_handler_decides)
{
	char *f[] = {"_start@a+0x1", "main@a+0x2", PDI_FRAME_SIGNAL, "outer_handler@a+0x3", "PMPI_Send@libmpi.so.40+0x9",
		     "opal_progress@libopen-pal.so.40+0x2c", PDI_FRAME_SIGNAL, "inner_handler@a+0x4"};

	cr_assert_eq(place(f, N(f)).kind, PDI_PLACED_OUTSIDE_MPI);
}

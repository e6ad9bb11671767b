/* SPDX-License-Identifier: GPL-2.0-only */
/* stub.c -- a small shared object that calls MPI once: copied many times by the hostile
 * program, each copy a distinct ELF file (and call site) for pdimond to open. */
int MPI_Barrier(int comm);

int stub_call(void)
{
	int r = MPI_Barrier(0);

	__asm__ volatile("" ::: "memory"); /* no tail call: the return address is in this object */
	return r;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* fakempi.c -- a tiny stand-in MPI library for the hostile tests: the symbols pdimond traps
 * and probes (MPI_Init, MPI_Send, MPI_Barrier, MPI_Recv, MPI_Finalize), and nothing else.
 *
 * A hostile user can ship their own "MPI library": pdimond must treat whatever it maps as
 * untrusted. MPI_Recv with a negative count ends the calling thread inside the call, the way
 * a thread cancelled or killed inside MPI never returns from it. */
#include <sys/syscall.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) static int touch(void)
{
	return sink++;
}

int MPI_Init(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return touch() & 0;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	(void)argc;
	(void)argv;
	*provided = required;
	return touch() & 0;
}

int MPI_Finalize(void)
{
	return touch() & 0;
}

int MPI_Send(const void *buf, int count, int type, int dest, int tag, int comm)
{
	(void)buf;
	(void)count;
	(void)type;
	(void)dest;
	(void)tag;
	(void)comm;
	return touch() & 0;
}

int MPI_Recv(void *buf, int count, int type, int source, int tag, int comm, void *status)
{
	(void)buf;
	(void)type;
	(void)source;
	(void)tag;
	(void)comm;
	(void)status;
	/* the thread ends here, at once: no unwinding through the probe's return trampoline */
	if (count < 0)
		syscall(SYS_exit, 0);
	return touch() & 0;
}

int MPI_Barrier(int comm)
{
	(void)comm;
	return touch() & 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_frames.c -- a task placed by the frames of its live stack (stack_frames.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "stack_frames.h"

/* Is frame F ("FUNC@...") a function of MPI's C interface (MPI_ or PMPI_: every language
 * binding ends in it)? Its name without the P into NAME. */
static bool mpi_frame(const char *f, char *name, size_t len)
{
	const char *at = strchr(f, '@');

	if (f[0] == 'P')
		f++;
	if (strncmp(f, "MPI_", 4))
		return false;
	snprintf(name, len, "%.*s", at ? (int)(at - f) : (int)strlen(f), f);
	return true;
}

/* Is frame F in MPI's own code, below its interface: its library, run time or transports
 * (by object, or by function where debugging information names a file instead)? */
static bool mpi_internal_frame(const char *f)
{
	static const char *const objs[] = {"@libmpi", "@libopen-pal", "@libopen-rte", "@libmpich", "@libpmix", "@libucp",
					   "@libucs", "@libuct", "@libfabric", "@libpsm", "@mca_", "@libhwloc"};
	static const char *const fns[] = {"opal_", "ompi_", "orte_", "mca_", "MPIR_", "MPID", "MPII_", "ucp_", "uct_",
					  "ucs_", "pmix_", "PMIx_", "fi_"};

	for (size_t k = 0; k < sizeof(objs) / sizeof(objs[0]); k++)
		if (strstr(f, objs[k]))
			return true;
	for (size_t k = 0; k < sizeof(fns) / sizeof(fns[0]); k++)
		if (!strncmp(f, fns[k], strlen(fns[k])))
			return true;
	return false;
}

/* A walk (outermost first) that found no frame of MPI's interface went past any MPI code
 * there was: it reached the program's own frames, not stopping inside MPI's (a walk goes
 * outwards from the innermost frame, and MPI's code is entered through its interface), nor
 * after a frame or two in the C library, nor at a return probe's trampoline (a probed call
 * returning: the probes' word, not the stack's; a signal can land right there). */
static bool walked_past_mpi(char *const *frames, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!strcmp(frames[k], PDI_FRAME_UPROBES))
			return false;
	return n >= 3 && !mpi_internal_frame(frames[0]);
}

/* The frames of a signal handler from FROM on hold no MPI code at all (its interface was
 * looked for already): the handler computes outside MPI. */
static bool handler_outside_mpi(char *const *frames, size_t n, size_t from)
{
	if (from >= n)
		return false; /* stopped as the handler returned: nothing of it left to read */
	for (size_t k = from; k < n; k++)
		if (mpi_internal_frame(frames[k]) || !strcmp(frames[k], PDI_FRAME_UPROBES))
			return false;
	return true;
}

void pdi_stack_frames_place(char *const *frames, size_t n, struct pdi_frames_place *ret)
{
	struct pdi_frames_place p = {.kind = PDI_PLACED_UNKNOWN};
	bool handler = false;
	size_t from = 0; /* what the thread runs now: past the innermost signal frame */

	for (size_t k = 0; k < n; k++)
		if (!strcmp(frames[k], PDI_FRAME_SIGNAL)) {
			handler = true;
			from = k + 1;
		}
	for (size_t k = from; k < n; k++)
		if (mpi_frame(frames[k], p.fn, sizeof(p.fn))) {
			p.kind = PDI_PLACED_IN_CALL;
			p.call = k;
			*ret = p;
			return;
		}
	p.fn[0] = '\0';
	if (handler ? handler_outside_mpi(frames, n, from) : walked_past_mpi(frames, n))
		p.kind = PDI_PLACED_OUTSIDE_MPI;
	*ret = p;
}

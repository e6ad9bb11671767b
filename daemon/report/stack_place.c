/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_place.c -- a task placed by its live stack: in an MPI call, or computing outside MPI
 * (stack_place.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "procmaps.h"
#include "stack_place.h"
#include "stackwalk.h"

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

/* A walk (outermost frame first) that found no frame of MPI's interface went past any MPI
 * code there was: it reached the program's own frames, not stopping inside MPI's (a walk
 * goes outwards from the innermost frame, and MPI's code is entered through its interface),
 * nor after a frame or two in the C library, nor at a return probe's trampoline (a probed
 * call returning: the probes' word, not the stack's; a signal can land right there). */
static bool walked_past_mpi(char **frames, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (!strcmp(frames[k], "[uprobes]"))
			return false;
	return n >= 3 && !mpi_internal_frame(frames[0]);
}

bool pdi_stack_place_wanted(const struct pdi_model *m, enum pdi_activity act)
{
	return m->started && act != PDI_ACT_STOPPED && act != PDI_ACT_DISK &&
	       pdi_unobserved_blind_since(&m->unobserved, m->last_exit);
}

int pdi_stack_place(pid_t pid, struct pdi_objcache *objs, struct pdi_stack_place *ret)
{
	struct pdi_stack_place p = {.kind = PDI_PLACED_UNKNOWN};
	struct pdi_maps maps = {0};
	char **frames;
	size_t n;
	int r = pdi_stack_walk(pid, pid, 0, objs, &maps, &frames, &n);

	pdi_maps_free(&maps);
	if (r < 0)
		return r;
	while (p.call < n && !mpi_frame(frames[p.call], p.fn, sizeof(p.fn)))
		p.call++;
	if (p.call == n) {
		p.kind = walked_past_mpi(frames, n) ? PDI_PLACED_OUTSIDE_MPI : PDI_PLACED_UNKNOWN;
		p.call = 0;
		pdi_stack_frames_free(frames, n);
	} else {
		p.kind = PDI_PLACED_IN_CALL;
		p.frames = frames;
		p.nframes = n;
	}
	*ret = p;
	return 0;
}

void pdi_stack_place_done(struct pdi_stack_place *p)
{
	pdi_stack_frames_free(p->frames, p->nframes);
	*p = (struct pdi_stack_place){0};
}

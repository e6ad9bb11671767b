/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_place.c -- a task placed by its live stack: in an MPI call, or computing outside MPI
 * (stack_place.h). */
#include <stdio.h>

#include "model.h"
#include "procmaps.h"
#include "stack_frames.h"
#include "stack_place.h"
#include "stackwalk.h"

bool pdi_stack_place_wanted(const struct pdi_model *m, enum pdi_activity act)
{
	return m->started && act != PDI_ACT_STOPPED && act != PDI_ACT_DISK &&
	       pdi_unobserved_blind_since(&m->unobserved, m->last_exit);
}

int pdi_stack_place(pid_t pid, struct pdi_objcache *objs, bool lines, struct pdi_stack_place *ret)
{
	struct pdi_stack_place p = {.kind = PDI_PLACED_UNKNOWN};
	struct pdi_frames_place at;
	struct pdi_maps maps = {0};
	char **frames;
	size_t n;
	int r = pdi_stack_walk(pid, pid, 0, objs, lines, &maps, &frames, &n);

	pdi_maps_free(&maps);
	if (r < 0)
		return r;
	pdi_stack_frames_place(frames, n, &at);
	p.kind = at.kind;
	if (p.kind == PDI_PLACED_IN_CALL) {
		snprintf(p.fn, sizeof(p.fn), "%s", at.fn);
		p.call = at.call;
		p.frames = frames;
		p.nframes = n;
	} else {
		pdi_stack_frames_free(frames, n);
	}
	*ret = p;
	return 0;
}

void pdi_stack_place_done(struct pdi_stack_place *p)
{
	pdi_stack_frames_free(p->frames, p->nframes);
	*p = (struct pdi_stack_place){0};
}

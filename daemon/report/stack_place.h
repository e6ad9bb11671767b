/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_place.h -- where a task's live stack places it when its probes cannot: a task shown
 * computing since its last seen call while the overhead budget thinned its probes
 * (unobserved.h) may as well sit in a call they did not see begin, as ranks waiting on a
 * spinning one do. Its stack says which. The one definition of that reading, for the step's
 * view (snapshot.c, the report and analyze) and for the hang judge (hang/stack_look.c). Walks
 * stop the task for a moment: they run on workers only, never on the loop. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "stack_frames.h"
#include "view.h"

struct pdi_model;
struct pdi_objcache;

struct pdi_stack_place {
	enum pdi_stack_placed kind;
	char fn[64];    /* IN_CALL: the MPI function, its MPI_ name */
	char **frames;  /* IN_CALL: the frames walked, outermost first (pdi_stack_frames_free) */
	size_t nframes;
	size_t call;    /* IN_CALL: the index of the MPI function's frame in FRAMES */
};

/* Does a task shown computing since the last call its model M saw need its stack read: its
 * probes were thinned since (a call could have begun unseen), and the kernel (ACT) does not
 * settle it already (a stopped task, or one in uninterruptible sleep, would not stop for a
 * walk either)? */
bool pdi_stack_place_wanted(const struct pdi_model *m, enum pdi_activity act);

/* The live stack of PID's main thread, walked (stackwalk.h; its frames named by source line
 * with LINES) and read into *RET. 0, or the walk's negative errno (RET untouched). On a worker. */
int pdi_stack_place(pid_t pid, struct pdi_objcache *objs, bool lines, struct pdi_stack_place *ret);

/* Frees what pdi_stack_place() kept (the frames); P zeroed. */
void pdi_stack_place_done(struct pdi_stack_place *p);

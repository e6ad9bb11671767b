/* SPDX-License-Identifier: GPL-2.0-only */
/* stack_frames.h -- what the frames of a task's live stack say of where it is: inside an MPI
 * call, computing outside MPI, or nothing (the walk stopped short). The one reading of a walk
 * (daemon/probe/stackwalk.h makes the frames; the report's snapshot and the hang judge place
 * still tasks by it, daemon/report/stack_place.h). Pure: a frame is its name,
 * "FUNC@FILE:LINE", "FUNC@OBJECT+0xADDR", or one of the markers below. */
#pragma once

#include <stddef.h>

/* A uretprobe trampoline the walk could not go past (the real return address is the kernel's):
 * always the outermost frame of a walk, which ends there. */
#define PDI_FRAME_UPROBES "[uprobes]"
/* The kernel's return into the code a signal interrupted (glibc's __restore_rt): the frames
 * inside it are the signal handler's, what the thread runs now; those outside it, the code
 * the handler interrupted, which goes on only when the handler returns. */
#define PDI_FRAME_SIGNAL "[signal]"

enum pdi_stack_placed {
	PDI_PLACED_UNKNOWN,     /* the walk stopped short (a trampoline, inside MPI's own code): it says nothing */
	PDI_PLACED_IN_CALL,     /* a frame of MPI's interface is on it: it is in that call */
	PDI_PLACED_OUTSIDE_MPI, /* walked past any MPI code without one: it computes */
};

struct pdi_frames_place {
	enum pdi_stack_placed kind;
	char fn[64]; /* IN_CALL: the MPI function, its MPI_ name */
	size_t call; /* IN_CALL: the index of the MPI function's frame in the frames; else 0 */
};

/* Where the N FRAMES of a walk (outermost first) place their task, into *RET. What the thread
 * runs now decides: past the innermost PDI_FRAME_SIGNAL, a signal handler's frames, which are
 * whole by construction (the walk went through the signal frame that entered it): the
 * outermost frame of MPI's interface there places the task in that call, no MPI frame at all
 * outside MPI -- even when the handler interrupted an MPI call, or a probed call returning
 * through its trampoline, beneath it: a handler that spins holds its task outside MPI until
 * it returns. With no signal frame, the outermost frame of MPI's interface places it in the
 * call; none, outside MPI only when the walk went past any MPI code there was (it reached
 * the program's own outer frames, not a trampoline nor MPI's internals). */
void pdi_stack_frames_place(char *const *frames, size_t n, struct pdi_frames_place *ret);

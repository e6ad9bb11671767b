/* SPDX-License-Identifier: GPL-2.0-only */
/* stackwalk.h -- a thread's live call stack, taken the way STAT does: seize it with ptrace,
 * interrupt it, unwind with libunwind, let it go. For the "full stack where known" of a task
 * blocked inside an MPI call; never per call. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "objcache.h"
#include "procmaps.h"

/* How long a thread may take to stop before the walk gives up (-ETIMEDOUT). */
#define PDI_STACK_WALK_TIMEOUT_MS 1000
/* Deeper stacks are cut here (recursion gone wrong) */
#define PDI_STACK_WALK_MAX_FRAMES 256

/* Walk the stack of thread TID of process PID (a process's main thread is its pid). TID must
 * be a thread of PID before it is seized and still the same thread (its start time) once it
 * is stopped, or it is let go unread (-ESRCH): a tid reused by another process is not walked. Fills *RET_FRAMES with
 * *RET_N strings, outermost frame first, each "FUNC@FILE:LINE", or "FUNC@OBJECT+0xADDR"
 * without DWARF (ADDR as in daemon/sites.c: the ELF address of the frame's instruction, or
 * of the return address for the frames that made a call), "?" for an unknown function or
 * object, PDI_FRAME_UPROBES where the walk could not go on past a uretprobe trampoline, and
 * PDI_FRAME_SIGNAL for the kernel's return into code a signal interrupted: the frames inside it
 * are the handler's (lib/analysis/stack_frames.h). A trampoline the signal landed on (a probed
 * call returning) is replaced by UPROBE_RET_FIXUP as a return address is.
 *
 * UPROBE_RET_FIXUP: while the thread is inside a probed MPI function, pdimond's uretprobe has
 * replaced that function's return address with the kernel's trampoline in the "[uprobes]"
 * mapping; pass the real one (pdi_inflight's callsite, the application's call) and the walk
 * continues through the caller. 0 when not known. Only the first (innermost) trampoline is
 * replaced: with nested probed calls (pdi_inflight.active > 1) the walk ends at the second.
 *
 * OBJS symbolizes (shared with sites.c); with LINES, a frame is named by its source line where
 * DWARF gives one ("FUNC@FILE:LINE"), else by its object ("FUNC@OBJECT+0xADDR", no DWARF read:
 * a library's debug file is often compressed, and inflating libc's took most of pdimond's CPU
 * when the hang judge looked at stacks with a fresh cache each time). MAPS: TID's process's mappings, read on first use
 * when zeroed and reread in place when an address is not in them (like a task's maps).
 *
 * The thread is stopped for the walk only, bounded by PDI_STACK_WALK_TIMEOUT_MS; it is never
 * left stopped (a signal that arrived meanwhile is delivered) and its memory and registers are
 * never written. Other threads of the process keep running. Needs CAP_SYS_PTRACE (or the
 * same user and a permissive Yama ptrace_scope).
 *
 * Returns 0, or negative errno: -ESRCH if the thread is gone (or exits during the walk),
 * -EPERM if not permitted (or it is traced already, e.g. by a debugger), -ETIMEDOUT,
 * -EIO if not even one frame could be read, -ENOMEM. Outputs are untouched on failure. */
int pdi_stack_walk(pid_t pid, pid_t tid, uint64_t uprobe_ret_fixup, struct pdi_objcache *objs, bool lines,
		   struct pdi_maps *maps, char ***ret_frames, size_t *ret_n);

/* pdi_stack_walk() with the trampoline range given instead of read from /proc/TID/maps: what
 * tests use to exercise the substitution. [TRAMP_START, TRAMP_END) empty: no trampoline. */
int pdi_stack_walk_range(pid_t pid, pid_t tid, uint64_t uprobe_ret_fixup, uint64_t tramp_start,
			 uint64_t tramp_end, struct pdi_objcache *objs, bool lines, struct pdi_maps *maps,
			 char ***ret_frames, size_t *ret_n);

/* Free what pdi_stack_walk() returned. NULL ok. */
void pdi_stack_frames_free(char **frames, size_t n);

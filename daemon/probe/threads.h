/* SPDX-License-Identifier: GPL-2.0-only */
/* threads.h -- a process's thread ids, read from /proc/PID/task only when the list held is older
 * than what its caller needs.
 *
 * The budget's held return links (retired.h) ask, at every look, which threads of a task may
 * have a call in flight entered before an instant: every such thread was alive then, so a list
 * read at or after that instant names each of them that still lives (a thread that exited since
 * has no call in flight). One read per instant asked about, not one per look. */
#pragma once

#include <dirent.h>
#include <stdint.h>
#include <sys/types.h>

/* Threads of a process listed at most: past that the answer is "not known" (a caller holding
 * links for their calls holds them until its bound). */
#define PDI_THREADS_MAX 4096

/* PID's threads one by one: pdi_threads_open() (NULL and errno when it cannot), then
 * pdi_threads_next() until it returns 0 (past the last), -E2BIG (past PDI_THREADS_MAX, counted in
 * *SEEN, which starts at 0) or another negative errno; 1 with the next thread id in *RET_TID. The
 * caller closes DIR. */
DIR *pdi_threads_open(pid_t pid);
int pdi_threads_next(DIR *dir, unsigned *seen, pid_t *ret_tid);

struct pdi_threads {
	pid_t *tids;
	unsigned n;
	uint64_t read_ns; /* CLOCK_MONOTONIC just before the list was read; 0: never read */
};

/* *C, the threads of PID, read again unless it was read at or after SINCE_NS. 0; -ENOENT when
 * PID is gone, -E2BIG past PDI_THREADS_MAX threads, another negative errno: *C untouched. */
int pdi_threads_since(struct pdi_threads *c, pid_t pid, uint64_t since_ns);
void pdi_threads_free(struct pdi_threads *c);

/* SPDX-License-Identifier: GPL-2.0-only */
/* uprobe_multi.h -- BPF_TRACE_UPROBE_MULTI links, which Debian 12's libbpf 1.1 predates.
 *
 * One multi link carries all of a process's probes: one attach and, above all, one
 * detach. Detaching a perf-event uprobe link waits for an RCU tasks-trace grace period
 * (tens of ms here), so per-function links made a 4-rank job's exit take a minute. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Does the running kernel take uprobe_multi links (Linux 6.6+)? Probed once. */
bool pdi_uprobe_multi_supported(void);

/* The attach type a program must be loaded with to be attached this way. */
#define PDI_BPF_TRACE_UPROBE_MULTI 48

/* Attach PROG_FD at CNT offsets of PATH, for PID only, each with its cookie.
 * Returns the link fd, or negative errno. */
int pdi_uprobe_multi_attach(int prog_fd, const char *path, const uint64_t *offsets,
			    const uint64_t *cookies, uint32_t cnt, bool retprobe, pid_t pid);
/* The entry (PROGS[0]) and, WITH_RETURN, return (PROGS[1]) links for the same CNT probes into
 * FDS (entry, return; -1 unused): the return link first, since a call entered between the two
 * attaches would otherwise leave an in-flight entry that no return clears. 0, or negative errno
 * with none attached. Any thread: it touches only its arguments. */
int pdi_uprobe_multi_attach_pair(const int progs[2], const char *path, const uint64_t *offsets,
				 const uint64_t *cookies, uint32_t cnt, bool with_return, pid_t pid, int fds[2]);

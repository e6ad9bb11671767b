/* SPDX-License-Identifier: GPL-2.0-only */
/* close_together.h -- uprobe links closed at once. Closing a link waits for an RCU grace period
 * (tens of ms, up to a second on a loaded node); closes under way together share one, so n links
 * closed from n threads take about one period where one after the other took n. */
#pragma once

struct bpf_link;

/* Close the NFDS link fds FDS (-1 skipped) and destroy the NLINKS libbpf links LINKS (NULL
 * skipped), each on a thread of its own, and return when all are closed. What no thread could
 * be made for is closed on the caller's. Blocks: never on pdimond's loop. */
void pdi_links_close_together(int *fds, unsigned nfds, struct bpf_link **links, unsigned nlinks);
/* An entry and return pair of link fds FDS (-1 skipped) join the malloc'd array *LIST of *N fds
 * to close later (off the loop), and are -1 after; closed at once when memory is short. */
void pdi_links_keep_pair(int **list, unsigned *n, int fds[2]);
/* Close an entry and return pair of uprobe_multi link fds (-1 skipped), one after the other,
 * on the caller's time; both are -1 after. */
void pdi_links_close_pair(int fds[2]);

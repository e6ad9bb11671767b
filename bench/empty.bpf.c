/* SPDX-License-Identifier: GPL-2.0-only */
/* empty.bpf.c -- the floor of the call-cost benchmark: uprobe programs that do nothing.
 *
 * Attached where pdimond attaches bpf/mpitrace.bpf.c, they measure what a trap into the
 * kernel and back costs per probed call, which no BPF program can go below. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("uprobe")
int BPF_KPROBE(empty_enter)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(empty_exit)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

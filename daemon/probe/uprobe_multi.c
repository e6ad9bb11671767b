/* SPDX-License-Identifier: GPL-2.0-only */
/* uprobe_multi.c -- BPF_LINK_CREATE for uprobe_multi, by hand: the uapi headers and libbpf
 * of Debian 12 know neither the attach type nor its bpf_attr layout. The layout is the
 * kernel's stable uapi (include/uapi/linux/bpf.h since 6.6). */
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "uprobe_multi.h"

#define UPROBE_MULTI_RETURN 1u

/* The BPF_LINK_CREATE part of union bpf_attr for uprobe_multi. */
struct link_create_uprobe_multi {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
};

int pdi_uprobe_multi_attach(int prog_fd, const char *path, const uint64_t *offsets,
			    const uint64_t *cookies, uint32_t cnt, bool retprobe, pid_t pid)
{
	union {
		union bpf_attr attr; /* the kernel checks that the unused tail is zero */
		struct link_create_uprobe_multi lc;
	} a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.lc.prog_fd = (uint32_t)prog_fd;
	a.lc.attach_type = PDI_BPF_TRACE_UPROBE_MULTI;
	a.lc.path = (uint64_t)(uintptr_t)path;
	a.lc.offsets = (uint64_t)(uintptr_t)offsets;
	a.lc.cookies = (uint64_t)(uintptr_t)cookies;
	a.lc.cnt = cnt;
	a.lc.multi_flags = retprobe ? UPROBE_MULTI_RETURN : 0;
	a.lc.pid = (uint32_t)pid;
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &a.attr, sizeof(a));
	return fd < 0 ? -errno : fd;
}

int pdi_uprobe_multi_attach_pair(const int progs[2], const char *path, const uint64_t *offsets,
				 const uint64_t *cookies, uint32_t cnt, bool with_return, pid_t pid, int fds[2])
{
	fds[0] = fds[1] = -1;
	for (int ret = with_return; ret >= 0; ret--) {
		int fd = pdi_uprobe_multi_attach(progs[ret], path, offsets, cookies, cnt, ret, pid);

		if (fd < 0) {
			if (fds[1] >= 0)
				close(fds[1]);
			fds[1] = -1;
			return fd;
		}
		fds[ret] = fd;
	}
	return 0;
}

bool pdi_uprobe_multi_supported(void)
{
	static int supported = -1;
	/* r0 = 0; exit */
	const struct bpf_insn insns[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = PDI_BPF_TRACE_UPROBE_MULTI);
	int fd;

	if (supported >= 0)
		return supported;
	/* a kernel that does not know the attach type refuses to load the program with it */
	fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "pdi_probe", "GPL", insns, 2, &opts);
	if (fd < 0) {
		supported = 0;
		return false;
	}
	/* and one that knows it fails on a directory with EBADF, not EINVAL */
	{
		uint64_t off = 0;
		int l = pdi_uprobe_multi_attach(fd, "/", &off, NULL, 1, false, 0);

		supported = l != -EINVAL && l != -EOPNOTSUPP;
		if (l >= 0)
			close(l);
	}
	close(fd);
	return supported;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* objopen.c -- open the files users' processes map, pinned to what is mapped.
 *
 * A path in /proc/PID/maps is the user's to change: the mapped file can be unlinked and a FIFO
 * put in its place (an open() would block pdimond for good), or a symlink to any file of the
 * node. So a file is first reached with O_PATH, which opens nothing (no FIFO waits, no device
 * acts), checked with fstat(), and only then opened for reading through /proc/self/fd. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "objopen.h"

/* An O_PATH fd into a readable one, if what it names may be read. Closes PATHFD. */
static int reopen_checked(int pathfd, uint64_t want_ino, int *ret_fd)
{
	struct stat st, st2;
	char fn[64];
	int fd, r = 0;

	if (fstat(pathfd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = PDI_EOBJ_NOT_REGULAR;
	else if ((uint64_t)st.st_size > PDI_OBJECT_MAX_BYTES)
		r = PDI_EOBJ_TOO_BIG;
	/* only the inode number: on btrfs and overlayfs st_dev differs from the device maps shows */
	else if (want_ino && (uint64_t)st.st_ino != want_ino)
		r = PDI_EOBJ_REPLACED;
	if (r < 0) {
		close(pathfd);
		return r;
	}
	snprintf(fn, sizeof(fn), "/proc/self/fd/%d", pathfd);
	fd = open(fn, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	r = fd < 0 ? -errno : 0;
	close(pathfd);
	if (r < 0)
		return r;
	/* the same inode, reopened: a magic link cannot be swapped, but say so if it ever were */
	if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
		close(fd);
		return PDI_EOBJ_REPLACED;
	}
	*ret_fd = fd;
	return 0;
}

/* M->path inside PID's root, no symlink followed: a path in maps is canonical already. */
static int open_in_root(pid_t pid, const struct pdi_mapping *m)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	char fn[64];
	int root, fd;

	snprintf(fn, sizeof(fn), "/proc/%d/root", (int)pid);
	root = open(fn, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	fd = (int)syscall(SYS_openat2, root, m->path, &how, sizeof(how));
	if (fd < 0)
		fd = errno == ELOOP ? PDI_EOBJ_REPLACED : -errno; /* a symlink where the file was */
	close(root);
	return fd;
}

int pdi_objopen_mapped(pid_t pid, const struct pdi_mapping *m, int *ret_fd)
{
	char fn[96];
	int fd, r;

	if (!m->path)
		return -EINVAL;
	/* the very file mapped; needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE */
	snprintf(fn, sizeof(fn), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
	fd = open(fn, O_PATH | O_CLOEXEC);
	if (fd >= 0)
		return reopen_checked(fd, m->ino, ret_fd);
	r = -errno;
	/* a deleted file's path names another file, or nothing */
	if (m->deleted)
		return r == -ENOENT ? -ESRCH : r;
	fd = open_in_root(pid, m);
	if (fd < 0)
		return fd;
	return reopen_checked(fd, m->ino, ret_fd);
}

int pdi_objopen_path(const char *path, uint64_t want_ino, int *ret_fd)
{
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return reopen_checked(fd, want_ino, ret_fd);
}

const char *pdi_objopen_strerror(int r)
{
	switch (r) {
	case PDI_EOBJ_NOT_REGULAR: return "not a regular file";
	case PDI_EOBJ_TOO_BIG: return "larger than pdimond reads";
	case PDI_EOBJ_REPLACED: return "another file than the one mapped";
	default: return strerror(-r);
	}
}

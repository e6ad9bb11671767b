/* SPDX-License-Identifier: GPL-2.0-only */
/* stallfs.c -- a file system that does not answer: `stallfs MOUNTPOINT MAX_SECONDS` mounts
 * (FUSE) one file, /data, whose reads never come back until stallfs is told to let go
 * (SIGUSR1: they fail with EIO from then on) or MAX_SECONDS have passed. A process that reads
 * it waits in the kernel, in uninterruptible sleep on the page it asked for, as it would on a
 * hung network file system: the stuck task of the diagnosis's tests and campaign. It serves
 * in the foreground and unmounts when it ends (SIGTERM, SIGINT, or after MAX_SECONDS and a
 * release). */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILE_SIZE (64u << 20)

static int release_pipe[2] = {-1, -1};
static time_t deadline;

static void on_release(int sig)
{
	char c = 1;

	(void)sig;
	(void)!write(release_pipe[1], &c, 1); /* the pipe stays readable: every waiter wakes */
}

static int stall_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (strcmp(path, "/data"))
		return -ENOENT;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = FILE_SIZE;
	return 0;
}

static int stall_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, "/data"))
		return -ENOENT;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	return 0;
}

/* Never answers until released (or the deadline): the reader waits in the kernel. */
static int stall_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct pollfd p = {.fd = release_pipe[0], .events = POLLIN};
	time_t left;

	(void)path;
	(void)buf;
	(void)size;
	(void)off;
	(void)fi;
	while ((left = deadline - time(NULL)) > 0 && poll(&p, 1, (int)(left > 60 ? 60000 : left * 1000)) <= 0)
		;
	return -EIO;
}

static int stall_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
			 enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "data", NULL, 0, 0);
	return 0;
}

static const struct fuse_operations ops = {
	.getattr = stall_getattr,
	.open = stall_open,
	.read = stall_read,
	.readdir = stall_readdir,
};

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_release};
	long max;
	char *args[] = {argv[0], "-f", "-o", "fsname=stallfs,ro,max_threads=8", argc > 1 ? argv[1] : NULL, NULL};

	if (argc != 3 || (max = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: stallfs MOUNTPOINT MAX_SECONDS\n");
		return 2;
	}
	if (pipe(release_pipe) < 0) {
		perror("stallfs: pipe");
		return 1;
	}
	deadline = time(NULL) + max;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) < 0) {
		perror("stallfs: sigaction");
		return 1;
	}
	return fuse_main(5, args, &ops, NULL);
}

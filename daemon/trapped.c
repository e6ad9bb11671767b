/* SPDX-License-Identifier: GPL-2.0-only */
/* trapped.c -- records of watched roots, and the release of what a dead pdimond left stopped.
 *
 * A record is a file "watch.PID.START" holding "BOOT_ID OWNER_PID OWNER_START": who is
 * watched and which pdimond watches it. Stopped processes are found by their ancestry, as the
 * BPF trap finds their watched root (real parents, a bounded number of levels up). A process a
 * user stopped on purpose inside a watched tree is continued too when pdimond restarts: the
 * price of never leaving one stopped by us; stopped by us and never continued is worse. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "trapped.h"
#include "u64map.h"

#define MAX_ANCESTORS 16 /* as bpf/mpitrace.bpf.c's trap looks up */

struct record {
	pid_t root;
	uint64_t root_start;
	char boot_id[PDI_BOOT_ID_LEN + 1];
	pid_t owner;
	uint64_t owner_start;
};

static void record_name(char *buf, size_t len, const char *dir, pid_t pid, uint64_t start)
{
	snprintf(buf, len, "%s/watch.%d.%" PRIu64, dir, (int)pid, start);
}

void pdi_trapped_note(const char *dir, const struct pdi_ident *root)
{
	char fn[4096], tmp[4200], text[128];
	uint64_t self_start = 0;
	int fd, n;

	if (!dir || !*dir)
		return;
	(void)pdi_proc_stat(getpid(), 0, &self_start, NULL, NULL);
	n = snprintf(text, sizeof(text), "%s %d %" PRIu64 "\n", pdi_boot_id(), (int)getpid(), self_start);
	record_name(fn, sizeof(fn), dir, root->pid, root->start_ticks);
	snprintf(tmp, sizeof(tmp), "%s.tmp", fn);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		log_warning("Cannot create %s, a crash of pdimond could leave trapped processes stopped: %m", dir);
		return;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || write(fd, text, (size_t)n) != n || rename(tmp, fn) < 0)
		log_warning("Cannot record watched pid %d in %s, a crash of pdimond could leave its tree "
			    "stopped: %m", (int)root->pid, dir);
	if (fd >= 0)
		close(fd);
}

void pdi_trapped_forget(const char *dir, const struct pdi_ident *root)
{
	char fn[4096];

	if (!dir || !*dir)
		return;
	record_name(fn, sizeof(fn), dir, root->pid, root->start_ticks);
	(void)unlink(fn);
}

static int read_record(const char *dir, const char *name, struct record *ret)
{
	char fn[4096], text[128];
	int fd, pid, owner;
	ssize_t n;

	if (sscanf(name, "watch.%d.%" SCNu64, &pid, &ret->root_start) != 2)
		return -EINVAL;
	ret->root = pid;
	snprintf(fn, sizeof(fn), "%s/%s", dir, name);
	fd = open(fn, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n <= 0)
		return -EBADMSG;
	text[n] = '\0';
	if (sscanf(text, "%36s %d %" SCNu64, ret->boot_id, &owner, &ret->owner_start) != 3)
		return -EBADMSG;
	ret->owner = owner;
	return 0;
}

/* Every process's parent and state, by pid: one pass over /proc. */
struct procs {
	struct pdi_u64map parent; /* pid -> ppid */
	pid_t *stopped;           /* in state T */
	size_t nstopped;
};

static int scan_procs(struct procs *ret)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t cap = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name), ppid;
		char state;

		if (pid <= 0 || pdi_proc_stat(pid, 0, NULL, &ppid, &state) < 0)
			continue;
		(void)pdi_u64map_put(&ret->parent, (uint64_t)pid, (uint32_t)ppid);
		if (state != 'T')
			continue;
		if (ret->nstopped == cap) {
			pid_t *v = realloc(ret->stopped, (cap ? cap * 2 : 16) * sizeof(*v));

			if (!v)
				break;
			ret->stopped = v;
			cap = cap ? cap * 2 : 16;
		}
		ret->stopped[ret->nstopped++] = pid;
	}
	closedir(d);
	return 0;
}

static bool descends_from(const struct procs *p, pid_t pid, pid_t root)
{
	for (int i = 0; i <= MAX_ANCESTORS && pid > 1; i++) {
		uint32_t ppid;

		if (pid == root)
			return true;
		ppid = pdi_u64map_get(&p->parent, (uint64_t)pid);
		if (ppid == PDI_U64MAP_NONE)
			return false;
		pid = (pid_t)ppid;
	}
	return false;
}

/* Continue the stopped processes of REC's tree; how many. */
static int release_tree(const struct record *rec, const struct procs *p, pdi_trapped_join_fn join, void *ctx)
{
	int n = 0;

	for (size_t i = 0; i < p->nstopped; i++) {
		struct pdi_ident id;
		char state;

		if (!descends_from(p, p->stopped[i], rec->root) || pdi_ident_pin(p->stopped[i], &id) < 0)
			continue;
		/* pinned now: is it still stopped, and still in that tree? */
		if (pdi_proc_stat(id.pid, 0, NULL, NULL, &state) == 0 && state == 'T') {
			if (join)
				join(ctx, rec->root, &id);
			if (pdi_ident_signal(&id, SIGCONT) == 0) {
				log_info("Continued pid %d (uid %u), left stopped in MPI_Init by a pdimond that is gone",
					 (int)id.pid, (unsigned)id.uid);
				n++;
			}
		}
		pdi_ident_release(&id);
	}
	return n;
}

int pdi_trapped_release(const char *dir, pdi_trapped_join_fn join, void *ctx)
{
	struct procs p = {0};
	uint64_t self_start = 0;
	struct dirent *e;
	int n = 0, r;
	DIR *d;

	if (!dir || !*dir)
		return 0;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	r = scan_procs(&p);
	(void)pdi_proc_stat(getpid(), 0, &self_start, NULL, NULL);
	while (r == 0 && (e = readdir(d))) {
		struct record rec;
		bool ours, owner_runs, root_runs;
		char fn[4096];

		if (read_record(dir, e->d_name, &rec) < 0)
			continue;
		ours = rec.owner == getpid() && rec.owner_start == self_start;
		owner_runs = !ours && pdi_ident_matches(rec.owner, rec.owner_start, rec.boot_id);
		if (owner_runs)
			continue; /* another live pdimond's watch: it continues its own */
		root_runs = pdi_ident_matches(rec.root, rec.root_start, rec.boot_id);
		if (root_runs)
			n += release_tree(&rec, &p, join, ctx);
		/* nobody watches it any more (ours are rewritten as long as we watch) */
		if (!ours) {
			snprintf(fn, sizeof(fn), "%s/%s", dir, e->d_name);
			(void)unlink(fn);
		}
	}
	closedir(d);
	pdi_u64map_free(&p.parent);
	free(p.stopped);
	return r < 0 ? r : n;
}

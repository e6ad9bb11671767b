/* SPDX-License-Identifier: GPL-2.0-only */
/* step_group.c -- a step's own cgroup, pinned at registration and read on the usage timer
 * (step_group.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "step_group.h"
#include "task_activity.h"

/* A cgroup path deeper than this is not followed: the kernel's own are far shorter (Slurm's
 * /system.slice/slurmstepd.scope/job_N/step_M/user/task_K). */
#define PATH_MAX_GROUP 512

struct pdi_step_group {
	bool none;     /* no group for good: the root, another step's tasks in it, or a read failed */
	bool v1;       /* v1's cpuacct hierarchy, where v2 has none of its own for the step */
	char path[PATH_MAX_GROUP]; /* the tasks' common cgroup, from the hierarchy's root ("/a/b") */
	int fd;        /* its cpu.stat (v2) or cpuacct.usage (v1), held open; -1 none */
	uint64_t ns, at_ns; /* the last reading and when (CLOCK_MONOTONIC) */
};

/* The mount of cgroup v2 and of v1's cpuacct, where their roots are mounted whole (root "/" in
 * /proc/self/mountinfo), opened O_PATH; -1 when absent. */
static void find_mounts(struct pdi_daemon *d)
{
	char line[1024], root[PATH_MAX_GROUP], point[PATH_MAX_GROUP], fstype[32], opts[512];
	FILE *f;

	d->cgroup_looked = true;
	if (!(f = fopen("/proc/self/mountinfo", "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		/* id parent major:minor root point options [optional...] - fstype source super */
		const char *dash = strstr(line, " - ");
		int *fd;

		if (!dash || sscanf(line, "%*s %*s %*s %511s %511s", root, point) != 2 ||
		    sscanf(dash + 3, "%31s %*s %511s", fstype, opts) != 2 || strcmp(root, "/"))
			continue;
		if (!strcmp(fstype, "cgroup2"))
			fd = &d->cgroup_v2_fd;
		else if (!strcmp(fstype, "cgroup") && strstr(opts, "cpuacct"))
			fd = &d->cgroup_v1_fd;
		else
			continue;
		if (*fd < 0 && !strchr(point, '\\')) /* an escaped name (a space): not ours */
			*fd = open(point, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	fclose(f);
}

/* Whether the controllers field of a v1 line of /proc/PID/cgroup names cpuacct. */
static bool names_cpuacct(const char *controllers, size_t len)
{
	for (const char *p = controllers; p < controllers + len;) {
		const char *end = memchr(p, ',', (size_t)(controllers + len - p));
		size_t n = end ? (size_t)(end - p) : (size_t)(controllers + len - p);

		if (n == 7 && !memcmp(p, "cpuacct", 7))
			return true;
		p += n + 1;
	}
	return false;
}

/* PID's cgroup in v2 (V1 false) or v1's cpuacct hierarchy, into RET: 0, or -errno. */
static int task_group(pid_t pid, bool v1, char *ret, size_t len)
{
	char buf[4096];
	ssize_t n = pdi_task_proc_read(pid, pid, "cgroup", buf, sizeof(buf));

	if (n <= 0)
		return n < 0 ? (int)n : -ENODATA;
	for (char *line = buf, *next; *line; line = next) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		next = strchr(line, '\n');
		next = next ? (*next = '\0', next + 1) : line + strlen(line);
		if (!c2 || c2[1] != '/')
			continue;
		if (v1 ? !names_cpuacct(c1 + 1, (size_t)(c2 - c1 - 1)) : strncmp(line, "0::", 3))
			continue;
		if (strlen(c2 + 1) >= len)
			return -ENAMETOOLONG;
		strcpy(ret, c2 + 1);
		return 0;
	}
	return -ENOENT;
}

/* PATH cut to its longest ancestor (or itself) that also holds OTHER, at a '/'. */
static void common_ancestor(char *path, const char *other)
{
	size_t i = 0, cut = 1;

	while (path[i] && path[i] == other[i])
		i++;
	if ((!path[i] || path[i] == '/') && (!other[i] || other[i] == '/'))
		cut = i; /* one is the other's ancestor, or they are the same */
	else
		for (size_t j = i; j > 0; j--)
			if (path[j - 1] == '/') {
				cut = j - 1;
				break;
			}
	path[cut ? cut : 1] = '\0'; /* "/" at least */
}

/* Whether group A holds group B (B is A or lies beneath it). */
static bool holds(const char *a, const char *b)
{
	size_t n = strlen(a);

	return !strcmp(a, "/") || (!strncmp(a, b, n) && (!b[n] || b[n] == '/'));
}

static void drop(struct pdi_step_group *g)
{
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
	g->none = true;
}

/* G's file, opened beneath the hierarchy's mount MOUNT_FD without following any link: the path
 * comes from /proc, but a directory of the job's own cgroup may be the user's to rename. */
static int open_file(int mount_fd, const struct pdi_step_group *g)
{
	char rel[PATH_MAX_GROUP + 32];
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
	int fd;

	if (strstr(g->path, "/../") || snprintf(rel, sizeof(rel), "%s/%s", g->path + 1,
						 g->v1 ? "cpuacct.usage" : "cpu.stat") >= (int)sizeof(rel))
		return -ENAMETOOLONG;
	fd = (int)syscall(SYS_openat2, mount_fd, rel, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) /* before Linux 5.6: the last component at least */
		fd = openat(mount_fd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

/* Whether another step of D has tasks in S's group G, or S's tasks are in another's (whose group
 * is then shared: dropped). */
static bool shared(struct pdi_daemon *d, const struct pdi_step *s, const struct pdi_step_group *g)
{
	bool ours = false;

	for (unsigned i = 0; i < d->reg.nsteps; i++) {
		struct pdi_step_group *o = d->reg.steps[i]->group;

		if (d->reg.steps[i] == s || !o || o->v1 != g->v1 || !o->path[0])
			continue;
		if (holds(g->path, o->path))
			ours = true;
		if (holds(o->path, g->path) && !o->none) {
			log_debug("Step %s: its cgroup %s also holds step %s's tasks: its CPU is not read",
				  d->reg.steps[i]->name, o->path, s->name);
			drop(o);
		}
	}
	return ours;
}

void pdi_step_group_join(struct pdi_daemon *d, struct pdi_step *s, struct pdi_task *t)
{
	struct pdi_step_group *g = s->group;
	char path[PATH_MAX_GROUP];
	bool v1;
	int r, fd;

	if (!d->cgroup_looked)
		find_mounts(d);
	if (g && g->none)
		return;
	/* v2 where the first task has a cgroup of its own there, else v1's cpuacct */
	v1 = g ? g->v1 : d->cgroup_v2_fd < 0 || task_group(t->pid, false, path, sizeof(path)) < 0 || !strcmp(path, "/");
	r = (v1 ? d->cgroup_v1_fd : d->cgroup_v2_fd) < 0 ? -ENOENT : task_group(t->pid, v1, path, sizeof(path));
	if (r < 0) {
		/* no such hierarchy, or a task gone before it joined (it ran to its end while the loop
		 * was busy): left out, the others decide */
		log_debug("Step %s: pid %d's cgroup not read (%s): left out of its group", s->name, (int)t->pid,
			  strerror(-r));
		return;
	}
	if (!g) {
		if (!(g = s->group = calloc(1, sizeof(*g))))
			return; /* no group: the rule that reads it stays silent */
		g->fd = -1;
		g->v1 = v1;
	}
	if (g->path[0])
		common_ancestor(path, g->path);
	if (!strcmp(path, g->path))
		return; /* the same group: pinned already */
	strcpy(g->path, path);
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
	if (!strcmp(path, "/") || shared(d, s, g)) {
		log_debug("Step %s: its tasks' cgroup %s is %s: its group's CPU is not read", s->name, path,
			  strcmp(path, "/") ? "shared with another step" : "the root");
		drop(g);
		return;
	}
	fd = open_file(g->v1 ? d->cgroup_v1_fd : d->cgroup_v2_fd, g);
	if (fd < 0) {
		log_debug("Step %s: cannot open its cgroup %s's CPU: %s", s->name, path, strerror(-fd));
		drop(g);
		return;
	}
	g->fd = fd;
	g->at_ns = 0;
	log_info("Step %s: reading the CPU of its cgroup %s (%s)", s->name, path, g->v1 ? "v1 cpuacct" : "v2");
}

/* The CPU G's file says (ns): 0, or -errno. */
static int read_group(const struct pdi_step_group *g, uint64_t *ret)
{
	char buf[256];
	ssize_t n = pread(g->fd, buf, sizeof(buf) - 1, 0);
	unsigned long long v;

	if (n <= 0)
		return n < 0 ? -errno : -ENODATA;
	buf[n] = '\0';
	if (g->v1 ? sscanf(buf, "%llu", &v) != 1 : sscanf(buf, "usage_usec %llu", &v) != 1)
		return -EBADMSG;
	*ret = g->v1 ? v : v * 1000ull;
	return 0;
}

uint64_t pdi_step_group_ns(struct pdi_step *s, uint64_t now_ns)
{
	struct pdi_step_group *g = s->group;
	uint64_t v;
	int r;

	if (!g || g->fd < 0)
		return 0;
	if (g->at_ns && now_ns >= g->at_ns && now_ns - g->at_ns < PDI_STEP_GROUP_FRESH_NS)
		return g->ns;
	r = read_group(g, &v);
	if (r < 0) {
		log_warning("Step %s: cannot read the CPU of its cgroup %s any more (%s): not read from now on", s->name,
			    g->path, strerror(-r));
		drop(g);
		return 0;
	}
	g->ns = v;
	g->at_ns = now_ns;
	return v;
}

const char *pdi_step_group_path(const struct pdi_step *s)
{
	return s->group && s->group->fd >= 0 ? s->group->path : "";
}

void pdi_step_group_done(struct pdi_step *s)
{
	if (!s->group)
		return;
	if (s->group->fd >= 0)
		close(s->group->fd);
	free(s->group);
	s->group = NULL;
}

void pdi_step_group_close_mounts(struct pdi_daemon *d)
{
	if (d->cgroup_v2_fd >= 0)
		close(d->cgroup_v2_fd);
	if (d->cgroup_v1_fd >= 0)
		close(d->cgroup_v1_fd);
	d->cgroup_v2_fd = d->cgroup_v1_fd = -1;
	d->cgroup_looked = false;
}

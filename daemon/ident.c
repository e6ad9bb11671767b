/* SPDX-License-Identifier: GPL-2.0-only */
/* ident.c -- pinning processes and threads pdimond acts on.
 *
 * A pid is only a number: once its process has exited, the next process may get it, and a
 * ptrace, a SIGCONT or a join aimed at the old one lands on someone else's. A pidfd names one
 * process for good; its start time (with the boot id) names it across a restart of pdimond. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ident.h"

static int pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

int pdi_proc_stat(pid_t pid, pid_t tid, uint64_t *ret_start_ticks, pid_t *ret_ppid, char *ret_state)
{
	char fn[64], buf[1024], *p;
	unsigned long long start;
	int ppid, fd;
	ssize_t n;
	char state;

	if (tid > 0)
		snprintf(fn, sizeof(fn), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	else
		snprintf(fn, sizeof(fn), "/proc/%d/stat", (int)pid);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 && errno != ESRCH ? -errno : -ESRCH;
	buf[n] = '\0';
	/* the command name may hold spaces and parentheses: fields start after the last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &state, &ppid, &start) != 3)
		return -EBADMSG;
	if (state == 'Z' || state == 'X')
		return -ESRCH;
	if (ret_start_ticks)
		*ret_start_ticks = start;
	if (ret_ppid)
		*ret_ppid = ppid;
	if (ret_state)
		*ret_state = state;
	return 0;
}

static int proc_uids(pid_t pid, uid_t *ret_uid, uid_t *ret_euid)
{
	char fn[64], line[256];
	unsigned ruid, euid;
	int r = -EBADMSG;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/status", (int)pid);
	f = fopen(fn, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u %u", &ruid, &euid) == 2) {
			*ret_uid = ruid;
			*ret_euid = euid;
			r = 0;
			break;
		}
	fclose(f);
	return r;
}

int pdi_ident_pin(pid_t pid, struct pdi_ident *ret)
{
	struct pdi_ident id = {.pid = pid};
	int r;

	if (pid <= 0)
		return -ESRCH;
	id.pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (id.pidfd < 0)
		return errno == ESRCH || errno == EINVAL ? -ESRCH : -errno;
	r = pdi_proc_stat(pid, 0, &id.start_ticks, &id.ppid, NULL);
	if (r == 0)
		r = proc_uids(pid, &id.uid, &id.euid);
	/* still the process the pidfd names: what /proc said was of it */
	if (r == 0)
		r = pidfd_signal(id.pidfd, 0);
	if (r < 0) {
		close(id.pidfd);
		return r == -EBADMSG ? r : -ESRCH;
	}
	*ret = id;
	return 0;
}

void pdi_ident_release(struct pdi_ident *id)
{
	if (id && id->pidfd >= 0) {
		close(id->pidfd);
		id->pidfd = -1;
	}
}

bool pdi_ident_alive(const struct pdi_ident *id)
{
	return id->pidfd >= 0 && pidfd_signal(id->pidfd, 0) == 0;
}

bool pdi_pidfd_exited(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	return pidfd >= 0 && poll(&p, 1, 0) > 0;
}

int pdi_ident_signal(const struct pdi_ident *id, int sig)
{
	return id->pidfd < 0 ? -ESRCH : pidfd_signal(id->pidfd, sig);
}

const char *pdi_boot_id(void)
{
	static char id[PDI_BOOT_ID_LEN + 1];
	static bool read_once;

	if (!read_once) {
		FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

		read_once = true;
		if (f) {
			if (!fgets(id, sizeof(id), f))
				id[0] = '\0';
			id[strcspn(id, "\n")] = '\0';
			fclose(f);
		}
	}
	return id;
}

bool pdi_ident_matches(pid_t pid, uint64_t start_ticks, const char *boot_id)
{
	uint64_t now;

	return pid > 0 && start_ticks && boot_id && *boot_id && !strcmp(boot_id, pdi_boot_id()) &&
	       pdi_proc_stat(pid, 0, &now, NULL, NULL) == 0 && now == start_ticks;
}

uint64_t pdi_ns_to_ticks(uint64_t ns)
{
	long hz = sysconf(_SC_CLK_TCK);

	/* as the kernel's nsec_to_clock_t() for USER_HZ that divides a second */
	return ns / (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
}

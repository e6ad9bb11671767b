/* SPDX-License-Identifier: GPL-2.0-only */
/* gather.c -- bench-gather: a step's gather + merge time against the number of daemons, tree
 * (fan-out 32, pdimond's default) side by side with flat (everyone answers the root).
 *
 * Usage: bench-gather [--daemons 8,32,128] [--tasks 64] [--rounds 7] [--fanout 32]
 *                     [--model-bytes 4096] [--level-ms 2000] [--port P]
 *
 * Starts a private munged (in a temporary directory), then forks the largest number of
 * daemons minus one as gather nodes (tests/gather/gnode.c: the real daemon/cluster/peer.c and
 * daemon/cluster/gather.c) on 127.0.X.2.., one port; this process is node 0, the root. Each node
 * holds TASKS synthetic tasks in 4 classes: per class an encoded model of MODEL_BYTES and
 * the class's rank list. A gather over N daemons uses nodes 0..N-1. Rounds interleave
 * (tree N1, flat N1, tree N2, flat N2, ...) and medians are printed with the ratios
 * t(max)/t(min). Every result is checked complete (all daemons, all ranks, once). Every
 * process forked is killed at the end, whatever happens; the nodes also die with us
 * (PR_SET_PDEATHSIG). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gnode.h"
#include "log.h"
#include "peer_auth.h"

#define MAX_DAEMONS 250 /* 127.0.X.1 .. */
#define MAX_SIZES 8
#define MAX_ROUNDS 51

static pid_t children[MAX_DAEMONS + 1];
static unsigned nchildren;
static char tmpdir[64];

static void kill_all(void)
{
	for (unsigned i = 0; i < nchildren; i++)
		if (children[i] > 0)
			kill(children[i], SIGKILL);
	for (unsigned i = 0; i < nchildren; i++)
		if (children[i] > 0)
			(void)waitpid(children[i], NULL, 0);
	nchildren = 0;
	if (tmpdir[0]) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		(void)!system(cmd);
		tmpdir[0] = '\0';
	}
}

static void on_signal(int sig)
{
	(void)sig;
	exit(3); /* atexit: kill_all */
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_RDWR);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		children[nchildren++] = pid;
	return pid;
}

/* A private munged on SOCK; bounded wait until it signs. */
static int start_munged(char *sock, size_t len)
{
	char key[128], pid[128], log[128], seed[128], a[5][160];
	char *mk[] = {"mungekey", "-c", "-k", key, NULL};
	pid_t p;
	int st;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bench-gather-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -errno;
	snprintf(sock, len, "%s/munge.socket", tmpdir);
	snprintf(key, sizeof(key), "%s/munge.key", tmpdir);
	snprintf(pid, sizeof(pid), "%s/munged.pid", tmpdir);
	snprintf(log, sizeof(log), "%s/munged.log", tmpdir);
	snprintf(seed, sizeof(seed), "%s/munged.seed", tmpdir);
	p = spawn(mk);
	if (p < 0 || waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -EIO;
	children[--nchildren] = 0;
	snprintf(a[0], sizeof(a[0]), "--socket=%s", sock);
	snprintf(a[1], sizeof(a[1]), "--key-file=%s", key);
	snprintf(a[2], sizeof(a[2]), "--pid-file=%s", pid);
	snprintf(a[3], sizeof(a[3]), "--log-file=%s", log);
	snprintf(a[4], sizeof(a[4]), "--seed-file=%s", seed);
	char *md[] = {"munged", "--foreground", "--force", "--num-threads=4", a[0], a[1], a[2], a[3], a[4], NULL};
	if (spawn(md) < 0)
		return -errno;
	struct pdi_auth *auth = NULL;
	int r = pdi_auth_new(&(struct pdi_auth_options){.munge_socket = sock, .service_uid = geteuid()}, &auth);

	for (int i = 0; r == 0 && i < 200; i++) { /* 20 s */
		struct pdi_auth_claim c = {.op = "probe", .sender = "bench"};
		char *cred = NULL;

		if (pdi_auth_sign(auth, 10, 0, &c, "", 0, &cred, NULL, 0) == 0) {
			free(cred);
			pdi_auth_free(auth);
			return 0;
		}
		usleep(100000);
	}
	pdi_auth_free(auth);
	return r < 0 ? r : -ETIMEDOUT;
}

/* Nodes 1..N-1 as forked gather nodes, listening before this returns. */
static int start_nodes(const struct gnode_options *base, char names[][24], unsigned n)
{
	int fds[2];
	char b;

	if (pipe(fds) < 0)
		return -errno;
	for (unsigned i = 1; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return -errno;
		if (pid == 0) {
			struct gnode_options o = *base;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(fds[0]);
			o.name = names[i];
			o.rank0 = i * o.ntasks;
			o.ready_fd = fds[1];
			nchildren = 0; /* the parent's to kill, not ours */
			tmpdir[0] = '\0';
			_exit(gnode_serve(&o) < 0 ? 1 : 0);
		}
		children[nchildren++] = pid;
	}
	close(fds[1]);
	for (unsigned got = 1; got < n;) {
		struct pollfd p = {.fd = fds[0], .events = POLLIN};

		if (poll(&p, 1, 20000) <= 0 || read(fds[0], &b, 1) != 1) {
			close(fds[0]);
			return -ETIMEDOUT;
		}
		got++;
	}
	close(fds[0]);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double cpu_ms_self(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* Busy and total jiffies of all CPUs (/proc/stat): how saturated the machine was. */
static void cpu_jiffies(unsigned long long *busy, unsigned long long *total)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "re");

	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			 &v[6], &v[7]) != 8)
		memset(v, 0, sizeof(v));
	if (f)
		fclose(f);
	*total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	*busy = *total - v[3] - v[4];
}

/* One gather over the first N nodes with fan-out K: its time in ms, or -1 if incomplete;
 * the root's own CPU time in *ROOT_CPU_MS, machine-wide busy and total jiffies added to
 * JIFFIES[0] and [1]. */
static double one_gather(struct gnode *root, const struct gnode_options *o, const char *const *nodes, unsigned n,
			 unsigned k, double *root_cpu_ms, unsigned long long *jiffies)
{
	struct pdi_gather_result res = {0}, self = {0};
	struct gnode_check chk;
	unsigned long long b0, t0j, b1, t1j;
	double c0 = cpu_ms_self(), ms;
	uint64_t t0;
	int r;

	cpu_jiffies(&b0, &t0j);
	t0 = now_ns();
	r = gnode_own_part(root, 0, &self);
	if (r == 0)
		r = pdi_gather_run(root->g, 42, 7, "42.7", 0, nodes, n, k, 0, &self, &res);
	pdi_gather_result_done(&self);
	ms = (double)(now_ns() - t0) / 1e6;
	*root_cpu_ms = cpu_ms_self() - c0;
	cpu_jiffies(&b1, &t1j);
	jiffies[0] += b1 - b0;
	jiffies[1] += t1j - t0j;
	if (r < 0) {
		fprintf(stderr, "bench-gather: gather over %u failed: %s\n", n, strerror(-r));
		return -1;
	}
	gnode_check_payload(res.payload, res.len, o->model_bytes, &chk);
	if (res.answered != n || chk.nranks != n * o->ntasks || chk.duplicate || chk.bad_model) {
		fprintf(stderr, "bench-gather: incomplete gather over %u (k=%u): %u answered, %u ranks%s%s\n", n, k,
			res.answered, chk.nranks, res.nmissing ? ", first missing: " : "",
			res.nmissing ? res.missing_why[0] : "");
		ms = -1;
	}
	pdi_gather_result_done(&res);
	return ms;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"daemons", required_argument, NULL, 'd'}, {"tasks", required_argument, NULL, 't'},
		{"rounds", required_argument, NULL, 'r'},  {"fanout", required_argument, NULL, 'k'},
		{"model-bytes", required_argument, NULL, 'b'}, {"level-ms", required_argument, NULL, 'l'},
		{"port", required_argument, NULL, 'p'},    {0},
	};
	unsigned sizes[MAX_SIZES] = {8, 32, 128}, nsizes = 3, rounds = 7, maxn = 0, fails = 0;
	static char names[MAX_DAEMONS][24];
	const char *nodes[MAX_DAEMONS];
	static double tree[MAX_SIZES][MAX_ROUNDS], flat[MAX_SIZES][MAX_ROUNDS];
	static double tree_cpu[MAX_SIZES][MAX_ROUNDS], flat_cpu[MAX_SIZES][MAX_ROUNDS];
	static unsigned long long jiffies[MAX_SIZES][2];
	double mt[MAX_SIZES], mf[MAX_SIZES], scratch;
	unsigned long long ignored[2];
	char sock[128];
	struct gnode_options o = {.fanout = 32, .level_ms = 2000, .ntasks = 64, .model_bytes = 4096,
				  .service_uid = geteuid(), .ready_fd = -1};
	struct gnode root = {.o = &o};
	struct pdi_gather *g = NULL;
	unsigned net;
	int c, r;

	srand((unsigned)getpid());
	o.port = (uint16_t)(20000 + rand() % 20000);
	net = 10 + (unsigned)rand() % 240;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
		switch (c) {
		case 'd':
			nsizes = 0;
			for (char *s = optarg, *e; *s && nsizes < MAX_SIZES; s = *e ? e + 1 : e)
				sizes[nsizes++] = (unsigned)strtoul(s, &e, 10);
			break;
		case 't': o.ntasks = (uint32_t)atoi(optarg); break;
		case 'r': rounds = (unsigned)atoi(optarg); break;
		case 'k': o.fanout = (unsigned)atoi(optarg); break;
		case 'b': o.model_bytes = (uint32_t)atoi(optarg); break;
		case 'l': o.level_ms = (unsigned)atoi(optarg); break;
		case 'p': o.port = (uint16_t)atoi(optarg); break;
		default: return 2;
		}
	}
	for (unsigned i = 0; i < nsizes; i++)
		maxn = sizes[i] > maxn ? sizes[i] : maxn;
	if (rounds < 1 || rounds > MAX_ROUNDS || maxn < 2 || maxn > MAX_DAEMONS || o.fanout < 2) {
		fprintf(stderr, "bench-gather: 2-%u daemons, 1-%u rounds, fan-out >= 2\n", MAX_DAEMONS, MAX_ROUNDS);
		return 2;
	}
	atexit(kill_all);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	pdi_log_level = PDI_LOG_WARNING;
	for (unsigned i = 0; i < maxn; i++) {
		snprintf(names[i], sizeof(names[i]), "127.0.%u.%u", net, i + 1);
		nodes[i] = names[i];
	}
	o.munge_socket = sock;
	r = start_munged(sock, sizeof(sock));
	if (r < 0) {
		fprintf(stderr, "bench-gather: cannot start munged: %s\n", strerror(-r));
		return 1;
	}
	r = start_nodes(&o, names, maxn);
	if (r < 0) {
		fprintf(stderr, "bench-gather: cannot start %u gather nodes: %s\n", maxn - 1, strerror(-r));
		return 1;
	}
	o.name = names[0];
	struct pdi_gather_options go = {.node_name = names[0], .bind_address = names[0], .port = o.port,
					.munge_socket = sock, .fanout = o.fanout, .level_ms = o.level_ms,
					.service_uid = o.service_uid};
	r = pdi_gather_new(&go, &gnode_ops, &root, &g);
	root.g = g;
	if (r < 0) {
		fprintf(stderr, "bench-gather: %s\n", strerror(-r));
		return 1;
	}
	printf("bench-gather: %u daemons forked on 127.0.%u.x:%u, %u tasks each, models of %u bytes x %u classes; "
	       "%u rounds\n", maxn, net, o.port, o.ntasks, o.model_bytes, GNODE_NCLASSES, rounds);
	(void)one_gather(&root, &o, nodes, maxn, o.fanout, &scratch, ignored); /* warm-up: caches, munged */
	for (unsigned rd = 0; rd < rounds; rd++)
		for (unsigned s = 0; s < nsizes; s++) {
			tree[s][rd] = one_gather(&root, &o, nodes, sizes[s], o.fanout, &tree_cpu[s][rd], jiffies[s]);
			flat[s][rd] = one_gather(&root, &o, nodes, sizes[s], sizes[s], &flat_cpu[s][rd], jiffies[s]);
			fails += (tree[s][rd] < 0) + (flat[s][rd] < 0);
		}
	printf("%8s %8s %7s %10s %10s %13s %13s %9s\n", "daemons", "tasks", "levels", "tree_ms", "flat_ms",
	       "tree_root_cpu", "flat_root_cpu", "cpu_busy");
	for (unsigned s = 0; s < nsizes; s++) {
		mt[s] = median(tree[s], rounds);
		mf[s] = median(flat[s], rounds);
		printf("%8u %8u %7u %10.1f %10.1f %10.1f ms %10.1f ms %8.0f%%\n", sizes[s], sizes[s] * o.ntasks,
		       pdi_gather_height(sizes[s], o.fanout), mt[s], mf[s], median(tree_cpu[s], rounds),
		       median(flat_cpu[s], rounds), jiffies[s][1] ? 100.0 * (double)jiffies[s][0] / (double)jiffies[s][1] : 0);
	}
	if (nsizes > 1) {
		double rt = mt[nsizes - 1] / mt[0], rf = mf[nsizes - 1] / mf[0];

		printf("ratio t(%u)/t(%u): tree %.2f (target <= 2.5), flat %.2f (daemons x%.0f)\n", sizes[nsizes - 1],
		       sizes[0], rt, rf, (double)sizes[nsizes - 1] / sizes[0]);
		printf("summary tree_%u_ms=%.1f target_1s=%s tree_ratio=%.2f target_ratio=%s flat_ratio=%.2f incomplete=%u\n",
		       sizes[nsizes - 1], mt[nsizes - 1], mt[nsizes - 1] <= 1000 ? "met" : "MISSED", rt,
		       rt <= 2.5 ? "met" : "MISSED", rf, fails);
	}
	pdi_gather_free(g);
	return fails ? 1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* test-peer-auth.c -- the peer protocol's credentials against a real munged: genuine,
 * forged, for another body, replayed (MUNGE's cache and ours), expired, made by another
 * user (refused before it reaches the replay cache), valid too long, and with munged gone
 * or stopped (each call bounded in time). Root only; prints TAP.
 *
 * It runs its own munged with a fresh key on a socket in a private directory, so that it
 * neither needs nor disturbs the machine's. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "peer_auth.h"
#include "wire.h"

#define NOBODY 65534
#define START_TIMEOUT_MS 20000
#define EXPIRE_TIMEOUT_MS 8000
#define EXPIRE_PROBES 40 /* one per poll: a decoded probe cannot be decoded again */
#define CHILD_TIMEOUT_MS 10000

static char dir[] = "/tmp/pdimon-auth-XXXXXX";
static const char *munged = "/usr/sbin/munged", *mungekey = "/usr/sbin/mungekey";
static char sock[256], key[256];
static pid_t munged_pid;
static struct pdi_auth *signer; /* root's, for signing */
static int ntests, nfailed;
static bool case_failed;

/* ---- TAP ---- */

#define CHECK(cond, ...)                                                                                       \
	do {                                                                                                   \
		if (!(cond)) {                                                                                 \
			printf("#   %s:%d: %s: ", __FILE__, __LINE__, #cond);                                      \
			printf(__VA_ARGS__);                                                                   \
			printf("\n");                                                                          \
			case_failed = true;                                                                    \
			return;                                                                                \
		}                                                                                              \
	} while (0)

static void run_case(const char *name, void (*fn)(void))
{
	case_failed = false;
	fn();
	ntests++;
	nfailed += case_failed;
	printf("%s %d - %s\n", case_failed ? "not ok" : "ok", ntests, name);
	fflush(stdout);
}

/* ---- processes, every wait bounded ---- */

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&t, NULL);
}

/* The child's wait status, or -1 if it did not end in time (it is then killed). */
static int wait_child(pid_t pid, long timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	int status;

	while (now_ms() < deadline) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		nap_ms(10);
	}
	kill(pid, SIGKILL);
	(void)waitpid(pid, &status, 0); /* SIGKILL ends it: this wait is short */
	return -1;
}

static pid_t spawn(char *const argv[], const char *log)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void stop_munged(void)
{
	if (munged_pid > 0) {
		kill(munged_pid, SIGTERM);
		if (wait_child(munged_pid, 5000) < 0)
			printf("# munged did not stop on SIGTERM, killed\n");
		munged_pid = 0;
	}
}

static void cleanup(void)
{
	stop_munged();
	(void)nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void dump_log(const char *name)
{
	char path[300], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("# %s: %s", name, line);
	fclose(f);
}

static void bail(const char *msg)
{
	printf("Bail out! %s\n", msg);
	dump_log("munged.log");
	exit(1);
}

static void fill_claim(struct pdi_auth_claim *c, const char *op, uint64_t nonce)
{
	*c = (struct pdi_auth_claim){.job = 42, .step = 7, .nonce = nonce};
	snprintf(c->op, sizeof(c->op), "%s", op);
	snprintf(c->sender, sizeof(c->sender), "n1");
}

static uint64_t fresh_nonce(void)
{
	uint64_t n = 0;

	if (pdi_auth_nonce(&n) < 0)
		bail("getrandom failed");
	return n;
}

/* A verifier (or signer) on our munged, for the service uid 0. */
static struct pdi_auth *new_auth(const char *socket, size_t entries, unsigned timeout_ms)
{
	struct pdi_auth *a = NULL;

	if (pdi_auth_new(&(struct pdi_auth_options){.munge_socket = socket, .service_uid = 0,
						    .replay_entries = entries, .timeout_ms = timeout_ms},
			 &a) < 0)
		bail("pdi_auth_new failed");
	return a;
}

static char *sign(const char *op, uint64_t nonce, int ttl, const char *body)
{
	struct pdi_auth_claim c;
	char *cred = NULL;
	int r;

	fill_claim(&c, op, nonce);
	r = pdi_auth_sign(signer, ttl, 0, &c, body, strlen(body), &cred, NULL, 0);
	if (r < 0) {
		printf("# pdi_auth_sign: %s\n", strerror(-r));
		bail("cannot sign");
	}
	return cred;
}

/* Our munged: a fresh key, a socket in our directory, answering before the deadline. */
static void start_munged(void)
{
	char pidf[300], logf[300], seedf[300], outf[300], sockarg[300], keyarg[300], pidarg[320], logarg[320], seedarg[320];
	long deadline = now_ms() + START_TIMEOUT_MS;
	struct pdi_auth_claim c;
	char *cred = NULL;
	int status;

	if (!mkdtemp(dir))
		bail("mkdtemp failed");
	atexit(cleanup);
	/* traversable, so that a credential can be made as nobody; the key stays 0600 root */
	chmod(dir, 0755);
	snprintf(sock, sizeof(sock), "%s/munge.socket", dir);
	snprintf(key, sizeof(key), "%s/munge.key", dir);
	snprintf(pidf, sizeof(pidf), "%s/munged.pid", dir);
	snprintf(logf, sizeof(logf), "%s/munged.log", dir);
	snprintf(seedf, sizeof(seedf), "%s/munged.seed", dir);
	snprintf(outf, sizeof(outf), "%s/munged.out", dir);

	char *keygen[] = {(char *)mungekey, "-c", "-k", key, NULL};
	status = wait_child(spawn(keygen, outf), CHILD_TIMEOUT_MS);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bail("mungekey -c failed");
	chmod(key, 0600);

	snprintf(sockarg, sizeof(sockarg), "--socket=%s", sock);
	snprintf(keyarg, sizeof(keyarg), "--key-file=%s", key);
	snprintf(pidarg, sizeof(pidarg), "--pid-file=%s", pidf);
	snprintf(logarg, sizeof(logarg), "--log-file=%s", logf);
	snprintf(seedarg, sizeof(seedarg), "--seed-file=%s", seedf);
	char *argv[] = {(char *)munged, "--foreground", "--force", sockarg, keyarg, pidarg, logarg, seedarg, NULL};
	munged_pid = spawn(argv, outf);
	if (munged_pid < 0)
		bail("fork failed");

	fill_claim(&c, "probe", 1);
	signer = new_auth(sock, 1, 0);
	for (;;) {
		if (access(sock, F_OK) == 0 && pdi_auth_sign(signer, 10, 0, &c, "", 0, &cred, NULL, 0) == 0)
			break;
		if (waitpid(munged_pid, &status, WNOHANG) == munged_pid) {
			munged_pid = 0;
			dump_log("munged.out");
			bail("munged exited at start");
		}
		if (now_ms() > deadline)
			bail("munged did not answer in time");
		nap_ms(50);
	}
	free(cred);
}

/* ---- the cases ---- */

static const char body[] = "{\"op\":\"gather\",\"job\":42,\"step\":7}";

static int verify(struct pdi_auth *a, const char *cred, const char *b, struct pdi_auth_claim *claim, char *why,
		  size_t whylen)
{
	why[0] = '\0';
	return pdi_auth_verify(a, cred, b, strlen(b), claim, why, whylen);
}

static struct pdi_auth *new_cache(size_t n)
{
	return new_auth(sock, n, 0);
}

static void case_genuine(void)
{
	struct pdi_auth *cache = new_cache(64);
	struct pdi_auth_claim sent, got;
	uint64_t nonce = fresh_nonce();
	char *cred = NULL, why[256];
	int r;

	fill_claim(&sent, "gather", nonce);
	r = pdi_auth_sign(signer, 30, 0, &sent, body, strlen(body), &cred, NULL, 0);
	CHECK(r == 0, "sign: %s", strerror(-r));
	r = verify(cache, cred, body, &got, why, sizeof(why));
	CHECK(r == 0, "verify: %d %s", r, why);
	CHECK(!strcmp(got.op, "gather") && got.job == 42 && got.step == 7 && got.nonce == nonce, "claim");
	CHECK(!strcmp(got.sender, "n1"), "sender %s", got.sender);
	CHECK(!memcmp(got.body_sha256, sent.body_sha256, 32), "digest");
	free(cred);
	pdi_auth_free(cache);
}

static void case_forged(void)
{
	struct pdi_auth *cache = new_cache(64);
	char *cred = sign("gather", fresh_nonce(), 30, body), why[256];
	size_t mid = strlen(cred) / 2;
	struct pdi_auth_claim got = {.job = 12345};
	int r;

	/* another base64 character: still well-formed, no longer what munged made */
	cred[mid] = cred[mid] == 'A' ? 'B' : 'A';
	r = verify(cache, cred, body, &got, why, sizeof(why));
	CHECK(r == -EKEYREJECTED, "flipped byte: %d %s", r, why);
	CHECK(got.job == 12345, "claim touched on failure");
	printf("# forged: %s\n", why);
	r = verify(cache, "MUNGE:bm90IGEgY3JlZGVudGlhbA==:", body, NULL, why, sizeof(why));
	CHECK(r == -EKEYREJECTED, "made-up credential: %d %s", r, why);
	r = verify(cache, "", body, NULL, why, sizeof(why));
	CHECK(r == -EKEYREJECTED, "empty credential: %d %s", r, why);
	free(cred);
	pdi_auth_free(cache);
}

static void case_other_body(void)
{
	struct pdi_auth *cache = new_cache(64);
	char *cred = sign("gather", fresh_nonce(), 30, body), why[256];
	int r;

	r = verify(cache, cred, "{\"op\":\"gather\",\"job\":42,\"step\":8}", NULL, why, sizeof(why));
	CHECK(r == -EBADMSG, "%d %s", r, why);
	printf("# other body: %s\n", why);
	free(cred);
	pdi_auth_free(cache);
}

static void case_replayed_munge(void)
{
	struct pdi_auth *a = new_cache(64), *b = new_cache(64);
	char *cred = sign("gather", fresh_nonce(), 30, body), why[256];
	int r;

	r = verify(a, cred, body, NULL, why, sizeof(why));
	CHECK(r == 0, "first: %d %s", r, why);
	/* a fresh cache of ours: only munged remembers */
	r = verify(b, cred, body, NULL, why, sizeof(why));
	CHECK(r == -EALREADY, "again: %d %s", r, why);
	printf("# replayed (munge): %s\n", why);
	free(cred);
	pdi_auth_free(a);
	pdi_auth_free(b);
}

static void case_replayed_ours(void)
{
	struct pdi_auth *cache = new_cache(64);
	uint64_t nonce = fresh_nonce();
	/* two genuine credentials, same uid, nonce and op: what a replay after munged forgot
	 * its cache looks like to us */
	char *c1 = sign("gather", nonce, 30, body), *c2 = sign("gather", nonce, 30, body);
	char *c3 = sign("result", nonce, 30, body), why[256];
	int r;

	r = verify(cache, c1, body, NULL, why, sizeof(why));
	CHECK(r == 0, "first: %d %s", r, why);
	r = verify(cache, c2, body, NULL, why, sizeof(why));
	CHECK(r == -EALREADY, "same nonce and op: %d %s", r, why);
	printf("# replayed (ours): %s\n", why);
	r = verify(cache, c3, body, NULL, why, sizeof(why));
	CHECK(r == 0, "a reply repeats the nonce under another op: %d %s", r, why);
	free(c1);
	free(c2);
	free(c3);
	pdi_auth_free(cache);
}

static void case_cache_full(void)
{
	struct pdi_auth *cache = new_cache(1);
	char *c1 = sign("gather", fresh_nonce(), 30, body), *c2 = sign("gather", fresh_nonce(), 30, body), why[256];
	int r;

	r = verify(cache, c1, body, NULL, why, sizeof(why));
	CHECK(r == 0, "first: %d %s", r, why);
	r = verify(cache, c2, body, NULL, why, sizeof(why));
	CHECK(r == -EBUSY, "full of live entries: %d %s", r, why);
	free(c1);
	free(c2);
	pdi_auth_free(cache);
}

/* TTL 1: probes signed with it right after the credential are decoded one per poll until
 * munged calls one expired; the credential, never decoded before, must then be too. */
static void case_expired(void)
{
	struct pdi_auth *cache = new_cache(64);
	char *cred = sign("gather", fresh_nonce(), 1, body), *probes[EXPIRE_PROBES], why[256];
	long t0 = now_ms(), deadline = t0 + EXPIRE_TIMEOUT_MS;
	int r = 0, i;

	for (i = 0; i < EXPIRE_PROBES; i++)
		probes[i] = sign("probe", fresh_nonce(), 1, body);
	for (i = 0; i < EXPIRE_PROBES && now_ms() < deadline; i++) {
		r = verify(cache, probes[i], body, NULL, why, sizeof(why));
		if (r == -EKEYEXPIRED)
			break;
		nap_ms(EXPIRE_TIMEOUT_MS / EXPIRE_PROBES);
	}
	for (int j = 0; j < EXPIRE_PROBES; j++)
		free(probes[j]);
	CHECK(r == -EKEYEXPIRED, "no probe expired within %d ms (last: %d %s)", EXPIRE_TIMEOUT_MS, r, why);
	printf("# a TTL-1 credential expired after %ld ms\n", now_ms() - t0);
	r = verify(cache, cred, body, NULL, why, sizeof(why));
	CHECK(r == -EKEYEXPIRED, "%d %s", r, why);
	printf("# expired: %s\n", why);
	free(cred);
	pdi_auth_free(cache);
}

/* A child that becomes nobody signs with TTL; the parent reads the credential from a pipe. */
static char *sign_as_nobody(uint64_t nonce, int ttl)
{
	static char buf[PDI_WIRE_MAX_CRED + 1];
	struct pollfd pfd;
	size_t got = 0;
	int p[2], status;
	pid_t pid;

	if (pipe(p) < 0)
		return NULL;
	pid = fork();
	if (pid == 0) {
		struct pdi_auth_claim c;
		char *cred = NULL;

		close(p[0]);
		fill_claim(&c, "gather", nonce);
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(2);
		if (pdi_auth_sign(new_auth(sock, 1, 0), ttl, 0, &c, body, strlen(body), &cred, NULL, 0) < 0)
			_exit(3);
		if (write(p[1], cred, strlen(cred)) != (ssize_t)strlen(cred))
			_exit(4);
		_exit(0);
	}
	close(p[1]);
	pfd = (struct pollfd){.fd = p[0], .events = POLLIN};
	while (got < sizeof(buf) - 1 && poll(&pfd, 1, CHILD_TIMEOUT_MS) > 0) {
		ssize_t n = read(p[0], buf + got, sizeof(buf) - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(p[0]);
	buf[got] = '\0';
	status = wait_child(pid, CHILD_TIMEOUT_MS);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("# the child signing as nobody failed: status %d\n", status);
		return NULL;
	}
	return buf;
}

/* A genuine credential of another user is refused on its uid before anything else: it
 * never fills the replay cache (any user's "munge -t 3600" credentials would otherwise
 * fill it and every gather would be refused). */
static void case_other_user(void)
{
	struct pdi_auth *cache = new_cache(1);
	uint64_t nonce = fresh_nonce();
	char *mine, *cred, why[256];
	int r;

	cred = sign_as_nobody(nonce, 3600);
	CHECK(cred && *cred, "no credential from nobody");
	r = verify(cache, cred, body, NULL, why, sizeof(why));
	CHECK(r == -EPERM, "%d %s", r, why);
	CHECK(strstr(why, "uid 65534"), "says whose: %s", why);
	printf("# other user: %s\n", why);
	/* the cache holds one entry, still free: the service's own credential gets it */
	mine = sign("gather", nonce, 30, body);
	r = verify(cache, mine, body, NULL, why, sizeof(why));
	CHECK(r == 0, "the service uid's credential after nobody's: %d %s", r, why);
	free(mine);
	pdi_auth_free(cache);
}

/* Even the service uid's credentials may not live longer than the cap. */
static void case_ttl_capped(void)
{
	struct pdi_auth *cache = new_cache(64);
	char *cred = sign("gather", fresh_nonce(), 3600, body), why[256];
	int r;

	r = verify(cache, cred, body, NULL, why, sizeof(why));
	CHECK(r == -EKEYREJECTED, "%d %s", r, why);
	CHECK(strstr(why, "over the cap"), "%s", why);
	printf("# TTL 3600: %s\n", why);
	free(cred);
	pdi_auth_free(cache);
}

/* A bound Unix socket that never listens, then closed: connecting is refused. */
static int stale_socket(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0), r;

	if (fd < 0)
		return -1;
	if (strlen(path) >= sizeof(a.sun_path)) {
		close(fd);
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return r;
}

#define BOUND_MS 300 /* the MUNGE timeout of the cases below */
#define SLACK_MS 700 /* a loaded machine's scheduling, on top of it */

static void case_munged_gone(void)
{
	char gone[300], why[256], *cred = sign("gather", fresh_nonce(), 30, body), *none = NULL;
	struct pdi_auth *a;
	struct pdi_auth_claim c;
	long t0 = now_ms(), t;
	int r;

	snprintf(gone, sizeof(gone), "%s/no-munged.socket", dir);
	a = new_auth(gone, 64, BOUND_MS);
	why[0] = '\0';
	r = pdi_auth_verify(a, cred, body, strlen(body), NULL, why, sizeof(why));
	CHECK(r == -EIO, "verify: %d %s", r, why);
	CHECK(strstr(why, "munged unreachable") && strstr(why, gone), "message: %s", why);
	printf("# munged gone: %s (%ld ms)\n", why, now_ms() - t0);
	fill_claim(&c, "gather", 1);
	why[0] = '\0';
	r = pdi_auth_sign(a, 30, 0, &c, body, strlen(body), &none, why, sizeof(why));
	CHECK(r == -EIO, "sign: %d", r);
	CHECK(!none, "no credential");
	CHECK(strstr(why, "munged unreachable") != NULL, "sign's reason: %s", why);
	pdi_auth_free(a);
	/* a socket left behind by a munged that died: nobody listens, libmunge retries for
	 * seconds; the call returns at the bound, and the next one at once */
	snprintf(gone, sizeof(gone), "%s/stale.socket", dir);
	CHECK(stale_socket(gone) == 0, "stale socket: %s", strerror(errno));
	a = new_auth(gone, 64, BOUND_MS);
	t0 = now_ms();
	r = pdi_auth_verify(a, cred, body, strlen(body), NULL, why, sizeof(why));
	t = now_ms() - t0;
	CHECK(r == -ETIMEDOUT || r == -EIO, "verify on a stale socket: %d %s", r, why);
	CHECK(t < BOUND_MS + SLACK_MS, "verify on a stale socket took %ld ms (bound %d)", t, BOUND_MS);
	printf("# stale socket: %s (%ld ms)\n", why, t);
	t0 = now_ms();
	r = pdi_auth_verify(a, cred, body, strlen(body), NULL, why, sizeof(why));
	t = now_ms() - t0;
	CHECK(r == -EIO && strstr(why, "not asking again"), "the next call fails fast: %d %s", r, why);
	CHECK(t < SLACK_MS, "the next call took %ld ms", t);
	printf("# then: %s (%ld ms)\n", why, t);
	pdi_auth_free(a);
	free(cred);
}

/* A signer with a deadline of its own (a gather) passes the time it has left: munged slower than
 * the options' bound (stopped for twice that, then continued) still signs for it, and a call that
 * gets no answer returns at the time it was given, saying so. */
static void case_sign_waits_its_own_time(void)
{
	struct pdi_auth *a = new_auth(sock, 64, BOUND_MS);
	struct pdi_auth_claim c;
	char *cred = NULL, why[256] = "";
	long t0, t;
	pid_t waker;
	int r;

	fill_claim(&c, "gather", 1);
	CHECK(kill(munged_pid, SIGSTOP) == 0, "SIGSTOP munged: %s", strerror(errno));
	t0 = now_ms();
	r = pdi_auth_sign(a, 30, 2 * BOUND_MS, &c, body, strlen(body), &cred, why, sizeof(why));
	t = now_ms() - t0;
	CHECK(r == -ETIMEDOUT && strstr(why, "within 600 ms"), "sign with munged stopped: %d %s", r, why);
	CHECK(t >= 2 * BOUND_MS - 50 && t < 2 * BOUND_MS + SLACK_MS, "it took %ld ms (given %d)", t, 2 * BOUND_MS);
	printf("# sign, munged stopped: %s (%ld ms)\n", why, t);
	pdi_auth_free(a);
	/* munged continued after twice the bound: a caller giving it 20 times the bound is served */
	a = new_auth(sock, 64, BOUND_MS);
	waker = fork();
	if (waker == 0) {
		usleep(2 * BOUND_MS * 1000);
		kill(munged_pid, SIGCONT);
		_exit(0);
	}
	CHECK(waker > 0, "fork: %s", strerror(errno));
	r = pdi_auth_sign(a, 30, 20 * BOUND_MS, &c, body, strlen(body), &cred, why, sizeof(why));
	kill(munged_pid, SIGCONT);
	waitpid(waker, NULL, 0);
	CHECK(r == 0 && cred, "sign given 20x the bound, munged stopped 2x: %d %s", r, why);
	free(cred);
	pdi_auth_free(a);
}

/* munged stopped (SIGSTOP): it accepts connections and never answers. */
static void case_munged_stopped(void)
{
	struct pdi_auth *a = new_auth(sock, 64, BOUND_MS);
	char *cred = sign("gather", fresh_nonce(), 30, body), why[256];
	long t0, t;
	int r;

	CHECK(kill(munged_pid, SIGSTOP) == 0, "SIGSTOP munged: %s", strerror(errno));
	t0 = now_ms();
	r = pdi_auth_verify(a, cred, body, strlen(body), NULL, why, sizeof(why));
	t = now_ms() - t0;
	kill(munged_pid, SIGCONT);
	CHECK(r == -ETIMEDOUT, "verify with munged stopped: %d %s", r, why);
	CHECK(t < BOUND_MS + SLACK_MS, "it took %ld ms (bound %d)", t, BOUND_MS);
	printf("# munged stopped: %s (%ld ms)\n", why, t);
	free(cred);
	pdi_auth_free(a);
	case_sign_waits_its_own_time();
	/* munged answers again: a fresh verifier is served at once */
	a = new_auth(sock, 64, 0);
	cred = sign("gather", fresh_nonce(), 30, body);
	r = verify(a, cred, body, NULL, why, sizeof(why));
	CHECK(r == 0, "after SIGCONT: %d %s", r, why);
	free(cred);
	pdi_auth_free(a);
}

/* Usage: test-peer-auth [MUNGED MUNGEKEY] (meson passes the ones it found). */
int main(int argc, char **argv)
{
	if (argc == 3) {
		munged = argv[1];
		mungekey = argv[2];
	}
	if (geteuid() != 0) {
		printf("1..0 # SKIP root only: runs munged and signs as nobody\n");
		return 0;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	start_munged();
	printf("1..11\n");
	run_case("genuine credential verifies, uid 0, claim intact", case_genuine);
	run_case("forged credential rejected", case_forged);
	run_case("credential for another body rejected", case_other_body);
	run_case("replay refused by munged", case_replayed_munge);
	run_case("replay refused by our cache (same uid, nonce, op)", case_replayed_ours);
	run_case("full replay cache refuses", case_cache_full);
	run_case("expired credential rejected", case_expired);
	run_case("credential made by nobody refused on its uid, before the replay cache", case_other_user);
	run_case("credential valid longer than the cap refused", case_ttl_capped);
	run_case("munged not running or gone: -EIO, each call bounded, then fail fast", case_munged_gone);
	run_case("munged stopped: the call returns at its bound", case_munged_stopped);
	pdi_auth_free(signer);
	return nfailed ? 1 : 0;
}

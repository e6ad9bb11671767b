/* SPDX-License-Identifier: GPL-2.0-only */
/* hostile.c -- what a user's "MPI program" can do to the daemon that watches it, one mode
 * per attack of issue 14 (see test_probe.py):
 *
 *   fifo               replace its own executable, still mapped, by a FIFO; then MPI_Init
 *   symlink TARGET     replace its own executable by a symlink to TARGET; then MPI_Init
 *   copies N DIR STUB  map N distinct copies of STUB (an ELF object) and call MPI from each
 *   threadexit         a thread ends inside MPI_Recv; its tid is printed for reuse
 *   sites N            call MPI_Barrier from N distinct return addresses (generated code)
 *   threads N          N threads each inside MPI at once (the node-wide in-flight map)
 *   init               MPI_Init, three barriers, MPI_Finalize
 *
 * Modes that leave the process alive wait for end of file on stdin before they exit. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int MPI_Init(int *argc, char ***argv);
int MPI_Finalize(void);
int MPI_Barrier(int comm);
int MPI_Recv(void *buf, int count, int type, int source, int tag, int comm, void *status);

static void die(const char *what)
{
	fprintf(stderr, "hostile: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void wait_stdin_eof(void)
{
	char buf[64];

	while (read(0, buf, sizeof(buf)) > 0)
		;
}

static void self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n < 0)
		die("readlink /proc/self/exe");
	buf[n] = '\0';
}

static int replace_self(const char *mode, const char *target)
{
	char self[4096];

	self_path(self, sizeof(self));
	if (unlink(self) < 0)
		die("unlink");
	if (!strcmp(mode, "fifo") ? mkfifo(self, 0666) < 0 : symlink(target, self) < 0)
		die(mode);
	printf("replaced %s\n", self);
	fflush(stdout);
	MPI_Init(NULL, NULL);
	for (int i = 0; i < 3; i++)
		MPI_Barrier(0);
	MPI_Finalize();
	printf("%s done\n", mode);
	fflush(stdout);
	wait_stdin_eof();
	return 0;
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	if (in < 0)
		die(from);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0)
		die(to);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			die("write");
	close(in);
	close(out);
}

static int call_stub(const char *fn)
{
	int (*call)(void);
	void *h = dlopen(fn, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "hostile: dlopen %s: %s\n", fn, dlerror());
		return -1;
	}
	call = (int (*)(void))dlsym(h, "stub_call");
	if (!call)
		return -1;
	return call();
}

static int copies(int n, const char *dir, const char *stub)
{
	MPI_Init(NULL, NULL);
	for (int i = 0; i < n; i++) {
		char fn[4096];

		snprintf(fn, sizeof(fn), "%s/stub-%d.so", dir, i);
		copy_file(stub, fn);
		if (call_stub(fn) < 0)
			return 1;
	}
	printf("copies done\n");
	fflush(stdout);
	wait_stdin_eof();
	MPI_Finalize();
	return 0;
}

static void *exit_inside_mpi(void *arg)
{
	(void)arg;
	printf("thread %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	MPI_Recv(NULL, -1, 0, 0, 0, 0, NULL); /* never returns */
	return NULL;
}

static int threadexit(void)
{
	pthread_t th;

	MPI_Init(NULL, NULL);
	if (pthread_create(&th, NULL, exit_inside_mpi, NULL))
		die("pthread_create");
	pthread_join(th, NULL);
	MPI_Barrier(0);
	printf("thread exited\n");
	fflush(stdout);
	wait_stdin_eof();
	MPI_Finalize();
	return 0;
}

/* N calls of MPI_Barrier, each from its own return address: movabs rax, fn; call rax. */
static int sites(long n)
{
	size_t len = (size_t)n * 12 + 16;
	uint8_t *code = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *p;
	uint64_t fn = (uint64_t)(uintptr_t)MPI_Barrier;

	if (code == MAP_FAILED)
		die("mmap");
	p = code;
	memcpy(p, "\x48\x83\xec\x08", 4); /* sub rsp, 8: calls on an aligned stack */
	p += 4;
	for (long i = 0; i < n; i++) {
		*p++ = 0x48;
		*p++ = 0xb8;
		memcpy(p, &fn, 8);
		p += 8;
		*p++ = 0xff;
		*p++ = 0xd0;
	}
	memcpy(p, "\x48\x83\xc4\x08\xc3", 5); /* add rsp, 8; ret */
	MPI_Init(NULL, NULL);
	((void (*)(void))code)();
	printf("sites done\n");
	fflush(stdout);
	wait_stdin_eof();
	MPI_Finalize();
	return 0;
}

static pthread_barrier_t all_in, all_called;

/* every thread has called before any ends: their in-flight entries all exist at once */
static void *call_once(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&all_in);
	MPI_Barrier(0);
	pthread_barrier_wait(&all_called);
	return NULL;
}

static int threads(int n)
{
	pthread_t *th = calloc((size_t)n, sizeof(*th));

	MPI_Init(NULL, NULL);
	pthread_barrier_init(&all_in, NULL, (unsigned)n);
	pthread_barrier_init(&all_called, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, call_once, NULL))
			die("pthread_create");
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("threads done\n");
	fflush(stdout);
	wait_stdin_eof();
	MPI_Finalize();
	free(th);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "fifo") || (!strcmp(mode, "symlink") && argc > 2))
		return replace_self(mode, argc > 2 ? argv[2] : NULL);
	if (!strcmp(mode, "copies") && argc > 4)
		return copies(atoi(argv[2]), argv[3], argv[4]);
	if (!strcmp(mode, "threadexit"))
		return threadexit();
	if (!strcmp(mode, "sites") && argc > 2)
		return sites(atol(argv[2]));
	if (!strcmp(mode, "threads") && argc > 2)
		return threads(atoi(argv[2]));
	if (!strcmp(mode, "init")) {
		MPI_Init(NULL, NULL);
		for (int i = 0; i < 3; i++)
			MPI_Barrier(0);
		MPI_Finalize();
		printf("init done\n");
		return 0;
	}
	fprintf(stderr, "usage: hostile fifo|symlink TARGET|copies N DIR STUB|threadexit|sites N|threads N|init\n");
	return 2;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* hog.c -- interference for the real-application campaign (bench/apps.py): `hog cpu SECONDS`
 * spins, `hog mem SECONDS` streams through 256 MiB (a different cache line of every page each
 * pass: memory bandwidth, not CPU alone). The campaign pins it to the CPU of the rank it
 * interferes with; it exits by itself after SECONDS. With TRUTH-FILE it writes there when it
 * began to interfere (CLOCK_MONOTONIC ns, the clock of pdimond's timestamps): the ground truth
 * of the fault's time, which the exec of the hog itself may put well after the campaign
 * decided to start it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Now (CLOCK_MONOTONIC ns) into PATH; -1 when it cannot. */
static int write_truth(const char *path)
{
	struct timespec ts;
	FILE *f = fopen(path, "w");
	int r;

	if (!f)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	r = fprintf(f, "%lld\n", (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec);
	return fclose(f) == 0 && r > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	size_t n = (size_t)256 << 20, stride = 4096 + 64, i = 0;
	volatile unsigned char *buf = NULL;
	volatile uint64_t sink = 0;
	double end;
	int mem;

	if (argc < 3 || argc > 4 || (strcmp(argv[1], "cpu") && strcmp(argv[1], "mem")) || atof(argv[2]) <= 0) {
		fprintf(stderr, "usage: hog cpu|mem SECONDS [TRUTH-FILE]\n");
		return 2;
	}
	mem = !strcmp(argv[1], "mem");
	end = now_s() + atof(argv[2]);
	if (mem && !(buf = malloc(n))) {
		fprintf(stderr, "hog: cannot allocate 256 MiB\n");
		return 1;
	}
	if (argc == 4 && write_truth(argv[3]) < 0) {
		fprintf(stderr, "hog: cannot write %s\n", argv[3]);
		return 1;
	}
	while (now_s() < end)
		for (int k = 0; k < 4096; k++) {
			if (mem) {
				buf[i] += 1;
				i = (i + stride) % n;
			} else {
				sink++;
			}
		}
	free((void *)buf);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* ingest.c -- how fast the model takes calls (pdi_model_add_call() alone, one core), and its memory.
 *
 * Usage: bench-ingest [--replay FILE] [--no-synthetic] [--calls N] [--rounds R]
 *
 * Streams of calls are prepared in memory beforehand, then replayed into fresh models until
 * at least N calls (default 20 million) went through; only the replay is timed. The
 * streams are a recording made by pdimond's "record" setting (--replay: one model per
 * recorded task) and three synthetic ones: a 4-site ring, a LAMMPS-like mix of ~60 sites
 * and a cycle over 1,000 sites. A stream shorter than N is repeated, its times shifted by
 * its span so that time keeps going forward. Every stream is run twice: under the default
 * bound of 1 MiB per model, and without bound (a dropped state costs less than a kept one,
 * so a model at its bound ingests faster). Rounds are interleaved (A,B,C,A,B,C,...) and the
 * median rate is printed per stream.
 *
 * Then the memory figure: one model whose loop visits 1,000 (then 10,000) distinct
 * communication sites in a fixed cycle, under the default bound of 1 MiB per task. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "model.h"
#include "mpi_funcs.h"

#define SYNTH_CALLS (1u << 20) /* calls per prepared synthetic stream */
#define MAX_ROUNDS 101

struct stream {
	char name[32];
	struct pdi_call *calls;
	uint32_t *task; /* model of each call; NULL: all go to model 0 */
	size_t n;
	uint32_t ntasks;
	uint64_t span; /* ns from the first entry to the last exit, plus one */
	unsigned sites;
	size_t max_bytes;  /* the models' bound */
	bool borrowed;     /* CALLS and TASK belong to another stream */
	double rate[MAX_ROUNDS];
	/* what the models looked like after the last round */
	uint64_t calls_done, failed, dropped_states, dropped_edges;
	uint32_t phases;
	size_t bytes;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: deterministic jitter for the synthetic streams */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static int fn_index(const char *name)
{
	int fn = pdi_mpi_func_find(name);

	if (fn < 0) {
		fprintf(stderr, "bench-ingest: %s is not a probed function\n", name);
		exit(1);
	}
	return fn;
}

/* Appends calls with made-up but plausible times: calls of 0.5-3 us, computation between
 * them of 0.2-20 us. */
struct gen {
	struct stream *s;
	uint64_t t, seed;
};

static void emit(struct gen *g, uint32_t site, int fn, int32_t peer, uint64_t req)
{
	struct pdi_call *c;

	if (g->s->n >= SYNTH_CALLS)
		return;
	c = &g->s->calls[g->s->n++];
	g->t += 200 + rnd(&g->seed) % 20000;
	c->site = site;
	c->fn = (uint16_t)fn;
	c->t_enter = g->t;
	g->t += 500 + rnd(&g->seed) % 2500;
	c->t_exit = g->t;
	c->peer = peer;
	c->tag = 7;
	c->req = req;
}

static int stream_alloc(struct stream *s, const char *name, size_t n)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->calls = calloc(n, sizeof(*s->calls));
	s->ntasks = 1;
	s->max_bytes = pdi_model_config_default.max_bytes;
	return s->calls ? 0 : -ENOMEM;
}

static void stream_free(struct stream *s)
{
	if (!s->borrowed) {
		free(s->calls);
		free(s->task);
	}
	s->calls = NULL;
	s->task = NULL;
}

static void stream_finish(struct stream *s)
{
	s->span = s->calls[s->n - 1].t_exit - s->calls[0].t_enter + 1;
}

/* tests/mpi/ring.c: Irecv, Isend, Waitall, Barrier */
static int gen_ring(struct stream *s)
{
	int irecv = fn_index("MPI_Irecv"), isend = fn_index("MPI_Isend");
	int waitall = fn_index("MPI_Waitall"), barrier = fn_index("MPI_Barrier");
	struct gen g = {.s = s, .t = 1000000, .seed = 1};
	int r = stream_alloc(s, "ring4", SYNTH_CALLS);

	if (r < 0)
		return r;
	while (s->n < SYNTH_CALLS) {
		emit(&g, 0, irecv, 3, 0x7f0000001000);
		emit(&g, 1, isend, 1, 0x7f0000002000);
		emit(&g, 2, waitall, PDI_NO_PEER, 0x7f0000001000);
		emit(&g, 3, barrier, PDI_NO_PEER, 0);
	}
	s->sites = 4;
	stream_finish(s);
	return 0;
}

/* Shaped like a LAMMPS time step loop: forward and reverse halo exchanges every step
 * (Irecv/Send/Wait per swap, 6 swaps), a reneighboring every 10 steps (exchange and
 * borders with Sendrecv, Irecv/Send/Wait, and Allreduce for the counts), thermo output
 * every 100 steps (Allreduce, Reduce) and, rarely, a Bcast from a fix. 60 sites in all. */
static int gen_lammps(struct stream *s)
{
	int irecv = fn_index("MPI_Irecv"), send = fn_index("MPI_Send"), wait = fn_index("MPI_Wait");
	int sendrecv = fn_index("MPI_Sendrecv"), allreduce = fn_index("MPI_Allreduce");
	int reduce = fn_index("MPI_Reduce"), bcast = fn_index("MPI_Bcast");
	struct gen g = {.s = s, .t = 1000000, .seed = 2};
	int r = stream_alloc(s, "lammps-like", SYNTH_CALLS);

	if (r < 0)
		return r;
	for (uint64_t step = 0; s->n < SYNTH_CALLS; step++) {
		for (uint32_t swap = 0; swap < 6; swap++) { /* forward comm: sites 0-5 (two code paths) */
			uint32_t base = swap < 3 ? 0 : 3;

			emit(&g, base + 0, irecv, (int32_t)swap, 0x7f0000003000);
			emit(&g, base + 1, send, (int32_t)swap, 0);
			emit(&g, base + 2, wait, PDI_NO_PEER, 0x7f0000003000);
		}
		for (uint32_t swap = 0; swap < 6; swap++) { /* reverse comm: sites 6-8 */
			emit(&g, 6, irecv, (int32_t)swap, 0x7f0000004000);
			emit(&g, 7, send, (int32_t)swap, 0);
			emit(&g, 8, wait, PDI_NO_PEER, 0x7f0000004000);
		}
		if (step % 10 == 0) { /* reneighboring: sites 10-41 */
			for (uint32_t k = 0; k < 6; k++)  /* exchange */
				emit(&g, 10 + k, sendrecv, (int32_t)k, 0);
			emit(&g, 16, allreduce, PDI_NO_PEER, 0);
			for (uint32_t k = 0; k < 6; k++) { /* borders */
				emit(&g, 17 + 3 * (k % 4), irecv, (int32_t)k, 0x7f0000005000);
				emit(&g, 18 + 3 * (k % 4), send, (int32_t)k, 0);
				emit(&g, 19 + 3 * (k % 4), wait, PDI_NO_PEER, 0x7f0000005000);
			}
			for (uint32_t k = 0; k < 12; k++)
				emit(&g, 29 + k, sendrecv, (int32_t)(k % 6), 0);
			emit(&g, 41, allreduce, PDI_NO_PEER, 0);
		}
		if (step % 100 == 0) { /* thermo: sites 42-53 */
			for (uint32_t k = 0; k < 10; k++)
				emit(&g, 42 + k, allreduce, PDI_NO_PEER, 0);
			emit(&g, 52, reduce, 0, 0);
			emit(&g, 53, allreduce, PDI_NO_PEER, 0);
		}
		if (rnd(&g.seed) % 1000 == 0) /* a fix, now and then: sites 54-59 */
			emit(&g, 54 + (uint32_t)(rnd(&g.seed) % 6), bcast, 0, 0);
	}
	s->sites = 60;
	stream_finish(s);
	return 0;
}

/* A fixed cycle over SITES communication sites, in a scrambled order, point-to-point only. */
static int gen_cycle(struct stream *s, const char *name, uint32_t sites, size_t n)
{
	int send = fn_index("MPI_Send"), recv = fn_index("MPI_Recv");
	struct gen g = {.s = s, .t = 1000000, .seed = 3};
	uint32_t *order = malloc(sizeof(*order) * sites);
	int r = stream_alloc(s, name, n);

	if (r < 0 || !order) {
		free(order);
		stream_free(s);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < sites; i++)
		order[i] = i;
	for (uint32_t i = sites - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(rnd(&g.seed) % (i + 1)), x = order[i];

		order[i] = order[j];
		order[j] = x;
	}
	for (size_t i = 0; s->n < n; i++) {
		uint32_t site = order[i % sites];

		emit(&g, site, site & 1 ? recv : send, (int32_t)(site % 8), 0);
	}
	free(order);
	s->sites = sites;
	stream_finish(s);
	return 0;
}

/* A recording: struct pdi_call_record after struct pdi_call_record, as pdimond writes them. */
static int load_replay(struct stream *s, const char *path)
{
	struct pdi_call_record rec;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	struct stat st;
	size_t n;
	FILE *f;
	int r = 0;

	memset(s, 0, sizeof(*s));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) < 0) {
		r = -errno;
		goto out;
	}
	n = (size_t)st.st_size / sizeof(rec);
	if (n == 0 || (size_t)st.st_size % sizeof(rec)) {
		fprintf(stderr, "bench-ingest: %s: %lld bytes is not a whole, non-empty number of records\n", path,
			(long long)st.st_size);
		r = -EINVAL;
		goto out;
	}
	if ((r = stream_alloc(s, "replay", n)) < 0)
		goto out;
	s->task = calloc(n, sizeof(*s->task));
	if (!s->task) {
		r = -ENOMEM;
		goto out;
	}
	s->ntasks = 0;
	for (size_t i = 0; i < n; i++) {
		if (fread(&rec, sizeof(rec), 1, f) != 1) {
			r = ferror(f) ? -EIO : -EINVAL;
			goto out;
		}
		if (rec.call.fn >= pdi_mpi_nfuncs || rec.task >= 1u << 20) {
			fprintf(stderr, "bench-ingest: %s: record %zu is not a call pdimond records\n", path, i);
			r = -EINVAL;
			goto out;
		}
		s->calls[i] = rec.call;
		s->task[i] = rec.task;
		if (rec.task + 1 > s->ntasks)
			s->ntasks = rec.task + 1;
		if (rec.call.t_enter < t0)
			t0 = rec.call.t_enter;
		if (rec.call.t_exit > t1)
			t1 = rec.call.t_exit;
		if (rec.call.site + 1 > s->sites)
			s->sites = rec.call.site + 1;
	}
	s->n = n;
	s->span = t1 > t0 ? t1 - t0 + 1 : 1;
out:
	fclose(f);
	if (r < 0)
		stream_free(s);
	return r;
}

/* Replays S into fresh models until MIN_CALLS went through; records the rate of round R. */
static int run_round(struct stream *s, uint64_t min_calls, unsigned round)
{
	struct pdi_model *models = calloc(s->ntasks, sizeof(*models));
	uint64_t reps = (min_calls + s->n - 1) / s->n, failed = 0, t0, t1;
	struct pdi_model_config cfg = pdi_model_config_default;

	if (!models)
		return -ENOMEM;
	cfg.max_bytes = s->max_bytes;
	for (uint32_t i = 0; i < s->ntasks; i++)
		pdi_model_init(&models[i], &cfg);

	t0 = now_ns();
	for (uint64_t rep = 0; rep < reps; rep++) {
		uint64_t shift = rep * s->span;

		for (size_t i = 0; i < s->n; i++) {
			struct pdi_call c = s->calls[i];

			c.t_enter += shift;
			c.t_exit += shift;
			if (pdi_model_add_call(&models[s->task ? s->task[i] : 0], &c) < 0)
				failed++;
		}
	}
	t1 = now_ns();

	s->rate[round] = (double)(reps * s->n) / ((double)(t1 - t0) / 1e9);
	s->calls_done = reps * s->n;
	s->failed = failed;
	s->dropped_states = s->dropped_edges = 0;
	s->phases = 0;
	s->bytes = 0;
	for (uint32_t i = 0; i < s->ntasks; i++) {
		s->dropped_states += models[i].dropped_states;
		s->dropped_edges += models[i].dropped_edges;
		if (models[i].nphases > s->phases)
			s->phases = models[i].nphases;
		if (models[i].bytes > s->bytes)
			s->bytes = models[i].bytes;
		pdi_model_done(&models[i]);
	}
	free(models);
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, unsigned n)
{
	double s[MAX_ROUNDS];

	memcpy(s, v, sizeof(*v) * n);
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* The memory figure: a loop over SITES communication sites, ROUNDS times, one model. */
static int memory_figure(uint32_t sites, unsigned rounds)
{
	struct stream s;
	struct pdi_model m;
	int r = gen_cycle(&s, "memory", sites, (size_t)sites * rounds);

	if (r < 0)
		return r;
	pdi_model_init(&m, NULL);
	for (size_t i = 0; i < s.n; i++)
		(void)pdi_model_add_call(&m, &s.calls[i]);
	printf("memory sites=%" PRIu32 " rounds=%u bytes=%zu (%.1f KiB, bound %zu) states=%" PRIu32
	       " edges=%" PRIu32 " dropped_states=%" PRIu64 " dropped_edges=%" PRIu64 "\n",
	       sites, rounds, m.bytes, (double)m.bytes / 1024, m.cfg.max_bytes, m.nphases ? m.phases[0].nstates : 0,
	       m.nphases ? m.phases[0].nedges : 0, m.dropped_states, m.dropped_edges);
	pdi_model_done(&m);
	stream_free(&s);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: bench-ingest [--replay FILE] [--no-synthetic] [--calls N] [--rounds R]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"replay", required_argument, NULL, 'r'},
					     {"no-synthetic", no_argument, NULL, 'n'},
					     {"calls", required_argument, NULL, 'c'},
					     {"rounds", required_argument, NULL, 'R'},
					     {"help", no_argument, NULL, 'h'},
					     {0}};
	const char *replay = NULL;
	bool synthetic = true;
	uint64_t min_calls = 20000000;
	unsigned rounds = 3, nstreams = 0;
	struct stream streams[8];
	unsigned nbase;
	int c, r = 0;

	while ((c = getopt_long(argc, argv, "r:nc:R:h", opts, NULL)) >= 0) {
		switch (c) {
		case 'r': replay = optarg; break;
		case 'n': synthetic = false; break;
		case 'c': min_calls = strtoull(optarg, NULL, 10); break;
		case 'R': rounds = (unsigned)atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || rounds < 1 || rounds > MAX_ROUNDS || min_calls < 1) {
		usage(stderr);
		return 2;
	}

	if (replay) {
		r = load_replay(&streams[nstreams], replay);
		if (r < 0) {
			fprintf(stderr, "bench-ingest: cannot load %s: %s\n", replay, strerror(-r));
			return 1;
		}
		printf("replay file=%s records=%zu tasks=%" PRIu32 " sites=%u\n", replay, streams[nstreams].n,
		       streams[nstreams].ntasks, streams[nstreams].sites);
		nstreams++;
	}
	if (synthetic) {
		if ((r = gen_ring(&streams[nstreams])) < 0)
			goto out;
		nstreams++;
		if ((r = gen_lammps(&streams[nstreams])) < 0)
			goto out;
		nstreams++;
		if ((r = gen_cycle(&streams[nstreams], "sites1000", 1000, SYNTH_CALLS)) < 0)
			goto out;
		nstreams++;
	}
	/* each stream again without the memory bound: what the model costs when nothing is
	 * dropped (a dropped state is cheaper than a kept one) */
	nbase = nstreams;
	for (unsigned i = 0; i < nbase; i++) {
		streams[nstreams] = streams[i];
		streams[nstreams].borrowed = true;
		streams[nstreams].max_bytes = SIZE_MAX / 2;
		nstreams++;
	}

	for (unsigned round = 0; round < rounds; round++)
		for (unsigned i = 0; i < nstreams; i++)
			if ((r = run_round(&streams[i], min_calls, round)) < 0)
				goto out;

	for (unsigned i = 0; i < nstreams; i++) {
		struct stream *s = &streams[i];
		double lo = s->rate[0], hi = s->rate[0];
		char bound[32] = "none";

		for (unsigned k = 1; k < rounds; k++) {
			lo = s->rate[k] < lo ? s->rate[k] : lo;
			hi = s->rate[k] > hi ? s->rate[k] : hi;
		}
		if (!s->borrowed)
			snprintf(bound, sizeof(bound), "%zu", s->max_bytes);
		printf("ingest stream=%s bound=%s sites=%u tasks=%" PRIu32 " calls=%" PRIu64 " rounds=%u events_per_s=%.0f"
		       " (%.2f M/s; min %.2f, max %.2f) phases=%" PRIu32 " max_task_bytes=%zu dropped_states=%" PRIu64
		       " dropped_edges=%" PRIu64 " failed=%" PRIu64 "\n",
		       s->name, bound, s->sites, s->ntasks, s->calls_done, rounds, median(s->rate, rounds),
		       median(s->rate, rounds) / 1e6, lo / 1e6, hi / 1e6, s->phases, s->bytes, s->dropped_states,
		       s->dropped_edges, s->failed);
	}
	if (synthetic) {
		if ((r = memory_figure(1000, 10)) < 0 || (r = memory_figure(10000, 10)) < 0)
			goto out;
	}
out:
	for (unsigned i = 0; i < nstreams; i++)
		stream_free(&streams[i]);
	if (r < 0) {
		fprintf(stderr, "bench-ingest: %s\n", strerror(-r));
		return 1;
	}
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* test-samples.c -- sample runs from the store: which earlier runs are loaded, in which order,
 * and their models renamed into the step's own call-site numbering. A real SQLite store in a
 * directory of its own under /tmp per test. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"
#include "model_io.h"
#include "mpi_funcs.h"
#include "registry.h"
#include "samples.h"
#include "store.h"

#define EXE "/home/u/bin/app"
#define NTASKS 4

static char dir[64], path[128];
static struct pdi_store *st;

/* The program's call sites, by their logical number. */
enum { L_INIT, L_SEND, L_RECV, L_BARRIER, L_EXTRA, NL };

static const struct {
	const char *fn, *name;
} lsites[NL] = {
	[L_INIT] = {"MPI_Init", "MPI_Init@app.c:10"},
	[L_SEND] = {"MPI_Send", "MPI_Send@app.c:20"},
	[L_RECV] = {"MPI_Recv", "MPI_Recv@app.c:21"},
	[L_BARRIER] = {"MPI_Barrier", "MPI_Barrier@app.c:30"},
	[L_EXTRA] = {"MPI_Allreduce", "MPI_Allreduce@app.c:40"},
};

/* The step's own numbering (first appearance), and two other runs' */
static const uint32_t num_step[NL] = {0, 1, 2, 3, PDI_U64MAP_NONE};
static const uint32_t num_rev[NL] = {3, 2, 1, 0, 4};
static const uint32_t num_mix[NL] = {1, 3, 0, 2, 4};
static const int step_ranks[NTASKS] = {2, 0, 3, 1}; /* the order the step's tasks came in */

static int remove_one(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

static void setup(void)
{
	char err[256];

	snprintf(dir, sizeof(dir), "/tmp/pdimon-samples-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/pdimon.db", dir);
	cr_assert_eq(pdi_store_open(path, &st, err, sizeof(err)), 0, "%s", err);
}

static void teardown(void)
{
	pdi_store_close(st);
	cr_assert_eq(nftw(dir, remove_one, 8, FTW_DEPTH | FTW_PHYS), 0);
}

TestSuite(samples, .init = setup, .fini = teardown);

static uint16_t fn_id(const char *name)
{
	int i = pdi_mpi_func_find(name);

	cr_assert_geq(i, 0, "%s", name);
	return (uint16_t)i;
}

static void add(struct pdi_model *m, uint64_t *t, uint32_t site, unsigned l, uint64_t comp, uint64_t dur)
{
	struct pdi_call c = {.site = site, .fn = fn_id(lsites[l].fn), .t_enter = *t + comp,
			     .t_exit = *t + comp + dur, .peer = PDI_NO_PEER};

	cr_assert_eq(pdi_model_add_call(m, &c), 0);
	*t = c.t_exit;
}

/* RANK's model with the sites numbered by NUM; EXTRA: with a call the step never makes. */
static void program(struct pdi_model *m, int rank, const uint32_t *num, bool extra)
{
	uint64_t t = 1000000;

	pdi_model_init(m, NULL);
	add(m, &t, num[L_INIT], L_INIT, 100, 50);
	for (int i = 0; i < 5 + rank; i++) {
		add(m, &t, num[L_SEND], L_SEND, 30 + rank, 5 + i);
		add(m, &t, num[L_RECV], L_RECV, 40, 7 * rank);
		if (extra && i == 2)
			add(m, &t, num[L_EXTRA], L_EXTRA, 1, 2);
	}
	add(m, &t, num[L_BARRIER], L_BARRIER, 3, 90);
}

/* ---- the step being analysed, in memory ---- */

struct fixture {
	struct pdi_step s;
	struct pdi_task tasks[NTASKS], *tp[NTASKS];
	struct pdi_site sites[NL];
};

static uint64_t site_key(unsigned l, unsigned build)
{
	return 0x5100000000ull * (build + 1) + l;
}

static void step_init(struct fixture *f, const char *name)
{
	*f = (struct fixture){0};
	f->s.name = (char *)name;
	f->s.executable = (char *)EXE;
	f->s.tasks = f->tp;
	f->s.ntasks = NTASKS;
	f->s.sites = f->sites;
	for (unsigned i = 0; i < NTASKS; i++) {
		f->tp[i] = &f->tasks[i];
		f->tasks[i].rank = step_ranks[i];
		f->tasks[i].step = &f->s;
		program(&f->tasks[i].model, step_ranks[i], num_step, false);
	}
	for (unsigned l = 0; l < NL; l++) {
		if (num_step[l] == PDI_U64MAP_NONE)
			continue;
		f->sites[num_step[l]] = (struct pdi_site){.key = site_key(l, 0), .fn = fn_id(lsites[l].fn),
							  .name = (char *)lsites[l].name, .caller = (char *)"main",
							  .file = (char *)"app.c"};
		cr_assert_eq(pdi_u64map_put(&f->s.site_idx, site_key(l, 0), num_step[l]), 0);
		f->s.nsites++;
	}
}

static void step_done(struct fixture *f)
{
	for (unsigned i = 0; i < NTASKS; i++)
		pdi_model_done(&f->tasks[i].model);
	pdi_u64map_free(&f->s.site_idx);
}

/* ---- earlier runs, in the store ---- */

struct run {
	const char *name, *exe, *verdict; /* verdict NULL: no report */
	unsigned ntasks;
	int64_t ended;
	const uint32_t *num;
	unsigned build;       /* another build: other site keys */
	bool extra;           /* makes the call the step does not */
	bool watched;         /* a watched launcher among its task rows (pdimon run) */
	const char *abnormal; /* its report's diagnosis.abnormal ("true", "false"); NULL: no diagnosis */
	int bad_rank;         /* >= 0: that rank has a problem of kind BAD */
	enum { BAD_NONE, BAD_LOST, BAD_ENDED_IN_MPI, BAD_DROPPED, BAD_CORRUPT, BAD_RANK } bad;
};

static void put_sites(const struct run *r)
{
	struct pdi_store_site v[NL];
	unsigned n = 0;

	for (unsigned l = 0; l < NL; l++) {
		if (l == L_EXTRA && !r->extra)
			continue;
		v[n++] = (struct pdi_store_site){.index = r->num[l], .fn = fn_id(lsites[l].fn), .name = lsites[l].name,
						 .caller = "main", .file = "app.c", .line = 10, .key = site_key(l, r->build)};
	}
	cr_assert_eq(pdi_store_put_sites(st, r->name, v, n), 0);
}

static void put_task(const struct run *r, int rank)
{
	struct pdi_store_task t = {.rank = rank, .pid = 1000 + rank};
	bool bad = rank == r->bad_rank;
	struct pdi_model m;
	void *blob;
	size_t len;

	program(&m, rank, r->num, r->extra);
	if (bad && r->bad == BAD_DROPPED)
		m.dropped_states = 1;
	cr_assert_eq(pdi_model_encode(&m, &blob, &len), 0);
	pdi_model_done(&m);
	if (bad && r->bad == BAD_CORRUPT)
		((unsigned char *)blob)[len - 3] ^= 0x55;
	if (bad && r->bad == BAD_RANK)
		t.rank = 7;
	snprintf(t.state, sizeof(t.state), "ended");
	if (bad && r->bad == BAD_ENDED_IN_MPI)
		snprintf(t.ended_in, sizeof(t.ended_in), "MPI_Recv@app.c:21");
	t.events_lost = bad && r->bad == BAD_LOST ? 12 : 0;
	t.model = blob;
	t.model_len = len;
	cr_assert_eq(pdi_store_put_task(st, r->name, &t), 0);
	free(blob);
}

static void put_run(struct run r)
{
	struct pdi_store_step x = {.started = r.ended ? r.ended - 50 : 1, .ended = r.ended, .ntasks = r.ntasks};
	char json[512], diagnosis[200] = "";

	snprintf(x.name, sizeof(x.name), "%s", r.name);
	snprintf(x.state, sizeof(x.state), "%s", r.ended ? "ended" : "running");
	snprintf(x.executable, sizeof(x.executable), "%s", r.exe ? r.exe : EXE);
	cr_assert_eq(pdi_store_put_step(st, &x), 0);
	put_sites(&r);
	/* the store lists tasks by rank: put them in another order */
	for (int rank = (int)r.ntasks - 1; rank >= 0; rank--)
		put_task(&r, rank);
	if (r.watched) {
		/* the launcher of `pdimon run`, as a checkpoint while the step ran stored it */
		struct pdi_store_task w = {.rank = -1, .pid = 999};

		snprintf(w.state, sizeof(w.state), "watched");
		cr_assert_eq(pdi_store_put_task(st, r.name, &w), 0);
	}
	if (r.abnormal) /* as render_json.c writes it: the faulty ranks before the word */
		snprintf(diagnosis, sizeof(diagnosis),
			 ",\"diagnosis\":{\"method\":\"automaded\",\"faulty_ranks\":[2],\"doing\":\"no \\\"abnormal\\\": true\","
			 "\"abnormal\":%s,\"limits\":[]}", r.abnormal);
	if (r.verdict) {
		snprintf(json, sizeof(json), "{\"step\":\"%s\",\"state\":\"ended\",\"verdict\":{\"kind\":\"%s\",\"groups\":[]}%s}",
			 r.name, r.verdict, diagnosis);
		cr_assert_eq(pdi_store_put_report(st, r.name, json), 0);
	}
}

static struct run normal(const char *name, int64_t ended, const uint32_t *num)
{
	return (struct run){.name = name, .verdict = "completed", .ntasks = NTASKS, .ended = ended, .num = num,
			    .bad_rank = -1};
}

/* Run RUN of V holds, for each of the step's tasks, what the step's own numbering makes of
 * that rank's calls (EXTRA's site renamed to FOREIGN). */
static void assert_run_is(const struct pdi_samples *v, unsigned run, const char *name, bool extra, uint32_t foreign)
{
	uint32_t num[NL];

	memcpy(num, num_step, sizeof(num));
	num[L_EXTRA] = foreign;
	cr_assert_lt(run, v->nruns);
	cr_assert_str_eq(v->runs[run].step, name, "run %u", run);
	for (unsigned i = 0; i < NTASKS; i++) {
		const struct pdi_model *got = v->runs[run].row[i];
		struct pdi_model want;
		void *a, *b;
		size_t na, nb;

		cr_assert_eq(got, &v->runs[run].models[i]);
		program(&want, step_ranks[i], num, extra);
		cr_assert_eq(pdi_model_encode(got, &a, &na), 0);
		cr_assert_eq(pdi_model_encode(&want, &b, &nb), 0);
		cr_assert(na == nb && memcmp(a, b, na) == 0, "run %s, task %u (rank %d): not the step's numbering", name,
			  i, step_ranks[i]);
		free(a);
		free(b);
		pdi_model_done(&want);
	}
}

Test(samples, same_program_and_size_most_recent_first)
{
	struct pdi_samples v;
	struct fixture f;
	struct run x;

	step_init(&f, "now");
	x = normal("old", 100, num_rev);
	x.build = 1; /* rebuilt since: other keys, same names */
	put_run(x);
	x = normal("newer", 200, num_mix);
	x.watched = true;
	x.abnormal = "false";
	put_run(x);
	x = normal("other-exe", 300, num_step);
	x.exe = "/home/u/bin/other";
	put_run(x);
	x = normal("other-size", 300, num_step);
	x.ntasks = NTASKS + 2;
	put_run(x);
	x = normal("hung", 300, num_step);
	x.verdict = "hang";
	put_run(x);
	x = normal("stalled", 300, num_step); /* completed, but its own diagnosis found a fault */
	x.abnormal = "true";
	put_run(x);
	put_run(normal("running", 0, num_step));
	put_run(normal("now", 400, num_step)); /* the step itself, as a checkpoint left it */

	cr_assert_eq(pdi_samples_load(st, &f.s, 8, &v), 0);
	cr_assert_eq(v.nruns, 2);
	cr_assert_eq(v.ntasks, NTASKS);
	assert_run_is(&v, 0, "newer", false, 0);
	assert_run_is(&v, 1, "old", false, 0);
	cr_assert_eq(v.runs[0].ended, 200);
	cr_assert_eq(v.abnormal, 2, "the hung run, the stalled run");
	cr_assert_eq(v.unreadable, 0);
	cr_assert_not(v.truncated);
	cr_assert_gt(v.bytes, 0);
	pdi_samples_done(&v);
	cr_assert_eq(v.nruns, 0);
	cr_assert_null(v.runs);
	step_done(&f);
}

Test(samples, at_most_max_runs)
{
	struct pdi_samples v;
	struct fixture f;

	step_init(&f, "now");
	put_run(normal("a", 100, num_rev));
	put_run(normal("c", 300, num_mix));
	put_run(normal("b", 200, num_step));
	cr_assert_eq(pdi_samples_load(st, &f.s, 2, &v), 0);
	cr_assert_eq(v.nruns, 2);
	assert_run_is(&v, 0, "c", false, 0);
	assert_run_is(&v, 1, "b", false, 0);
	pdi_samples_done(&v);
	cr_assert_eq(pdi_samples_load(st, &f.s, 0, &v), 0);
	cr_assert_eq(v.nruns, 0);
	pdi_samples_done(&v);
	step_done(&f);
}

Test(samples, abnormal_and_unreadable_runs_are_skipped)
{
	static const struct {
		const char *name;
		int bad;
	} cases[] = {{"lost", BAD_LOST},       {"killed", BAD_ENDED_IN_MPI}, {"dropped", BAD_DROPPED},
		     {"ranks", BAD_RANK},      {"corrupt", BAD_CORRUPT}};
	struct pdi_samples v;
	struct fixture f;
	struct run x;

	step_init(&f, "now");
	put_run(normal("good", 10, num_mix));
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		x = normal(cases[i].name, 100 + i, num_rev);
		x.bad_rank = 2;
		x.bad = cases[i].bad;
		put_run(x);
	}
	x = normal("no-report", 200, num_rev);
	x.verdict = NULL;
	put_run(x);
	x = normal("incomplete", 201, num_rev);
	x.verdict = "incomplete";
	put_run(x);

	cr_assert_eq(pdi_samples_load(st, &f.s, 4, &v), 0);
	cr_assert_eq(v.nruns, 1);
	assert_run_is(&v, 0, "good", false, 0);
	cr_assert_eq(v.abnormal, 6, "lost, killed, dropped, ranks, no report, incomplete: %u", v.abnormal);
	cr_assert_eq(v.unreadable, 1, "corrupt");
	pdi_samples_done(&v);
	step_done(&f);
}

Test(samples, sites_the_step_lacks_are_foreign)
{
	struct pdi_samples v;
	struct fixture f;
	struct run x;

	step_init(&f, "now");
	x = normal("extra", 100, num_rev);
	x.extra = true;
	put_run(x);
	cr_assert_eq(pdi_samples_load(st, &f.s, 4, &v), 0);
	cr_assert_eq(v.nruns, 1);
	/* the stored run numbered the extra site 4 */
	assert_run_is(&v, 0, "extra", true, PDI_SAMPLES_FOREIGN_SITE + num_rev[L_EXTRA]);
	cr_assert_geq(PDI_SAMPLES_FOREIGN_SITE, f.s.nsites);
	pdi_samples_done(&v);
	step_done(&f);
}

/* Two sites of one name (a call inside an inlined function, say): the key tells them apart
 * when the binary is the same file, whatever order the run met them in. */
Test(samples, namesakes_told_apart_by_key)
{
	static const uint32_t swapped[NL] = {0, 2, 1, 3, 4};
	struct pdi_samples v;
	struct fixture f;

	step_init(&f, "now");
	f.sites[1].name = f.sites[2].name = (char *)"MPI_Sendrecv@inline.h:5";
	{
		struct pdi_store_step x = {.started = 1, .ended = 100, .ntasks = NTASKS};
		struct pdi_store_site sv[4];
		struct run r = normal("alias", 100, swapped);

		snprintf(x.name, sizeof(x.name), "alias");
		snprintf(x.state, sizeof(x.state), "ended");
		snprintf(x.executable, sizeof(x.executable), EXE);
		cr_assert_eq(pdi_store_put_step(st, &x), 0);
		for (unsigned l = 0; l < 4; l++)
			sv[l] = (struct pdi_store_site){.index = swapped[l], .fn = fn_id(lsites[l].fn),
							.name = l == L_SEND || l == L_RECV ? "MPI_Sendrecv@inline.h:5"
											  : lsites[l].name,
							.caller = "f", .file = "inline.h", .line = 5, .key = site_key(l, 0)};
		cr_assert_eq(pdi_store_put_sites(st, "alias", sv, 4), 0);
		for (int rank = 0; rank < NTASKS; rank++)
			put_task(&r, rank);
		cr_assert_eq(pdi_store_put_report(st, "alias", "{\"verdict\": {\"kind\": \"completed\"}}"), 0);
	}
	cr_assert_eq(pdi_samples_load(st, &f.s, 4, &v), 0);
	cr_assert_eq(v.nruns, 1);
	assert_run_is(&v, 0, "alias", false, 0);
	pdi_samples_done(&v);
	step_done(&f);
}

Test(samples, nothing_to_match_by)
{
	struct pdi_samples v;
	struct fixture f;

	step_init(&f, "now");
	put_run(normal("a", 100, num_rev));
	f.s.executable = NULL;
	cr_assert_eq(pdi_samples_load(st, &f.s, 4, &v), 0);
	cr_assert_eq(v.nruns, 0);
	pdi_samples_done(&v);
	f.s.executable = (char *)"/home/u/bin/app2";
	cr_assert_eq(pdi_samples_load(st, &f.s, 4, &v), 0);
	cr_assert_eq(v.nruns, 0);
	pdi_samples_done(&v);
	step_done(&f);
}

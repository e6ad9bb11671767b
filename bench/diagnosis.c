/* SPDX-License-Identifier: GPL-2.0-only */
/* diagnosis.c -- the whole diagnosis at scale (issue 4, "Scale"): digests and equivalence
 * classes, AutomaDeD on the classes, PDI over every task's position, peak memory.
 *
 * Usage: bench-diagnosis [--tasks N[,N...]] [--node-tasks K] [--phases P] [--iters I] [--tolerance T]
 *
 * The job is a 27-point 3-D stencil on a grid of N tasks: per iteration an Irecv and an
 * Isend per existing neighbour (26 in the interior), a Waitall, the computation, an
 * Allreduce; per phase a Pcontrol marker and a Gather, after which rank 0 writes a file.
 * Tasks fall into classes by which neighbours they have (interior, faces, edges, corners)
 * plus rank 0. Times are jittered per class, not per task, so that a class's tasks have
 * equal models, as a real stencil's would only within a tolerance. One interior task
 * stalls in the computation before the Allreduce in the middle phase (6 times slower in
 * half the iterations), and in the last phase it hangs there while all others wait inside
 * the Allreduce. The others wait for it in the Allreduce: the stall shows in every model.
 *
 * What each daemon holds: a private model per task of its node (K tasks). It digests them,
 * groups them into classes, and ships one model per class with the member list; the root
 * merges the classes of all nodes. The bench does exactly that, node after node, with a
 * private copy of the model for each task (the copies are made outside the timings), so
 * that at most one node's models live at a time, never 100,000 of them. Timed separately:
 * digesting (per task), classing within the nodes, the root's merge, AutomaDeD alone on the
 * classes (Gaussian and histogram), and the daemon's own analysis of the root's view
 * (pdi_analysis_build: the same code path pdimond runs on a gathered view, with its tasks
 * pointing at their class's model). The total is what one core does for a diagnosis in the
 * distributed design: one node's digests and classing, the root's merge, the analysis. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "analysis.h"
#include "automaded.h"
#include "eqclass.h"
#include "model.h"
#include "mpi_funcs.h"
#include "pdi.h"

#define NDIR 26
#define MAX_SIZES 4
#define TARGET_S 1.0
#define TARGET_GIB 2.0
#define PDI_TARGET_TASKS 32768

/* call sites, interned step-wide */
enum { SITE_INIT = 1, SITE_SETUP, SITE_PCONTROL, SITE_WAITALL, SITE_ALLREDUCE, SITE_GATHER, SITE_IO,
       SITE_IRECV = 16, SITE_ISEND = SITE_IRECV + NDIR };

struct options {
	size_t sizes[MAX_SIZES];
	unsigned nsizes;
	uint32_t node_tasks, phases, iters;
	double tolerance;
};

/* What makes a task's model: which neighbours it has, whether it writes, whether it is the faulty one. */
struct role {
	uint8_t lo_ok[3], hi_ok[3];
	bool io, faulty;
};

struct grid {
	uint32_t dim[3];
	size_t n;
	size_t faulty; /* rank */
};

struct fn_ids {
	uint16_t init, bcast, pcontrol, irecv, isend, waitall, allreduce, gather, io;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double seconds_since(uint64_t t0)
{
	return (double)(now_ns() - t0) / 1e9;
}

static double peak_rss_gib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / (1024.0 * 1024.0);
}

/* xorshift64*: deterministic jitter */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/* BASE ns, give or take SPREAD (a fraction) */
static uint64_t jitter(uint64_t *seed, uint64_t base, double spread)
{
	return (uint64_t)((double)base * (1.0 - spread + 2.0 * spread * (double)(rnd(seed) % 1000) / 1000.0));
}

static uint16_t fn_index(const char *name)
{
	int fn = pdi_mpi_func_find(name);

	if (fn < 0) {
		fprintf(stderr, "bench-diagnosis: %s is not a probed function\n", name);
		exit(1);
	}
	return (uint16_t)fn;
}

static struct fn_ids fn_ids(void)
{
	return (struct fn_ids){
		.init = fn_index("MPI_Init"), .bcast = fn_index("MPI_Bcast"), .pcontrol = fn_index("MPI_Pcontrol"),
		.irecv = fn_index("MPI_Irecv"), .isend = fn_index("MPI_Isend"), .waitall = fn_index("MPI_Waitall"),
		.allreduce = fn_index("MPI_Allreduce"), .gather = fn_index("MPI_Gather"),
		.io = fn_index("MPI_File_write_all")};
}

/* The three factors of N closest to a cube, smallest first. */
static int grid_of(size_t n, struct grid *ret)
{
	uint32_t best[3] = {0};
	double spread = INFINITY;

	for (uint32_t a = 1; (size_t)a * a * a <= n; a++)
		for (uint32_t b = a; n % a == 0 && (size_t)a * b * b <= n; b++)
			if ((n / a) % b == 0) {
				uint32_t c = (uint32_t)(n / a / b);
				double s = (double)c / a;

				if (s < spread) {
					spread = s;
					best[0] = a, best[1] = b, best[2] = c;
				}
			}
	if (best[0] < 3) {
		fprintf(stderr, "bench-diagnosis: %zu tasks make no 3-D grid with an interior\n", n);
		return -EINVAL;
	}
	*ret = (struct grid){.dim = {best[0], best[1], best[2]}, .n = n};
	ret->faulty = best[0] / 2 + (size_t)best[0] * (best[1] / 2 + (size_t)best[1] * (best[2] / 2));
	return 0;
}

static struct role role_of(const struct grid *g, size_t rank)
{
	uint32_t c[3] = {(uint32_t)(rank % g->dim[0]), (uint32_t)(rank / g->dim[0] % g->dim[1]),
			 (uint32_t)(rank / g->dim[0] / g->dim[1])};
	struct role r = {.io = rank == 0, .faulty = rank == g->faulty};

	for (int d = 0; d < 3; d++) {
		r.lo_ok[d] = c[d] > 0;
		r.hi_ok[d] = c[d] + 1 < g->dim[d];
	}
	return r;
}

/* Roles with equal ids make equal models. */
static unsigned role_id(const struct role *r)
{
	unsigned id = 0;

	for (int d = 0; d < 3; d++)
		id = id * 4 + r->lo_ok[d] + 2u * r->hi_ok[d];
	return r->faulty ? 64 * 2 : r->io ? 64 + id : id;
}

#define NROLES (64 * 2 + 1)

static bool has_neighbour(const struct role *r, unsigned dir)
{
	unsigned k = dir < 13 ? dir : dir + 1; /* skip (0,0,0) */

	for (int d = 0; d < 3; d++) {
		int delta = (int)(k % 3) - 1;

		if ((delta < 0 && !r->lo_ok[d]) || (delta > 0 && !r->hi_ok[d]))
			return false;
		k /= 3;
	}
	return true;
}

struct feeder {
	struct pdi_model *m;
	uint64_t t, seed;
	int err;
};

static void call(struct feeder *f, uint32_t site, uint16_t fn, uint64_t gap, uint64_t duration, uint64_t req)
{
	struct pdi_call c = {.site = site, .fn = fn, .peer = PDI_NO_PEER, .req = req};
	int r;

	c.t_enter = (f->t += gap);
	c.t_exit = (f->t += duration);
	if ((r = pdi_model_add_call(f->m, &c)) < 0 && !f->err)
		f->err = r;
}

/* One stencil iteration up to the Waitall: what precedes the computation. */
static void exchange(struct feeder *f, const struct fn_ids *fn, const struct role *r)
{
	for (unsigned d = 0; d < NDIR; d++)
		if (has_neighbour(r, d))
			call(f, SITE_IRECV + d, fn->irecv, jitter(&f->seed, 300, 0.3), jitter(&f->seed, 800, 0.3),
			     0x7f0000001000 + d);
	for (unsigned d = 0; d < NDIR; d++)
		if (has_neighbour(r, d))
			call(f, SITE_ISEND + d, fn->isend, jitter(&f->seed, 300, 0.3), jitter(&f->seed, 1200, 0.3),
			     0x7f0000002000 + d);
	call(f, SITE_WAITALL, fn->waitall, jitter(&f->seed, 200, 0.3), jitter(&f->seed, 15000, 0.5), 0);
}

/* The model of ROLE: a prologue, PHASES phases of ITERS iterations, the last one cut short
 * by the hang (every task has completed its Waitall; the faulty one computes, the others
 * wait inside the Allreduce, which their models do not hold yet). */
static int build_model(struct pdi_model *m, const struct role *r, const struct options *o)
{
	struct fn_ids fn = fn_ids();
	struct role normal = *r;
	struct feeder f = {.m = m, .t = 1000000};
	uint32_t faulty_phase = o->phases / 2;

	normal.faulty = false;
	f.seed = 0x9E3779B97F4A7C15ull ^ role_id(&normal); /* jitter per class, not per task */
	pdi_model_init(m, NULL);
	call(&f, SITE_INIT, fn.init, 0, 2000000, 0);
	call(&f, SITE_SETUP, fn.bcast, 50000, 20000, 0);
	for (uint32_t p = 0; p < o->phases; p++) {
		bool last = p + 1 == o->phases;
		uint32_t iters = last ? o->iters / 2 : o->iters;

		call(&f, SITE_PCONTROL, fn.pcontrol, jitter(&f.seed, 1000, 0.2), 500, 0);
		for (uint32_t i = 0; i < iters; i++) {
			uint64_t compute = jitter(&f.seed, 50000, 0.1), reduce = jitter(&f.seed, 20000, 0.5);

			/* the stall: the others wait for the faulty task in the Allreduce */
			if (p == faulty_phase && i >= iters / 2)
				*(r->faulty ? &compute : &reduce) += 5 * 50000;
			exchange(&f, &fn, r);
			call(&f, SITE_ALLREDUCE, fn.allreduce, compute, reduce, 0);
		}
		if (last) {
			exchange(&f, &fn, r);
			break;
		}
		call(&f, SITE_GATHER, fn.gather, jitter(&f.seed, 2000, 0.2), jitter(&f.seed, 40000, 0.3), 0);
		if (r->io)
			call(&f, SITE_IO, fn.io, jitter(&f.seed, 5000, 0.2), jitter(&f.seed, 3000000, 0.2), 0);
	}
	if (f.err) {
		pdi_model_done(m);
		return f.err;
	}
	return 0;
}

static size_t states_of(const struct pdi_model *m)
{
	size_t n = 0;

	for (uint32_t p = 0; p < m->nphases; p++)
		n += m->phases[p].nstates;
	return n;
}

/* A task's private model: a deep copy of its role's, as its daemon would have built it. */
static int dup_array(void **to, const void *from, size_t bytes)
{
	*to = NULL;
	if (!from || !bytes)
		return 0;
	*to = malloc(bytes);
	if (!*to)
		return -ENOMEM;
	memcpy(*to, from, bytes);
	return 0;
}

static int dup_map(struct pdi_u64map *to, const struct pdi_u64map *from)
{
	size_t slots = from->mask ? (size_t)from->mask + 1 : 0;

	*to = *from;
	to->keys = NULL;
	to->vals = NULL;
	if (dup_array((void **)&to->keys, from->keys, slots * sizeof(*from->keys)) < 0 ||
	    dup_array((void **)&to->vals, from->vals, slots * sizeof(*from->vals)) < 0)
		return -ENOMEM;
	return 0;
}

static int clone_model(struct pdi_model *to, const struct pdi_model *from)
{
	*to = *from;
	to->phases = NULL;
	to->nphases = to->cap_phases = 0;
	to->coll_fns = NULL;
	to->reqs = NULL;
	to->req_idx = (struct pdi_u64map){0};
	if (dup_array((void **)&to->phases, from->phases, sizeof(*from->phases) * from->cap_phases) < 0)
		goto oom;
	to->cap_phases = from->cap_phases;
	for (uint32_t i = 0; i < from->nphases; i++) {
		const struct pdi_phase *p = &from->phases[i];
		struct pdi_phase *q = &to->phases[i];

		*q = (struct pdi_phase){.t_start = p->t_start, .t_end = p->t_end, .nstates = p->nstates,
					.nedges = p->nedges};
		to->nphases++;
		if (dup_array((void **)&q->states, p->states, sizeof(*p->states) * p->cap_states) < 0 ||
		    dup_array((void **)&q->edges, p->edges, sizeof(*p->edges) * p->cap_edges) < 0 ||
		    dup_map(&q->state_idx, &p->state_idx) < 0 || dup_map(&q->edge_idx, &p->edge_idx) < 0)
			goto oom;
		q->cap_states = p->cap_states;
		q->cap_edges = p->cap_edges;
	}
	if (dup_array((void **)&to->reqs, from->reqs, sizeof(*from->reqs) * from->cap_reqs) < 0 ||
	    dup_map(&to->req_idx, &from->req_idx) < 0)
		goto oom;
	return 0;
oom:
	pdi_model_done(to);
	return -ENOMEM;
}

/* What one scenario measured. */
struct result {
	size_t tasks, classes, roles, states, node_max_classes;
	uint32_t nodes;
	double build_s, digest_s, node_classing_s, root_merge_s, worst_node_s;
	double automaded_s[2], analysis_s;
	bool automaded_found[2], pdi_found, analysis_found;
	uint32_t automaded_phase[2], automaded_pick[2]; /* faulty phase; tasks of the faulty class */
	size_t automaded_clusters[2];
	size_t lp_groups;
};

struct scenario {
	const struct options *o;
	struct grid g;
	struct pdi_model role_model[NROLES];
	bool have_role[NROLES];
	struct pdi_eqclasses root;
	struct pdi_model **kept; /* the representatives the root holds */
	size_t nkept, cap_kept;
};

static int keep(struct scenario *s, struct pdi_model *m)
{
	if (s->nkept == s->cap_kept) {
		size_t cap = s->cap_kept ? s->cap_kept * 2 : 64;
		struct pdi_model **v = realloc(s->kept, sizeof(*v) * cap);

		if (!v)
			return -ENOMEM;
		s->kept = v;
		s->cap_kept = cap;
	}
	s->kept[s->nkept++] = m;
	return 0;
}

/* One node: private models for its tasks, digested and classed there, merged at the root. */
static int run_node(struct scenario *s, size_t first, size_t n, struct result *res)
{
	struct pdi_model *priv = calloc(n, sizeof(*priv));
	uint64_t *digest = calloc(n, sizeof(*digest));
	bool *kept = calloc(n, sizeof(*kept));
	struct pdi_eqclasses node;
	double node_s = 0;
	uint64_t t0;
	int r = -ENOMEM;

	pdi_eqclasses_init(&node, s->o->tolerance);
	if (!priv || !digest || !kept)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct role role = role_of(&s->g, first + i);

		if ((r = clone_model(&priv[i], &s->role_model[role_id(&role)])) < 0)
			goto out;
	}
	t0 = now_ns();
	for (size_t i = 0; i < n; i++)
		digest[i] = pdi_model_digest(&priv[i], s->o->tolerance);
	res->digest_s += seconds_since(t0);
	node_s += seconds_since(t0);
	t0 = now_ns();
	for (size_t i = 0; i < n; i++) {
		uint32_t rank = (uint32_t)(first + i);

		if ((r = pdi_eqclass_add(&node, &priv[i], digest[i], &rank, 1, NULL)) < 0)
			goto out;
	}
	res->node_classing_s += seconds_since(t0);
	node_s += seconds_since(t0);
	if (node.n > res->node_max_classes)
		res->node_max_classes = node.n;
	if (node_s > res->worst_node_s)
		res->worst_node_s = node_s;
	/* shipped to the root: one model per class and its members */
	t0 = now_ns();
	for (size_t c = 0; c < node.n; c++) {
		const struct pdi_eqclass *cl = &node.classes[c];
		size_t i = cl->members[0] - first;

		if ((r = pdi_eqclass_add(&s->root, cl->model, cl->digest, cl->members, cl->n, NULL)) < 0)
			goto out;
		kept[i] = r == 1;
	}
	res->root_merge_s += seconds_since(t0);
	for (size_t i = 0; i < n; i++)
		if (kept[i]) {
			struct pdi_model *m = malloc(sizeof(*m));

			if (!m || (r = keep(s, m)) < 0) {
				free(m);
				r = -ENOMEM;
				goto out;
			}
			*m = priv[i];
			priv[i] = (struct pdi_model){0};
			/* the root's class points at the node's copy: move it along */
			for (size_t c = 0; c < s->root.n; c++)
				if (s->root.classes[c].model == &priv[i])
					s->root.classes[c].model = m;
		}
	r = 0;
out:
	for (size_t i = 0; priv && i < n; i++)
		pdi_model_done(&priv[i]);
	free(priv);
	free(digest);
	free(kept);
	pdi_eqclasses_done(&node);
	return r;
}

static bool is_faulty_class(const struct scenario *s, size_t c)
{
	const struct pdi_eqclass *cl = &s->root.classes[c];

	return cl->n == 1 && cl->members[0] == s->g.faulty;
}

static int run_automaded(struct scenario *s, enum pdi_timedist dist, struct result *res)
{
	const struct pdi_model **models = calloc(s->root.n, sizeof(*models));
	uint32_t *weights = calloc(s->root.n, sizeof(*weights));
	struct pdi_automaded a;
	const char *why = NULL;
	uint64_t t0;
	int r = -ENOMEM;

	if (!models || !weights)
		goto out;
	for (size_t c = 0; c < s->root.n; c++) {
		models[c] = s->root.classes[c].model;
		weights[c] = s->root.classes[c].n;
	}
	t0 = now_ns();
	r = pdi_automaded_run(&(struct pdi_automaded_input){.models = models, .weights = weights, .n = s->root.n,
							    .dist = dist},
			      &a, &why);
	res->automaded_s[dist] = seconds_since(t0);
	if (r < 0) {
		fprintf(stderr, "bench-diagnosis: AutomaDeD: %s\n", why ? why : strerror(-r));
		goto out;
	}
	res->automaded_phase[dist] = a.faulty_phase;
	/* model phase 0 is the prologue: the stalled loop phase is phases/2 + 1 */
	res->automaded_found[dist] = a.faulty_phase == s->o->phases / 2 + 1 && is_faulty_class(s, a.faulty_task);
	res->automaded_pick[dist] = s->root.classes[a.faulty_task].n;
	res->automaded_clusters[dist] = a.nclusters;
	pdi_automaded_done(&a);
out:
	free(models);
	free(weights);
	return r;
}

/* The step's sites as the view names them: index SITE_* calls its function. */
static struct pdi_site *bench_sites(uint32_t *ret_n)
{
	struct fn_ids fn = fn_ids();
	uint32_t n = SITE_ISEND + NDIR;
	struct pdi_site *v = calloc(n, sizeof(*v));
	static char names[SITE_ISEND + NDIR][48];

	if (!v)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		uint16_t f = i == SITE_INIT ? fn.init : i == SITE_SETUP ? fn.bcast : i == SITE_PCONTROL ? fn.pcontrol
			     : i == SITE_WAITALL ? fn.waitall : i == SITE_ALLREDUCE ? fn.allreduce : i == SITE_GATHER ? fn.gather
			     : i == SITE_IO ? fn.io : i >= SITE_ISEND ? fn.isend : i >= SITE_IRECV ? fn.irecv : fn.bcast;

		snprintf(names[i], sizeof(names[i]), "%s@stencil.c:%u", pdi_mpi_funcs[f].name, 100 + i);
		v[i] = (struct pdi_site){.fn = f, .name = names[i], .caller = "step", .file = "stencil.c", .line = (int)(100 + i)};
	}
	*ret_n = n;
	return v;
}

/* The daemon's analysis (lib/analysis/analysis.c: classing, AutomaDeD, PDI, the prefix tree) of the
 * root's view of the hung step: every task points at its class's model, as a gathered view
 * does; all wait inside the Allreduce but the faulty one, which computes after its Waitall. */
static int run_analysis(struct scenario *s, size_t n, struct result *res)
{
	struct pdi_view v = {.name = "bench", .running = true, .nodes = 1, .nodes_answered = 1, .ntasks = (unsigned)n};
	struct pdi_analysis a;
	uint64_t t0;
	int r = -ENOMEM;

	v.sites = bench_sites(&v.nsites);
	v.tasks = calloc(n, sizeof(*v.tasks));
	if (!v.sites || !v.tasks)
		goto out;
	for (size_t c = 0; c < s->root.n; c++)
		for (uint32_t k = 0; k < s->root.classes[c].n; k++) {
			uint32_t rank = s->root.classes[c].members[k];
			bool faulty = rank == s->g.faulty;
			struct pdi_view_task *t = &v.tasks[rank];

			*t = (struct pdi_view_task){.rank = (int)rank, .running = true, .model = s->root.classes[c].model};
			t->where = (struct pdi_where){.kind = faulty ? PDI_WHERE_COMPUTING : PDI_WHERE_BLOCKED,
						      .site = faulty ? SITE_WAITALL : SITE_ALLREDUCE, .for_ns = 2000000000};
			snprintf(t->where.text, sizeof(t->where.text), "%s%s", faulty ? "after " : "",
				 v.sites[t->where.site].name);
			t->progress = pdi_model_visits(t->model, pdi_state_comm((uint32_t)t->where.site));
		}
	t0 = now_ns();
	if ((r = pdi_analysis_build(&v, NULL, &a)) < 0)
		goto out;
	res->analysis_s = seconds_since(t0);
	{
		char want[32];

		snprintf(want, sizeof(want), "[%zu]", s->g.faulty);
		res->pdi_found = !strcmp(a.lp, want);
		res->lp_groups = a.has_pdg ? a.pdg.nlp : 0;
		/* model phase 0 is the prologue: the stalled loop phase is phases/2 + 1 */
		res->analysis_found = a.has_automaded && a.am.faulty_phase == s->o->phases / 2 + 1 &&
				      a.classes.classes[a.am.faulty_task].n == 1 &&
				      v.tasks[a.classes.classes[a.am.faulty_task].members[0]].rank == (int)s->g.faulty;
	}
	pdi_analysis_done(&a);
out:
	free(v.sites);
	free(v.tasks);
	return r;
}

static void scenario_done(struct scenario *s)
{
	for (unsigned i = 0; i < NROLES; i++)
		if (s->have_role[i])
			pdi_model_done(&s->role_model[i]);
	for (size_t i = 0; i < s->nkept; i++) {
		pdi_model_done(s->kept[i]);
		free(s->kept[i]);
	}
	free(s->kept);
	pdi_eqclasses_done(&s->root);
}

static int run_scenario(const struct options *o, size_t ntasks, struct result *res)
{
	struct scenario s = {.o = o};
	uint64_t t0 = now_ns();
	int r;

	*res = (struct result){.tasks = ntasks};
	if ((r = grid_of(ntasks, &s.g)) < 0)
		return r;
	pdi_eqclasses_init(&s.root, o->tolerance);
	for (size_t rank = 0; rank < ntasks; rank++) {
		struct role role = role_of(&s.g, rank);
		unsigned id = role_id(&role);

		if (s.have_role[id])
			continue;
		if ((r = build_model(&s.role_model[id], &role, o)) < 0)
			goto out;
		s.have_role[id] = true;
		res->roles++;
		if (role.faulty)
			res->states = states_of(&s.role_model[id]);
	}
	res->build_s = seconds_since(t0);
	for (size_t first = 0; first < ntasks; first += o->node_tasks, res->nodes++)
		if ((r = run_node(&s, first, ntasks - first < o->node_tasks ? ntasks - first : o->node_tasks, res)) < 0)
			goto out;
	res->classes = s.root.n;
	if ((r = run_automaded(&s, PDI_TIME_GAUSS, res)) < 0 || (r = run_automaded(&s, PDI_TIME_HIST, res)) < 0)
		goto out;
	r = run_analysis(&s, ntasks, res);
out:
	scenario_done(&s);
	return r;
}

static double total_s(const struct result *r)
{
	return r->worst_node_s + r->root_merge_s + r->analysis_s;
}

static void print_result(const struct options *o, const struct result *r)
{
	printf("diagnosis tasks=%zu grid_nodes=%" PRIu32 "x%" PRIu32 " roles=%zu classes=%zu states_per_model=%zu"
	       " (setup %.2f s)\n",
	       r->tasks, r->nodes, o->node_tasks, r->roles, r->classes, r->states, r->build_s);
	printf("  digest: %.2f us/task, %.3f s all tasks; classing in nodes %.3f s all, worst node %.2f ms"
	       " (%" PRIu32 " tasks, <= %zu classes); root merge %.3f s\n",
	       r->digest_s / (double)r->tasks * 1e6, r->digest_s, r->node_classing_s, r->worst_node_s * 1e3,
	       o->node_tasks, r->node_max_classes, r->root_merge_s);
	for (int d = PDI_TIME_GAUSS; d <= PDI_TIME_HIST; d++)
		printf("  automaded %s: %.3f s, faulty phase %" PRIu32 " (stalled: %" PRIu32 "), faulty task's class"
		       " of %" PRIu32 " tasks in %zu clusters, found %s\n",
		       d == PDI_TIME_GAUSS ? "gauss" : "hist", r->automaded_s[d], r->automaded_phase[d], o->phases / 2 + 1,
		       r->automaded_pick[d], r->automaded_clusters[d], r->automaded_found[d] ? "yes" : "no");
	printf("  analysis (the daemon's pdi_analysis_build: classing, AutomaDeD gauss, PDI, prefix tree): %.3f s;"
	       " faulty phase and task found %s; PDI lp groups %zu, hung task alone %s\n",
	       r->analysis_s, r->analysis_found ? "yes" : "no", r->lp_groups, r->pdi_found ? "yes" : "no");
}

static void usage(FILE *out)
{
	fprintf(out, "usage: bench-diagnosis [--tasks N[,N...]] [--node-tasks K] [--phases P] [--iters I]"
		     " [--tolerance T]\n");
}

static int parse_sizes(const char *arg, struct options *o)
{
	char *end;

	o->nsizes = 0;
	for (const char *p = arg; *p && o->nsizes < MAX_SIZES; p = *end ? end + 1 : end) {
		o->sizes[o->nsizes++] = strtoull(p, &end, 10);
		if (end == p || (*end && *end != ','))
			return -EINVAL;
	}
	return o->nsizes ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"tasks", required_argument, NULL, 't'},
					     {"node-tasks", required_argument, NULL, 'k'},
					     {"phases", required_argument, NULL, 'p'},
					     {"iters", required_argument, NULL, 'i'},
					     {"tolerance", required_argument, NULL, 'T'},
					     {"help", no_argument, NULL, 'h'},
					     {0}};
	struct options o = {.sizes = {100000, PDI_TARGET_TASKS}, .nsizes = 2, .node_tasks = 128, .phases = 10,
			    .iters = 8};
	struct result res[MAX_SIZES];
	bool met = true, found = true;
	int c;

	while ((c = getopt_long(argc, argv, "t:k:p:i:T:h", opts, NULL)) >= 0) {
		switch (c) {
		case 't':
			if (parse_sizes(optarg, &o) < 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'k': o.node_tasks = (uint32_t)atoi(optarg); break;
		case 'p': o.phases = (uint32_t)atoi(optarg); break;
		case 'i': o.iters = (uint32_t)atoi(optarg); break;
		case 'T': o.tolerance = atof(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || o.node_tasks < 1 || o.phases < 5 || o.iters < 4) {
		usage(stderr);
		return 2;
	}
	for (unsigned i = 0; i < o.nsizes; i++) {
		int r = run_scenario(&o, o.sizes[i], &res[i]);

		if (r < 0) {
			fprintf(stderr, "bench-diagnosis: %zu tasks: %s\n", o.sizes[i], strerror(-r));
			return 1;
		}
		print_result(&o, &res[i]);
	}
	for (unsigned i = 0; i < o.nsizes; i++) {
		const struct result *r = &res[i];
		bool ok = r->tasks == PDI_TARGET_TASKS ? r->analysis_s <= TARGET_S : total_s(r) <= TARGET_S;

		met &= ok;
		found &= r->automaded_found[PDI_TIME_GAUSS] && r->automaded_found[PDI_TIME_HIST] && r->analysis_found && r->pdi_found;
		printf("summary tasks=%zu total_s=%.3f (one node's digests+classing, root merge, the analysis)"
		       " analysis_s=%.3f all_digests_one_core_s=%.2f\n",
		       r->tasks, total_s(r), r->analysis_s, r->digest_s + r->node_classing_s);
	}
	printf("summary peak_rss_gib=%.3f found=%s targets (<= %.0f s, <= %.0f GiB; PDI <= %.0f s at %d tasks) %s\n",
	       peak_rss_gib(), found ? "yes" : "no", TARGET_S, TARGET_GIB, TARGET_S, PDI_TARGET_TASKS,
	       met && peak_rss_gib() <= TARGET_GIB ? "met" : "NOT met");
	return 0;
}

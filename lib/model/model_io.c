/* SPDX-License-Identifier: GPL-2.0-only */
/* model_io.c -- encoding a task's model into a portable blob and rebuilding it from one.
 *
 * Payload of format 10, after the header described in model_io.h:
 *
 *	u16 nfns, then nfns x (u8 length, name)      MPI functions the blob refers to
 *	u64 calls, dropped_states, dropped_edges, dropped_requests, folded_phase_cuts,
 *	    ncollectives, auto_next_cut, last_enter, last_exit
 *	u32 auto_len, last_site
 *	u16 last_fn (index into the blob's functions)
 *	u8  flags: 1 started, 2 saw_pcontrol, 4 slots (phases on the wall clock), 8 early (slots
 *	    cut before the step decided: model.h)
 *	i64 clock_offset_ns; u64 merged_phases
 *	u64 usage_now.at_ns, cpu_ns, wait_ns, group_ns  the latest reading of the kernel's counts
 *	u32 ncoll, then ncoll x u16                  the collectives' functions sampled so far
 *	u32 nphases, cap_phases, then per phase:
 *	    u64 t_start, t_end, first_collective, usage.at_ns, usage.cpu_ns, usage.wait_ns, usage.group_ns
 *	    u32 nstates, cap_states, then nstates x (u64 key, u64 visits, u64 bytes)
 *	    u32 nedges, cap_edges, then per edge:
 *	        u32 from, to; u64 n; f64 mean, m2; u8 nbuckets, then nbuckets x (f32 mean, u32 count)
 *	u32 nreqs, cap_reqs, then nreqs x (u64 handle, i32 peer, i32 tag, u32 site, u16 fn)
 *	what the overhead budget left unobserved (unobserved.h):
 *	u32 n, then n x (u64 t_start, t_end; u16 fn (blob index, 0xffff: all); u8 level, duty_log2;
 *	    u32 rate, cost_ppm; u8 from_earlier_runs), then u64 stretched
 *	what its live stack said (stack_seen.h):
 *	u32 n, then n x (u64 t_first, t_last; u16 fn (blob index, 0xffff: outside MPI); u16 looks),
 *	    then u64 dropped
 *	the readings through the step (usage_log.h):
 *	u64 gap_ns; u32 n, then n x (u64 at_ns, cpu_ns, wait_ns, group_ns), oldest first
 *
 * Format 9 (read only) lacks each reading's group_ns: read as 0 (not read).
 * Format 8 (read only) lacks the early flag: its slots are decided.
 * Format 7 (read only) lacks the readings through the step: read as none.
 * Format 6 (read only) lacks an unobserved record's from_earlier_runs: read as 0.
 * Format 5 (read only) lacks what the live stack said: read as nothing.
 * Format 4 (read only) lacks the slots flag: its phases are on collectives.
 * Format 3 (read only) lacks the kernel's counts (usage_now, the phases' usage): read as
 * unknown. Formats 1 and 2 (read only) lack clock_offset_ns, merged_phases and first_collective, and
 * sampled collective sites instead of functions: their sample is dropped. Format 1 also lacks
 * what was unobserved.
 *
 * Capacities are kept because they decide when the model next grows and what its byte
 * budget has left: the decoded model must take the same calls the same way. The decoder
 * trusts nothing: every count is checked against the bytes left before anything is
 * allocated for it, and every index against what it indexes. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "model_io.h"
#include "wire.h"
#include "mpi_funcs.h"

#define HEADER_SIZE 24
#define STATE_SIZE 24        /* encoded sizes, the smallest an item can take */
#define EDGE_MIN_SIZE 33
#define PHASE_MIN_SIZE 32
#define REQUEST_SIZE 22
#define UNOBSERVED_SIZE 29 /* format 7; 28 before */
#define STACK_SEEN_SIZE 20
#define USAGE_SIZE 32 /* format 10; 24 before */
#define FLAG_STARTED 1
#define FLAG_SAW_PCONTROL 2
#define FLAG_SLOTS 4 /* format 5 on */
#define FLAG_EARLY 8 /* format 9 on */

_Static_assert(sizeof(double) == 8 && sizeof(float) == 4, "IEEE-754 binary64 and binary32 expected");

/* Tripwires: a field added to the model that this file does not encode would be lost at every
 * daemon restart, and the decoded model would drift from the original. When one of these
 * fails, encode the new field (or say here why it need not be kept), bump PDI_MODEL_FORMAT
 * once a format has shipped, then update the size. */
#if defined(__x86_64__) || defined(__aarch64__)
_Static_assert(sizeof(struct pdi_state) == 24, "struct pdi_state changed: encode the new field");
_Static_assert(sizeof(struct pdi_edge) == 112, "struct pdi_edge changed: encode the new field");
_Static_assert(sizeof(struct pdi_gauss) == 24 && sizeof(struct pdi_hist) == 76, "time distributions changed");
_Static_assert(sizeof(struct pdi_usage) == 32, "struct pdi_usage changed: encode the new field");
_Static_assert(sizeof(struct pdi_phase) == 136, "struct pdi_phase changed: encode the new field");
_Static_assert(sizeof(struct pdi_request) == 24, "struct pdi_request changed: encode the new field");
/* count_doubt_ns and count_doubt_seen are not encoded: derived from the unobserved log; nor is
 * cfg: the decoder's caller gives it; nor usage_recent: live readings whose use is in the phases
 * (a phase not placed yet is placed from usage_now and the readings the next pdimond takes) */
_Static_assert(sizeof(struct pdi_model) ==
		       304 + sizeof(struct pdi_stack_seen_log) + sizeof(struct pdi_usage_log) + sizeof(struct pdi_usage_recent),
	       "struct pdi_model changed: encode the new field");
_Static_assert(sizeof(struct pdi_stack_seen) == 24, "struct pdi_stack_seen changed: encode the new field");
_Static_assert(sizeof(struct pdi_unobserved) == 32, "struct pdi_unobserved changed: encode the new field");
#endif

/* ---- writing ---- */

/* Written with the peer protocol's writer (wire.h): a growing buffer that remembers its first
 * error, so that encoders need not check each put. */

static void w_f32(struct pdi_wire_writer *w, float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	pdi_wire_put_u32(w, u);
}

static void w_f64(struct pdi_wire_writer *w, double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	pdi_wire_put_u64(w, u);
}

/* The MPI functions a blob refers to, by name: indices into pdi_mpi_funcs are not stable
 * across pdimon releases, names are. */
struct fn_table {
	uint16_t *ref; /* pdi_mpi_funcs index -> 1 + position in the blob's table, 0 if absent */
	uint16_t *fns; /* the blob's table, in order of first use */
	uint16_t n;
};

static int fn_use(struct fn_table *t, uint16_t fn)
{
	if (fn >= pdi_mpi_nfuncs || strlen(pdi_mpi_funcs[fn].name) > UINT8_MAX)
		return -EINVAL;
	if (!t->ref[fn]) {
		t->fns[t->n++] = fn;
		t->ref[fn] = t->n;
	}
	return 0;
}

/* The sample only exists while the first collectives are being counted. */
static uint32_t coll_sample_len(const struct pdi_model *m)
{
	return m->coll_fns && m->ncollectives < PDI_MODEL_PERIOD_SAMPLE ? (uint32_t)m->ncollectives : 0;
}

static int fn_table_build(struct fn_table *t, const struct pdi_model *m)
{
	int r;

	t->ref = calloc(pdi_mpi_nfuncs, sizeof(*t->ref));
	t->fns = calloc(pdi_mpi_nfuncs, sizeof(*t->fns));
	if (!t->ref || !t->fns)
		return -ENOMEM;
	if ((r = fn_use(t, m->last_fn)) < 0)
		return r;
	for (uint32_t i = 0; i < m->nreqs; i++)
		if ((r = fn_use(t, m->reqs[i].fn)) < 0)
			return r;
	for (uint32_t i = 0; i < coll_sample_len(m); i++)
		if ((r = fn_use(t, (uint16_t)m->coll_fns[i])) < 0)
			return r;
	for (uint32_t i = 0; i < m->unobserved.n; i++)
		if (m->unobserved.v[i].fn != PDI_UNOBSERVED_ALL && (r = fn_use(t, m->unobserved.v[i].fn)) < 0)
			return r;
	for (uint32_t i = 0; i < m->stack_seen.n; i++)
		if (m->stack_seen.v[i].fn != PDI_STACK_SEEN_OUTSIDE && (r = fn_use(t, m->stack_seen.v[i].fn)) < 0)
			return r;
	return 0;
}

static void enc_fn_table(struct pdi_wire_writer *w, const struct fn_table *t)
{
	pdi_wire_put_u16(w, t->n);
	for (uint16_t i = 0; i < t->n; i++) {
		const char *name = pdi_mpi_funcs[t->fns[i]].name;
		size_t len = strlen(name);
		uint8_t *p;

		pdi_wire_put_u8(w, (uint8_t)len);
		if ((p = pdi_wire_reserve(w, len)))
			memcpy(p, name, len);
	}
}

static void enc_usage(struct pdi_wire_writer *w, const struct pdi_usage *u)
{
	pdi_wire_put_u64(w, u->at_ns);
	pdi_wire_put_u64(w, u->cpu_ns);
	pdi_wire_put_u64(w, u->wait_ns);
	pdi_wire_put_u64(w, u->group_ns);
}

static void enc_scalars(struct pdi_wire_writer *w, const struct pdi_model *m, const struct fn_table *t)
{
	pdi_wire_put_u64(w, m->calls);
	pdi_wire_put_u64(w, m->dropped_states);
	pdi_wire_put_u64(w, m->dropped_edges);
	pdi_wire_put_u64(w, m->dropped_requests);
	pdi_wire_put_u64(w, m->folded_phase_cuts);
	pdi_wire_put_u64(w, m->ncollectives);
	pdi_wire_put_u64(w, m->auto_next_cut);
	pdi_wire_put_u64(w, m->last_enter);
	pdi_wire_put_u64(w, m->last_exit);
	pdi_wire_put_u32(w, m->auto_len);
	pdi_wire_put_u32(w, m->last_site);
	pdi_wire_put_u16(w, (uint16_t)(t->ref[m->last_fn] - 1));
	pdi_wire_put_u8(w, (m->started ? FLAG_STARTED : 0) | (m->saw_pcontrol ? FLAG_SAW_PCONTROL : 0) |
				   (m->slots ? FLAG_SLOTS : 0) | (m->early ? FLAG_EARLY : 0));
	pdi_wire_put_u64(w, (uint64_t)m->clock_offset_ns);
	pdi_wire_put_u64(w, m->merged_phases);
	enc_usage(w, &m->usage_now);
}

static void enc_coll_fns(struct pdi_wire_writer *w, const struct pdi_model *m, const struct fn_table *t)
{
	uint32_t n = coll_sample_len(m);

	pdi_wire_put_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		pdi_wire_put_u16(w, (uint16_t)(t->ref[m->coll_fns[i]] - 1));
}

static void enc_edge(struct pdi_wire_writer *w, const struct pdi_edge *e)
{
	uint8_t nb = e->hist.n < PDI_HIST_BUCKETS ? e->hist.n : PDI_HIST_BUCKETS;

	pdi_wire_put_u32(w, e->from);
	pdi_wire_put_u32(w, e->to);
	pdi_wire_put_u64(w, e->time.n);
	w_f64(w, e->time.mean);
	w_f64(w, e->time.m2);
	pdi_wire_put_u8(w, nb);
	for (uint8_t i = 0; i < nb; i++) {
		w_f32(w, e->hist.mean[i]);
		pdi_wire_put_u32(w, e->hist.count[i]);
	}
}

static void enc_phase(struct pdi_wire_writer *w, const struct pdi_phase *p)
{
	pdi_wire_put_u64(w, p->t_start);
	pdi_wire_put_u64(w, p->t_end);
	pdi_wire_put_u64(w, p->first_collective);
	enc_usage(w, &p->usage);
	pdi_wire_put_u32(w, p->nstates);
	pdi_wire_put_u32(w, p->cap_states);
	for (uint32_t i = 0; i < p->nstates; i++) {
		pdi_wire_put_u64(w, p->states[i].key);
		pdi_wire_put_u64(w, p->states[i].visits);
		pdi_wire_put_u64(w, p->states[i].bytes);
	}
	pdi_wire_put_u32(w, p->nedges);
	pdi_wire_put_u32(w, p->cap_edges);
	for (uint32_t i = 0; i < p->nedges; i++)
		enc_edge(w, &p->edges[i]);
}

static void enc_requests(struct pdi_wire_writer *w, const struct pdi_model *m, const struct fn_table *t)
{
	pdi_wire_put_u32(w, m->nreqs);
	pdi_wire_put_u32(w, m->cap_reqs);
	for (uint32_t i = 0; i < m->nreqs; i++) {
		const struct pdi_request *q = &m->reqs[i];

		pdi_wire_put_u64(w, q->handle);
		pdi_wire_put_u32(w, (uint32_t)q->peer);
		pdi_wire_put_u32(w, (uint32_t)q->tag);
		pdi_wire_put_u32(w, q->site);
		pdi_wire_put_u16(w, (uint16_t)(t->ref[q->fn] - 1));
	}
}

static void enc_unobserved(struct pdi_wire_writer *w, const struct pdi_model *m, const struct fn_table *t)
{
	const struct pdi_unobserved_log *l = &m->unobserved;

	pdi_wire_put_u32(w, l->n);
	for (uint32_t i = 0; i < l->n; i++) {
		const struct pdi_unobserved *u = &l->v[i];

		pdi_wire_put_u64(w, u->t_start);
		pdi_wire_put_u64(w, u->t_end);
		pdi_wire_put_u16(w, u->fn == PDI_UNOBSERVED_ALL ? PDI_UNOBSERVED_ALL : (uint16_t)(t->ref[u->fn] - 1));
		pdi_wire_put_u8(w, u->level);
		pdi_wire_put_u8(w, u->duty_log2);
		pdi_wire_put_u32(w, u->rate);
		pdi_wire_put_u32(w, u->cost_ppm);
		pdi_wire_put_u8(w, u->from_earlier_runs);
	}
	pdi_wire_put_u64(w, l->stretched);
}

static void enc_stack_seen(struct pdi_wire_writer *w, const struct pdi_model *m, const struct fn_table *t)
{
	const struct pdi_stack_seen_log *l = &m->stack_seen;

	pdi_wire_put_u32(w, l->n);
	for (uint32_t i = 0; i < l->n; i++) {
		const struct pdi_stack_seen *x = &l->v[i];

		pdi_wire_put_u64(w, x->t_first);
		pdi_wire_put_u64(w, x->t_last);
		pdi_wire_put_u16(w, x->fn == PDI_STACK_SEEN_OUTSIDE ? PDI_STACK_SEEN_OUTSIDE : (uint16_t)(t->ref[x->fn] - 1));
		pdi_wire_put_u16(w, x->looks);
	}
	pdi_wire_put_u64(w, l->dropped);
}

static void enc_usage_log(struct pdi_wire_writer *w, const struct pdi_model *m)
{
	pdi_wire_put_u64(w, m->usage_log.gap_ns);
	pdi_wire_put_u32(w, m->usage_log.n);
	for (uint32_t i = 0; i < m->usage_log.n; i++)
		enc_usage(w, &m->usage_log.v[i]);
}

static void seal(uint8_t *p, size_t len)
{
	memcpy(p, PDI_MODEL_MAGIC, 4);
	pdi_le_put(p + 8, PDI_MODEL_FORMAT, 4);
	pdi_le_put(p + 12, 0, 4);
	pdi_le_put(p + 16, len, 8);
	pdi_le_put(p + 4, crc32_z(0, p + 8, len - 8), 4);
}

int pdi_model_encode(const struct pdi_model *m, void **ret_buf, size_t *ret_len)
{
	struct fn_table t = {0};
	struct pdi_wire_writer w = {0};
	int r;

	if ((r = fn_table_build(&t, m)) < 0)
		goto out;
	pdi_wire_reserve(&w, HEADER_SIZE);
	enc_fn_table(&w, &t);
	enc_scalars(&w, m, &t);
	enc_coll_fns(&w, m, &t);
	pdi_wire_put_u32(&w, m->nphases);
	pdi_wire_put_u32(&w, m->cap_phases);
	for (uint32_t i = 0; i < m->nphases; i++)
		enc_phase(&w, &m->phases[i]);
	enc_requests(&w, m, &t);
	enc_unobserved(&w, m, &t);
	enc_stack_seen(&w, m, &t);
	enc_usage_log(&w, m);
	if ((r = w.err) < 0)
		goto out;
	seal(w.buf, w.len);
	*ret_buf = w.buf;
	*ret_len = w.len;
	w.buf = NULL;
out:
	free(w.buf);
	free(t.ref);
	free(t.fns);
	return r;
}

/* ---- reading ---- */

/* A cursor that turns every overrun into a sticky failure, checked where it matters. */
struct rbuf {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static uint64_t r_le(struct rbuf *r, unsigned n)
{
	uint64_t v;

	if (r->left < n) {
		r->bad = true;
		r->left = 0;
		return 0;
	}
	v = pdi_le_get(r->p, n);
	r->p += n;
	r->left -= n;
	return v;
}

static uint8_t r_u8(struct rbuf *r)
{
	return (uint8_t)r_le(r, 1);
}

static uint16_t r_u16(struct rbuf *r)
{
	return (uint16_t)r_le(r, 2);
}

static uint32_t r_u32(struct rbuf *r)
{
	return (uint32_t)r_le(r, 4);
}

static uint64_t r_u64(struct rbuf *r)
{
	return r_le(r, 8);
}

static float r_f32(struct rbuf *r)
{
	uint32_t u = r_u32(r);
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static double r_f64(struct rbuf *r)
{
	uint64_t u = r_u64(r);
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* Can COUNT items of at least SIZE encoded bytes each follow? Asked before allocating for
 * them, so that a forged count cannot make us allocate more than the blob could describe. */
static bool r_fits(struct rbuf *r, uint64_t count, size_t size)
{
	if (count > r->left / size)
		r->bad = true;
	return !r->bad;
}

/* A capacity the model could have grown to for N items. The bound is loose on purpose (the
 * growth policy may change between releases) but keeps a forged capacity from costing more
 * than a few times the items the blob really holds. */
static bool cap_ok(uint32_t n, uint32_t cap)
{
	return n <= cap && cap <= 4 * (uint64_t)n + 16;
}

struct dec {
	struct rbuf r;
	uint32_t version;
	uint16_t *fns; /* the blob's functions -> pdi_mpi_funcs indices */
	uint32_t nfns;
};

static int dec_fn_table(struct dec *d)
{
	char name[UINT8_MAX + 1];

	d->nfns = r_u16(&d->r);
	if (!r_fits(&d->r, d->nfns, 2))
		return -EBADMSG;
	if (d->nfns && !(d->fns = malloc(d->nfns * sizeof(*d->fns))))
		return -ENOMEM;
	for (uint32_t i = 0; i < d->nfns; i++) {
		uint8_t len = r_u8(&d->r);
		int fn;

		if (d->r.bad || len == 0 || d->r.left < len || memchr(d->r.p, 0, len))
			return -EBADMSG;
		memcpy(name, d->r.p, len);
		name[len] = 0;
		d->r.p += len;
		d->r.left -= len;
		if ((fn = pdi_mpi_func_find(name)) < 0)
			return -EPROTONOSUPPORT; /* a function a newer pdimon probes */
		d->fns[i] = (uint16_t)fn;
	}
	return 0;
}

static int dec_fn(struct dec *d, uint16_t *ret)
{
	uint16_t i = r_u16(&d->r);

	if (d->r.bad || i >= d->nfns)
		return -EBADMSG;
	*ret = d->fns[i];
	return 0;
}

static void dec_usage(struct rbuf *r, uint32_t version, struct pdi_usage *u)
{
	u->at_ns = r_u64(r);
	u->cpu_ns = r_u64(r);
	u->wait_ns = r_u64(r);
	u->group_ns = version >= 10 ? r_u64(r) : 0;
}

static int dec_scalars(struct dec *d, struct pdi_model *m)
{
	uint8_t flags;
	int e;

	m->calls = r_u64(&d->r);
	m->dropped_states = r_u64(&d->r);
	m->dropped_edges = r_u64(&d->r);
	m->dropped_requests = r_u64(&d->r);
	m->folded_phase_cuts = r_u64(&d->r);
	m->ncollectives = r_u64(&d->r);
	m->auto_next_cut = r_u64(&d->r);
	m->last_enter = r_u64(&d->r);
	m->last_exit = r_u64(&d->r);
	m->auto_len = r_u32(&d->r);
	m->last_site = r_u32(&d->r);
	if ((e = dec_fn(d, &m->last_fn)) < 0)
		return e;
	flags = r_u8(&d->r);
	if (d->r.bad || flags & ~(FLAG_STARTED | FLAG_SAW_PCONTROL | (d->version >= 5 ? FLAG_SLOTS : 0) |
				  (d->version >= 9 ? FLAG_EARLY : 0)))
		return -EBADMSG;
	m->started = flags & FLAG_STARTED;
	m->saw_pcontrol = flags & FLAG_SAW_PCONTROL;
	m->slots = flags & FLAG_SLOTS;
	m->early = flags & FLAG_EARLY;
	if ((m->slots && !m->auto_len) || (m->early && !m->slots))
		return -EBADMSG; /* slots of no length, early phases not on slots */
	if (d->version >= 3) {
		m->clock_offset_ns = (int64_t)r_u64(&d->r);
		m->merged_phases = r_u64(&d->r);
	}
	if (d->version >= 4)
		dec_usage(&d->r, d->version, &m->usage_now);
	/* the recent readings are not kept, but the latest is: the phases begun after it, taken in
	 * by the next pdimond, are placed between it and that pdimond's first reading */
	if (m->usage_now.at_ns)
		pdi_usage_recent_add(&m->usage_recent, &m->usage_now);
	return d->r.bad ? -EBADMSG : 0;
}

/* The model writes the sample at coll_fns[ncollectives] and drops it once full, so it must
 * be allocated at the model's full size and hold exactly the collectives counted so far. */
static int dec_coll_fns(struct dec *d, struct pdi_model *m)
{
	uint32_t n = r_u32(&d->r), size = d->version >= 3 ? 2 : 4;
	uint16_t fn;
	int e;

	if (d->r.bad || n >= PDI_MODEL_PERIOD_SAMPLE || (n && n != m->ncollectives) || !r_fits(&d->r, n, size))
		return -EBADMSG;
	if (!n)
		return 0;
	if (d->version < 3) {
		/* formats 1 and 2 sampled sites, which say nothing about the functions: start afresh */
		d->r.p += (size_t)n * size;
		d->r.left -= (size_t)n * size;
		m->ncollectives = 0;
		return 0;
	}
	if (!(m->coll_fns = calloc(PDI_MODEL_PERIOD_SAMPLE, sizeof(*m->coll_fns))))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		if ((e = dec_fn(d, &fn)) < 0)
			return e;
		m->coll_fns[i] = fn;
	}
	return 0;
}

/* Index KEY -> I in MAP; a key seen twice means a forged or broken blob. */
static int index_put(struct pdi_u64map *map, uint64_t key, uint32_t i)
{
	if (pdi_u64map_get(map, key) != PDI_U64MAP_NONE)
		return -EBADMSG;
	return pdi_u64map_put(map, key, i);
}

static int dec_states(struct rbuf *r, struct pdi_phase *p)
{
	uint32_t n = r_u32(r), cap = r_u32(r);
	int e;

	if (!r_fits(r, n, STATE_SIZE) || !cap_ok(n, cap))
		return -EBADMSG;
	if (cap && !(p->states = calloc(cap, sizeof(*p->states))))
		return -ENOMEM;
	p->cap_states = cap;
	for (uint32_t i = 0; i < n; i++) {
		p->states[i].key = r_u64(r);
		p->states[i].visits = r_u64(r);
		p->states[i].bytes = r_u64(r);
		if ((e = index_put(&p->state_idx, p->states[i].key, i)) < 0)
			return e;
		p->nstates = i + 1;
	}
	return 0;
}

static int dec_hist(struct rbuf *r, struct pdi_hist *h)
{
	h->n = r_u8(r);
	if (r->bad || h->n > PDI_HIST_BUCKETS || !r_fits(r, h->n, 8))
		return -EBADMSG;
	for (uint8_t i = 0; i < h->n; i++) {
		h->mean[i] = r_f32(r);
		h->count[i] = r_u32(r);
	}
	return 0;
}

static int dec_edges(struct rbuf *r, struct pdi_phase *p)
{
	uint32_t n = r_u32(r), cap = r_u32(r);
	int e;

	if (!r_fits(r, n, EDGE_MIN_SIZE) || !cap_ok(n, cap))
		return -EBADMSG;
	if (cap && !(p->edges = calloc(cap, sizeof(*p->edges))))
		return -ENOMEM;
	p->cap_edges = cap;
	for (uint32_t i = 0; i < n; i++) {
		struct pdi_edge *x = &p->edges[i];

		x->from = r_u32(r);
		x->to = r_u32(r);
		x->time.n = r_u64(r);
		x->time.mean = r_f64(r);
		x->time.m2 = r_f64(r);
		if (r->bad || x->from >= p->nstates || x->to >= p->nstates)
			return -EBADMSG;
		if ((e = dec_hist(r, &x->hist)) < 0 || (e = index_put(&p->edge_idx, (uint64_t)x->from << 32 | x->to, i)) < 0)
			return e;
		p->nedges = i + 1;
	}
	return 0;
}

static int dec_phase(struct rbuf *r, uint32_t version, struct pdi_phase *p)
{
	int e;

	p->t_start = r_u64(r);
	p->t_end = r_u64(r);
	if (version >= 3)
		p->first_collective = r_u64(r);
	if (version >= 4)
		dec_usage(r, version, &p->usage);
	if ((e = dec_states(r, p)) < 0 || (e = dec_edges(r, p)) < 0)
		return e;
	return r->bad ? -EBADMSG : 0;
}

static int dec_phases(struct dec *d, struct pdi_model *m)
{
	uint32_t n = r_u32(&d->r), cap = r_u32(&d->r);
	int e;

	if (!r_fits(&d->r, n, PHASE_MIN_SIZE) || !cap_ok(n, cap))
		return -EBADMSG;
	if (cap && !(m->phases = calloc(cap, sizeof(*m->phases))))
		return -ENOMEM;
	m->cap_phases = cap;
	for (uint32_t i = 0; i < n; i++) {
		m->nphases = i + 1; /* counted first, so that pdi_model_done() frees a half-read phase */
		if ((e = dec_phase(&d->r, d->version, &m->phases[i])) < 0)
			return e;
	}
	return 0;
}

static int dec_requests(struct dec *d, struct pdi_model *m)
{
	uint32_t n = r_u32(&d->r), cap = r_u32(&d->r);
	int e;

	if (!r_fits(&d->r, n, REQUEST_SIZE) || !cap_ok(n, cap))
		return -EBADMSG;
	if (cap && !(m->reqs = calloc(cap, sizeof(*m->reqs))))
		return -ENOMEM;
	m->cap_reqs = cap;
	for (uint32_t i = 0; i < n; i++) {
		struct pdi_request *q = &m->reqs[i];

		q->handle = r_u64(&d->r);
		q->peer = (int32_t)r_u32(&d->r);
		q->tag = (int32_t)r_u32(&d->r);
		q->site = r_u32(&d->r);
		if ((e = dec_fn(d, &q->fn)) < 0 || (e = index_put(&m->req_idx, q->handle, i)) < 0)
			return e;
		m->nreqs = i + 1;
	}
	return 0;
}

static int dec_unobserved(struct dec *d, struct pdi_model *m)
{
	struct pdi_unobserved_log *l = &m->unobserved;
	uint32_t n = r_u32(&d->r);

	if (!r_fits(&d->r, n, d->version >= 7 ? UNOBSERVED_SIZE : UNOBSERVED_SIZE - 1) || n > PDI_UNOBSERVED_MAX)
		return -EBADMSG;
	if (n && !(l->v = calloc(n, sizeof(*l->v))))
		return -ENOMEM;
	l->cap = n;
	for (uint32_t i = 0; i < n; i++) {
		struct pdi_unobserved *u = &l->v[i];
		uint16_t fn;
		int e;

		u->t_start = r_u64(&d->r);
		u->t_end = r_u64(&d->r);
		fn = r_u16(&d->r);
		if (fn == PDI_UNOBSERVED_ALL)
			u->fn = fn;
		else if (fn >= d->nfns)
			return -EBADMSG;
		else
			u->fn = d->fns[fn];
		u->level = r_u8(&d->r);
		u->duty_log2 = r_u8(&d->r);
		u->rate = r_u32(&d->r);
		u->cost_ppm = r_u32(&d->r);
		u->from_earlier_runs = d->version >= 7 ? r_u8(&d->r) != 0 : 0;
		if ((e = d->r.bad ? -EBADMSG : 0) < 0)
			return e;
		l->n = i + 1;
	}
	l->stretched = r_u64(&d->r);
	return 0;
}

static int dec_stack_seen(struct dec *d, struct pdi_model *m)
{
	struct pdi_stack_seen_log *l = &m->stack_seen;
	uint32_t n = r_u32(&d->r);

	if (!r_fits(&d->r, n, STACK_SEEN_SIZE) || n > PDI_STACK_SEEN_MAX)
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++) {
		struct pdi_stack_seen *x = &l->v[i];
		uint16_t fn;

		x->t_first = r_u64(&d->r);
		x->t_last = r_u64(&d->r);
		fn = r_u16(&d->r);
		if (fn == PDI_STACK_SEEN_OUTSIDE)
			x->fn = fn;
		else if (fn >= d->nfns)
			return -EBADMSG;
		else
			x->fn = d->fns[fn];
		x->looks = r_u16(&d->r);
		if (d->r.bad)
			return -EBADMSG;
		l->n = i + 1;
	}
	l->dropped = r_u64(&d->r);
	return 0;
}

/* The readings through the step: in order, each no earlier than the one before on every count. */
static int dec_usage_log(struct dec *d, struct pdi_model *m)
{
	struct pdi_usage_log *l = &m->usage_log;
	uint32_t n;

	l->gap_ns = r_u64(&d->r);
	n = r_u32(&d->r);
	if (!r_fits(&d->r, n, d->version >= 10 ? USAGE_SIZE : USAGE_SIZE - 8) || n > PDI_USAGE_LOG_MAX)
		return -EBADMSG;
	for (uint32_t i = 0; i < n; i++) {
		dec_usage(&d->r, d->version, &l->v[i]);
		if (d->r.bad || !l->v[i].at_ns || (i && !pdi_usage_after(&l->v[i - 1], &l->v[i])))
			return -EBADMSG;
		l->n = i + 1;
	}
	return 0;
}

/* What the model code charges to its budget: every array's capacity and every map's table
 * (grow_array() and map_put() in model.c; the period sample is not charged). */
static size_t model_bytes(const struct pdi_model *m)
{
	size_t b = (size_t)m->cap_phases * sizeof(*m->phases) + (size_t)m->cap_reqs * sizeof(*m->reqs) +
		   pdi_u64map_bytes(&m->req_idx);

	for (uint32_t i = 0; i < m->nphases; i++) {
		const struct pdi_phase *p = &m->phases[i];

		b += (size_t)p->cap_states * sizeof(*p->states) + (size_t)p->cap_edges * sizeof(*p->edges) +
		     pdi_u64map_bytes(&p->state_idx) + pdi_u64map_bytes(&p->edge_idx);
	}
	return b;
}

/* The header: a corrupt blob is -EBADMSG even if the corruption hit the version field,
 * since the checksum covers it; only an intact blob of a later format is -EPROTONOSUPPORT. */
static int check_header(const uint8_t *p, size_t len)
{
	uint32_t version;

	if (len < HEADER_SIZE || memcmp(p, PDI_MODEL_MAGIC, 4) != 0 || pdi_le_get(p + 16, 8) != len)
		return -EBADMSG;
	if (pdi_le_get(p + 4, 4) != crc32_z(0, p + 8, len - 8))
		return -EBADMSG;
	version = (uint32_t)pdi_le_get(p + 8, 4);
	if (version > PDI_MODEL_FORMAT)
		return -EPROTONOSUPPORT;
	if (version == 0 || pdi_le_get(p + 12, 4) != 0)
		return -EBADMSG;
	return 0;
}

static int dec_model(struct dec *d, struct pdi_model *m)
{
	int e;

	if ((e = dec_fn_table(d)) < 0 || (e = dec_scalars(d, m)) < 0 || (e = dec_coll_fns(d, m)) < 0 ||
	    (e = dec_phases(d, m)) < 0 || (e = dec_requests(d, m)) < 0 ||
	    (d->version >= 2 && (e = dec_unobserved(d, m)) < 0) || (d->version >= 6 && (e = dec_stack_seen(d, m)) < 0) ||
	    (d->version >= 8 && (e = dec_usage_log(d, m)) < 0))
		return e;
	if (d->r.bad || d->r.left)
		return -EBADMSG;
	m->bytes = model_bytes(m);
	return 0;
}

int pdi_model_decode(const void *buf, size_t len, const struct pdi_model_config *cfg, struct pdi_model *ret)
{
	struct pdi_model m;
	struct dec d = {0};
	int e;

	if (!buf || (e = check_header(buf, len)) < 0)
		return buf ? e : -EBADMSG;
	d.r = (struct rbuf){.p = (const uint8_t *)buf + HEADER_SIZE, .left = len - HEADER_SIZE};
	d.version = (uint32_t)pdi_le_get((const uint8_t *)buf + 8, 4);
	pdi_model_init(&m, cfg);
	e = dec_model(&d, &m);
	free(d.fns);
	if (e < 0) {
		pdi_model_done(&m);
		return e;
	}
	*ret = m;
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* callchain.c -- following a call past the MPI library, its Fortran bindings and the
 * libraries that call MPI for the application, to the application's own call site.
 *
 * BPF does the following per call (bpf/mpitrace.bpf.c, follow_call_chain); this file tells it
 * what to follow: per process, the code ranges to hop over, and per return address in them,
 * where the next return address is (cfi.c). A return address is looked at once: the first
 * call through it sends its stack (PDI_EV_FRAMES), from which the rest of that call's chain is
 * resolved here exactly as BPF will resolve the next ones, so the first calls on a path are
 * named like all later ones.
 *
 * Nothing the process hands us is trusted: reads of its stack are bounded by the record BPF
 * sent (or by what process_vm_readv returns), hops per call by PDI_HOP_MAX, hops per task by
 * MAX_TASK_HOPS, and stacks sent per process by FRAMES_BUDGET. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <bpf/bpf.h>

#include "callchain.h"
#include "cfi.h"
#include "daemon.h"
#include "elfobj.h"
#include "log.h"
#include "objcache.h"
#include "procmaps.h"
#include "tracer.h"

#define MAX_TASK_HOPS 4096 /* return addresses of one task BPF may hop from */
#define FRAMES_BUDGET 4096 /* stacks one process may send */
#define PENDING 32         /* chains resolved from frames records, awaiting their calls */

struct hop_range {
	uint64_t start, end, pgoff;
	uint8_t kind; /* enum pdi_hop_kind */
	uint64_t dev, ino; /* the file mapped; its object is taken from the cache when needed (the
	                    * cache may close it meanwhile: never keep an object) */
};

struct pending {
	pid_t tid;
	uint64_t t_enter;
	struct pdi_chain ch;
};

struct pdi_chains {
	struct hop_range ranges[PDI_HOP_RANGES];
	unsigned nranges;
	struct pdi_u64map hop_idx; /* return address -> index into hops */
	uint64_t *hop_ra;
	struct pdi_hop *hops;
	uint32_t nhops, cap;
	bool hops_full;
	struct pending pending[PENDING];
	unsigned next_pending;
	struct pdi_chain_stats st;
};

/* Symbols only an MPI library or its language bindings define (C, Fortran 77/90, F08). */
static const char *const mpi_markers[] = {
	"PMPI_Send", "PMPI_Barrier", "pmpi_send_", "pmpi_barrier_", "mpi_send_", "mpi_barrier_", "MPI_SEND",
	"MPI_BARRIER", "mpi_send__", "mpi_send_f08_", "mpi_barrier_f08_",
};

int pdi_chains_classify(struct pdi_elfobj *o, const char *objpath, bool is_exe, char *const *library_globs,
			unsigned nglobs)
{
	uint64_t v;

	/* a statically linked program carries MPI itself: its own code is still the application */
	if (is_exe)
		return 0;
	for (unsigned i = 0; i < ELEMENTSOF(mpi_markers); i++)
		if (pdi_elfobj_func_vaddr(o, mpi_markers[i], &v) == 0)
			return PDI_HOP_BINDING;
	for (unsigned i = 0; i < nglobs; i++)
		if (fnmatch(library_globs[i], basename(objpath), 0) == 0)
			return PDI_HOP_LIBRARY;
	return 0;
}

void pdi_chains_free(struct pdi_task *t)
{
	struct pdi_chains *c = t->chains;

	if (!c)
		return;
	pdi_u64map_free(&c->hop_idx);
	free(c->hop_ra);
	free(c->hops);
	free(c);
	t->chains = NULL;
}

static bool same_file(const struct pdi_mapping *m, const struct stat *st)
{
	return st && m->ino == st->st_ino && m->dev == st->st_dev;
}

int pdi_chains_begin(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_hop_ranges rg = {.frames_budget = FRAMES_BUDGET};
	int hops_fd, ranges_fd, r;
	struct pdi_chains *c;
	bool other_than_mpi = false, have_mpi;
	char exe[64];
	struct stat st, mpi_st;
	bool have_exe;
	__u32 key = (__u32)t->pid;

	if (t->chains || !d->cfg.call_site_hops)
		return 0;
	if ((r = pdi_tracer_hop_maps(d->tracer, &hops_fd, &ranges_fd)) < 0)
		return r;
	if (!t->maps.n && (r = pdi_maps_read(t->pid, &t->maps)) < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)t->pid);
	have_exe = stat(exe, &st) == 0;
	have_mpi = t->att.object_fd >= 0 && fstat(t->att.object_fd, &mpi_st) == 0;
	for (size_t i = 0; i < t->maps.n; i++) {
		const struct pdi_mapping *m = &t->maps.v[i];
		struct pdi_elfobj *o;
		struct hop_range *last = c->nranges ? &c->ranges[c->nranges - 1] : NULL;
		int kind;

		if (!m->exec || !m->path || pdi_objcache_get(d->objs, t->pid, m, &o) < 0)
			continue;
		kind = pdi_chains_classify(o, m->path, have_exe && same_file(m, &st), d->cfg.site_libraries,
					   d->cfg.nsite_libraries);
		if (kind == 0)
			continue;
		if (last && last->dev == m->dev && last->ino == m->ino && last->end == m->start &&
		    last->pgoff + (last->end - last->start) == m->pgoff) {
			last->end = m->end;
			continue;
		}
		if (c->nranges == PDI_HOP_RANGES) {
			log_debug("pid %d: more than %d code ranges to hop over, %s left out", (int)t->pid,
				  PDI_HOP_RANGES, m->path);
			continue;
		}
		c->ranges[c->nranges++] = (struct hop_range){.start = m->start, .end = m->end, .pgoff = m->pgoff,
							     .kind = (uint8_t)kind, .dev = m->dev, .ino = m->ino};
		/* the MPI library itself is hopped over too, but alone it never needs a hop: C
		 * programs call it directly */
		other_than_mpi |= !have_mpi || (uint64_t)mpi_st.st_ino != m->ino;
	}
	t->chains = c;
	c->st.ranges = c->nranges;
	log_debug("pid %d: %u code ranges hopped over for call sites%s", (int)t->pid, c->nranges,
		  other_than_mpi ? "" : " (only the MPI library: nothing for BPF to do)");
	if (!other_than_mpi)
		return 0;
	for (unsigned i = 0; i < c->nranges; i++) {
		rg.start[i] = c->ranges[i].start;
		rg.end[i] = c->ranges[i].end;
	}
	rg.n = c->nranges;
	if (bpf_map_update_elem(ranges_fd, &key, &rg, BPF_ANY) < 0)
		return log_warning_errno(-errno, "pid %d: cannot tell BPF which code to hop over, call sites "
						 "stay inside the MPI bindings: %m", (int)t->pid);
	pdi_tracer_procs_changed(d->tracer);
	return 0;
}

void pdi_chains_end(struct pdi_daemon *d, struct pdi_task *t)
{
	struct pdi_chains *c = t->chains;
	struct pdi_hop_key k = {.tgid = (__u32)t->pid};
	__u32 key = (__u32)t->pid;
	int hops_fd, ranges_fd;

	if (!c)
		return;
	if (pdi_tracer_hop_maps(d->tracer, &hops_fd, &ranges_fd) == 0) {
		(void)bpf_map_delete_elem(ranges_fd, &key);
		pdi_tracer_procs_changed(d->tracer);
		for (uint32_t i = 0; i < c->nhops; i++) {
			k.ra = c->hop_ra[i];
			(void)bpf_map_delete_elem(hops_fd, &k);
		}
	}
	/* an ended task keeps its statistics only */
	pdi_u64map_free(&c->hop_idx);
	free(c->hop_ra);
	free(c->hops);
	c->hop_ra = NULL;
	c->hops = NULL;
	c->nhops = c->cap = 0;
	c->nranges = 0;
}

static const struct hop_range *range_of(const struct pdi_chains *c, uint64_t addr)
{
	for (unsigned i = 0; i < c->nranges; i++)
		if (addr >= c->ranges[i].start && addr < c->ranges[i].end)
			return &c->ranges[i];
	return NULL;
}

static int keep_hop(struct pdi_chains *c, uint64_t ra, const struct pdi_hop *h)
{
	if (c->nhops == c->cap) {
		uint32_t ncap = c->cap ? 2 * c->cap : 16;
		uint64_t *ra_v = realloc(c->hop_ra, ncap * sizeof(*ra_v));
		struct pdi_hop *h_v;

		if (!ra_v)
			return -ENOMEM;
		c->hop_ra = ra_v;
		h_v = realloc(c->hops, ncap * sizeof(*h_v));
		if (!h_v)
			return -ENOMEM;
		c->hops = h_v;
		c->cap = ncap;
	}
	if (pdi_u64map_put(&c->hop_idx, ra, c->nhops) < 0)
		return -ENOMEM;
	c->hop_ra[c->nhops] = ra;
	c->hops[c->nhops++] = *h;
	return 0;
}

/* The hop from RA (inside range G) of task T: known, or computed from the object's CFI and
 * installed for BPF. A return address without a usable rule gets a STOP hop, so that BPF
 * stops asking. -ENOSPC past the task's bound (BPF then keeps stopping there). */
/* The object of range G at RA, from the object cache (maps reread once if RA is not in them);
 * NULL if the file mapped there is not G's any more, or cannot be read. */
static struct pdi_elfobj *range_obj(struct pdi_daemon *d, struct pdi_task *t, const struct hop_range *g, uint64_t ra)
{
	const struct pdi_mapping *m = t->maps.n ? pdi_maps_find(&t->maps, ra) : NULL;
	struct pdi_elfobj *o;

	if (!m) {
		pdi_maps_free(&t->maps);
		if (pdi_maps_read(t->pid, &t->maps) < 0)
			return NULL;
		m = pdi_maps_find(&t->maps, ra);
	}
	if (!m || !m->path || m->dev != g->dev || m->ino != g->ino || pdi_objcache_get(d->objs, t->pid, m, &o) < 0)
		return NULL;
	return o;
}

static int hop_at(struct pdi_daemon *d, struct pdi_task *t, const struct hop_range *g, uint64_t ra,
		  struct pdi_hop *ret)
{
	struct pdi_elfobj *obj;
	struct pdi_chains *c = t->chains;
	uint32_t i = pdi_u64map_get(&c->hop_idx, ra);
	struct pdi_hop_key k = {.tgid = (__u32)t->pid, .ra = ra};
	struct pdi_hop h = {.kind = PDI_HOP_STOP};
	uint64_t vaddr = ra - g->start + g->pgoff;
	int hops_fd, ranges_fd, r;

	if (i != PDI_U64MAP_NONE) {
		*ret = c->hops[i];
		return 0;
	}
	if (c->nhops >= MAX_TASK_HOPS) {
		if (!c->hops_full)
			log_warning("pid %d: more than %d return addresses inside MPI bindings and libraries; "
				    "calls on new paths keep a library call site", (int)t->pid, MAX_TASK_HOPS);
		c->hops_full = true;
		return -ENOSPC;
	}
	obj = range_obj(d, t, g, ra);
	if (obj)
		(void)pdi_elfobj_offset_to_vaddr(obj, vaddr, &vaddr);
	r = obj ? pdi_cfi_hop(obj, vaddr, (enum pdi_hop_kind)g->kind, &h) : -ENOENT;
	if (r < 0) {
		log_debug("pid %d: no hop from 0x%" PRIx64 ": %s", (int)t->pid, vaddr, strerror(-r));
		h = (struct pdi_hop){.kind = PDI_HOP_STOP};
		c->st.refused++;
	}
	if (keep_hop(c, ra, &h) < 0)
		return -ENOMEM;
	c->st.hops = c->nhops;
	if (pdi_tracer_hop_maps(d->tracer, &hops_fd, &ranges_fd) == 0 && bpf_map_update_elem(hops_fd, &k, &h, BPF_ANY) < 0)
		log_debug("pid %d: cannot install a call-site hop: %m", (int)t->pid);
	*ret = h;
	return 0;
}

/* Read 8 bytes at ADDR from the stack copy STACK (LEN bytes from SP). */
static bool stack_word(const uint8_t *stack, uint32_t len, uint64_t sp, uint64_t addr, uint64_t *ret)
{
	if (addr < sp || addr - sp > len || len - (addr - sp) < 8)
		return false;
	memcpy(ret, stack + (addr - sp), 8);
	return true;
}

/* The chain from return address RA stored at SP (rbp BP, library return address VIA so far,
 * HOPS made), following the stack copy: BPF's follow_call_chain() over user memory. */
static void resolve(struct pdi_daemon *d, struct pdi_task *t, const uint8_t *stack, uint32_t len, uint32_t hops,
		    uint64_t ra, uint64_t sp, uint64_t bp, uint64_t via, struct pdi_chain *ch)
{
	uint32_t end = PDI_CHAIN_DONE;
	uint64_t sp0 = sp;

	for (uint32_t i = hops; i <= PDI_HOP_MAX; i++) {
		const struct hop_range *g = range_of(t->chains, ra);
		struct pdi_hop h;
		uint64_t cfa, next;

		if (!g)
			break;
		if (i == PDI_HOP_MAX) {
			end = PDI_CHAIN_CUT;
			break;
		}
		if (hop_at(d, t, g, ra, &h) < 0) {
			end = PDI_CHAIN_UNKNOWN;
			break;
		}
		if (h.kind == PDI_HOP_STOP) {
			end = PDI_CHAIN_STOP;
			break;
		}
		cfa = (h.cfa_bp ? bp : sp) + (int64_t)h.cfa_off;
		/* beyond the copy is unknown rather than unreadable: BPF reads further */
		if ((h.bp_off && !stack_word(stack, len, sp0, cfa + (int64_t)h.bp_off, &bp)) ||
		    !stack_word(stack, len, sp0, cfa - 8, &next)) {
			end = PDI_CHAIN_UNKNOWN;
			break;
		}
		sp = cfa - 8;
		if (h.kind == PDI_HOP_LIBRARY)
			via = ra;
		ra = next;
	}
	ch->caller = ra;
	ch->via = via;
	ch->end = end;
}

void pdi_chains_on_frames(struct pdi_daemon *d, struct pdi_task *t, const struct pdi_frames *f)
{
	struct pdi_chains *c = t->chains;
	struct pending *p;

	if (!c)
		return;
	c->st.frames++;
	p = &c->pending[c->next_pending++ % PENDING];
	*p = (struct pending){.tid = (pid_t)f->tid, .t_enter = f->t_enter};
	resolve(d, t, f->stack, f->len < PDI_FRAMES_BYTES ? f->len : PDI_FRAMES_BYTES, f->hops, f->ra, f->sp, f->bp,
		f->via, &p->ch);
}

bool pdi_chains_complete(const struct pdi_task *t, pid_t tid, uint64_t t_enter, struct pdi_chain *ch)
{
	const struct pdi_chains *c = t->chains;

	if (ch->end != PDI_CHAIN_UNKNOWN)
		return true;
	for (unsigned i = 0; c && i < PENDING; i++) {
		const struct pending *p = &c->pending[i];

		if (p->tid == tid && p->t_enter == t_enter && p->t_enter) {
			ch->caller = p->ch.caller;
			ch->via = p->ch.via;
			ch->end = p->ch.end;
			break;
		}
	}
	return ch->end != PDI_CHAIN_UNKNOWN;
}

void pdi_chains_finish(struct pdi_daemon *d, struct pdi_task *t, pid_t tid, uint64_t t_enter, struct pdi_chain *ch)
{
	const struct hop_range *g;
	struct pdi_hop h;

	if (!t->chains || pdi_chains_complete(t, tid, t_enter, ch))
		return;
	/* no stack to finish it (budget spent, record lost, stack shorter than the frames):
	 * learn the hop for the next calls; this one keeps its partial chain */
	t->chains->st.unresolved++;
	if ((g = range_of(t->chains, ch->caller)))
		(void)hop_at(d, t, g, ch->caller, &h);
}

void pdi_chains_of_stopped(struct pdi_daemon *d, struct pdi_task *t, uint64_t sp, uint64_t bp, struct pdi_chain *ch)
{
	uint8_t stack[PDI_FRAMES_BYTES];
	/* split at the page boundary: a transfer is partial only between iovec elements */
	uint64_t first = PDI_FRAMES_BYTES - (sp & (PDI_FRAMES_BYTES - 1));
	struct iovec local = {.iov_base = stack, .iov_len = sizeof(stack)};
	struct iovec remote[2] = {{.iov_base = (void *)(uintptr_t)sp, .iov_len = first},
				  {.iov_base = (void *)(uintptr_t)(sp + first), .iov_len = sizeof(stack) - first}};
	ssize_t n;

	ch->caller = ch->callsite;
	ch->via = 0;
	ch->end = PDI_CHAIN_DONE;
	if (!t->chains || !range_of(t->chains, ch->callsite))
		return;
	/* a partial read stops at the first unmapped page: what was read is still the stack */
	n = process_vm_readv(t->pid, &local, 1, remote, remote[1].iov_len ? 2 : 1, 0);
	if (n < 8) {
		ch->end = PDI_CHAIN_UNKNOWN;
		t->chains->st.unresolved++;
		return;
	}
	resolve(d, t, stack, (uint32_t)n, 0, ch->callsite, sp, bp, 0, ch);
	if (ch->end == PDI_CHAIN_UNKNOWN)
		t->chains->st.unresolved++;
}

void pdi_chains_stats(const struct pdi_task *t, struct pdi_chain_stats *ret)
{
	*ret = t->chains ? t->chains->st : (struct pdi_chain_stats){0};
}

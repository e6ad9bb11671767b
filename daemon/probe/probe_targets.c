/* SPDX-License-Identifier: GPL-2.0-only */
/* probe_targets.c -- finding the object a process takes its MPI symbols from, and the
 * offsets of the functions pdimon probes in it. Shared by pdimond and the benchmarks'
 * empty-probe floor, so that both put probes on exactly the same instructions. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "elfobj.h"
#include "event.h"
#include "mpi_funcs.h"
#include "objcache.h"
#include "probe_targets.h"
#include "procmaps.h"

/* PMPI_x and MPI_x are usually one address (a weak alias); where they are not, both are
 * probed so that Fortran bindings and tools calling PMPI_x directly are seen too. The
 * nesting depth kept in BPF stops MPI_x -> PMPI_x from counting twice. */
unsigned pdi_func_offsets(struct pdi_elfobj *o, const char *name, uint64_t off[2])
{
	char pname[80];
	unsigned n = 0;

	snprintf(pname, sizeof(pname), "P%s", name);
	if (pdi_elfobj_func_offset(o, name, &off[n]) == 0)
		n++;
	if (pdi_elfobj_func_offset(o, pname, &off[n]) == 0 && (n == 0 || off[1] != off[0]))
		n++;
	return n;
}

/* Functions larger than this are not decoded whole, so their probes stay on their first byte. */
#define MAX_PLACED_FUNC_BYTES (64 * 1024)

uint64_t pdi_probe_place(struct pdi_elfobj *o, const char *name, uint64_t off, unsigned flags,
			 struct pdi_entry_place *ret)
{
	struct pdi_entry_place pl = {.kind = PDI_INSN_STEPPED, .first_kind = PDI_INSN_STEPPED};
	uint64_t size = 0;
	uint8_t *code;
	ssize_t n;

	*ret = pl;
	if (pdi_elfobj_func_size(o, name, &size) < 0 || size == 0 || size > MAX_PLACED_FUNC_BYTES) {
		ret->why = "the function's size is unknown";
		return off;
	}
	code = malloc(size);
	if (!code) {
		ret->why = "out of memory";
		return off;
	}
	n = pread(pdi_elfobj_fd(o), code, size, (off_t)off);
	if (n > 0) {
		uint64_t vaddr = 0;

		(void)pdi_elfobj_offset_to_vaddr(o, off, &vaddr);
		(void)pdi_entry_place(code, (size_t)n, vaddr, &pl);
		if (flags & PDI_TARGETS_AT_START) {
			pl.skip = 0;
			pl.kind = pl.first_kind;
			pl.why = "placement turned off";
		}
		*ret = pl;
	} else {
		ret->why = "the function's code cannot be read";
	}
	free(code);
	return off + ret->skip;
}

/* Open MPI's handles are pointers to objects such as ompi_mpi_comm_world; the MPICH family
 * (MPICH, Intel MPI, MVAPICH) uses 32-bit integers. */
static bool int_handles(struct pdi_elfobj *o)
{
	uint64_t off;

	return pdi_elfobj_func_offset(o, "ompi_comm_rank", &off) < 0 && pdi_elfobj_func_offset(o, "ompi_mpi_init", &off) < 0;
}

int pdi_probe_targets_of(struct pdi_elfobj *o, unsigned flags, struct pdi_probe_targets *ret)
{
	uint64_t off;

	ret->obj = o;
	ret->int_handles = int_handles(o);
	ret->n = 0;
	for (unsigned fn = 0; fn < pdi_mpi_nfuncs && ret->n + 2 <= PDI_MAX_PROBES; fn++) {
		const struct pdi_mpi_func *f = &pdi_mpi_funcs[fn];
		unsigned k = pdi_func_offsets(o, f->name, &ret->offsets[ret->n]);
		char pname[80];

		snprintf(pname, sizeof(pname), "P%s", f->name);
		for (unsigned i = 0; i < k; i++) {
			struct pdi_entry_place pl;
			unsigned at = ret->n + i;
			/* the symbol at this offset: MPI_x, or PMPI_x where it is no alias of MPI_x */
			const char *sym = pdi_elfobj_func_offset(o, f->name, &off) == 0 && off == ret->offsets[at]
						  ? f->name
						  : pname;

			/* MPI_Init stays where the trap that stops a starting process sits (startup.c): a
			 * process held there has run that first instruction and must not hit MPI_Init's
			 * probe again further on. It runs once per process: its cost does not matter. */
			ret->offsets[at] = pdi_probe_place(o, sym, ret->offsets[at],
							   f->cls == PDI_FC_INIT ? flags | PDI_TARGETS_AT_START : flags, &pl);
			ret->skipped[at] = pl.skip;
			ret->kinds[at] = pl.kind;
			ret->first_kinds[at] = pl.first_kind;
			ret->why[at] = pl.why;
			ret->cookies[at] = PDI_COOKIE_WITH_COMM(PDI_COOKIE_MAKE(fn, f->req_arg, f->req_mode, ret->int_handles),
								pdi_mpi_comm_arg(fn));
		}
		ret->n += k;
	}
	return ret->n > 0 ? 0 : -ENOENT;
}

int pdi_probe_targets_locate(struct pdi_objcache *objs, pid_t pid, struct pdi_probe_targets *ret)
{
	const struct pdi_mapping *m;
	struct pdi_maps maps = {0};
	struct pdi_elfobj *o;
	int r;

	r = pdi_maps_read(pid, &maps);
	if (r < 0)
		return r;
	/* a shared MPI library, or the executable itself when linked statically */
	r = pdi_objcache_find_func(objs, pid, &maps, "PMPI_Send", &m, &o);
	if (r < 0)
		r = pdi_objcache_find_func(objs, pid, &maps, "MPI_Send", &m, &o);
	if (r < 0) {
		pdi_maps_free(&maps);
		/* a process that went away while we read it is no process at all */
		return kill(pid, 0) < 0 && errno == ESRCH ? -ESRCH : r;
	}
	ret->obj = o;
	snprintf(ret->object, sizeof(ret->object), "%s", m->path);
	/* the very file checked at open: the path in maps is the user's to change meanwhile */
	snprintf(ret->path, sizeof(ret->path), "/proc/self/fd/%d", pdi_elfobj_fd(o));
	ret->dev = (dev_t)m->dev;
	ret->ino = (ino_t)m->ino;
	ret->int_handles = int_handles(o);
	pdi_dtypes_load(&ret->dtypes, ret->int_handles, objs, pid, &maps, o, m);
	pdi_maps_free(&maps);
	return 0;
}

int pdi_probe_targets_find(struct pdi_objcache *objs, pid_t pid, unsigned flags, struct pdi_probe_targets *ret)
{
	int r = pdi_probe_targets_locate(objs, pid, ret);

	if (r < 0)
		return r;
	(void)pdi_probe_targets_of(ret->obj, flags, ret);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* elfobj.c -- one ELF object file: function symbols, offsets and source lines.
 *
 * The function symbols are indexed once at open, by name for attaching probes and by
 * address for naming call sites; DWARF is loaded only when a call site is first described,
 * since most objects a process maps are never asked about.
 *
 * The file is read with ELF_C_READ rather than mmap: a library rewritten in place while we
 * hold it would make a mapping fault (SIGBUS) where a read just fails. */
#include <errno.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>

#include "elfobj.h"
#include "line_units.h"
#include "objopen.h"

#define BUILD_ID_MAX 64 /* bytes; GNU ld makes 20 (SHA-1) */
/* What a user's object may make pdimond read and walk (doc/design/untrusted-objects.md):
 * past these the object is only partly read (no symbols from that table, no DWARF), never
 * refused with an error. libxul, among the largest real libraries, has a 9 MiB .symtab and
 * 90 MiB of strings; a large application's DWARF is some hundreds of MiB. */
#define MAX_NOTE_BYTES (1u << 20)        /* a notes section */
#define MAX_SYMTAB_BYTES (256u << 20)    /* a symbol table, and the strings it names */
#define MAX_DWARF_BYTES (1ull << 30)     /* all the .debug_* sections together */
#define MAX_CUS_SCANNED 100000           /* compile units walked to place one address */
#define DEBUG_BUILD_ID_DIR "/usr/lib/debug/.build-id/"
#define VERSYM_HIDDEN 0x8000 /* a non-default version: "foo@VER", not "foo@@VER" */

struct fsym {
	uint64_t addr;
	uint64_t end;     /* exclusive; for size-less symbols, the next symbol or section end */
	const char *name; /* in a string table of the object's Elf or its debug file's */
	uint32_t seq;     /* collection order: .symtab entries before .dynsym ones */
	uint8_t bind;     /* 2 global, 1 weak, 0 local: which of several definitions wins */
	bool sized;
	bool hidden; /* non-default symbol version, or a version in the name */
};

struct symvec {
	struct fsym *v;
	size_t n, cap;
};

struct pdi_elfobj {
	char *path;
	int fd;
	uint64_t size;
	Elf *elf;
	/* the separate debug file in /usr/lib/debug/.build-id, for stripped objects */
	bool dbg_tried;
	int dbg_fd;
	Elf *dbg_elf;
	bool dwarf_tried;
	Dwarf *dwarf;
	struct pdi_line_units units; /* the line tables read, a worker's or the loop's (line_units.h) */
	bool cfi_tried;
	Dwarf_CFI *cfi; /* .eh_frame, for the call-site hops (callchain.c) */
	struct pdi_elfobj *lines_from; /* the copies DWARF or CFI were taken from, in a list by their own
					* lines_from (pdi_elfobj_take_lines()): their Elf handles are theirs */
	GElf_Phdr *loads; /* PT_LOAD headers */
	size_t nloads;
	struct fsym *by_name; /* every definition, best first within a name */
	size_t nname;
	struct fsym *by_addr; /* one per address, the best name for it */
	size_t naddr;
	char build_id[2 * BUILD_ID_MAX + 1];
};

static int elf_open_fd(int fd, Elf **ret)
{
	GElf_Ehdr eh;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return -ENOEXEC;
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)) {
		elf_end(e);
		return -ENOEXEC;
	}
	*ret = e;
	return 0;
}

static int load_phdrs(struct pdi_elfobj *o)
{
	size_t n;

	if (elf_getphdrnum(o->elf, &n) < 0)
		return -ENOEXEC;
	o->loads = calloc(n ? n : 1, sizeof(*o->loads));
	if (!o->loads)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type == PT_LOAD)
			o->loads[o->nloads++] = ph;
	}
	return 0;
}

static bool note_build_id(Elf_Data *data, char *hex)
{
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const unsigned char *desc = (const unsigned char *)data->d_buf + desc_off;
		const char *name = (const char *)data->d_buf + name_off;

		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != sizeof(ELF_NOTE_GNU) ||
		    memcmp(name, ELF_NOTE_GNU, sizeof(ELF_NOTE_GNU)) ||
		    !nh.n_descsz || nh.n_descsz > BUILD_ID_MAX)
			continue;
		for (size_t i = 0; i < nh.n_descsz; i++)
			sprintf(hex + 2 * i, "%02x", desc[i]);
		return true;
	}
	return false;
}

static void elf_build_id(Elf *elf, char *hex)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || sh.sh_size > MAX_NOTE_BYTES)
			continue;
		data = elf_getdata(scn, NULL);
		if (data && note_build_id(data, hex))
			return;
	}
}

static void read_build_id(struct pdi_elfobj *o)
{
	elf_build_id(o->elf, o->build_id);
}

int pdi_elfobj_read_build_id(int fd, char *buf, size_t len)
{
	char hex[2 * BUILD_ID_MAX + 1] = "";
	Elf *e;
	int r = elf_open_fd(fd, &e);

	if (r < 0)
		return r;
	elf_build_id(e, hex);
	elf_end(e);
	if (!hex[0])
		return -ENOENT;
	snprintf(buf, len, "%s", hex);
	return 0;
}

/* Stripped objects (Debian's libraries) keep their .symtab and DWARF in a file named after
 * their build ID. */
static int open_debug_file(struct pdi_elfobj *o)
{
	char fn[sizeof(DEBUG_BUILD_ID_DIR) + sizeof(o->build_id) + 8];
	int r;

	if (o->dbg_tried)
		return o->dbg_elf ? 0 : -ENOENT;
	o->dbg_tried = true;
	if (strlen(o->build_id) < 4)
		return -ENOENT;
	snprintf(fn, sizeof(fn), DEBUG_BUILD_ID_DIR "%.2s/%s.debug", o->build_id, o->build_id + 2);
	r = pdi_objopen_path(fn, 0, &o->dbg_fd);
	if (r < 0)
		return r;
	r = elf_open_fd(o->dbg_fd, &o->dbg_elf);
	if (r < 0) {
		close(o->dbg_fd);
		o->dbg_fd = -1;
	}
	return r;
}

static Elf_Data *section_data(Elf *elf, GElf_Word type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return sh.sh_size <= MAX_SYMTAB_BYTES ? elf_getdata(scn, NULL) : NULL;
	return NULL;
}

/* A symbol table, and its string table, small enough to read. */
static bool table_fits(Elf *elf, const GElf_Shdr *sh)
{
	Elf_Scn *strs = elf_getscn(elf, sh->sh_link);
	GElf_Shdr ssh;

	return sh->sh_size <= MAX_SYMTAB_BYTES && strs && gelf_getshdr(strs, &ssh) && ssh.sh_size <= MAX_SYMTAB_BYTES;
}

static uint64_t section_end(Elf *elf, size_t shndx)
{
	Elf_Scn *scn = elf_getscn(elf, shndx);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh))
		return UINT64_MAX;
	return sh.sh_addr + sh.sh_size;
}

static int symvec_push(struct symvec *v, const struct fsym *s)
{
	if (v->n == v->cap) {
		size_t ncap = v->cap ? v->cap * 2 : 1024;
		struct fsym *nv = realloc(v->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		v->v = nv;
		v->cap = ncap;
	}
	v->v[v->n++] = *s;
	return 0;
}

static bool is_defined_func(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	/* SHN_ABS and friends hold no code; SHN_XINDEX functions do not occur in practice */
	return (type == STT_FUNC || type == STT_GNU_IFUNC) && sym->st_shndx != SHN_UNDEF &&
	       sym->st_shndx < SHN_LORESERVE;
}

static uint8_t bind_rank(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 2;
	case STB_WEAK:
		return 1;
	default:
		return 0;
	}
}

static int collect_table(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, Elf_Data *versym,
			 struct symvec *v)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	if (!data)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct fsym s = {0};
		GElf_Versym vs = 0;
		GElf_Sym sym;

		if (!gelf_getsym(data, (int)i, &sym) || !is_defined_func(&sym))
			continue;
		s.name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!s.name || !*s.name)
			continue;
		if (versym)
			gelf_getversym(versym, (int)i, &vs);
		s.addr = sym.st_value;
		s.sized = sym.st_size > 0;
		s.end = s.sized ? s.addr + sym.st_size : section_end(elf, sym.st_shndx);
		s.bind = bind_rank(&sym);
		/* .symtab spells versions into names ("memcpy@@GLIBC_2.14"): show the plain one */
		s.hidden = (vs & VERSYM_HIDDEN) || strchr(s.name, '@');
		s.seq = (uint32_t)v->n;
		if (symvec_push(v, &s) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Adds the function symbols of every TYPE table of ELF; *found tells whether there was one. */
static int collect_symbols(Elf *elf, GElf_Word type, struct symvec *v, bool *found)
{
	Elf_Data *versym = type == SHT_DYNSYM ? section_data(elf, SHT_GNU_versym) : NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int r;

	*found = false;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !table_fits(elf, &sh))
			continue;
		*found = true;
		r = collect_table(elf, scn, &sh, versym, v);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Which of several definitions of a name to use: the one the dynamic linker would bind. */
static int cmp_name(const void *pa, const void *pb)
{
	const struct fsym *a = pa, *b = pb;
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	if (a->bind != b->bind)
		return b->bind - a->bind;
	if (a->hidden != b->hidden)
		return a->hidden - b->hidden;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Which of several names of an address to show: PMPI_Send (global) over MPI_Send (weak),
 * malloc over __libc_malloc. */
static int cmp_addr(const void *pa, const void *pb)
{
	const struct fsym *a = pa, *b = pb;
	size_t ua, ub;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->sized != b->sized)
		return b->sized - a->sized;
	if (a->bind != b->bind)
		return b->bind - a->bind;
	if (a->hidden != b->hidden)
		return a->hidden - b->hidden;
	ua = strspn(a->name, "_");
	ub = strspn(b->name, "_");
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int index_symbols(struct pdi_elfobj *o, struct symvec *v)
{
	size_t n = 0;

	o->by_addr = malloc((v->n ? v->n : 1) * sizeof(*o->by_addr));
	if (!o->by_addr)
		return -ENOMEM;
	if (v->n) /* an object without symbols has no array to copy */
		memcpy(o->by_addr, v->v, v->n * sizeof(*v->v));
	qsort(o->by_addr, v->n, sizeof(*o->by_addr), cmp_addr);
	for (size_t i = 0; i < v->n; i++)
		if (!n || o->by_addr[n - 1].addr != o->by_addr[i].addr)
			o->by_addr[n++] = o->by_addr[i];
	/* an assembler label without .size covers at most up to the next function */
	for (size_t i = 0; i + 1 < n; i++)
		if (!o->by_addr[i].sized && o->by_addr[i].end > o->by_addr[i + 1].addr)
			o->by_addr[i].end = o->by_addr[i + 1].addr;
	o->naddr = n;

	if (v->n)
		qsort(v->v, v->n, sizeof(*v->v), cmp_name);
	o->by_name = v->v;
	o->nname = v->n;
	v->v = NULL;
	return 0;
}

static int load_symbols(struct pdi_elfobj *o)
{
	struct symvec v = {0};
	bool found;
	int r;

	r = collect_symbols(o->elf, SHT_SYMTAB, &v, &found);
	if (!r && !found && open_debug_file(o) == 0)
		r = collect_symbols(o->dbg_elf, SHT_SYMTAB, &v, &found);
	if (!r)
		r = collect_symbols(o->elf, SHT_DYNSYM, &v, &found);
	if (!r)
		r = index_symbols(o, &v);
	free(v.v);
	return r;
}

int pdi_elfobj_open_fd(int fd, const char *name, struct pdi_elfobj **ret)
{
	struct pdi_elfobj *o = calloc(1, sizeof(*o));
	struct stat st;
	int r;

	if (!o) {
		close(fd);
		return -ENOMEM;
	}
	o->fd = fd;
	o->dbg_fd = -1;
	if (fstat(fd, &st) == 0)
		o->size = (uint64_t)st.st_size;
	o->path = strdup(name);
	if (!o->path) {
		r = -ENOMEM;
		goto fail;
	}
	r = elf_open_fd(o->fd, &o->elf);
	if (!r)
		r = load_phdrs(o);
	if (r < 0)
		goto fail;
	read_build_id(o);
	r = load_symbols(o);
	if (r < 0)
		goto fail;
	*ret = o;
	return 0;
fail:
	pdi_elfobj_free(o);
	return r;
}

int pdi_elfobj_open(const char *path, struct pdi_elfobj **ret)
{
	int fd, r = pdi_objopen_path(path, 0, &fd);

	if (r < 0)
		return r;
	return pdi_elfobj_open_fd(fd, path, ret);
}

void pdi_elfobj_free(struct pdi_elfobj *o)
{
	if (!o)
		return;
	if (o->cfi)
		dwarf_cfi_end(o->cfi);
	dwarf_end(o->dwarf);
	pdi_elfobj_free(o->lines_from); /* after what was taken from it */
	pdi_line_units_free(&o->units);
	free(o->by_addr);
	free(o->by_name);
	free(o->loads);
	elf_end(o->dbg_elf);
	if (o->dbg_fd >= 0)
		close(o->dbg_fd);
	elf_end(o->elf);
	if (o->fd >= 0)
		close(o->fd);
	free(o->path);
	free(o);
}

const char *pdi_elfobj_path(const struct pdi_elfobj *o)
{
	return o->path;
}

int pdi_elfobj_fd(const struct pdi_elfobj *o)
{
	return o->fd;
}

uint64_t pdi_elfobj_file_size(const struct pdi_elfobj *o)
{
	return o->size;
}

uint64_t pdi_elfobj_bytes_held(const struct pdi_elfobj *o)
{
	uint64_t bytes = 0;

	for (const struct pdi_elfobj *c = o; c; c = c->lines_from)
		bytes += c->size;
	return bytes + o->units.bytes;
}

const char *pdi_elfobj_build_id(const struct pdi_elfobj *o)
{
	return o->build_id;
}

static const struct fsym *find_by_name(const struct pdi_elfobj *o, const char *name)
{
	size_t lo = 0, hi = o->nname;

	/* lower bound: the best definition is the first of its name */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(o->by_name[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < o->nname && !strcmp(o->by_name[lo].name, name) ? &o->by_name[lo] : NULL;
}

/* The symbol whose range holds VADDR, or NULL. */
static const struct fsym *find_by_addr(const struct pdi_elfobj *o, uint64_t vaddr)
{
	size_t lo = 0, hi = o->naddr;

	/* lo = number of symbols at or below vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->by_addr[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || vaddr >= o->by_addr[lo - 1].end)
		return NULL;
	return &o->by_addr[lo - 1];
}

int pdi_elfobj_func_vaddr(struct pdi_elfobj *o, const char *name, uint64_t *ret_vaddr)
{
	const struct fsym *s = find_by_name(o, name);

	if (!s)
		return -ENOENT;
	*ret_vaddr = s->addr;
	return 0;
}

int pdi_elfobj_func_size(struct pdi_elfobj *o, const char *name, uint64_t *ret_size)
{
	const struct fsym *s = find_by_name(o, name);

	if (!s)
		return -ENOENT;
	*ret_size = s->end > s->addr ? s->end - s->addr : 0;
	return 0;
}

static int vaddr_to_offset(const struct pdi_elfobj *o, uint64_t vaddr, uint64_t *ret_offset)
{
	for (size_t i = 0; i < o->nloads; i++) {
		const GElf_Phdr *ph = &o->loads[i];

		if (vaddr >= ph->p_vaddr && vaddr - ph->p_vaddr < ph->p_filesz) {
			*ret_offset = vaddr - ph->p_vaddr + ph->p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

int pdi_elfobj_func_offset(struct pdi_elfobj *o, const char *name, uint64_t *ret_offset)
{
	uint64_t vaddr;
	int r = pdi_elfobj_func_vaddr(o, name, &vaddr);

	return r < 0 ? r : vaddr_to_offset(o, vaddr, ret_offset);
}

int pdi_elfobj_offset_to_vaddr(struct pdi_elfobj *o, uint64_t offset, uint64_t *ret_vaddr)
{
	for (size_t i = 0; i < o->nloads; i++) {
		const GElf_Phdr *ph = &o->loads[i];

		if (offset >= ph->p_offset && offset - ph->p_offset < ph->p_filesz) {
			*ret_vaddr = offset - ph->p_offset + ph->p_vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int pdi_elfobj_data_vaddr(struct pdi_elfobj *o, const char *name, uint64_t *ret_vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	/* a handful of lookups per object, at attach: a scan of .dynsym is cheap enough */
	while ((scn = elf_nextscn(o->elf, scn))) {
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize || !table_fits(o->elf, &sh) ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			const char *sname;
			GElf_Sym sym;

			if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
			    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
				continue;
			sname = elf_strptr(o->elf, sh.sh_link, sym.st_name);
			if (sname && !strcmp(sname, name)) {
				*ret_vaddr = sym.st_value;
				return 0;
			}
		}
	}
	return -ENOENT;
}

uint64_t pdi_elfobj_load_base(const struct pdi_elfobj *o)
{
	uint64_t base = UINT64_MAX;

	for (size_t i = 0; i < o->nloads; i++)
		if (o->loads[i].p_vaddr - o->loads[i].p_offset < base)
			base = o->loads[i].p_vaddr - o->loads[i].p_offset;
	return base == UINT64_MAX ? 0 : base;
}

/* The DWARF of ELF, if its .debug_* sections are few enough bytes to read. */
static Dwarf *bounded_dwarf(Elf *elf)
{
	uint64_t total = 0;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		if (name && (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8)))
			total += sh.sh_size;
	}
	return total <= MAX_DWARF_BYTES ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
}

static Dwarf *get_dwarf(struct pdi_elfobj *o)
{
	if (o->dwarf_tried)
		return o->dwarf;
	o->dwarf_tried = true;
	o->dwarf = bounded_dwarf(o->elf);
	if (!o->dwarf && open_debug_file(o) == 0)
		o->dwarf = bounded_dwarf(o->dbg_elf);
	return o->dwarf;
}

/* dwarf_addrdie() relies on .debug_aranges, which clang does not emit by default. */
static bool find_cu_by_ranges(Dwarf *dw, uint64_t vaddr, Dwarf_Die *ret)
{
	Dwarf_CU *cu = NULL;

	for (unsigned n = 0; n < MAX_CUS_SCANNED && dwarf_get_units(dw, cu, &cu, NULL, NULL, ret, NULL) == 0; n++)
		if (dwarf_haspc(ret, vaddr) > 0)
			return true;
	return false;
}

/* The compile unit of VADDR in O's DWARF, if O has loaded it (it is never loaded here). */
static bool unit_of(const struct pdi_elfobj *o, uint64_t vaddr, Dwarf_Die *ret)
{
	return o->dwarf && (dwarf_addrdie(o->dwarf, vaddr, ret) || find_cu_by_ranges(o->dwarf, vaddr, ret));
}

/* The line table of O's compile unit CU: the one read already, or read here and kept (on the
 * loop, where no worker read it: pdi_elfobj_line_ready() said so). NULL when it cannot be read
 * or kept. */
static const struct pdi_line_unit *lines_of(struct pdi_elfobj *o, Dwarf_Die *cu)
{
	uint64_t off = dwarf_dieoffset(cu);
	const struct pdi_line_unit *u = pdi_line_units_get(&o->units, off);
	struct pdi_line_unit *read;

	if (u || pdi_line_unit_read(cu, &read) < 0)
		return u;
	pdi_line_units_add(&o->units, read);
	return pdi_line_units_get(&o->units, off);
}

static void describe_line(struct pdi_elfobj *o, uint64_t vaddr, struct pdi_srcloc *ret)
{
	const struct pdi_line_unit *u;
	const char *src;
	Dwarf_Die cudie;
	int lineno;

	if (!get_dwarf(o) || !unit_of(o, vaddr, &cudie) || !(u = lines_of(o, &cudie)))
		return;
	if (!pdi_line_unit_find(u, vaddr, &src, &lineno))
		return;
	snprintf(ret->file, sizeof(ret->file), "%s", src);
	ret->line = lineno;
}

int pdi_elfobj_symbol_at(struct pdi_elfobj *o, uint64_t vaddr, struct pdi_srcloc *ret)
{
	const struct fsym *s = find_by_addr(o, vaddr);

	memset(ret, 0, sizeof(*ret));
	if (s) {
		snprintf(ret->func, sizeof(ret->func), "%s", s->name);
		ret->func_off = vaddr - s->addr;
	}
	return 0;
}

int pdi_elfobj_describe(struct pdi_elfobj *o, uint64_t vaddr, struct pdi_srcloc *ret)
{
	(void)pdi_elfobj_symbol_at(o, vaddr, ret);
	describe_line(o, vaddr, ret);
	return 0;
}

bool pdi_elfobj_lines_loaded(const struct pdi_elfobj *o)
{
	return o->dwarf_tried;
}

bool pdi_elfobj_line_ready(const struct pdi_elfobj *o, uint64_t vaddr)
{
	Dwarf_Die cudie;

	if (!o->dwarf_tried)
		return false;
	return !unit_of(o, vaddr, &cudie) || pdi_line_units_get(&o->units, dwarf_dieoffset(&cudie));
}

void pdi_elfobj_preload_line(struct pdi_elfobj *o, uint64_t vaddr)
{
	Dwarf_Die cudie;

	if (get_dwarf(o) && unit_of(o, vaddr, &cudie))
		(void)lines_of(o, &cudie);
}

void pdi_elfobj_take_lines(struct pdi_elfobj *o, struct pdi_elfobj *from)
{
	bool took = false;

	if (!from)
		return;
	/* the line tables are copies of their own: they move whatever else is taken */
	pdi_line_units_move(&o->units, &from->units);
	if (!o->dwarf_tried && from->dwarf_tried) {
		o->dwarf_tried = true;
		o->dwarf = from->dwarf;
		from->dwarf = NULL;
		took = true;
	}
	if (!o->cfi_tried && from->cfi_tried) {
		o->cfi_tried = true;
		o->cfi = from->cfi;
		from->cfi = NULL;
		took = true;
	}
	if (!took) {
		pdi_elfobj_free(from);
		return;
	}
	/* what was taken refers to its Elf handles: they live as long as O; its symbols go */
	free(from->by_addr);
	free(from->by_name);
	from->by_addr = from->by_name = NULL;
	from->naddr = from->nname = 0;
	from->lines_from = o->lines_from; /* a later copy gave what an earlier one had not read */
	o->lines_from = from;
}

Dwarf_CFI *pdi_elfobj_cfi(struct pdi_elfobj *o)
{
	if (!o->cfi_tried) {
		o->cfi_tried = true;
		o->cfi = dwarf_getcfi_elf(o->elf);
	}
	return o->cfi;
}

void pdi_elfobj_preload(struct pdi_elfobj *o, bool lines)
{
	Dwarf *dw = lines ? get_dwarf(o) : NULL;
	Dwarf_Aranges *ar;
	size_t n;

	/* libdw keeps the index in DW: dwarf_addrdie() finds it there */
	if (dw)
		(void)dwarf_getaranges(dw, &ar, &n);
	(void)pdi_elfobj_cfi(o);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* elfobj.h -- one ELF object file (executable or shared library), opened once and cached:
 * function symbols, file offset <-> address translation, and source lines. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pdi_elfobj;
typedef struct Dwarf_CFI_s Dwarf_CFI;

/* The object read from FD, which it takes over (closed on failure too); NAME says where it came
 * from. FD must come from objopen.h: a regular file of bounded size. -ENOEXEC if not an ELF
 * executable or shared object. */
int pdi_elfobj_open_fd(int fd, const char *name, struct pdi_elfobj **ret);
/* The object at PATH, a file of pdimond's own (pdi_objopen_path()). -ENOENT if missing. */
int pdi_elfobj_open(const char *path, struct pdi_elfobj **ret);
/* NULL ok. */
void pdi_elfobj_free(struct pdi_elfobj *o);
/* The name given at open. */
const char *pdi_elfobj_path(const struct pdi_elfobj *o);
/* The object's open file descriptor, kept for the object's lifetime: "/proc/self/fd/N" names the
 * very file checked at open, e.g. to attach uprobes. */
int pdi_elfobj_fd(const struct pdi_elfobj *o);
/* The file's size in bytes. */
uint64_t pdi_elfobj_file_size(const struct pdi_elfobj *o);
/* The file sizes of O and of the copies of its file it keeps open for the DWARF and frame
 * information they read (pdi_elfobj_take_lines()), and the line tables O keeps: what O holds,
 * for the object cache's bound. */
uint64_t pdi_elfobj_bytes_held(const struct pdi_elfobj *o);

/* File offset of function NAME's first instruction: what a uprobe attach takes. Looks in .symtab
 * (or, when stripped, the .symtab of its /usr/lib/debug/.build-id file), then .dynsym; defined
 * STT_FUNC and STT_GNU_IFUNC (whose address is that of the resolver), any binding. When NAME is
 * defined more than once, global beats weak beats local. -ENOENT if absent. */
int pdi_elfobj_func_offset(struct pdi_elfobj *o, const char *name, uint64_t *ret_offset);
/* Same but returns the ELF virtual address (st_value). */
int pdi_elfobj_func_vaddr(struct pdi_elfobj *o, const char *name, uint64_t *ret_vaddr);
/* Bytes of function NAME's code (its symbol's size, or up to the next symbol for size-less
 * ones); 0 when unknown. -ENOENT if absent. */
int pdi_elfobj_func_size(struct pdi_elfobj *o, const char *name, uint64_t *ret_size);
/* Translate a file offset (as computed from /proc/PID/maps: addr - start + pgoff) to the ELF
 * virtual address via the PT_LOAD headers. -ENOENT if no segment loads that offset. */
int pdi_elfobj_offset_to_vaddr(struct pdi_elfobj *o, uint64_t offset, uint64_t *ret_vaddr);

/* ELF address of the data object NAME defined in .dynsym (.bss included). -ENOENT. */
int pdi_elfobj_data_vaddr(struct pdi_elfobj *o, const char *name, uint64_t *ret_vaddr);
/* The ELF address that file offset 0 is loaded at: a mapping's start minus this, plus its
 * file offset, is the load bias. */
uint64_t pdi_elfobj_load_base(const struct pdi_elfobj *o);

struct pdi_srcloc {
	char func[128];    /* enclosing function symbol, "" if none covers the address */
	uint64_t func_off; /* vaddr - the function's address */
	char file[256];    /* source file as DWARF names it (usually absolute), "" without DWARF */
	int line;          /* 0 without DWARF */
};

/* Describe the code at ELF virtual address VADDR. Callers holding a return address pass
 * (return address - 1) so that the line is that of the call. DWARF comes from the object or
 * from /usr/lib/debug/.build-id, and is loaded on first use. Names and paths too long for
 * pdi_srcloc are truncated. Returns 0 or negative errno. */
int pdi_elfobj_describe(struct pdi_elfobj *o, uint64_t vaddr, struct pdi_srcloc *ret);

/* The function symbol covering VADDR, as pdi_elfobj_describe() gives it, without the source line
 * (no DWARF is read): FILE "" and LINE 0. Returns 0. */
int pdi_elfobj_symbol_at(struct pdi_elfobj *o, uint64_t vaddr, struct pdi_srcloc *ret);

/* Has O's DWARF been looked for (pdi_elfobj_describe() reads no more than a compile unit's line
 * table)? Reading it may take long on a big program's: the loop has a worker do it (site_warm.h). */
bool pdi_elfobj_lines_loaded(const struct pdi_elfobj *o);
/* Would pdi_elfobj_describe(O, VADDR) read no more than O holds: its DWARF loaded, and the line
 * table of VADDR's compile unit read (or there is none)? A compile unit's table is read whole, at
 * about 0.1 us a row (a big generated unit: 48 ms): a worker reads it (pdi_elfobj_preload_line()). */
bool pdi_elfobj_line_ready(const struct pdi_elfobj *o, uint64_t vaddr);
/* O, the cache's object for a file, takes the DWARF, frame information and line tables FROM
 * (another object of the very file, read on a worker with pdi_elfobj_preload()) has loaded and O
 * has not; FROM is taken (kept while O uses what it read, freed otherwise). NULL FROM ok. */
void pdi_elfobj_take_lines(struct pdi_elfobj *o, struct pdi_elfobj *from);

/* Load now what pdi_elfobj_cfi() and, with LINES, pdi_elfobj_describe() would load on first use
 * (the frame information; the DWARF and its address index), so that a worker pays for it rather
 * than the loop at a call site's first call (objwarm.h). A compile unit's line table is read
 * by pdi_elfobj_preload_line(), or when a site in it is first described. */
void pdi_elfobj_preload(struct pdi_elfobj *o, bool lines);

/* On a worker's copy of an object: the line table of VADDR's compile unit read now, with the DWARF
 * if it is not loaded yet, for pdi_elfobj_take_lines() to hand to the cache's object. */
void pdi_elfobj_preload_line(struct pdi_elfobj *o, uint64_t vaddr);

/* The object's call frame information (.eh_frame, present in stripped objects too), loaded on
 * first use and owned by the object; NULL if it has none. */
Dwarf_CFI *pdi_elfobj_cfi(struct pdi_elfobj *o);

/* The NT_GNU_BUILD_ID of the ELF file open at FD (an fd from objopen.h; not taken) into BUF, as
 * pdi_elfobj_build_id() gives it, without reading the rest of the object: 0, -ENOENT if it has
 * none, -ENOEXEC if not ELF. */
int pdi_elfobj_read_build_id(int fd, char *buf, size_t len);
/* The NT_GNU_BUILD_ID as a lowercase hex string, or "". */
const char *pdi_elfobj_build_id(const struct pdi_elfobj *o);

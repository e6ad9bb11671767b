/* SPDX-License-Identifier: GPL-2.0-only */
/* line_units.h -- compile units' line tables, copied out of libdw so that a worker can read them.
 *
 * libdw reads a unit's whole line table at the unit's first lookup: about 0.1 us of CPU per row
 * here, 48 ms for a generated unit of 380,884 rows, which the loop paid at the unit's first call
 * site. A Dwarf handle is one thread's at a time, so a table a worker reads through its own copy
 * of an object cannot be lent to the cache's object; copied into plain rows it can. A worker reads
 * a unit (pdi_line_unit_read()), the loop keeps it with the cache's object (elfobj.c) and finds a
 * line in it by binary search, as dwarf_getsrc_die() does in libdw's table. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <elfutils/libdw.h>

#include "u64map.h"

struct pdi_line_unit;

/* The units read for one object, by their offset in .debug_info. */
struct pdi_line_units {
	struct pdi_u64map idx; /* unit offset -> index in v */
	struct pdi_line_unit **v;
	uint32_t n;
	uint64_t bytes; /* what the rows and file names take */
};

/* The line table of compile unit CU copied, on any thread (it touches CU's Dwarf only): a unit
 * without a table (or one libdw cannot read) gives no rows, so that it is not read again. 0 or
 * -ENOMEM. */
int pdi_line_unit_read(Dwarf_Die *cu, struct pdi_line_unit **ret);
/* NULL ok. */
void pdi_line_unit_free(struct pdi_line_unit *u);
/* The line of U that covers VADDR, as dwarf_getsrc_die() finds it: its file ("" when the table
 * names none; valid while U lives) and number. False when no row covers VADDR. */
bool pdi_line_unit_find(const struct pdi_line_unit *u, uint64_t vaddr, const char **ret_file, int *ret_line);

/* The unit at offset OFF kept in US, or NULL. */
const struct pdi_line_unit *pdi_line_units_get(const struct pdi_line_units *us, uint64_t off);
/* U kept in US, which takes it (freed when US holds its unit already, or out of memory: then the
 * unit is read again at its next lookup). */
void pdi_line_units_add(struct pdi_line_units *us, struct pdi_line_unit *u);
/* FROM's units that TO lacks moved to TO; FROM is left empty. */
void pdi_line_units_move(struct pdi_line_units *to, struct pdi_line_units *from);
void pdi_line_units_free(struct pdi_line_units *us);

/* SPDX-License-Identifier: GPL-2.0-only */
/* line_units.c -- compile units' line tables copied out of libdw (see line_units.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "line_units.h"

#define FILE_NONE 0x7fffffffu

struct row {
	uint64_t addr;
	int32_t line;
	uint32_t file : 31; /* index in files, FILE_NONE when the row names none */
	uint32_t end : 1;   /* end_sequence: the address just past a sequence, covering nothing */
};

struct pdi_line_unit {
	uint64_t off;
	struct row *rows; /* in libdw's order: by address */
	size_t nrows;
	char **files;
	uint32_t nfiles;
	uint64_t bytes;
};

void pdi_line_unit_free(struct pdi_line_unit *u)
{
	if (!u)
		return;
	for (uint32_t i = 0; i < u->nfiles; i++)
		free(u->files[i]);
	free(u->files);
	free(u->rows);
	free(u);
}

/* The index in U's files of SRC, libdw's name of a row's file (SEEN: the pointers libdw gave for
 * them, the same for every row of one file), added at its first row. FILE_NONE on -ENOMEM. */
static uint32_t file_index(struct pdi_line_unit *u, const char ***seen, const char *src)
{
	const char **ns;
	char **nf;

	if (!src)
		return FILE_NONE;
	/* consecutive rows mostly share their file: look from the last one added back */
	for (uint32_t i = u->nfiles; i-- > 0;)
		if ((*seen)[i] == src)
			return i;
	if (u->nfiles == FILE_NONE || !(ns = realloc(*seen, sizeof(*ns) * (u->nfiles + 1))))
		return FILE_NONE;
	*seen = ns;
	if (!(nf = realloc(u->files, sizeof(*nf) * (u->nfiles + 1))))
		return FILE_NONE;
	u->files = nf;
	if (!(u->files[u->nfiles] = strdup(src)))
		return FILE_NONE;
	u->bytes += strlen(src) + 1 + sizeof(*nf);
	ns[u->nfiles] = src;
	return u->nfiles++;
}

int pdi_line_unit_read(Dwarf_Die *cu, struct pdi_line_unit **ret)
{
	struct pdi_line_unit *u = calloc(1, sizeof(*u));
	const char **seen = NULL;
	uint32_t last = FILE_NONE;
	const char *last_src = NULL;
	Dwarf_Lines *lines;
	size_t n;

	if (!u)
		return -ENOMEM;
	u->off = dwarf_dieoffset(cu);
	u->bytes = sizeof(*u);
	if (dwarf_getsrclines(cu, &lines, &n) != 0)
		n = 0;
	if (n && !(u->rows = calloc(n, sizeof(*u->rows)))) {
		free(u);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		struct row *r = &u->rows[u->nrows];
		const char *src;
		Dwarf_Addr addr;
		bool end = false;
		int line = 0;

		if (!l || dwarf_lineaddr(l, &addr) != 0)
			continue;
		(void)dwarf_lineendsequence(l, &end);
		(void)dwarf_lineno(l, &line);
		src = dwarf_linesrc(l, NULL, NULL);
		if (src != last_src) {
			last = file_index(u, &seen, src);
			last_src = last == FILE_NONE ? NULL : src;
		}
		*r = (struct row){.addr = addr, .line = line, .file = last, .end = end};
		u->nrows++;
	}
	free(seen);
	u->bytes += u->nrows * sizeof(*u->rows);
	*ret = u;
	return 0;
}

bool pdi_line_unit_find(const struct pdi_line_unit *u, uint64_t vaddr, const char **ret_file, int *ret_line)
{
	const struct row *r;
	size_t l = 0, h;

	if (!u->nrows)
		return false;
	/* the last row at or below VADDR, unless it ends a sequence (dwarf_getsrc_die()'s rule) */
	h = u->nrows - 1;
	while (l < h) {
		size_t i = h - (h - l) / 2;

		if (vaddr < u->rows[i].addr)
			h = i - 1;
		else
			l = i;
	}
	r = &u->rows[l];
	if (r->end || r->addr > vaddr)
		return false;
	*ret_file = r->file == FILE_NONE ? "" : u->files[r->file];
	*ret_line = r->line;
	return true;
}

const struct pdi_line_unit *pdi_line_units_get(const struct pdi_line_units *us, uint64_t off)
{
	uint32_t i = pdi_u64map_get(&us->idx, off);

	return i == PDI_U64MAP_NONE ? NULL : us->v[i];
}

void pdi_line_units_add(struct pdi_line_units *us, struct pdi_line_unit *u)
{
	struct pdi_line_unit **nv;

	if (pdi_line_units_get(us, u->off) || !(nv = realloc(us->v, sizeof(*nv) * (us->n + 1)))) {
		pdi_line_unit_free(u);
		return;
	}
	us->v = nv;
	if (pdi_u64map_put(&us->idx, u->off, us->n) < 0) {
		pdi_line_unit_free(u);
		return;
	}
	us->v[us->n++] = u;
	us->bytes += u->bytes;
}

void pdi_line_units_move(struct pdi_line_units *to, struct pdi_line_units *from)
{
	for (uint32_t i = 0; i < from->n; i++)
		pdi_line_units_add(to, from->v[i]);
	free(from->v);
	pdi_u64map_free(&from->idx);
	*from = (struct pdi_line_units){0};
}

void pdi_line_units_free(struct pdi_line_units *us)
{
	for (uint32_t i = 0; i < us->n; i++)
		pdi_line_unit_free(us->v[i]);
	free(us->v);
	pdi_u64map_free(&us->idx);
	*us = (struct pdi_line_units){0};
}

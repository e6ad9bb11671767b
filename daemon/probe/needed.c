/* SPDX-License-Identifier: GPL-2.0-only */
/* needed.c -- an ELF object's DT_SONAME and DT_NEEDED entries (needed.h).
 *
 * Read with ELF_C_READ, as elfobj.c does: a file rewritten in place while we read it makes a
 * read fail where a mapping would fault. Only the dynamic section and the string table it
 * links to are read, each bounded: a user's file cannot make pdimond read more than a real
 * program's would need. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>
#include <libelf.h>

#include "needed.h"

#define MAX_DYNAMIC_BYTES (64u << 10) /* 4,096 entries; ld writes a few dozen */
#define MAX_DYNSTR_BYTES (1u << 20)   /* the names the dynamic section points into */

/* Copy the string at OFFSET of section STRNDX into DST, if it is a plausible library name. */
static void copy_name(Elf *e, size_t strndx, uint64_t offset, char dst[PDI_NEEDED_NAME_LEN])
{
	const char *s = elf_strptr(e, strndx, (size_t)offset);
	size_t len;

	if (!s)
		return;
	len = strnlen(s, PDI_NEEDED_NAME_LEN);
	if (len == 0 || len == PDI_NEEDED_NAME_LEN || memchr(s, '/', len))
		return;
	memcpy(dst, s, len + 1);
}

static int read_dynamic(Elf *e, struct pdi_needed *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh, str;
		Elf_Data *data;
		Elf_Scn *strscn;
		size_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		strscn = elf_getscn(e, sh.sh_link);
		if (sh.sh_size > MAX_DYNAMIC_BYTES || !strscn || !gelf_getshdr(strscn, &str) ||
		    str.sh_type != SHT_STRTAB || str.sh_size > MAX_DYNSTR_BYTES)
			return -ENOEXEC;
		data = elf_getdata(scn, NULL);
		if (!data || sh.sh_entsize == 0)
			return -ENOEXEC;
		count = data->d_size / sh.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_SONAME) {
				copy_name(e, sh.sh_link, dyn.d_un.d_val, out->soname);
			} else if (dyn.d_tag == DT_NEEDED && out->n < PDI_NEEDED_MAX) {
				copy_name(e, sh.sh_link, dyn.d_un.d_val, out->names[out->n]);
				if (out->names[out->n][0])
					out->n++;
			}
		}
		return 0;
	}
	return -ENOEXEC;
}

int pdi_needed_read(int fd, struct pdi_needed *ret)
{
	struct pdi_needed *out;
	Elf *e;
	int r;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return -ENOEXEC;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -ENOEXEC;
	}
	out = calloc(1, sizeof(*out));
	r = out ? read_dynamic(e, out) : -ENOMEM;
	elf_end(e);
	if (r == 0)
		memcpy(ret, out, sizeof(*out));
	free(out);
	return r;
}

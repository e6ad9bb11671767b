/* SPDX-License-Identifier: GPL-2.0-only */
/* needed.h -- what an ELF object says of its dynamic linking: its own name (DT_SONAME) and the
 * libraries it asks for (DT_NEEDED), read from a file of a user's without trusting it. */
#pragma once

#define PDI_NEEDED_MAX 64       /* entries kept; a real program asks for a few dozen at most */
#define PDI_NEEDED_NAME_LEN 128 /* a soname, with its terminating NUL */

struct pdi_needed {
	char soname[PDI_NEEDED_NAME_LEN]; /* "" when it has none (an executable) */
	unsigned n;
	char names[PDI_NEEDED_MAX][PDI_NEEDED_NAME_LEN];
};

/* The dynamic section of the ELF file open at FD (not moved: read with pread) into RET. Names
 * that are too long, hold a '/', or lie outside the string table are left out; entries past
 * PDI_NEEDED_MAX too. 0, -ENOEXEC (not ELF, no dynamic section, or one too large to be real),
 * -ENOMEM; RET untouched on failure. */
int pdi_needed_read(int fd, struct pdi_needed *ret);

/* SPDX-License-Identifier: GPL-2.0-only */
/* test-needed.c -- DT_SONAME and DT_NEEDED read from real objects (this test's own program,
 * the C library) and from files that are not what they claim (needed.c). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "needed.h"

static struct pdi_needed *read_path(const char *path, int *ret)
{
	struct pdi_needed *n = calloc(1, sizeof(*n));
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_not_null(n);
	cr_assert_geq(fd, 0, "open %s", path);
	*ret = pdi_needed_read(fd, n);
	close(fd);
	return n;
}

static bool has_name(const struct pdi_needed *n, const char *prefix)
{
	for (unsigned i = 0; i < n->n; i++)
		if (!strncmp(n->names[i], prefix, strlen(prefix)))
			return true;
	return false;
}

/* The file offsets and sizes of this test's program's dynamic section, its string table and
 * its section headers: where a mangled copy is changed. */
static void dynamic_regions(int fd, uint64_t off[3], uint64_t len[3])
{
	Elf *e;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;

	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	e = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert(e && gelf_getehdr(e, &eh));
	off[2] = eh.e_shoff;
	len[2] = (uint64_t)eh.e_shnum * eh.e_shentsize;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh, str;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNAMIC &&
		    gelf_getshdr(elf_getscn(e, sh.sh_link), &str)) {
			off[0] = sh.sh_offset, len[0] = sh.sh_size;
			off[1] = str.sh_offset, len[1] = str.sh_size;
		}
	}
	elf_end(e);
	cr_assert(len[0] && len[1] && len[2]);
}

/* A copy of this test's program, or its first LEN bytes (0: all), with BYTES bytes changed by
 * SEED in its dynamic section, dynamic strings and section headers. */
static int mangled_copy(size_t len, unsigned bytes, unsigned seed)
{
	char path[] = "/tmp/test-needed-XXXXXX";
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out = mkstemp(path);
	uint64_t off[3] = {0}, rlen[3] = {0};
	struct stat st;
	char *buf;

	cr_assert(in >= 0 && out >= 0 && fstat(in, &st) == 0);
	unlink(path);
	dynamic_regions(in, off, rlen);
	if (!len || len > (size_t)st.st_size)
		len = (size_t)st.st_size;
	buf = malloc(len);
	cr_assert_not_null(buf);
	cr_assert_eq(pread(in, buf, len, 0), (ssize_t)len);
	srand(seed);
	for (unsigned i = 0; i < bytes; i++) {
		unsigned k = (unsigned)rand() % 3;
		uint64_t at = off[k] + (uint64_t)rand() % rlen[k];

		if (at < len)
			buf[at] = (char)rand();
	}
	cr_assert_eq(pwrite(out, buf, len, 0), (ssize_t)len);
	free(buf);
	close(in);
	return out;
}

Test(needed, program_names_its_libraries)
{
	int r;
	struct pdi_needed *n = read_path("/proc/self/exe", &r);

	cr_assert_eq(r, 0);
	cr_expect_str_empty(n->soname, "an executable has no soname");
	cr_expect(has_name(n, "libcriterion.so"), "this test links Criterion");
	cr_expect(has_name(n, "libc.so."));
	free(n);
}

Test(needed, library_names_itself)
{
	Dl_info info;
	int r;
	struct pdi_needed *n;

	/* a function of the C library that no sanitizer intercepts */
	cr_assert(dladdr((void *)gnu_get_libc_version, &info) && info.dli_fname);
	n = read_path(info.dli_fname, &r);
	cr_assert_eq(r, 0, "%s", info.dli_fname);
	cr_expect_str_eq(n->soname, "libc.so.6");
	free(n);
}

Test(needed, not_elf_is_refused)
{
	char path[] = "/tmp/test-needed-XXXXXX";
	struct pdi_needed n = {.n = 7};
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	unlink(path);
	cr_expect_eq(pdi_needed_read(fd, &n), -ENOEXEC, "an empty file");
	cr_assert_eq(write(fd, "#!/bin/sh\necho hi\n", 18), 18);
	cr_expect_eq(pdi_needed_read(fd, &n), -ENOEXEC, "a script");
	cr_expect_eq(n.n, 7, "untouched on failure");
	close(fd);
}

Test(needed, truncated_elf_is_refused)
{
	struct pdi_needed n;
	int fd = mangled_copy(64, 0, 0); /* the ELF header alone: its sections lie past the end */

	cr_expect_eq(pdi_needed_read(fd, &n), -ENOEXEC);
	close(fd);
}

/* Changed bytes anywhere in a real program: an answer or a refusal, every name in bounds. */
Test(needed, mangled_elf_never_misleads)
{
	for (unsigned seed = 1; seed <= 200; seed++) {
		struct pdi_needed n;
		int fd = mangled_copy(0, 1 + seed % 32, seed), r = pdi_needed_read(fd, &n);

		cr_assert(r == 0 || r == -ENOEXEC, "seed %u: %d", seed, r);
		for (unsigned i = 0; r == 0 && i < n.n; i++) {
			cr_assert_lt(strlen(n.names[i]), PDI_NEEDED_NAME_LEN);
			cr_assert_null(strchr(n.names[i], '/'), "seed %u: %s", seed, n.names[i]);
		}
		close(fd);
	}
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* test-entry-place.c -- where entry probes go: past single-stepped first instructions only when safe. */
#include <criterion/criterion.h>
#include <string.h>

#include "entry_place.h"

#define ADDR 0x967a0ull

static struct pdi_entry_place place(const uint8_t *code, size_t len)
{
	struct pdi_entry_place pl;

	cr_assert_eq(pdi_entry_place(code, len, ADDR, &pl), 0);
	return pl;
}

/* Open MPI 4.1's PMPI_Waitall: mov ompi_mpi_param_check(%rip),%rax; push %r12; mov %rdx,%r12; ret */
static const uint8_t waitall[] = {0x48, 0x8b, 0x05, 0x61, 0x4e, 0x08, 0x00, 0x41, 0x54, 0x49, 0x89, 0xd4, 0xc3};

Test(entry_place, moves_past_a_rip_relative_load_to_a_push)
{
	struct pdi_entry_place pl = place(waitall, sizeof(waitall));

	cr_assert_eq(pl.skip, 7);
	cr_assert_eq(pl.kind, PDI_INSN_EMULATED);
	cr_assert_eq(pl.first_kind, PDI_INSN_STEPPED);
	cr_assert_null(pl.why);
}

Test(entry_place, stays_on_an_emulated_first_instruction)
{
	static const uint8_t push_first[] = {0x41, 0x57, 0x41, 0x56, 0xc3};   /* push %r15; push %r14 */
	static const uint8_t jmp_first[] = {0xe9, 0x00, 0x01, 0x00, 0x00, 0xc3}; /* MPICH's MPI_Testany: a tail jump */
	struct pdi_entry_place pl = place(push_first, sizeof(push_first));

	cr_assert_eq(pl.skip, 0);
	cr_assert_eq(pl.kind, PDI_INSN_EMULATED);
	pl = place(jmp_first, sizeof(jmp_first));
	cr_assert_eq(pl.skip, 0);
	cr_assert_eq(pl.kind, PDI_INSN_EMULATED);
}

Test(entry_place, never_skips_what_moves_the_stack)
{
	static const uint8_t sub_rsp[] = {0x48, 0x83, 0xec, 0x08, 0x55, 0xc3}; /* MPICH's MPI_File_read_all */
	static const uint8_t read_rsp[] = {0x48, 0x8b, 0x04, 0x24, 0x55, 0xc3}; /* mov (%rsp),%rax */
	struct pdi_entry_place pl = place(sub_rsp, sizeof(sub_rsp));

	cr_assert_eq(pl.skip, 0);
	cr_assert_eq(pl.kind, PDI_INSN_STEPPED);
	cr_assert_not_null(pl.why);
	cr_assert(strstr(pl.why, "stack"), "%s", pl.why);
	pl = place(read_rsp, sizeof(read_rsp));
	cr_assert_eq(pl.skip, 0);
	cr_assert(strstr(pl.why, "stack"), "%s", pl.why);
}

Test(entry_place, never_skips_what_overwrites_an_argument)
{
	static const uint8_t rdi[] = {0x48, 0x8b, 0x3d, 0x00, 0x00, 0x00, 0x00, 0x55, 0xc3}; /* mov x(%rip),%rdi */
	static const uint8_t ecx[] = {0x31, 0xc9, 0x55, 0xc3};                               /* xor %ecx,%ecx */
	static const uint8_t r9b[] = {0x41, 0xb1, 0x01, 0x55, 0xc3};                         /* mov $1,%r9b */

	cr_assert_eq(place(rdi, sizeof(rdi)).skip, 0);
	cr_assert(strstr(place(rdi, sizeof(rdi)).why, "argument"));
	cr_assert_eq(place(ecx, sizeof(ecx)).skip, 0);
	cr_assert_eq(place(r9b, sizeof(r9b)).skip, 0);
}

Test(entry_place, never_skips_a_memory_write_or_a_branch)
{
	static const uint8_t store[] = {0x48, 0x89, 0x05, 0x00, 0x00, 0x00, 0x00, 0x55, 0xc3}; /* mov %rax,x(%rip) */
	static const uint8_t ind[] = {0xff, 0xe0, 0x55, 0xc3};                                 /* jmp *%rax */
	static const uint8_t ret[] = {0xc3, 0x55};

	cr_assert(strstr(place(store, sizeof(store)).why, "memory"));
	cr_assert_eq(place(ind, sizeof(ind)).skip, 0);
	cr_assert(strstr(place(ind, sizeof(ind)).why, "branches"));
	cr_assert_eq(place(ret, sizeof(ret)).skip, 0);
}

Test(entry_place, refuses_when_the_function_jumps_into_the_skipped_bytes)
{
	/* mov x(%rip),%rax; push %rbp; nop; jmp back to the push: a probe there would fire per loop */
	static const uint8_t loop[] = {0x48, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x00, 0x55, 0x90, 0xeb, 0xfc, 0xc3};
	/* the same, jumping back to the function's first byte: that is a new call as far as a probe
	 * on the first byte knows, so moving changes nothing */
	static const uint8_t to_start[] = {0x48, 0x8b, 0x05, 0x00, 0x00, 0x00, 0x00, 0x55, 0x90, 0xeb, 0xf5, 0xc3};
	struct pdi_entry_place pl = place(loop, sizeof(loop));

	cr_assert_eq(pl.skip, 0);
	cr_assert(strstr(pl.why, "branch"), "%s", pl.why);
	pl = place(to_start, sizeof(to_start));
	cr_assert_eq(pl.skip, 7);
}

Test(entry_place, refuses_code_it_cannot_decode_to_the_end)
{
	uint8_t code[sizeof(waitall) + 2];

	memcpy(code, waitall, sizeof(waitall));
	code[sizeof(waitall)] = 0x0f; /* a truncated two-byte opcode: might be a branch */
	code[sizeof(waitall) + 1] = 0x0b;
	cr_assert_eq(place(code, sizeof(waitall) + 1).skip, 0);
	cr_assert_eq(place(waitall, 3).skip, 0); /* not even the first instruction */
}

Test(entry_place, gives_up_after_a_few_instructions)
{
	uint8_t code[64];

	memset(code, 0x90, sizeof(code)); /* nops: skippable, but not emulated here */
	code[63] = 0x55;
	cr_assert_eq(place(code, sizeof(code)).skip, 0);
	cr_assert_str_eq(pdi_insn_kind_name(PDI_INSN_EMULATED), "emulated");
	cr_assert_str_eq(pdi_insn_kind_name(PDI_INSN_STEPPED), "single-stepped");
}

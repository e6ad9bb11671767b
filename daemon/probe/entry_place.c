/* SPDX-License-Identifier: GPL-2.0-only */
/* entry_place.c -- placing entry probes on instructions the kernel emulates (x86-64).
 *
 * A uprobe replaces an instruction with int3. When it fires, the kernel either emulates the
 * original instruction in the trap handler (push of a register, relative jmp/jcc/call: see
 * push_setup_xol_ops() and branch_setup_xol_ops() in arch/x86/kernel/uprobes.c) or copies it
 * to a page of its own and single-steps it, which costs a second trap and, in these PVM guests,
 * about 16 us instead of 0.5 us. Open MPI's MPI_Waitall and MPI_Test begin with a RIP-relative
 * mov and then push: a probe on that push sees exactly what a probe on the first byte would
 * (same stack pointer, same argument registers) at a fraction of the cost, as long as the
 * instructions skipped cannot change any of it and nothing jumps into them.
 *
 * The instructions are decoded with Capstone (Debian's libcapstone), not by hand: the
 * decision needs every operand's registers and memory access, implicit ones included. */
#include <errno.h>
#include <string.h>

#include <capstone/capstone.h>

#include "entry_place.h"

#define MAX_SKIP_INSNS 6
#define MAX_SKIP_BYTES 32

/* The kernel's own byte tests, so that "emulated" means what it means there. */
static enum pdi_insn_kind kernel_kind(const uint8_t *b, size_t n)
{
	/* push %reg: 0x50-0x57, with REX.B (0x41) for r8-r15; nothing else */
	if ((n == 1 && b[0] >= 0x50 && b[0] <= 0x57) || (n == 2 && b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57))
		return PDI_INSN_EMULATED;
	/* jmp rel8, jcc rel8, jmp rel32, call rel32, jcc rel32, without prefixes */
	if ((n == 2 && (b[0] == 0xeb || (b[0] >= 0x70 && b[0] <= 0x7f))) ||
	    (n == 5 && (b[0] == 0xe8 || b[0] == 0xe9)) || (n == 6 && b[0] == 0x0f && b[1] >= 0x80 && b[1] <= 0x8f))
		return PDI_INSN_EMULATED;
	return PDI_INSN_STEPPED;
}

const char *pdi_insn_kind_name(unsigned kind)
{
	return kind == PDI_INSN_EMULATED ? "emulated" : "single-stepped";
}

static bool is_stack_reg(uint16_t r)
{
	return r == X86_REG_RSP || r == X86_REG_ESP || r == X86_REG_SP || r == X86_REG_SPL;
}

/* rdi, rsi, rdx, rcx, r8, r9 under any of their names */
static bool is_arg_reg(uint16_t r)
{
	static const uint16_t regs[] = {
		X86_REG_RDI, X86_REG_EDI, X86_REG_DI,  X86_REG_DIL, X86_REG_RSI, X86_REG_ESI, X86_REG_SI,
		X86_REG_SIL, X86_REG_RDX, X86_REG_EDX, X86_REG_DX,  X86_REG_DL,  X86_REG_DH,  X86_REG_RCX,
		X86_REG_ECX, X86_REG_CX,  X86_REG_CL,  X86_REG_CH,  X86_REG_R8,  X86_REG_R8D, X86_REG_R8W,
		X86_REG_R8B, X86_REG_R9,  X86_REG_R9D, X86_REG_R9W, X86_REG_R9B,
	};

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (regs[i] == r)
			return true;
	return false;
}

static bool changes_control(const cs_insn *in)
{
	const cs_detail *d = in->detail;

	for (uint8_t i = 0; i < d->groups_count; i++)
		switch (d->groups[i]) {
		case CS_GRP_JUMP:
		case CS_GRP_CALL:
		case CS_GRP_RET:
		case CS_GRP_INT:
		case CS_GRP_IRET:
		case CS_GRP_PRIVILEGE:
		case CS_GRP_BRANCH_RELATIVE:
			return true;
		}
	return false;
}

/* Why the instruction IN cannot be run before the probe, or NULL when it can. */
static const char *why_not_skippable(csh h, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;

	if (changes_control(in))
		return "an instruction before the first emulated one branches";
	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return "an instruction before the first emulated one could not be analysed";
	for (uint8_t i = 0; i < nrd; i++)
		if (is_stack_reg(rd[i]))
			return "an instruction before the first emulated one touches the stack";
	for (uint8_t i = 0; i < nwr; i++) {
		if (is_stack_reg(wr[i]))
			return "an instruction before the first emulated one touches the stack";
		if (is_arg_reg(wr[i]))
			return "an instruction before the first emulated one overwrites an argument register";
	}
	for (uint8_t i = 0; i < in->detail->x86.op_count; i++) {
		const cs_x86_op *op = &in->detail->x86.operands[i];

		if (op->type == X86_OP_MEM && (op->access & CS_AC_WRITE))
			return "an instruction before the first emulated one writes memory";
	}
	return NULL;
}

/* Does a direct branch anywhere in CODE land in (ADDR, ADDR + SKIP]? A probe moved there would
 * fire again for that jump, or miss calls that enter through it. */
static const char *why_branched_into(csh h, const uint8_t *code, size_t len, uint64_t addr, uint32_t skip)
{
	const uint8_t *p = code;
	uint64_t a = addr;
	size_t left = len;
	cs_insn *in = cs_malloc(h);
	const char *why = NULL;

	if (!in)
		return "out of memory";
	while (left > 0 && !why) {
		if (!cs_disasm_iter(h, &p, &left, &a, in)) {
			/* an instruction Capstone does not know could be a branch: no guess */
			why = "the function could not be decoded to its end";
			break;
		}
		if (!changes_control(in))
			continue;
		for (uint8_t i = 0; i < in->detail->x86.op_count; i++) {
			const cs_x86_op *op = &in->detail->x86.operands[i];

			if (op->type == X86_OP_IMM && (uint64_t)op->imm > addr && (uint64_t)op->imm <= addr + skip)
				why = "a branch in the function targets the instructions before the emulated one";
		}
	}
	cs_free(in, 1);
	return why;
}

int pdi_entry_place(const uint8_t *code, size_t len, uint64_t addr, struct pdi_entry_place *ret)
{
	struct pdi_entry_place pl = {.kind = PDI_INSN_STEPPED, .first_kind = PDI_INSN_STEPPED};
	const uint8_t *p = code;
	size_t left = len < MAX_SKIP_BYTES + 16 ? len : MAX_SKIP_BYTES + 16;
	uint64_t a = addr;
	cs_insn *in = NULL;
	csh h;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
		pl.why = "the disassembler could not be opened";
		*ret = pl;
		return -ENOSYS;
	}
	(void)cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	in = cs_malloc(h);
	if (!in) {
		pl.why = "out of memory";
		goto out;
	}
	for (unsigned k = 0; k < MAX_SKIP_INSNS; k++) {
		uint32_t at = (uint32_t)(a - addr);
		enum pdi_insn_kind kind;
		const char *why;

		if (!cs_disasm_iter(h, &p, &left, &a, in)) {
			pl.why = "the first instructions could not be decoded";
			break;
		}
		kind = kernel_kind(in->bytes, in->size);
		if (k == 0)
			pl.first_kind = (uint8_t)kind;
		if (kind == PDI_INSN_EMULATED) {
			why = at ? why_branched_into(h, code, len, addr, at) : NULL;
			if (why) {
				pl.why = why;
			} else {
				pl.skip = at;
				pl.kind = (uint8_t)kind;
				pl.why = NULL;
			}
			break;
		}
		if ((why = why_not_skippable(h, in))) {
			pl.why = why;
			break;
		}
		if (a - addr > MAX_SKIP_BYTES) {
			pl.why = "no emulated instruction among the first ones";
			break;
		}
	}
	if (pl.kind == PDI_INSN_STEPPED && !pl.why)
		pl.why = "no emulated instruction among the first ones";
out:
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	*ret = pl;
	return 0;
}

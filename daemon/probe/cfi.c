/* SPDX-License-Identifier: GPL-2.0-only */
/* cfi.c -- reading one frame's unwind rule from .eh_frame (libdw) into the few forms BPF
 * follows: CFA = rsp + N or rbp + N, the caller's rbp unchanged or saved at CFA + M.
 *
 * Compilers emit exactly these forms for ordinary functions on x86-64, with or without a
 * frame pointer; anything else (stack realignment, signal frames, hand-written expressions)
 * is refused, and the chain stops there rather than follow a rule we cannot check. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "cfi.h"

#define X86_64_RBP 6 /* DWARF register numbers */
#define X86_64_RSP 7

static bool fits(int64_t v, int64_t lo, int64_t hi)
{
	return v >= lo && v <= hi;
}

/* The caller's rbp: 0 = unchanged; else its save slot relative to the CFA in *RET_OFF. */
static int bp_rule(Dwarf_Frame *fr, int64_t *ret_off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;

	if (dwarf_frame_register(fr, X86_64_RBP, mem, &ops, &nops) < 0)
		return -EOPNOTSUPP;
	if (nops == 0) {
		/* "same value" (ops NULL) keeps rbp; "undefined" leaves it unknown, which only
		 * matters to a later rbp-based rule: take it as unchanged there too */
		*ret_off = 0;
		return 0;
	}
	/* offset(N): the address DW_OP_call_frame_cfa [DW_OP_plus_uconst/consts N, DW_OP_plus] */
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return -EOPNOTSUPP;
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*ret_off = (int64_t)ops[1].number;
		return 0;
	}
	if (nops == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu) && ops[2].atom == DW_OP_plus) {
		*ret_off = (int64_t)ops[1].number;
		return 0;
	}
	return -EOPNOTSUPP;
}

int pdi_cfi_hop(struct pdi_elfobj *o, uint64_t ra_vaddr, enum pdi_hop_kind kind, struct pdi_hop *ret)
{
	Dwarf_CFI *cfi = pdi_elfobj_cfi(o);
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t nops = 0;
	int64_t cfa_off, bp_off = 0;
	uint64_t reg;
	bool cfa_bp;
	int r;

	/* the rule in force at the call instruction: one byte before its return address */
	if (!cfi || ra_vaddr == 0 || dwarf_cfi_addrframe(cfi, ra_vaddr - 1, &fr) != 0)
		return -ENOENT;
	r = -EOPNOTSUPP;
	if (dwarf_frame_cfa(fr, &ops, &nops) < 0 || nops != 1)
		goto out;
	/* libdw gives "register + offset" as DW_OP_bregx (register, offset) or DW_OP_bregN offset */
	if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		cfa_off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		cfa_off = (int64_t)ops[0].number;
	} else {
		goto out;
	}
	if (reg != X86_64_RSP && reg != X86_64_RBP)
		goto out;
	cfa_bp = reg == X86_64_RBP;
	if ((r = bp_rule(fr, &bp_off)) < 0)
		goto out;
	/* BPF knows the stack pointer where the return address is stored: the frame's rsp at
	 * the call was 8 above it */
	if (!cfa_bp)
		cfa_off += 8;
	r = -ERANGE;
	/* the next return address (CFA - 8) lies above this one; a saved rbp below the CFA */
	if (!fits(cfa_off, 16, 1 << 24) || !(bp_off == 0 || fits(bp_off, -(1 << 15), -8)))
		goto out;
	*ret = (struct pdi_hop){.cfa_off = (int32_t)cfa_off, .bp_off = (int16_t)bp_off, .cfa_bp = cfa_bp,
				.kind = (uint8_t)kind};
	r = 0;
out:
	free(fr);
	return r;
}

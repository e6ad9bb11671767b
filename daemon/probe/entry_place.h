/* SPDX-License-Identifier: GPL-2.0-only */
/* entry_place.h -- where a function's entry probe costs least: on the first instruction the
 * kernel emulates, when nothing before it could change what the probe reads. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How the kernel runs the instruction a uprobe replaces with int3. */
enum pdi_insn_kind {
	PDI_INSN_STEPPED = 0,  /* copied out and single-stepped: two traps (~16 us in these VMs) */
	PDI_INSN_EMULATED = 1, /* emulated in the trap handler: push reg, relative jmp/jcc/call */
};

struct pdi_entry_place {
	uint32_t skip;      /* bytes from the function's first instruction to the probe */
	uint8_t kind;       /* enum pdi_insn_kind of the probed instruction */
	uint8_t first_kind; /* and of the function's first instruction (the probe without placement) */
	const char *why;    /* when the probe stays on a stepped first instruction: why (static text) */
};

/* Decide the probe of the function whose code is CODE[0..LEN) (the whole function, or as much
 * of it as is known), at ELF address ADDR. The probe moves past the first instructions only
 * when every one of them
 *   - neither branches, calls, returns nor traps,
 *   - neither reads nor writes the stack pointer (so *sp is still the return address, and
 *     stack arguments and the return probe's slot are where they were at entry),
 *   - writes no argument register (rdi, rsi, rdx, rcx, r8, r9) and no memory,
 * and when no direct branch inside CODE targets the skipped bytes (the probe must fire once
 * per call, and only per call). Otherwise it stays at offset 0. Always fills RET; returns 0, or
 * -ENOSYS when the disassembler cannot be opened (RET then says offset 0, kind unknown:
 * stepped). */
int pdi_entry_place(const uint8_t *code, size_t len, uint64_t addr, struct pdi_entry_place *ret);

/* The name of KIND for people: "emulated" or "single-stepped". */
const char *pdi_insn_kind_name(unsigned kind);

/* SPDX-License-Identifier: GPL-2.0-only */
/* cfi.h -- the frame rule at a return address, as BPF follows it (struct pdi_hop). */
#pragma once

#include <stdint.h>

#include "elfobj.h"
#include "event.h"

/* The hop over the frame that return address RA_VADDR (an ELF address of O) returns into:
 * where that frame's own return address is, from O's .eh_frame at the call instruction.
 * KIND is stored as given. -ENOENT when O has no frame rule there; -EOPNOTSUPP when the rule
 * is not one BPF can follow (a CFA other than rsp/rbp + offset, rbp restored by an
 * expression); -ERANGE when an offset does not fit. RET untouched on failure. */
int pdi_cfi_hop(struct pdi_elfobj *o, uint64_t ra_vaddr, enum pdi_hop_kind kind, struct pdi_hop *ret);

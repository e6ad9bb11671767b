/* SPDX-License-Identifier: GPL-2.0-only */
/* model_io.h -- a task's model as a portable, versioned, checksummed blob, to keep it across
 * daemon restarts and in the store.
 *
 * Layout (all integers little-endian, fixed width; doubles and floats as their IEEE-754 bits):
 *
 *	0   "PDIM"
 *	4   u32 CRC-32 (zlib's) of bytes 8 .. total length
 *	8   u32 format version
 *	12  u32 reserved, 0
 *	16  u64 total length, header included
 *	24  payload of that version
 *
 * The header is the same for every version, so that any later reader can tell a corrupt
 * blob (-EBADMSG) from one it is too old to read (-EPROTONOSUPPORT). The payload names MPI
 * functions by name, not by their index in pdi_mpi_funcs, which changes between releases. */
#pragma once

#include <stddef.h>

#include "model.h"

#define PDI_MODEL_FORMAT 10 /* 2: what the overhead budget left unobserved; 3: phases in line;
			     4: the kernel's counts per phase (struct pdi_usage); 5: phases on the
			     wall clock; 6: what the live stack said (stack_seen.h); 7: a budget
			     mark's from_earlier_runs; 8: the readings through the step (usage_log.h);
			     9: early wall-clock phases (pdi_model.early); 10: the step's group CPU
			     beside each reading (pdi_usage.group_ns) */
#define PDI_MODEL_MAGIC "PDIM"

/* Encode M into a malloc'd buffer. 0, -ENOMEM, or -EINVAL if M names an MPI function
 * outside pdi_mpi_funcs. */
int pdi_model_encode(const struct pdi_model *m, void **ret_buf, size_t *ret_len);

/* Decode into a model built with CFG (NULL: the default), so that it goes on taking
 * pdi_model_add_call() exactly where the encoded one stopped: the maps are rebuilt and
 * m->bytes recomputed the way the model code counts them. A model bigger than CFG's budget
 * is kept whole and stops growing. 0 and *RET set (free it with pdi_model_done()), or
 * *RET untouched and -EBADMSG (corrupt or truncated), -EPROTONOSUPPORT (written by a newer
 * format, or naming an MPI function this pdimon does not know), -ENOMEM. */
int pdi_model_decode(const void *buf, size_t len, const struct pdi_model_config *cfg, struct pdi_model *ret);

/* SPDX-License-Identifier: GPL-2.0-only */
/* program.h -- what a step runs: the executable's path and identity, and the input size the
 * user gave, which tell runs of the same program apart for sample runs and trends. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

struct pdi_daemon;
struct pdi_step;

/* The environment variable `pdimon run --size N` sets for its command. */
#define PDI_INPUT_SIZE_ENV "PDIMON_INPUT_SIZE"
/* Input sizes above this are refused as typos (it is a count of something, not bytes of RAM). */
#define PDI_INPUT_SIZE_MAX (1ull << 62)

/* Parse a decimal input size: 1 to PDI_INPUT_SIZE_MAX. 0, or -EINVAL. */
int pdi_input_size_parse(const char *s, unsigned long long *ret);

/* Fill S's executable (the path /proc/PID/exe names), its build identity (the ELF build ID as
 * "build-id:HEX", or without one "file:HASH" of the path, size and modification time) and,
 * unless the launcher said, the input size from PID's environment. Only what S lacks; PID is
 * its first task. Failures leave the field empty: nothing here is needed to monitor. */
void pdi_program_identify(struct pdi_daemon *d, struct pdi_step *s, pid_t pid);

/* The program S runs as one number (its executable and build identity, hashed), for tables
 * kept per program; 0 while pdi_program_identify() has not named it. */
uint64_t pdi_program_hash(const struct pdi_step *s);

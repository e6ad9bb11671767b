/* SPDX-License-Identifier: GPL-2.0-only */
/* site.h -- call sites and the names of states: the one place a state key (model.h) becomes
 * the text people read ("MPI_Send@halo.c:41", or "A -> B" for the computation between two
 * calls), shared by the daemon's step views, the analysis and every rendering. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pdi_model;

/* A call site: an MPI function called from one place in one object. Tasks of a step
 * running the same program share sites, whatever their load addresses. */
struct pdi_site {
	uint64_t key;      /* hash of (object inode, address in object, function) */
	uint16_t fn;
	char *name;        /* FUNCTION@FILE:LINE, or FUNCTION@OBJECT+0xOFFSET without DWARF */
	char *caller;      /* the function that makes the call, "" when unknown */
	char *file;        /* source file as DWARF names it, "" when unknown */
	int line;
};

/* The name of site I of SITES[0..N), "?" when there is no such site (a sample run's foreign
 * site, a corrupt key). */
const char *pdi_site_name(const struct pdi_site *sites, uint64_t n, uint64_t i);

/* The name of state KEY into BUF: its call site, or "FROM -> TO" for a computation. */
void pdi_state_name(const struct pdi_site *sites, uint64_t n, uint64_t key, char *buf, size_t len);

/* Whether a task's model misses something: events lost on the way from the kernel, or
 * states and transitions dropped at the memory bound. The one definition of "incomplete"
 * (reports, `pdimon show`, which stored runs may serve as sample runs). */
bool pdi_model_incomplete(const struct pdi_model *m, uint64_t events_lost);

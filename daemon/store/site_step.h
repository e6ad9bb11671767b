/* SPDX-License-Identifier: GPL-2.0-only */
/* site_step.h -- a node's part of an ended step as the site store takes it (site_step.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* A node's part of an ended step, everything copied: what the site store keeps. */
struct pdi_site_step {
	struct pdi_store_step step;
	char *report;                       /* the report's JSON; NULL when none */
	struct pdi_site_row {
		uint32_t index;
		char *fn, *name, *caller, *file;
		int line;
		uint64_t key;
		uint64_t calls, bytes, time_ns; /* the site's totals on this node */
	} *sites;
	size_t nsites;
	struct pdi_site_task {
		struct pdi_store_task t;        /* its model points into MODEL below */
		void *model;
	} *tasks;
	size_t ntasks;
};

void pdi_site_step_free(struct pdi_site_step *s);
/* About the memory S holds: its models and report. */
size_t pdi_site_step_bytes(const struct pdi_site_step *s);
/* Read step NAME's rows from the local store into a new payload. -ENOENT, -ENOMEM or a store error. */
int pdi_site_step_read(struct pdi_store *st, const char *name, struct pdi_site_step **ret);

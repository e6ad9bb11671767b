/* SPDX-License-Identifier: GPL-2.0-only */
/* trend_store.h -- the runs `pdimon trends` fits, as a store holds them: each ended step of a
 * program with its per-site totals. The local store's are read here; the site store's by the
 * site store's thread (site_store.h), into the same shape. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "trend_runs.h"

struct pdi_store;

/* Runs and everything they point to, owned. */
struct pdi_trend_runs {
	struct pdi_trend_run *v;
	size_t n, cap;
};

/* Append a run (its strings and sites copied). 0 or -ENOMEM. */
int pdi_trend_runs_add(struct pdi_trend_runs *rs, const struct pdi_trend_run *r);
void pdi_trend_runs_done(struct pdi_trend_runs *rs);

/* The ended steps of PROGRAM (trend_runs.h) in ST that UID may read (every one when ADMIN). */
int pdi_trend_runs_local(struct pdi_store *st, const char *program, uid_t uid, bool admin, struct pdi_trend_runs *ret);

/* The trends of PROGRAM over RUNS rendered in FORMAT ("json", "text" or "svg") into *RET_TEXT
 * (malloc'd); or a negative errno and one line in ERR. */
int pdi_trend_runs_render(const struct pdi_trend_runs *runs, const char *program, const char *source,
			  const char *format, char **ret_text, char *err, size_t errlen);

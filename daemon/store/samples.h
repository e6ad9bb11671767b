/* SPDX-License-Identifier: GPL-2.0-only */
/* samples.h -- earlier normal runs of a step's program, from the store: AutomaDeD's sample
 * runs (sec. 3.3 nu, 3.4 the clustering threshold, 4.2 the faulty phase). Without any, the
 * analysis falls back on the step's own first or other phases, as the paper does. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "store.h"

struct pdi_store;
struct pdi_step;

/* Decoded models of all runs together stop here: the runs that do not fit are not loaded. */
#define PDI_SAMPLES_MAX_BYTES ((size_t)256 << 20)
/* A site of a sample run that the step has not (yet) seen is renamed to this plus its index
 * in that run: a state no model of the step has, so it counts as a difference. Never a
 * valid index into the step's sites: check `site < s->nsites` before naming one. */
#define PDI_SAMPLES_FOREIGN_SITE (1u << 30)

struct pdi_sample_run {
	char step[129];                /* the stored step's name, for reports */
	int64_t started, ended;
	struct pdi_model *models;      /* owned; models[i] is the model of S->tasks[i]'s rank */
	const struct pdi_model **row;  /* &models[i]: what pdi_automaded_input.models takes */
};

struct pdi_samples {
	struct pdi_sample_run *runs; /* most recent end first */
	unsigned nruns;
	unsigned ntasks;             /* S->ntasks when loaded: the length of each row */
	unsigned unreadable;         /* runs skipped: their sites or a model did not decode */
	unsigned abnormal;           /* runs skipped: not completed, diagnosed abnormal, events lost,
					models incomplete, other ranks */
	bool truncated;              /* stopped at PDI_SAMPLES_MAX_BYTES */
	size_t bytes;                /* what the models hold, as the model code counts it */
};

/* Where sample runs are read from: the local store, or the runs fetched from the site store.
 * Listings as store.h's (the strings live until the callback returns). */
struct pdi_sample_source {
	int (*list_steps)(void *data, int (*cb)(void *, const struct pdi_store_step *), void *ctx);
	int (*get_report)(void *data, const char *step, char **ret_json); /* malloc'd; -ENOENT */
	int (*list_sites)(void *data, const char *step, int (*cb)(void *, const struct pdi_store_site *), void *ctx);
	int (*list_tasks)(void *data, const char *step, int (*cb)(void *, const struct pdi_store_task *), void *ctx);
	void *data;
};

/* Earlier runs of a step's program fetched from the site store (site_store.c) for the step's
 * task count at the time: kept with the step, freed with it. */
struct pdi_site_samples {
	unsigned ntasks;                  /* S->ntasks they were fetched for */
	struct pdi_sample_source source;  /* over what the fetch holds */
	void (*free)(struct pdi_site_samples *self);
	unsigned refs;                    /* the step, and the copies of it analysed off the loop
					     (snapshot.h): read-only once made, counted on the loop */
};

/* One more holder of V (NULL ok), or one less: the last frees it. On the loop only. */
struct pdi_site_samples *pdi_site_samples_ref(struct pdi_site_samples *v);
void pdi_site_samples_unref(struct pdi_site_samples *v);

/* The ended steps in ST that ran S's executable with S's number of tasks (S itself
 * excepted), most recent end first, at most MAX_RUNS, and only those that ran normally: the
 * stored report's verdict is "completed" and its diagnosis found nothing abnormal, every task
 * ended outside MPI with no lost event
 * and a whole model (nothing dropped), and their ranks are S's ranks. Each run's models are
 * renamed to S's current call sites (see samples.c for how sites are matched), so their
 * state keys compare with S's own. Runs that cannot be read are skipped and counted.
 * 0 and *RET filled (nruns may be 0; free with pdi_samples_done()), or *RET untouched and
 * a negative errno from the store, or -ENOMEM.
 * When S holds runs fetched from the site store for its current task count (S->site_samples),
 * those are taken first (they come from any node of the site), this node's store when they
 * give none. ST may be NULL then. */
int pdi_samples_load(struct pdi_store *st, const struct pdi_step *s, unsigned max_runs, struct pdi_samples *ret);
/* The same from SRC alone. */
int pdi_samples_load_from(const struct pdi_sample_source *src, const struct pdi_step *s, unsigned max_runs,
			  struct pdi_samples *ret);
/* Accepts a zeroed struct; leaves it zeroed. */
void pdi_samples_done(struct pdi_samples *v);

/* The kind of a stored report's verdict ("completed", "hang"...) into BUF; "" when it has none
 * or it does not fit LEN. */
void pdi_report_verdict(const char *json, char *buf, size_t len);

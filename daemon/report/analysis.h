/* SPDX-License-Identifier: GPL-2.0-only */
/* analysis.h -- the diagnosis of one step, computed once and rendered by report.c: where
 * every task is, PDI's least-progressed task(s) of a hang, AutomaDeD on the per-phase models
 * (tasks with identical models collapsed into classes first, earlier normal runs of the
 * program as sample runs), the STAT prefix tree of the tasks' current call paths, and what
 * could not be concluded and why. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "automaded.h"
#include "eqclass.h"
#include "pdi.h"
#include "registry.h"

struct pdi_daemon;
struct pdi_ptree;
struct pdi_store;

enum pdi_where_kind { PDI_WHERE_FINISHED, PDI_WHERE_BLOCKED, PDI_WHERE_IN_MPI, PDI_WHERE_COMPUTING, PDI_WHERE_NO_MPI };

extern const char *const pdi_where_names[];

/* Where one task is now, or was when it ended. */
struct pdi_where {
	enum pdi_where_kind kind;
	char text[600];   /* "MPI_Barrier@ring.c:37" or "after MPI_Waitall@ring.c:33" */
	uint64_t for_ns;  /* how long it has been there (running tasks) */
	int64_t site;     /* the call it is in or after, -1 when unknown */
	int32_t peers[PDI_NREQS + 1]; /* the ranks a blocked call waits for */
	unsigned npeers;
	uint64_t callsite; /* a live blocked call's return address, 0 otherwise */
	pid_t tid;         /* the thread in that call */
};

#define PDI_VIEW_MAX_FRAMES 257 /* a task's call path: a live stack and its call site */

/* One task as the analysis sees it: a task of this daemon, or one gathered from another
 * node's daemon. */
struct pdi_view_task {
	int rank;
	pid_t pid;
	bool running;
	const struct pdi_model *model;
	struct pdi_where where;
	uint64_t progress;   /* visits of its current state: how far it got (STAT-TO) */
	uint64_t lost;       /* events lost */
	bool gap;            /* calls made while pdimond was down are missing */
	char **stack;        /* its call path, outermost first, ending in where it is; NULL: none.
				Owned by the view, whatever made it */
	size_t nstack;
};

/* A step as the analysis sees it: one daemon's part, or the parts of every node merged. */
struct pdi_view {
	char *name;
	uint32_t job_id, step_id;
	uid_t uid;
	bool running;
	int64_t started, ended;
	struct pdi_site *sites;       /* the state keys' site indices index these */
	uint32_t nsites;
	struct pdi_view_task *tasks;
	unsigned ntasks;
	struct pdi_step *local;       /* the daemon's own step when the view is of one node: its store
					 holds sample runs */
	/* a multi-node view */
	unsigned nodes, nodes_answered;
	uint32_t expected_tasks;      /* all the step's tasks, as Slurm counts them; 0: unknown */
	char **missing, **missing_why; /* nodes that did not answer, and why */
	unsigned nmissing;
	/* what the view owns */
	struct pdi_model *own_models;
	size_t nown_models;
	bool own_sites;
};

/* This daemon's view of its step S: where each task is (no live stack: snapshot.h takes
 * them off the loop). The view points into S: use it before S changes. 0, or -ENOMEM. */
int pdi_view_local(struct pdi_daemon *d, struct pdi_step *s, struct pdi_view *ret);
void pdi_view_done(struct pdi_view *v);
struct pdi_gather_result;
struct pdi_wire_writer;
/* V as a payload into OUT (its tasks grouped by identical models). 0, -ENOMEM, -EMSGSIZE. */
int pdi_view_encode(const struct pdi_view *v, struct pdi_wire_writer *out);
/* A payload as a view that owns all it points to (no local step). 0, or -EBADMSG,
 * -EPROTONOSUPPORT (a newer payload, or an MPI function this pdimon does not know), -ENOMEM. */
int pdi_view_decode(const uint8_t *p, size_t len, struct pdi_view *ret);
/* Payloads A then B as one, into OUT: B's sites renamed to A's by name. Either may be empty. */
int pdi_view_merge(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, struct pdi_wire_writer *out);
/* The view of a gather's merged payload over NNODES nodes, with the nodes that did not
 * answer (gather_step.c). 0, -EBADMSG or -EPROTONOSUPPORT (a payload this pdimon cannot
 * read), -ENOMEM. */
int pdi_view_from_gather(const struct pdi_gather_result *res, unsigned nnodes, struct pdi_view *ret);
bool pdi_view_running(const struct pdi_view *v);
/* A state's name in V: its call site, or the pair of sites around a computation. */
void pdi_view_state_name(const struct pdi_view *v, uint64_t key, char *buf, size_t len);
/* The name of site I of V, "?" when V has none such. */
const char *pdi_view_site_name(const struct pdi_view *v, uint64_t i);

/* Tasks that are at the same place. */
struct pdi_where_group {
	enum pdi_where_kind kind;
	const char *text;
	int *ranks;
	size_t n;
};

#define PDI_ANALYSIS_MAX_LIMITS 8

struct pdi_analysis {
	const struct pdi_view *view;
	const char *kind;            /* completed, hang, running, incomplete, not_monitored */
	struct pdi_where_group *groups; /* smallest first: the odd ones out lead */
	size_t ngroups;

	/* PDI, for a hang */
	bool has_pdg;
	struct pdi_pdg pdg;
	char lp[1024];               /* the least-progressed ranks, "[2]"; "" when PDI cannot tell */

	/* AutomaDeD, on classes of tasks with identical models */
	bool has_automaded;
	struct pdi_automaded am;
	struct pdi_eqclasses classes; /* members are indices into view->tasks */
	unsigned sample_runs;
	bool abnormal;               /* AutomaDeD's contrast is clear enough to report */

	struct pdi_ptree *tree;      /* NULL when it could not be built */

	char limits[PDI_ANALYSIS_MAX_LIMITS][240]; /* what could not be concluded, and why */
	size_t nlimits;
};

/* The analysis of V (which must outlive it); STORE, when not NULL, holds sample runs. 0, or
 * -ENOMEM. */
int pdi_analysis_build(struct pdi_store *store, const struct pdi_view *v, struct pdi_analysis *ret);
void pdi_analysis_done(struct pdi_analysis *a);

/* Room for one rank per task of A's view (task counts go to the heap, never the stack);
 * NULL when out of memory. free() it. */
int *pdi_analysis_ranks_alloc(const struct pdi_analysis *a);
/* The ranks of AutomaDeD's model (class) I, formatted as "[0-3,5]" ("?" out of memory). */
void pdi_analysis_class_ranks(const struct pdi_analysis *a, size_t i, char *buf, size_t len);
/* The ranks below the step's task count that no node reported, as "[6-7]" into BUF (""
 * when none, or the count is unknown). */
void pdi_analysis_missing_ranks(const struct pdi_analysis *a, char *buf, size_t len);
/* The ranks AutomaDeD blames: the faulty cluster when it is a minority, else the faulty
 * class. Into RANKS (room for view->ntasks); returns how many, sorted. */
size_t pdi_analysis_faulty_ranks(const struct pdi_analysis *a, int *ranks);

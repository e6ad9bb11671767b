/* SPDX-License-Identifier: GPL-2.0-only */
/* tracer_impl.h -- the tracer's own state, shared by tracer.c (load, attach, drain) and
 * startup.c (MPI_Init traps, probes attached ahead of MPI_Init). Not for anyone else. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ident.h"
#include "needed.h"
#include "tracer.h"

struct bpf_link;
struct ring_buffer;
struct mpitrace_bpf;
struct pdi_elfobj;
struct pdi_probe_targets;

#define PDI_TRAPPED_MAX 16   /* MPI libraries whose MPI_Init is trapped */
#define PDI_TARGETS_CACHED 32 /* objects whose probe offsets and placement are kept */

/* An MPI library whose MPI_Init stops the starting processes of watched trees. */
struct pdi_trapped_lib {
	dev_t dev;
	ino_t ino;
	int fd;                    /* the very file trapped, an fd of our own (the cache may close its) */
	char path[32];             /* "/proc/self/fd/FD": what attaches name */
	char name[256];            /* the path it was trapped at, for people */
	char soname[PDI_NEEDED_NAME_LEN]; /* what programs ask for (DT_NEEDED): startup.c */
	int warm[2];               /* a link of pdimond's own on every probe: see startup.c */
};

/* A process whose probes were attached when it executed its program (startup.c). */
struct pdi_ahead {
	struct pdi_ident ident;    /* pinned at its exec: it may have exited when it joins */
	pid_t root;
	int rank;                  /* from its environment at its exec, -1 when unknown */
	uint64_t attached_ns;      /* when its links were attached (CLOCK_MONOTONIC) */
	unsigned lib;              /* into trapped[] */
	int fds[2];                /* entry and return uprobe_multi links; -1 while attaching */
	bool attaching;            /* its links are being attached off the loop (pdi_ahead_attach) */
	uint64_t serial;           /* which attach is its: the pid may have had another entry since */
};

/* The trapped library an executable's processes map (they did last time, or the program links
 * it): where to attach them ahead. PDI_LEARNED_NONE: the program links none. */
#define PDI_LEARNED_NONE (-1)
struct pdi_learned_exe {
	dev_t dev;
	ino_t ino;
	int lib; /* into trapped[], or PDI_LEARNED_NONE */
};

struct pdi_tracer {
	bool discarding;       /* pdi_tracer_discard(): events consumed unseen */
	struct mpitrace_bpf *skel;
	struct ring_buffer *rb;
	pdi_event_fn on_event;
	pdi_frames_fn on_frames;
	void *ctx;
	struct bpf_link *exit_link; /* thread_exit: no inflight entry outlives its thread */
	bool multi;            /* attach with uprobe_multi links */
	unsigned target_flags; /* enum pdi_targets_flags */
	/* probe offsets and placement per object: decoding every function of a library is the
	 * costliest part of an attach, and the same for all its processes */
	struct {
		dev_t dev;
		ino_t ino;
		struct pdi_probe_targets *pt; /* its obj is NULL: the cache's objects come and go */
	} targets[PDI_TARGETS_CACHED];
	unsigned ntargets;
	/* start-up (startup.c) */
	struct bpf_link **init_links;
	unsigned ninit_links;
	struct bpf_link *exec_link;
	struct pdi_trapped_lib trapped[PDI_TRAPPED_MAX];
	unsigned ntrapped;
	struct pdi_ahead *ahead;
	unsigned nahead;
	struct pdi_learned_exe *learned;
	unsigned nlearned;
	uint64_t needed_since_ns; /* programs read for what they link, since (startup.c) */
	unsigned needed_read;
	uint64_t ahead_serial;    /* the last attach ahead planned */
	int *dropped_fds;         /* links of entries dropped, for the daemon to close off the loop */
	unsigned ndropped_fds;
};

/* The object part of the probe targets (pdi_probe_targets_of()) of object O, the file (DEV,
 * INO), computed once; NULL when O defines no probed function or memory is short. */
const struct pdi_probe_targets *pdi_tracer_targets_of(struct pdi_tracer *t, struct pdi_elfobj *o, dev_t dev,
						      ino_t ino);

/* startup.c */
void pdi_startup_free(struct pdi_tracer *t);
/* PID is attaching to the object PT located: the links attached ahead for it into FDS when they
 * are on that very object (0), else -ENOENT (and any it had are closed), -ESRCH when it has
 * exited since (they stay, for pdi_startup_take_exited()), or -EBUSY while they are attached. */
int pdi_startup_take(struct pdi_tracer *t, pid_t pid, const struct pdi_probe_targets *pt, int fds[2]);
/* PID, started at START_TICKS, exited before it could be attached (its maps are gone), but links
 * were attached ahead for it: its library's targets into PT (datatypes unknown: see
 * pdi_tracer_attach_exited()) and its links into FDS (0), else -ESRCH. */
int pdi_startup_take_exited(struct pdi_tracer *t, pid_t pid, uint64_t start_ticks, struct pdi_probe_targets *pt,
			    int fds[2]);
/* PID attached to the object PT located: its executable's processes go there ahead from now on. */
void pdi_startup_learn(struct pdi_tracer *t, pid_t pid, const struct pdi_probe_targets *pt);
/* ROOT is no longer watched: what was attached ahead for its tree and never taken goes. */
void pdi_startup_drop_root(struct pdi_tracer *t, pid_t root);

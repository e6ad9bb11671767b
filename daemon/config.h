/* SPDX-License-Identifier: GPL-2.0-only */
/* config.h -- pdimond's settings: /etc/pdimon/pdimond.conf, then command-line overrides. */
#pragma once

#include <stdbool.h>

#include "model.h"

#define PDI_CONFIG_PATH "/etc/pdimon/pdimond.conf"
#define PDI_STORE_DEFAULT_PATH "/var/lib/pdimon/pdimon.db" /* the setting database */
#define PDI_MAX_GLOBS 16

struct pdi_config {
	char *slurm_user;                     /* may register Slurm tasks besides root */
	char *admin_group;                    /* its members read every step; NULL for none */
	char *init_libraries[PDI_MAX_GLOBS]; /* globs of MPI libraries whose MPI_Init is trapped */
	unsigned ninit_libraries;
	char *site_libraries[PDI_MAX_GLOBS]; /* libraries that call MPI for the application: call
						sites name the application's call into them */
	unsigned nsite_libraries;
	bool call_site_hops;                  /* follow calls past MPI bindings and libraries */
	unsigned drain_interval_ms;           /* ring buffer drained at least this often */
	unsigned usage_interval_ms;           /* running tasks' kernel counts read this often (at least:
						 probe/usage_timer.h stretches it where many tasks run) */
	unsigned ring_buffer_kib;             /* power of two */
	unsigned wakeup_kib;                  /* pending data that wakes the daemon early */
	unsigned inflight_threads;            /* size of the node-wide BPF in-flight map */
	int log_level;
	char *record_path;                    /* write every ingested call here (benchmarks) */
	char *database;                       /* SQLite store; NULL or "" keeps nothing */
	unsigned retention_days;              /* ended steps older than this are deleted; 0 keeps */
	unsigned retention_mib;               /* and the oldest beyond this size; 0 = no limit */
	unsigned database_max_mib;            /* hard cap of the database's size; 0 = none */
	unsigned checkpoint_s;                /* running steps are written this often */
	char *site_store;                     /* postgresql://... URI of the site store; NULL: none */
	char *site_store_credentials;         /* file with its password, readable by pdimond only */
	unsigned site_store_queue;            /* ended steps held in memory for it at most */
	unsigned site_store_retry_s;          /* reconnect after this long when it is down */
	unsigned hang_timeout_ms;             /* optional floor: never hung before this much quiet; 0 none */
	double hang_false_alarm_rate;         /* hung alarms allowed per step-hour of healthy steps */
	unsigned on_hang;                     /* enum pdi_on_hang: report, command or cancel */
	char *on_hang_command;                /* run when a step hangs (on_hang = command) */
	unsigned on_hang_command_timeout_s;   /* and killed after this long */
	unsigned on_hang_grace_s;             /* a hung step is cancelled after this (on_hang = cancel) */
	bool notify_user;                     /* say a step's health on its user's output */
	char *metrics_path;                   /* Prometheus text file; NULL: none */
	unsigned metrics_interval_s;          /* written this often */
	unsigned peer_port;                   /* TCP port for the other pdimonds; 0: no listener */
	char *peer_address;                   /* bind address; NULL: all */
	char *munge_socket;                   /* NULL: MUNGE's default */
	unsigned gather_fanout;               /* children per daemon in a step's gather tree */
	unsigned gather_timeout_ms;           /* per tree level */
	unsigned peer_max_request_kib;        /* a peer request's body, before it is authenticated */
	unsigned peer_replay_entries;         /* the peer credentials' replay cache */
	unsigned munge_timeout_ms;            /* bound on each MUNGE encode or decode */
	char *node_name;                      /* this node as Slurm and the other daemons name it */
	unsigned cache_steps;                 /* ended steps kept in memory once stored, at most */
	unsigned cache_mib;                   /* and what they hold, at most: the store has the rest */
	char *runtime_dir;                    /* records of watched roots (trapped.h) */
	unsigned object_cache_max;            /* ELF objects kept open (objcache.h) */
	unsigned object_cache_mib;            /* and the sum of their file sizes */
	bool probe_at_start;                  /* entry probes on functions' first byte, never moved */
	double max_overhead_pct;              /* the most a task's probes may cost it; 0: no budget */
	unsigned budget_programs;             /* programs whose budget levels are remembered; 0: none */
	unsigned sample_runs;                 /* earlier runs of a program an analysis is judged against */
	struct pdi_model_config model;
};

void pdi_config_defaults(struct pdi_config *c);
void pdi_config_done(struct pdi_config *c);
/* Read KEY = VALUE lines. A missing file is fine when !required. On error ret_line says where. */
int pdi_config_load(struct pdi_config *c, const char *path, bool required, unsigned *ret_line);
/* Apply one KEY=VALUE setting (the file's syntax, also used by --set). */
int pdi_config_set(struct pdi_config *c, const char *key, const char *value);

/* The configuration from PATH (a missing file is fine unless REQUIRED), then NOVERRIDES
 * "KEY=VALUE" overrides (--set), into *RET (pdi_config_done() it). On failure a negative
 * errno and, in WHY, one line saying what is wrong and where ("FILE:LINE: invalid value");
 * *RET untouched. */
int pdi_config_read(const char *path, bool required, char *const *overrides, unsigned noverrides,
		    struct pdi_config *ret, char *why, size_t whylen);
/* The settings a running pdimond cannot change (they shaped what it opened at its start: the
 * store, the ring buffer, the peer port, the traps...) put back in NEW to OLD's values where
 * they differ, calling NOTE(key, CTX) for each: the rest of NEW may replace OLD. */
void pdi_config_keep_fixed(struct pdi_config *new, struct pdi_config *old, void (*note)(const char *key, void *ctx),
			   void *ctx);

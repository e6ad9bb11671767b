/* SPDX-License-Identifier: GPL-2.0-only */
/* config.c -- parsing pdimond.conf: "key = value" lines, '#' comments. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "hang.h"
#include "objcache.h"
#include "trapped.h"
#include "log.h"

static const char *const default_libraries[] = {
	"/usr/lib/*/libmpi.so.*[0-9]",   "/usr/lib/*/libmpich.so.*[0-9]", "/usr/lib64/libmpi.so.*[0-9]",
	"/usr/lib64/*/lib/libmpi.so.*[0-9]", "/usr/lib64/libmpich.so.*[0-9]", "/opt/*/lib/libmpi.so.*[0-9]",
	"/opt/*/lib/libmpich.so.*[0-9]",
};

/* Libraries that call MPI on the application's behalf (file name globs): a call site names the
 * application's call into them, with the library function as context. */
static const char *const default_site_libraries[] = {
	"libscalapack*", "libblacs*", "libpetsc*", "libslepc*", "libfftw3*mpi*", "libhdf5*", "libnetcdf*",
	"libpnetcdf*", "libelpa*", "lib*mumps*", "libHYPRE*", "libsuperlu_dist*", "libparmetis*",
	"libptscotch*", "libadios2*",
};

/* The host name up to its first dot, as Slurm names nodes by default. */
static char *default_node_name(void)
{
	char host[256] = "";

	(void)gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] = '\0';
	return strdup(host[0] ? host : "localhost");
}

void pdi_config_defaults(struct pdi_config *c)
{
	*c = (struct pdi_config){
		.slurm_user = strdup("slurm"),
		.database = strdup(PDI_STORE_DEFAULT_PATH),
		.retention_days = 90,
		.retention_mib = 1024,
		.database_max_mib = 4096,
		.site_store_queue = 64,
		.site_store_retry_s = 30,
		.checkpoint_s = 30,
		.hang_timeout_ms = 0,
		.hang_false_alarm_rate = 1e-4,
		.on_hang = PDI_ON_HANG_REPORT,
		.on_hang_command_timeout_s = 60,
		.on_hang_grace_s = 300,
		.notify_user = true,
		.metrics_interval_s = 15,
		.drain_interval_ms = 100,
		.usage_interval_ms = 50, /* see probe/usage_timer.h */
		.ring_buffer_kib = 32768, /* see pdimond.conf(5) */
		.wakeup_kib = 256,
		.inflight_threads = 65536,
		.log_level = PDI_LOG_INFO,
		.model = pdi_model_config_default,
		.peer_port = 7087,
		.gather_fanout = 32,
		.gather_timeout_ms = 2000,
		.peer_max_request_kib = 4096,
		.peer_replay_entries = 65536,
		.munge_timeout_ms = 1000,
		.node_name = default_node_name(),
		.cache_steps = 32,
		.cache_mib = 64,
		.runtime_dir = strdup(PDI_RUNTIME_DIR),
		.object_cache_max = PDI_OBJCACHE_MAX_OBJECTS,
		.object_cache_mib = (unsigned)(PDI_OBJCACHE_MAX_BYTES >> 20),
		.call_site_hops = true,
		.max_overhead_pct = 3,
		.budget_programs = 256,
		.sample_runs = 3,
	};
	for (unsigned i = 0; i < ELEMENTSOF(default_libraries); i++)
		c->init_libraries[c->ninit_libraries++] = strdup(default_libraries[i]);
	for (unsigned i = 0; i < ELEMENTSOF(default_site_libraries); i++)
		c->site_libraries[c->nsite_libraries++] = strdup(default_site_libraries[i]);
}

void pdi_config_done(struct pdi_config *c)
{
	free(c->slurm_user);
	free(c->runtime_dir);
	free(c->admin_group);
	free(c->database);
	free(c->record_path);
	free(c->on_hang_command);
	free(c->metrics_path);
	free(c->peer_address);
	free(c->munge_socket);
	free(c->node_name);
	free(c->site_store);
	free(c->site_store_credentials);
	for (unsigned i = 0; i < c->ninit_libraries; i++)
		free(c->init_libraries[i]);
	for (unsigned i = 0; i < c->nsite_libraries; i++)
		free(c->site_libraries[i]);
	*c = (struct pdi_config){0};
}

static int parse_uint(const char *v, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || end == v || *end || x < min || x > max || v[0] == '-')
		return -EINVAL;
	*ret = x;
	return 0;
}

static int parse_bool(const char *v, bool *ret)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
		*ret = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
		*ret = false;
	else
		return -EINVAL;
	return 0;
}

/* False alarms per step-hour: a number ("0.0001", "1e-4") or one per N ("1/10000"), in
 * (0, 1]: the judge extrapolates the tail to it, it must be a real rate. */
static int parse_rate(const char *v, double *ret)
{
	char *end;
	double x;

	errno = 0;
	if (!strncmp(v, "1/", 2)) {
		double n = strtod(v + 2, &end);

		x = n > 0 ? 1 / n : -1;
	} else {
		x = strtod(v, &end);
	}
	if (errno || end == v || *end || !(x >= 1e-12 && x <= 1))
		return -EINVAL;
	*ret = x;
	return 0;
}

static int parse_level(const char *v, int *ret)
{
	static const struct { const char *name; int level; } levels[] = {
		{"error", PDI_LOG_ERR}, {"warning", PDI_LOG_WARNING}, {"info", PDI_LOG_INFO}, {"debug", PDI_LOG_DEBUG}};

	for (unsigned i = 0; i < ELEMENTSOF(levels); i++)
		if (!strcmp(v, levels[i].name)) {
			*ret = levels[i].level;
			return 0;
		}
	return -EINVAL;
}

/* A blank-separated list of globs into GLOBS (at most PDI_MAX_GLOBS), replacing what was there. */
static int set_globs(char **globs, unsigned *n, const char *value)
{
	char *copy = strdup(value), *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (unsigned i = 0; i < *n; i++)
		free(globs[i]);
	*n = 0;
	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (*n == PDI_MAX_GLOBS) {
			free(copy);
			return -E2BIG;
		}
		globs[(*n)++] = strdup(w);
	}
	free(copy);
	return 0;
}

static int set_uint(const char *value, unsigned long min, unsigned long max, unsigned *ret)
{
	unsigned long x;
	int r = parse_uint(value, min, max, &x);

	if (r == 0)
		*ret = (unsigned)x;
	return r;
}

/* An empty value unsets a string setting. */
static int set_string(char **field, const char *value)
{
	char *s = NULL;

	if (*value && !(s = strdup(value)))
		return -ENOMEM;
	free(*field);
	*field = s;
	return 0;
}

int pdi_config_set(struct pdi_config *c, const char *key, const char *value)
{
	unsigned long x;
	int r;

	if (!strcmp(key, "slurm_user"))
		return set_string(&c->slurm_user, value);
	if (!strcmp(key, "admin_group"))
		return set_string(&c->admin_group, value);
	if (!strcmp(key, "database"))
		return set_string(&c->database, value);
	if (!strcmp(key, "site_store"))
		return set_string(&c->site_store, value);
	if (!strcmp(key, "site_store_credentials"))
		return set_string(&c->site_store_credentials, value);
	if (!strcmp(key, "site_store_queue"))
		return set_uint(value, 1, 65536, &c->site_store_queue);
	if (!strcmp(key, "site_store_retry_s"))
		return set_uint(value, 1, 86400, &c->site_store_retry_s);
	if (!strcmp(key, "retention_days"))
		return set_uint(value, 0, 100000, &c->retention_days);
	if (!strcmp(key, "database_max_mib"))
		return set_uint(value, 0, 1u << 30, &c->database_max_mib);
	if (!strcmp(key, "retention_mib"))
		return set_uint(value, 0, 1u << 30, &c->retention_mib);
	if (!strcmp(key, "hang_timeout_ms"))
		return set_uint(value, 0, 86400000, &c->hang_timeout_ms);
	if (!strcmp(key, "hang_false_alarm_rate"))
		return parse_rate(value, &c->hang_false_alarm_rate);
	if (!strcmp(key, "on_hang")) {
		enum pdi_on_hang a;

		if ((r = pdi_on_hang_parse(value, &a)) == 0)
			c->on_hang = a;
		return r;
	}
	if (!strcmp(key, "on_hang_command"))
		return *value && *value != '/' ? -EINVAL : set_string(&c->on_hang_command, value);
	if (!strcmp(key, "on_hang_command_timeout_s"))
		return set_uint(value, 1, 86400, &c->on_hang_command_timeout_s);
	if (!strcmp(key, "on_hang_grace_s"))
		return set_uint(value, 0, 30 * 86400, &c->on_hang_grace_s);
	if (!strcmp(key, "notify_user"))
		return parse_bool(value, &c->notify_user);
	if (!strcmp(key, "metrics_path"))
		return *value && *value != '/' ? -EINVAL : set_string(&c->metrics_path, value);
	if (!strcmp(key, "metrics_interval_s"))
		return set_uint(value, 1, 86400, &c->metrics_interval_s);
	if (!strcmp(key, "checkpoint_s"))
		return set_uint(value, 1, 86400, &c->checkpoint_s);
	if (!strcmp(key, "record"))
		return set_string(&c->record_path, value);
	if (!strcmp(key, "peer_port"))
		return set_uint(value, 0, 65535, &c->peer_port);
	if (!strcmp(key, "peer_address"))
		return set_string(&c->peer_address, value);
	if (!strcmp(key, "munge_socket"))
		return set_string(&c->munge_socket, value);
	if (!strcmp(key, "gather_fanout"))
		return set_uint(value, 2, 65536, &c->gather_fanout);
	if (!strcmp(key, "gather_timeout_ms"))
		return set_uint(value, 10, 600000, &c->gather_timeout_ms);
	if (!strcmp(key, "peer_max_request_kib"))
		return set_uint(value, 4, 65536, &c->peer_max_request_kib);
	if (!strcmp(key, "peer_replay_entries"))
		return set_uint(value, 16, 1u << 24, &c->peer_replay_entries);
	if (!strcmp(key, "munge_timeout_ms"))
		return set_uint(value, 10, 60000, &c->munge_timeout_ms);
	if (!strcmp(key, "node_name"))
		return *value && strlen(value) < 64 ? set_string(&c->node_name, value) : -EINVAL;
	if (!strcmp(key, "cache_steps"))
		return set_uint(value, 0, 1000000, &c->cache_steps);
	if (!strcmp(key, "cache_mib"))
		return set_uint(value, 0, 1u << 20, &c->cache_mib);
	if (!strcmp(key, "mpi_libraries"))
		return set_globs(c->init_libraries, &c->ninit_libraries, value);
	if (!strcmp(key, "call_site_libraries"))
		return set_globs(c->site_libraries, &c->nsite_libraries, value);
	if (!strcmp(key, "log_level"))
		return parse_level(value, &c->log_level);
	if (!strcmp(key, "max_overhead_pct")) {
		char *end;
		double x;

		if (!strcmp(value, "off")) {
			c->max_overhead_pct = 0;
			return 0;
		}
		errno = 0;
		x = strtod(value, &end);
		if (errno || end == value || *end || !(x > 0 && x <= 100))
			return -EINVAL;
		c->max_overhead_pct = x;
		return 0;
	}
	if (!strcmp(key, "budget_programs"))
		return set_uint(value, 0, 65536, &c->budget_programs);
	if (!strcmp(key, "sample_runs"))
		return set_uint(value, 0, 16, &c->sample_runs);
	if (!strcmp(key, "probe_placement")) {
		/* "emulated": past single-stepped first instructions where safe (probe/entry_place.h) */
		if (strcmp(value, "emulated") && strcmp(value, "function-start"))
			return -EINVAL;
		c->probe_at_start = !strcmp(value, "function-start");
		return 0;
	}
	if (!strcmp(key, "auto_phases"))
		return parse_bool(value, &c->model.auto_phases);
	if (!strcmp(key, "call_site_hops"))
		return parse_bool(value, &c->call_site_hops);
	if (!strcmp(key, "drain_interval_ms")) {
		if ((r = parse_uint(value, 1, 10000, &x)) == 0)
			c->drain_interval_ms = (unsigned)x;
		return r;
	}
	if (!strcmp(key, "usage_interval_ms")) {
		if ((r = parse_uint(value, 10, 1000, &x)) == 0)
			c->usage_interval_ms = (unsigned)x;
		return r;
	}
	if (!strcmp(key, "ring_buffer_kib")) {
		r = parse_uint(value, 4, 1 << 20, &x);
		if (r == 0 && (x & (x - 1)))
			r = -EINVAL; /* the kernel wants a power-of-two ring */
		if (r == 0)
			c->ring_buffer_kib = (unsigned)x;
		return r;
	}
	if (!strcmp(key, "inflight_threads"))
		return set_uint(value, 1, 1u << 22, &c->inflight_threads);
	if (!strcmp(key, "wakeup_kib")) {
		if ((r = parse_uint(value, 0, 1 << 20, &x)) == 0)
			c->wakeup_kib = (unsigned)x;
		return r;
	}
	if (!strcmp(key, "runtime_dir"))
		return *value == '/' ? set_string(&c->runtime_dir, value) : -EINVAL;
	if (!strcmp(key, "object_cache_max"))
		return set_uint(value, 2, 65536, &c->object_cache_max);
	if (!strcmp(key, "object_cache_mib"))
		return set_uint(value, 1, 1u << 24, &c->object_cache_mib);
	if (!strcmp(key, "max_task_memory")) {
		if ((r = parse_uint(value, 4096, 1ul << 34, &x)) == 0)
			c->model.max_bytes = x;
		return r;
	}
	if (!strcmp(key, "max_phases")) {
		if ((r = parse_uint(value, 3, 100000, &x)) == 0)
			c->model.max_phases = (uint32_t)x;
		return r;
	}
	if (!strcmp(key, "auto_phase_collectives")) {
		if ((r = parse_uint(value, 1, 1000000, &x)) == 0)
			c->model.auto_phase_min_collectives = (uint32_t)x;
		return r;
	}
	return -ENOKEY;
}

static char *strip(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int pdi_config_load(struct pdi_config *c, const char *path, bool required, unsigned *ret_line)
{
	FILE *f = fopen(path, "re");
	char buf[4096];
	unsigned line = 0;
	int r = 0;

	*ret_line = 0;
	if (!f)
		return errno == ENOENT && !required ? 0 : -errno;
	while (fgets(buf, sizeof(buf), f)) {
		char *s = strip(buf), *eq;

		line++;
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			r = -EINVAL;
			break;
		}
		*eq = '\0';
		r = pdi_config_set(c, strip(s), strip(eq + 1));
		if (r < 0)
			break;
	}
	if (r < 0)
		*ret_line = line;
	fclose(f);
	return r;
}

int pdi_config_read(const char *path, bool required, char *const *overrides, unsigned noverrides,
		    struct pdi_config *ret, char *why, size_t whylen)
{
	struct pdi_config c;
	unsigned line;
	int r;

	pdi_config_defaults(&c);
	r = pdi_config_load(&c, path, required, &line);
	if (r < 0 && line)
		snprintf(why, whylen, "%s:%u: %s", path, line, r == -ENOKEY ? "unknown setting" : "invalid value");
	else if (r < 0)
		snprintf(why, whylen, "cannot read %s: %s", path, strerror(-r));
	for (unsigned i = 0; r == 0 && i < noverrides; i++) {
		const char *eq = strchr(overrides[i], '=');
		char *key = eq ? strndup(overrides[i], (size_t)(eq - overrides[i])) : NULL;

		r = !eq ? -EINVAL : key ? pdi_config_set(&c, key, eq + 1) : -ENOMEM;
		if (r < 0)
			snprintf(why, whylen, "--set %s: %s", key ? key : overrides[i],
				 r == -ENOKEY ? "unknown setting" : "invalid value (want KEY=VALUE)");
		free(key);
	}
	if (r < 0) {
		pdi_config_done(&c);
		return r;
	}
	*ret = c;
	return 0;
}

static bool same_string(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The string setting FIELD of NEW back to OLD's, when they differ. */
#define KEEP_STRING(new, old, field, key, note, ctx)                                              \
	do {                                                                                       \
		if (!same_string((new)->field, (old)->field)) {                                    \
			char *t_ = (new)->field;                                                   \
			(new)->field = (old)->field;                                               \
			(old)->field = t_;                                                         \
			note(key, ctx);                                                            \
		}                                                                                  \
	} while (0)
#define KEEP_VALUE(new, old, field, key, note, ctx)                                               \
	do {                                                                                       \
		if ((new)->field != (old)->field) {                                                \
			(new)->field = (old)->field;                                               \
			note(key, ctx);                                                            \
		}                                                                                  \
	} while (0)

void pdi_config_keep_fixed(struct pdi_config *new, struct pdi_config *old, void (*note)(const char *key, void *ctx),
			   void *ctx)
{
	bool libs = new->ninit_libraries != old->ninit_libraries;

	KEEP_STRING(new, old, database, "database", note, ctx);
	KEEP_STRING(new, old, record_path, "record", note, ctx);
	KEEP_STRING(new, old, peer_address, "peer_address", note, ctx);
	KEEP_STRING(new, old, munge_socket, "munge_socket", note, ctx);
	KEEP_STRING(new, old, node_name, "node_name", note, ctx);
	KEEP_STRING(new, old, site_store, "site_store", note, ctx);
	KEEP_STRING(new, old, site_store_credentials, "site_store_credentials", note, ctx);
	KEEP_VALUE(new, old, ring_buffer_kib, "ring_buffer_kib", note, ctx);
	KEEP_VALUE(new, old, wakeup_kib, "wakeup_kib", note, ctx);
	KEEP_VALUE(new, old, peer_port, "peer_port", note, ctx);
	KEEP_VALUE(new, old, peer_max_request_kib, "peer_max_request_kib", note, ctx);
	KEEP_VALUE(new, old, peer_replay_entries, "peer_replay_entries", note, ctx);
	KEEP_VALUE(new, old, munge_timeout_ms, "munge_timeout_ms", note, ctx);
	KEEP_VALUE(new, old, site_store_queue, "site_store_queue", note, ctx);
	KEEP_STRING(new, old, runtime_dir, "runtime_dir", note, ctx);
	KEEP_VALUE(new, old, inflight_threads, "inflight_threads", note, ctx);
	KEEP_VALUE(new, old, database_max_mib, "database_max_mib", note, ctx);
	KEEP_VALUE(new, old, object_cache_max, "object_cache_max", note, ctx);
	KEEP_VALUE(new, old, object_cache_mib, "object_cache_mib", note, ctx);
	KEEP_VALUE(new, old, probe_at_start, "probe_placement", note, ctx);
	KEEP_VALUE(new, old, budget_programs, "budget_programs", note, ctx);
	/* the MPI libraries whose MPI_Init is trapped: trapped once, at the start */
	for (unsigned i = 0; !libs && i < new->ninit_libraries; i++)
		libs = strcmp(new->init_libraries[i], old->init_libraries[i]) != 0;
	if (libs) {
		for (unsigned i = 0; i < PDI_MAX_GLOBS; i++) {
			char *t = new->init_libraries[i];

			new->init_libraries[i] = old->init_libraries[i];
			old->init_libraries[i] = t;
		}
		unsigned n = new->ninit_libraries;
		new->ninit_libraries = old->ninit_libraries;
		old->ninit_libraries = n;
		note("mpi_libraries", ctx);
	}
}

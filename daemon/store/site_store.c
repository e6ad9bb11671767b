/* SPDX-License-Identifier: GPL-2.0-only */
/* site_store.c -- the loop's side of the site store: the outbox in the local store, one batch
 * at a time to the lane, retries after an outage, and trends queries answered later.
 *
 * The lane is a worker pool of one thread (worker.h) that alone touches the PostgreSQL
 * connection (site_pg.c): jobs on it run in order, one at a time, so the connection needs no
 * lock, and a write batch and a trends query never interleave on it. Each job carries copies;
 * its done() runs on the loop and is the only place the outcome meets the daemon's state. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "daemon.h"
#include "json.h"
#include "log.h"
#include "site_pg.h"
#include "site_samples.h"
#include "site_store.h"
#include "store.h"
#include "trend_store.h"
#include "worker.h"

#define LANE_QUEUE 16      /* jobs waiting for the lane: a write batch and trends queries */
#define BATCH_BYTES ((size_t)64 << 20) /* a batch stops growing past this (one step at least) */
#define CREDENTIALS_MAX 1024
#define WHY_MAX 512

enum state { UNKNOWN, UP, DOWN };

struct pdi_site_store {
	struct pdi_daemon *d;
	struct pdi_workers *lane;
	struct pdi_site_pg *pg; /* the lane's: never touched on the loop after open */
	char shown[256];        /* the URI as logs show it: no password */
	enum state state;
	char why[WHY_MAX];      /* the last failure */
	bool writing;           /* a batch is on the lane */
	bool dirty;             /* steps may be pending that no batch took yet */
	bool fetching;          /* sample runs are being fetched for a step */
	uint64_t next_try_ns;   /* after a failure: not before */
	uint64_t written;
};

/* ---- configuration ---- */

/* The password: the first line of PATH, a regular file of pdimond's user that nobody else may read. */
static int read_credentials(const char *path, char **ret, char *why, size_t len)
{
	char buf[CREDENTIALS_MAX + 1];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);

	if (fd < 0)
		return snprintf(why, len, "cannot read site_store_credentials %s: %s", path, strerror(errno)), -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		int r = -EPERM;

		if (!S_ISREG(st.st_mode))
			snprintf(why, len, "site_store_credentials %s is not a regular file", path);
		else if (st.st_uid != geteuid())
			snprintf(why, len, "site_store_credentials %s belongs to uid %u, not to pdimond's (%u): chown it",
				 path, (unsigned)st.st_uid, (unsigned)geteuid());
		else
			snprintf(why, len, "site_store_credentials %s may be read by others (mode %04o): chmod 600 it",
				 path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return r;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || n > CREDENTIALS_MAX) {
		snprintf(why, len, "cannot read site_store_credentials %s: %s", path, n < 0 ? strerror(errno) : "too long");
		return n < 0 ? -errno : -E2BIG;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	*ret = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *ret ? 0 : -ENOMEM;
}

/* Check the URI with libpq's own parser, refuse a password in it, and say where it points. */
static int check_uri(const char *uri, char *shown, size_t shown_len, char *why, size_t len)
{
	const char *host = NULL, *port = NULL, *db = NULL, *user = NULL;
	char *err = NULL;
	PQconninfoOption *opts = PQconninfoParse(uri, &err);
	int r = 0;

	if (!opts) {
		snprintf(why, len, "site_store %.64s...: %s", uri, err ? err : "out of memory");
		why[strcspn(why, "\n")] = '\0';
		PQfreemem(err);
		return -EINVAL;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val)
			continue;
		if (!strcmp(o->keyword, "password"))
			r = -EPERM;
		else if (!strcmp(o->keyword, "host"))
			host = o->val;
		else if (!strcmp(o->keyword, "port"))
			port = o->val;
		else if (!strcmp(o->keyword, "dbname"))
			db = o->val;
		else if (!strcmp(o->keyword, "user"))
			user = o->val;
	}
	if (host && host[0] == '/') /* a Unix socket's directory */
		snprintf(shown, shown_len, "postgresql://%s%s/%s?host=%s", user ? user : "", user ? "@" : "", db ? db : "",
			 host);
	else
		snprintf(shown, shown_len, "postgresql://%s%s%s%s%s/%s", user ? user : "", user ? "@" : "",
			 host ? host : "", port ? ":" : "", port ? port : "", db ? db : "");
	if (r < 0)
		snprintf(why, len, "site_store %.200s carries a password, which pdimond.conf shows to every user: put it in "
				   "site_store_credentials (a file of mode 0600)", shown);
	PQconninfoFree(opts);
	return r;
}

int pdi_site_store_open(struct pdi_daemon *d)
{
	const struct pdi_config *c = &d->cfg;
	char why[WHY_MAX], shown[256], *password = NULL;
	struct pdi_site_store *ss;
	int r;

	if (!c->site_store)
		return 0;
	if (!d->store) {
		log_error("site_store is set but database is not: the local store keeps each step until the site store "
			  "has it; going on without the site store");
		return -EINVAL;
	}
	if ((r = check_uri(c->site_store, shown, sizeof(shown), why, sizeof(why))) < 0 ||
	    (c->site_store_credentials &&
	     (r = read_credentials(c->site_store_credentials, &password, why, sizeof(why))) < 0)) {
		log_error("%s; going on without the site store (ended steps stay in the local store)", why);
		return r;
	}
	if (!(ss = calloc(1, sizeof(*ss)))) {
		free(password);
		return log_error_errno(-ENOMEM, "Cannot set up the site store: %m");
	}
	ss->d = d;
	ss->dirty = true; /* what an earlier pdimond left pending */
	snprintf(ss->shown, sizeof(ss->shown), "%s", shown);
	r = pdi_site_pg_new(c->site_store, password, c->node_name, &ss->pg);
	if (password)
		explicit_bzero(password, strlen(password));
	free(password);
	if (r >= 0)
		r = pdi_workers_new("site-store", 1, LANE_QUEUE, &ss->lane);
	if (r < 0) {
		pdi_site_pg_free(ss->pg);
		free(ss);
		return log_error_errno(r, "Cannot set up the site store: %m");
	}
	d->site = ss;
	log_info("Site store %s: ended steps go there as well", ss->shown);
	return 0;
}

void pdi_site_store_close(struct pdi_daemon *d)
{
	struct pdi_site_store *ss = d->site;

	if (!ss)
		return;
	pdi_workers_free(ss->lane); /* calls the done()s left: they may look at d->site */
	pdi_site_pg_free(ss->pg);
	free(ss);
	d->site = NULL;
}

int pdi_site_store_fd(struct pdi_daemon *d)
{
	return d->site ? pdi_workers_fd(d->site->lane) : -1;
}

void pdi_site_store_dispatch(struct pdi_daemon *d)
{
	if (d->site)
		(void)pdi_workers_dispatch(d->site->lane);
}

/* ---- up and down ---- */

static void went_down(struct pdi_site_store *ss, int r, const char *why)
{
	bool news = ss->state != DOWN || strcmp(ss->why, why);

	ss->state = DOWN;
	snprintf(ss->why, sizeof(ss->why), "%s", why);
	ss->next_try_ns = pdi_now_ns() + (uint64_t)ss->d->cfg.site_store_retry_s * 1000000000ull;
	if (news)
		log_warning("Site store %s: %s%s%s; ended steps stay in the local store, retrying every %u s", ss->shown,
			    r == -EACCES ? "wrong credentials: " : r == -ECONNREFUSED ? "unreachable: " : "", why,
			    r == -EACCES ? " (check site_store_credentials and the server's pg_hba.conf)" : "",
			    ss->d->cfg.site_store_retry_s);
}

static void went_up(struct pdi_site_store *ss)
{
	if (ss->state == DOWN)
		log_info("Site store %s reachable again", ss->shown);
	ss->state = UP;
	ss->why[0] = '\0';
}

/* ---- writes ---- */

struct write_job {
	struct pdi_job job;
	struct pdi_site_store *ss; /* outlives the lane: close frees the lane first */
	struct pdi_site_pg *pg;
	struct pdi_site_step **steps;
	size_t n, committed;
	int r;
	char why[WHY_MAX];
};

static void write_run(struct pdi_job *j)
{
	struct write_job *w = pdi_job_of(j, struct write_job, job);

	for (; w->committed < w->n; w->committed++)
		if ((w->r = pdi_site_pg_put_step(w->pg, w->steps[w->committed], w->why, sizeof(w->why))) < 0)
			break;
}

static void write_free(struct write_job *w)
{
	for (size_t i = 0; i < w->n; i++)
		pdi_site_step_free(w->steps[i]);
	free(w->steps);
	free(w);
}

static void pump(struct pdi_site_store *ss);

static void write_done(struct pdi_job *j, bool cancelled)
{
	struct write_job *w = pdi_job_of(j, struct write_job, job);
	struct pdi_site_store *ss = w->ss;
	struct pdi_daemon *d = ss->d;

	ss->writing = false;
	/* what PostgreSQL committed leaves the outbox; the rest stays for the next try */
	for (size_t i = 0; i < w->committed; i++) {
		int r = pdi_store_set_site_pending(d->store, w->steps[i]->step.name, false);

		if (r < 0)
			log_warning_errno(r, "Cannot mark step %s as in the site store, ignoring (it will be written "
					     "again, harmlessly): %m", w->steps[i]->step.name);
	}
	ss->written += w->committed;
	if (cancelled) {
		ss->dirty = true;
	} else if (w->r < 0) {
		ss->dirty = true;
		went_down(ss, w->r, w->why);
	} else {
		went_up(ss);
		log_debug("Site store %s: %zu step(s) written", ss->shown, w->committed);
		pump(ss); /* more may wait */
	}
	write_free(w);
}

struct pending {
	char (*names)[129];
	size_t n, max;
};

static int take_pending(void *ctx, const char *name)
{
	struct pending *p = ctx;

	if (p->n == p->max)
		return -ECANCELED; /* enough for one batch */
	snprintf(p->names[p->n++], sizeof(p->names[0]), "%s", name);
	return 0;
}

/* The next batch of pending steps to the lane, unless one is there already or it is too early
 * after a failure. */
static void pump(struct pdi_site_store *ss)
{
	struct pdi_daemon *d = ss->d;
	struct pending p = {.max = d->cfg.site_store_queue};
	struct write_job *w;
	int r;

	if (ss->writing || !ss->dirty || (ss->state == DOWN && pdi_now_ns() < ss->next_try_ns))
		return;
	if (!(p.names = calloc(p.max, sizeof(*p.names))) || !(w = calloc(1, sizeof(*w)))) {
		free(p.names);
		return;
	}
	r = pdi_store_list_site_pending(d->store, take_pending, &p);
	if (r < 0 && r != -ECANCELED) {
		log_warning_errno(r, "Cannot list the steps pending for the site store, retrying later: %m");
		goto fail;
	}
	ss->dirty = r == -ECANCELED; /* a full batch: there may be more */
	if (!p.n)
		goto fail;
	*w = (struct write_job){.job = {.run = write_run, .done = write_done}, .ss = ss, .pg = ss->pg,
				.steps = calloc(p.n, sizeof(*w->steps))};
	if (!w->steps)
		goto fail;
	for (size_t i = 0, bytes = 0; i < p.n && bytes < BATCH_BYTES; i++) {
		r = pdi_site_step_read(d->store, p.names[i], &w->steps[w->n]);
		if (r == -ENOENT)
			continue; /* expired meanwhile */
		if (r < 0) {
			log_warning_errno(r, "Cannot read step %s for the site store, retrying later: %m", p.names[i]);
			break;
		}
		bytes += pdi_site_step_bytes(w->steps[w->n++]);
		if (bytes >= BATCH_BYTES && i + 1 < p.n)
			ss->dirty = true; /* the rest in the next batch */
	}
	if (!w->n || (r = pdi_workers_submit(ss->lane, &w->job)) < 0) {
		ss->dirty = true;
		write_free(w);
		free(p.names);
		return;
	}
	ss->writing = true;
	free(p.names);
	return;
fail:
	free(w);
	free(p.names);
}

void pdi_site_store_kick(struct pdi_daemon *d)
{
	if (!d->site)
		return;
	d->site->dirty = true;
	pump(d->site);
}

/* ---- sample runs from the site ---- */

#define SETTLED_NS (1000ull * 1000000ull) /* a step's task count unchanged this long: all joined */

struct fetch_job {
	struct pdi_job job;
	struct pdi_site_store *ss;
	struct pdi_site_pg *pg;
	char step[129], executable[256];
	uint32_t total;
	unsigned ntasks, max_runs;          /* pdimond.conf: sample_runs */
	int32_t *ranks;
	struct pdi_site_step **runs;
	size_t nruns;
	int r;
	char why[WHY_MAX];
};

static void fetch_run(struct pdi_job *j)
{
	struct fetch_job *f = pdi_job_of(j, struct fetch_job, job);

	f->r = pdi_site_pg_sample_runs(f->pg, f->executable, f->total, f->step, f->ranks, f->ntasks, f->max_runs,
				       &f->runs, &f->nruns, f->why, sizeof(f->why));
}

static void fetch_done(struct pdi_job *j, bool cancelled)
{
	struct fetch_job *f = pdi_job_of(j, struct fetch_job, job);
	struct pdi_site_store *ss = f->ss;
	/* by name: the step may be gone (evicted), or be another one */
	struct pdi_step *s = pdi_registry_find_step(&ss->d->reg, f->step);
	struct pdi_site_samples *v;

	ss->fetching = false;
	if (!cancelled && f->r < 0 && (f->r == -ECONNREFUSED || f->r == -EACCES || f->r == -EPROTONOSUPPORT))
		went_down(ss, f->r, f->why);
	else if (!cancelled && f->r < 0)
		log_warning("Step %s: cannot fetch sample runs from the site store, using this node's: %s", f->step,
			    f->why);
	if (!cancelled && f->r >= 0 && s && s->ntasks == f->ntasks) {
		v = pdi_site_samples_new(f->runs, f->nruns, f->ntasks);
		f->runs = NULL; /* taken over, even when out of memory */
		if (v) {
			pdi_site_samples_unref(s->site_samples); /* analyses off the loop may still read it */
			s->site_samples = v;
			log_debug("Step %s: %zu sample run(s) from the site store", f->step, f->nruns);
		}
	}
	for (size_t i = 0; f->runs && i < f->nruns; i++)
		pdi_site_step_free(f->runs[i]);
	free(f->runs);
	free(f->ranks);
	free(f);
}

static int fetch_submit(struct pdi_site_store *ss, struct pdi_step *s)
{
	struct fetch_job *f = calloc(1, sizeof(*f));
	int r;

	if (!f || !(f->ranks = calloc(s->ntasks, sizeof(*f->ranks)))) {
		free(f);
		return -ENOMEM;
	}
	f->job = (struct pdi_job){.run = fetch_run, .done = fetch_done};
	f->ss = ss;
	f->pg = ss->pg;
	snprintf(f->step, sizeof(f->step), "%s", s->name);
	snprintf(f->executable, sizeof(f->executable), "%s", s->executable);
	f->ntasks = s->ntasks;
	f->max_runs = ss->d->cfg.sample_runs;
	f->total = s->total_tasks ? s->total_tasks : s->ntasks;
	for (unsigned i = 0; i < s->ntasks; i++)
		f->ranks[i] = s->tasks[i]->rank;
	if ((r = pdi_workers_submit(ss->lane, &f->job)) < 0) {
		free(f->ranks);
		free(f);
		return r;
	}
	ss->fetching = true;
	return 0;
}

/* A step's sample runs are fetched once its tasks have all joined (its task count has stayed
 * the same for a second), before it ends: its report is built at its end, on the loop, and
 * cannot wait for PostgreSQL then. One fetch at a time; none while the site store is down. */
static void prefetch(struct pdi_site_store *ss)
{
	uint64_t now = pdi_now_ns();

	for (unsigned i = 0; i < ss->d->reg.nsteps && !ss->fetching; i++) {
		struct pdi_step *s = ss->d->reg.steps[i];
		bool ranks_known = true;

		if (s->ended || !s->ntasks || !s->executable || s->site_samples_asked == s->ntasks ||
		    !ss->d->cfg.sample_runs)
			continue;
		if (s->site_samples_seen != s->ntasks) {
			s->site_samples_seen = s->ntasks;
			s->site_samples_seen_ns = now;
			continue;
		}
		for (unsigned k = 0; k < s->ntasks; k++)
			ranks_known = ranks_known && s->tasks[k]->rank >= 0;
		if (now - s->site_samples_seen_ns < SETTLED_NS || !ranks_known ||
		    (ss->state == DOWN && now < ss->next_try_ns))
			continue;
		s->site_samples_asked = s->ntasks;
		(void)fetch_submit(ss, s);
	}
}

void pdi_site_store_tick(struct pdi_daemon *d)
{
	if (!d->site)
		return;
	pump(d->site);
	prefetch(d->site);
}

/* ---- trends ---- */

struct trends_job {
	struct pdi_job job;
	struct pdi_site_store *ss;
	struct pdi_site_pg *pg;
	char *program, format[8];
	uid_t uid;
	bool admin;
	void (*done)(void *ctx, int status, const char *text);
	void *ctx;
	int r;      /* of the query: <0 and the site store is down: from the local store */
	int status; /* of the answer */
	char *text;
	char why[WHY_MAX];
};

static void trends_run(struct pdi_job *j)
{
	struct trends_job *t = pdi_job_of(j, struct trends_job, job);
	struct pdi_trend_runs runs = {0};

	t->r = pdi_site_pg_trend_runs(t->pg, t->program, t->uid, t->admin, &runs, t->why, sizeof(t->why));
	if (t->r < 0)
		return;
	t->status = pdi_trend_runs_render(&runs, t->program, "site store", t->format, &t->text, t->why, sizeof(t->why));
	pdi_trend_runs_done(&runs);
}

/* From the local store, saying why not from the site store. */
static void trends_local(struct pdi_daemon *d, const char *program, uid_t uid, bool admin, const char *format,
			 const char *down, void (*done)(void *, int, const char *), void *ctx)
{
	struct pdi_trend_runs runs = {0};
	char source[WHY_MAX + 64], why[512], *text = NULL;
	int r;

	snprintf(source, sizeof(source), "local store (the site store is unavailable: %s)", down);
	r = pdi_trend_runs_local(d->store, program, uid, admin, &runs);
	if (r < 0)
		snprintf(why, sizeof(why), "cannot read the stored runs: %s", strerror(-r));
	else
		r = pdi_trend_runs_render(&runs, program, source, format, &text, why, sizeof(why));
	pdi_trend_runs_done(&runs);
	done(ctx, r, r < 0 ? why : text);
	free(text);
}

static void trends_done(struct pdi_job *j, bool cancelled)
{
	struct trends_job *t = pdi_job_of(j, struct trends_job, job);
	struct pdi_site_store *ss = t->ss;

	if (cancelled)
		t->done(t->ctx, -ESHUTDOWN, "pdimond is stopping");
	else if (t->r == -ECONNREFUSED || t->r == -EACCES || t->r == -EPROTONOSUPPORT) {
		went_down(ss, t->r, t->why);
		ss->dirty = true;
		trends_local(ss->d, t->program, t->uid, t->admin, t->format, t->why, t->done, t->ctx);
	} else if (t->r < 0)
		t->done(t->ctx, t->r, t->why);
	else
		t->done(t->ctx, t->status, t->status < 0 ? t->why : t->text);
	if (!cancelled && t->r >= 0)
		went_up(ss);
	free(t->program);
	free(t->text);
	free(t);
}

int pdi_site_store_trends(struct pdi_daemon *d, const char *program, uid_t uid, bool admin, const char *format,
			  void (*done)(void *ctx, int status, const char *text), void *ctx)
{
	struct pdi_site_store *ss = d->site;
	struct trends_job *t;
	int r;

	if (!ss)
		return -ENOENT;
	/* known down, not yet time to try again: do not make the user wait for a timeout */
	if (ss->state == DOWN && pdi_now_ns() < ss->next_try_ns) {
		trends_local(d, program, uid, admin, format, ss->why, done, ctx);
		return 0;
	}
	if (!(t = calloc(1, sizeof(*t))) || !(t->program = strdup(program))) {
		free(t);
		return -ENOMEM;
	}
	t->job = (struct pdi_job){.run = trends_run, .done = trends_done};
	t->ss = ss;
	t->pg = ss->pg;
	snprintf(t->format, sizeof(t->format), "%s", format);
	t->uid = uid;
	t->admin = admin;
	t->done = done;
	t->ctx = ctx;
	if ((r = pdi_workers_submit(ss->lane, &t->job)) < 0) {
		free(t->program);
		free(t);
		return r;
	}
	return 0;
}

/* ---- status ---- */

static int count_pending(void *ctx, const char *name)
{
	(void)name;
	(*(uint64_t *)ctx)++;
	return 0;
}

static const char *const states[] = {[UNKNOWN] = "not tried yet", [UP] = "up", [DOWN] = "down"};

static uint64_t pending_steps(struct pdi_daemon *d)
{
	uint64_t n = 0;

	(void)pdi_store_list_site_pending(d->store, count_pending, &n);
	return n;
}

void pdi_site_store_status_line(struct pdi_daemon *d, char *buf, size_t len)
{
	struct pdi_site_store *ss = d->site;

	if (!ss) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, len, "site store:  %s %s%s%s%s, %" PRIu64 " steps pending, %" PRIu64 " written\n", ss->shown,
		 states[ss->state], ss->why[0] ? " (" : "", ss->why, ss->why[0] ? ")" : "", pending_steps(d),
		 ss->written);
}

void pdi_site_store_status(struct pdi_daemon *d, struct pdi_json *j)
{
	struct pdi_site_store *ss = d->site;
	uint64_t pending;

	pdi_json_key(j, "site_store");
	if (!ss) {
		pdi_json_null(j);
		return;
	}
	pending = pending_steps(d);
	pdi_json_obj_begin(j);
	pdi_json_kv_str(j, "uri", ss->shown);
	pdi_json_kv_str(j, "state", states[ss->state]);
	pdi_json_kv_str(j, "error", ss->why);
	pdi_json_kv_uint(j, "pending", pending);
	pdi_json_kv_uint(j, "written", ss->written);
	pdi_json_obj_end(j);
}

/* SPDX-License-Identifier: GPL-2.0-only */
/* pdimond.c -- the node-local pdimon daemon: set-up, the event loop, reloads, clean shutdown.
 *
 * One epoll loop owns all the daemon's state: the BPF ring buffer, the D-Bus connection, a
 * drain timer, a signalfd, one pidfd per monitored task, the peer port with its connections
 * (other pdimonds asking for this node's part of a step: peer.c, gather_step.c), and the
 * eventfds through which the workers (worker.h) and the store's lane hand back what they did
 * off the loop. See doc/design/event-loop.md. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "ahead_attach.h"
#include "budget.h"
#include "bus.h"
#include "daemon.h"
#include "ingest.h"
#include "gather.h"
#include "gather_step.h"
#include "learned_store.h"
#include "log.h"
#include "objcache.h"
#include "peer.h"
#include "probe_targets.h"
#include "persist.h"
#include "service.h"
#include "step_health.h"
#include "site_store.h"
#include "step_detach.h"
#include "step_end.h"
#include "tracer.h"
#include "trapped.h"
#include "upcalls.h"
#include "step_group.h"
#include "usage_timer.h"
#include "worker.h"

/* Threads for slow jobs: enough for a few gathers (each holds one for up to its deadline)
 * beside stack walks and analyses. */
#define PDI_WORKER_THREADS 8
/* A wake-up this long is worth a line in the log: something slow ran on the loop */
#define SLOW_WAKEUP_NS (250 * 1000000ull)
/* Jobs waiting for one of them before new requests are refused as busy */
#define PDI_WORKER_QUEUE 256

#ifndef PDI_VERSION
#define PDI_VERSION "0"
#endif

/* The loop drains the ring buffer that the probed processes fill: when it waits for a CPU behind
 * them, the first slots of a polling burst (before the budget has thinned its probes) overflow the
 * ring (Budget.* lost 8,208 events at load 7). What the loop spends per call is charged to the job
 * by the overhead budget, so running first costs the job nothing more. The loop thread only: the
 * workers, slow and bounded, go back down (worker.c). */
static void raise_loop_priority(void)
{
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), PDI_LOOP_NICE) < 0)
		log_debug("Cannot raise the loop's priority (%m): it drains the ring buffer at the default one");
}

/* The SlurmUser and admin group by name; a name this node does not know grants nothing. */
static void resolve_accounts(struct pdi_daemon *d)
{
	struct passwd *pw = d->cfg.slurm_user ? getpwnam(d->cfg.slurm_user) : NULL;
	struct group *gr = d->cfg.admin_group ? getgrnam(d->cfg.admin_group) : NULL;

	d->slurm_uid = pw ? pw->pw_uid : (uid_t)-1;
	d->admin_gid = gr ? gr->gr_gid : (gid_t)-1;
	if (d->cfg.admin_group && !gr)
		log_warning("Admin group %s does not exist here, ignoring", d->cfg.admin_group);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pdimond [OPTION]...\n"
		"Node-local daemon of pdimon: models the MPI calls of monitored tasks with eBPF.\n\n"
		"  -f, --foreground       stay attached to the terminal, log to stderr\n"
		"  -c, --config FILE      configuration file (default %s)\n"
		"  -o, --set KEY=VALUE    override a configuration setting\n"
		"  -v, --verbose          log debug messages\n"
		"      --release-stopped  continue what a pdimond that is gone left stopped, and exit\n"
		"  -h, --help             show this help\n"
		"      --version          show the version\n",
		PDI_CONFIG_PATH);
}

static int add_fd(struct pdi_daemon *d, int fd, uint64_t src)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = src};

	return epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* The signals the loop reads from its signalfd: blocked from the start, so that a SIGHUP
 * while pdimond starts is a reload waiting to be read, not the end of it. */
static void handled_signals(sigset_t *ret)
{
	sigemptyset(ret);
	sigaddset(ret, SIGTERM);
	sigaddset(ret, SIGINT);
	sigaddset(ret, SIGHUP);
}

static int setup_loop(struct pdi_daemon *d)
{
	struct itimerspec its = {0};
	sigset_t mask;
	int r;

	d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epoll_fd < 0)
		return -errno;
	handled_signals(&mask);
	d->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d->signal_fd < 0 || d->timer_fd < 0)
		return -errno;
	its.it_interval.tv_sec = d->cfg.drain_interval_ms / 1000;
	its.it_interval.tv_nsec = (long)(d->cfg.drain_interval_ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	if (timerfd_settime(d->timer_fd, 0, &its, NULL) < 0)
		return -errno;
	if ((r = add_fd(d, d->signal_fd, PDI_SRC(PDI_SRC_SIGNAL, 0))) < 0 ||
	    (r = add_fd(d, d->timer_fd, PDI_SRC(PDI_SRC_TIMER, 0))) < 0 ||
	    (r = add_fd(d, pdi_tracer_epoll_fd(d->tracer), PDI_SRC(PDI_SRC_RING, 0))) < 0)
		return r;
	/* pools after daemonizing: the startup pool makes its threads at once */
	if ((r = pdi_budget_open(d)) < 0 || (r = pdi_usage_timer_open(d)) < 0)
		return r;
	if ((r = pdi_workers_new("work", PDI_WORKER_THREADS, PDI_WORKER_QUEUE, &d->workers)) < 0 ||
	    (r = add_fd(d, pdi_workers_fd(d->workers), PDI_SRC(PDI_SRC_WORKERS, 0))) < 0 ||
	    (r = pdi_ahead_open(d)) < 0 ||
	    (r = add_fd(d, pdi_workers_fd(d->ahead_workers), PDI_SRC(PDI_SRC_WORKERS, 1))) < 0)
		return r;
	if (pdi_persist_lane_fd(d) >= 0 && (r = add_fd(d, pdi_persist_lane_fd(d), PDI_SRC(PDI_SRC_STORE, 0))) < 0)
		return r;
	return pdi_bus_open(d);
}

static bool on_peer_frame(void *ctx, int fd, const char *peer, const struct pdi_wire_frame *f, uint64_t t0_ns)
{
	return pdi_gather_step_on_frame(ctx, fd, peer, f, t0_ns);
}

/* The peer port. Not fatal: without it this node is only missing from other nodes'
 * gathers (and several private pdimonds of tests share one machine). */
static void setup_peer(struct pdi_daemon *d)
{
	const struct pdi_config *c = &d->cfg;
	struct pdi_gather_options go = {.node_name = c->node_name, .bind_address = c->peer_address,
					.port = (uint16_t)c->peer_port, .munge_socket = c->munge_socket,
					.fanout = c->gather_fanout, .level_ms = c->gather_timeout_ms,
					.service_uid = geteuid(), .munge_timeout_ms = c->munge_timeout_ms,
					.replay_entries = c->peer_replay_entries};
	struct pdi_peer_options po = {.address = c->peer_address, .port = (uint16_t)c->peer_port,
				      .frame_ms = c->gather_timeout_ms, .max_body = c->peer_max_request_kib * 1024u};
	int r;

	if (c->peer_port == 0)
		return;
	r = pdi_gather_new(&go, &pdi_gather_step_ops, d, &d->gather);
	if (r >= 0)
		r = pdi_peer_new(&po, d->epoll_fd, PDI_SRC(PDI_SRC_PEER_LISTEN, 0), PDI_SRC(PDI_SRC_PEER, 0),
				 on_peer_frame, d, &d->peer);
	if (r < 0) {
		log_warning_errno(r, "No peer listener, so gathers across nodes will miss this node: %m");
		pdi_gather_free(d->gather);
		d->gather = NULL;
		return;
	}
	log_info("Listening for peers on %s port %u as node %s", c->peer_address ? c->peer_address : "all addresses",
		 c->peer_port, c->node_name);
}

/* epoll's timeout: the bus's, or sooner when a peer connection's deadline comes first. */
static int loop_timeout_ms(struct pdi_daemon *d)
{
	int b = pdi_bus_timeout_ms(d), p = pdi_peer_timeout_ms(d->peer);

	return b < 0 ? p : p < 0 ? b : b < p ? b : p;
}

static void on_timer(struct pdi_daemon *d)
{
	uint64_t expirations, now = pdi_now_ns();

	if (read(d->timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		log_warning("Cannot read the drain timer: %m");
	(void)pdi_tracer_drain(d->tracer);
	pdi_ingest_note_lost(d);
	pdi_ahead_close_dropped(d); /* links of processes attached ahead that never joined */
	pdi_step_detach_tick(d);    /* exited tasks' links that waited long enough for their step */
	pdi_hang_tick(d); /* once a second: the live steps' health (hang/step_health.h) */
	pdi_log_ratelimit_flush(); /* what the rate limits held back, once their interval is over */
	pdi_site_store_tick(d);
	pdi_learned_store_flush(d); /* a step's end taught the budget levels: to the store */
	if (now - d->last_checkpoint_ns >= (uint64_t)d->cfg.checkpoint_s * 1000000000ull) {
		pdi_persist_checkpoint(d);
		pdi_step_store_again(d);
		d->last_checkpoint_ns = now;
	}
	if (now - d->last_expire_ns >= 3600ull * 1000000000ull) {
		pdi_persist_expire(d);
		d->last_expire_ns = now;
	}
	if (now - d->rate_t_ns >= 1000000000ull) {
		d->events_per_s = (double)(d->events - d->rate_events) * 1e9 / (double)(now - d->rate_t_ns);
		d->rate_events = d->events;
		d->rate_t_ns = now;
	}
}

static void note_fixed(const char *key, void *ctx)
{
	struct pdi_daemon *d = ctx;

	log_warning("Setting %s changed in %s: it takes effect when pdimond restarts", key, d->config_path);
}

/* What the settings a running pdimond may change act on. */
static void apply_config(struct pdi_daemon *d)
{
	struct itimerspec its = {0};

	pdi_log_level = d->verbose ? PDI_LOG_DEBUG : d->cfg.log_level;
	resolve_accounts(d);
	d->reg.model_cfg = d->cfg.model; /* for the tasks that start from now on */
	d->reg.runtime_dir = d->cfg.runtime_dir; /* a reload frees the string it replaces */
	its.it_interval.tv_sec = d->cfg.drain_interval_ms / 1000;
	its.it_interval.tv_nsec = (long)(d->cfg.drain_interval_ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	if (d->timer_fd >= 0 && timerfd_settime(d->timer_fd, 0, &its, NULL) < 0)
		log_warning("Cannot set the drain timer to %u ms, ignoring: %m", d->cfg.drain_interval_ms);
	pdi_usage_timer_reconfigure(d);
	d->evict_due = true; /* the cache's limits may be smaller */
}

/* SIGHUP (systemctl reload): the configuration file and --set again. A file that does not
 * parse changes nothing, and says why in one line. */
static void reload(struct pdi_daemon *d)
{
	struct pdi_config c, old;
	char why[512];
	int r;

	pdi_service_reloading(&d->svc);
	r = pdi_config_read(d->config_path, d->explicit_config, d->overrides, d->noverrides, &c, why, sizeof(why));
	if (r < 0) {
		log_error("Cannot reload the configuration, keeping the running one: %s", why);
	} else {
		pdi_config_keep_fixed(&c, &d->cfg, note_fixed, d);
		old = d->cfg;
		d->cfg = c;
		pdi_config_done(&old);
		apply_config(d);
		log_info("Reloaded the configuration from %s", d->config_path);
	}
	pdi_service_status(&d->svc, r < 0 ? "Serving; the last reload failed (see the log)" : "Serving");
}

static void on_signal(struct pdi_daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload(d);
			continue;
		}
		log_info("Received %s, detaching all probes", strsignal((int)si.ssi_signo));
		d->quit = true;
	}
}

static int run_loop(struct pdi_daemon *d)
{
	struct epoll_event evs[64];

	while (!d->quit) {
		int n = epoll_wait(d->epoll_fd, evs, ELEMENTSOF(evs), loop_timeout_ms(d));
		uint64_t woke = pdi_now_ns(), took;
		unsigned kinds = 0; /* what woke us, for the log line of a slow wake-up */

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return log_error_errno(-errno, "epoll_wait failed: %m");
		}
		for (int i = 0; i < n; i++) {
			uint64_t u = evs[i].data.u64;

			kinds |= 1u << PDI_SRC_KIND(u);
			switch (PDI_SRC_KIND(u)) {
			case PDI_SRC_RING:
				(void)pdi_tracer_drain(d->tracer);
				break;
			case PDI_SRC_TIMER:
				on_timer(d);
				break;
			case PDI_SRC_SIGNAL:
				on_signal(d);
				break;
			case PDI_SRC_BUS:
				break; /* below, whatever woke us */
			case PDI_SRC_TASK: {
				struct pdi_task *t = pdi_registry_find_task(&d->reg, (pid_t)PDI_SRC_INDEX(u));

				if (t)
					pdi_task_exited(d, t);
				break;
			}
			case PDI_SRC_PEER_LISTEN:
				pdi_peer_on_listen(d->peer);
				break;
			case PDI_SRC_PEER:
				pdi_peer_on_conn(d->peer, PDI_SRC_INDEX(u));
				break;
			case PDI_SRC_WORKERS:
				(void)pdi_workers_dispatch(PDI_SRC_INDEX(u) ? d->ahead_workers : d->workers);
				break;
			case PDI_SRC_STORE:
				pdi_persist_dispatch(d);
				break;
			case PDI_SRC_BUDGET:
				pdi_budget_on_timer(d);
				break;
			case PDI_SRC_SITE_STORE:
				pdi_site_store_dispatch(d);
				break;
			case PDI_SRC_USAGE:
				pdi_usage_timer_on_tick(d);
				break;
			}
		}
		if (d->evict_due) {
			d->evict_due = false;
			pdi_step_evict(d);
		}
		pdi_peer_expire(d->peer);
		/* a bus timeout has no fd of its own: process the bus on every wake-up */
		pdi_bus_process(d);
		/* how long this wake-up kept the loop from the ring buffer and the bus */
		took = pdi_now_ns() - woke;
		if (took > d->loop_max_ns)
			d->loop_max_ns = took;
		if (took >= SLOW_WAKEUP_NS)
			log_warning_limited(SLOW_WAKEUP_NS, "The loop was busy for %" PRIu64 " ms (sources %#x): the ring "
					    "buffer and the bus waited", took / 1000000, kinds);
		pdi_service_alive(&d->svc, pdi_now_ns() / 1000);
	}
	pdi_service_stopping(&d->svc);
	return 0;
}

/* How long a stop waits for the workers' queued jobs and their follow-ups: each job bounds its own
 * time, a chain of them does not (reports that walk stacks, reads a done() starts again), and a
 * stop must end within seconds whatever the jobs are. Past it, what has not started is cancelled
 * (done() with CANCELLED): the running steps go to the store below all the same. */
#define STOP_WAIT_NS (5000ull * 1000000ull)

static void daemon_done(struct pdi_daemon *d)
{
	uint64_t deadline = pdi_now_ns() + STOP_WAIT_NS;
	bool idle;

	/* first: the attaches of starting processes, whose joins may hand the other workers jobs */
	idle = pdi_ahead_close(d, deadline);
	/* then the jobs queued and running finish and hand their results in: the reports of steps
	 * that ended, the answers to callers */
	if (d->workers)
		idle = pdi_workers_wait_idle_until(d->workers, deadline) && idle;
	if (!idle)
		log_warning("Stopping: the workers' jobs not started within %llu s are cancelled",
			    STOP_WAIT_NS / 1000000000ull);
	pdi_workers_free(d->workers);
	d->workers = NULL;
	pdi_learned_store_flush(d); /* written before the store closes */
	pdi_budget_close(d);
	pdi_usage_timer_close(d);
	pdi_step_group_close_mounts(d);
	/* the running steps to the store, so that the next pdimond takes them over; then all
	 * that is queued for the store is written */
	if (d->tracer)
		pdi_persist_checkpoint(d);
	pdi_site_store_close(d); /* before the local store: its last write's outcome goes there */
	pdi_persist_close(d);
	for (unsigned i = 0; i < d->reg.ntasks; i++)
		pdi_attachment_detach(&d->reg.tasks[i]->att);
	pdi_registry_done(&d->reg);
	pdi_tracer_free(d->tracer);
	pdi_objcache_free(d->objs);
	pdi_bus_close(d);
	pdi_peer_free(d->peer);
	pdi_gather_free(d->gather);
	if (d->epoll_fd >= 0)
		close(d->epoll_fd);
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->timer_fd >= 0)
		close(d->timer_fd);
	if (d->record)
		fclose(d->record);
	pdi_config_done(&d->cfg);
}

/* Every task costs fds (its pidfd, its probes' links) and so do the objects it maps (bounded by
 * the object cache): take all the hard limit allows, as systemd's LimitNOFILE= sets it. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			log_warning("Cannot raise the open files limit to %llu, ignoring: %m", (unsigned long long)rl.rlim_max);
	}
}

/* The capabilities pdimond needs that this process lacks, as "CAP_BPF, CAP_PERFMON". */
static void missing_capabilities(char *buf, size_t len)
{
	static const struct { int bit; const char *name; } caps[] = {
		{39, "CAP_BPF"}, {38, "CAP_PERFMON"}};
	unsigned long long eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	buf[0] = '\0';
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "CapEff: %llx", &eff) == 1)
				break;
		fclose(f);
	}
	for (unsigned i = 0; i < ELEMENTSOF(caps); i++)
		if (!(eff & (1ull << caps[i].bit)))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", caps[i].name);
}

/* Why the BPF programs did not load, in the words an admin can act on. */
static void explain_load_failure(int r)
{
	char missing[128];

	missing_capabilities(missing, sizeof(missing));
	if ((r == -EPERM || r == -EACCES) && missing[0])
		log_error("Cannot load BPF programs: permission denied; missing %s (run pdimond as root)", missing);
	else if (r == -EPERM || r == -EACCES)
		log_error("Cannot load BPF programs: the kernel's verifier refused them (%s); run "
			  "pdimond -v for its log", strerror(-r));
	else if (r == -EOPNOTSUPP || r == -ENOSYS || r == -EINVAL)
		log_error("Cannot load BPF programs: this kernel lacks BPF or uprobe support (%s)", strerror(-r));
	else
		log_error("Cannot load BPF programs: %s", strerror(-r));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"foreground", no_argument, NULL, 'f'}, {"config", required_argument, NULL, 'c'},
		{"set", required_argument, NULL, 'o'},
		{"verbose", no_argument, NULL, 'v'},    {"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},    {"release-stopped", no_argument, NULL, 'R'},
		{0},
	};
	struct pdi_daemon d = {.epoll_fd = -1, .signal_fd = -1, .timer_fd = -1, .budget_fd = -1, .usage_fd = -1, .cgroup_v2_fd = -1, .cgroup_v1_fd = -1, .svc = PDI_SERVICE_INIT};
	const char *config_path = PDI_CONFIG_PATH;
	char *overrides[64], why[512], *abs_config = NULL;
	bool foreground = false, release_stopped = false;
	sigset_t mask;
	int c, r;

	handled_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* a job's copies are made on the loop and freed on the loop after a worker used them, and
	 * results are made by workers: with glibc's arena per thread, each of up to ten threads
	 * keeps its own free memory at its high-water mark, and the resident size crept up as
	 * workers came (bench/soak.py: +7-8% from step 500 to 2,000; +1.3% with two arenas) */
	(void)mallopt(M_ARENA_MAX, 2);

	while ((c = getopt_long(argc, argv, "fc:o:vh", opts, NULL)) >= 0) {
		switch (c) {
		case 'f': foreground = true; break;
		case 'c': config_path = optarg; d.explicit_config = true; break;
		case 'o':
			if (d.noverrides == ELEMENTSOF(overrides)) {
				fprintf(stderr, "pdimond: too many --set options\n");
				return 2;
			}
			overrides[d.noverrides++] = optarg;
			break;
		case 'v': d.verbose = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("pdimond %s\n", PDI_VERSION); return 0;
		case 'R': release_stopped = true; break;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pdimond: unexpected argument '%s'; see pdimond --help\n", argv[optind]);
		return 2;
	}
	r = pdi_config_read(config_path, d.explicit_config, overrides, d.noverrides, &d.cfg, why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "pdimond: %s\n", why);
		return 1;
	}
	/* SIGHUP rereads the same file and --set options, wherever the daemon's cwd is then */
	abs_config = realpath(config_path, NULL);
	d.config_path = abs_config ? abs_config : config_path;
	d.overrides = overrides;
	raise_fd_limit();
	pdi_registry_init(&d.reg, &d.cfg.model, &pdi_registry_parts);
	d.up = &pdi_upcalls;
	apply_config(&d);
	if (release_stopped) {
		/* the unit's ExecStopPost: pdimond is gone, nothing it trapped may stay stopped */
		r = pdi_trapped_release(d.cfg.runtime_dir, NULL, NULL);
		if (r < 0)
			fprintf(stderr, "pdimond: cannot read %s: %s\n", d.cfg.runtime_dir, strerror(-r));
		else
			printf("pdimond: continued %d stopped process%s\n", r, r == 1 ? "" : "es");
		pdi_config_done(&d.cfg);
		free(abs_config);
		return r < 0 ? 1 : 0;
	}
	/* before the bus connection (sd-bus refuses a forked child) and before any thread */
	if (!foreground && (r = pdi_service_background(&d.svc)) < 0) {
		log_error_errno(r, "Cannot go to the background: %m");
		goto out;
	}
	if (geteuid() != 0) {
		/* not fatal by itself: capabilities may be enough; the BPF load decides */
		log_debug("Not running as root");
	}
	if (d.cfg.record_path) {
		d.record = fopen(d.cfg.record_path, "we");
		if (!d.record) {
			r = log_error_errno(-errno, "Cannot open %s for recording: %m", d.cfg.record_path);
			goto out;
		}
	}
	r = pdi_objcache_new(&d.objs);
	if (r < 0)
		goto out;
	pdi_objcache_set_limits(d.objs, d.cfg.object_cache_max, (uint64_t)d.cfg.object_cache_mib << 20);
	r = pdi_tracer_new(&(struct pdi_tracer_options){.ring_bytes = d.cfg.ring_buffer_kib * 1024u,
							.wakeup_bytes = d.cfg.wakeup_kib * 1024u,
							.inflight_threads = d.cfg.inflight_threads,
							.on_frames = pdi_ingest_frames,
							.target_flags = d.cfg.probe_at_start ? PDI_TARGETS_AT_START : 0},
			   pdi_ingest_event, &d, &d.tracer);
	if (r < 0) {
		explain_load_failure(r);
		goto out;
	}
	/* the store first: a database pdimond must refuse is said in one line, before anything else */
	r = pdi_persist_open(&d);
	if (r < 0)
		goto out;
	r = pdi_probe_calibrate(d.tracer, &d.probe_costs);
	if (r < 0)
		log_warning_errno(r, "Cannot measure what a probe costs here, assuming a slow VM's figures: %m");
	log_info("A probed call costs %.1f us here (%.1f us when its first instruction is single-stepped, %.1f us "
		 "without its return probe, %.0f ns more per other process probed there); max_overhead_pct %g%s",
		 d.probe_costs.full_emulated / 1e3, d.probe_costs.full_stepped / 1e3,
		 d.probe_costs.entry_only_emulated / 1e3, d.probe_costs.per_other_task, d.cfg.max_overhead_pct,
		 d.cfg.max_overhead_pct > 0 ? "" : " (off)");
	raise_loop_priority();
	r = setup_loop(&d);
	if (r < 0) {
		if (r != -EADDRINUSE)
			log_error_errno(r, "Cannot set up the event loop: %m");
		goto out;
	}
	setup_peer(&d);
	/* not fatal: monitoring goes on, ended steps wait in the local store */
	if (pdi_site_store_open(&d) == 0 && d.site &&
	    (r = add_fd(&d, pdi_site_store_fd(&d), PDI_SRC(PDI_SRC_SITE_STORE, 0))) < 0) {
		log_error_errno(r, "Cannot watch the site store's lane: %m");
		goto out;
	}
	if (pdi_tracer_trap_init(d.tracer, d.objs, d.cfg.init_libraries, d.cfg.ninit_libraries) == 0)
		log_warning("No MPI library found to trap MPI_Init in (setting mpi_libraries): "
			    "pdimon run will not see new processes; pdimon attach still works");
	d.started_ns = d.rate_t_ns = d.last_checkpoint_ns = d.last_expire_ns = pdi_now_ns();
	pdi_persist_expire(&d);
	pdi_learned_store_load(&d); /* before the restored steps' tasks begin their budgets */
	r = pdi_persist_restore(&d);
	if (r < 0)
		log_warning_errno(r, "Cannot restore the steps that were running, ignoring: %m");
	/* what a pdimond that died left stopped in MPI_Init: joined to its restored step, continued */
	r = pdi_trapped_release(d.cfg.runtime_dir, pdi_join_stopped, &d);
	if (r < 0)
		log_warning_errno(r, "Cannot read %s, ignoring: %m", d.cfg.runtime_dir);
	pdi_persist_loop_reads(&d);
	log_info("pdimond %s ready as %s", PDI_VERSION, PDI_BUS_NAME);
	pdi_service_ready(&d.svc, "Serving");
	r = run_loop(&d);
	if (d.failed)
		r = -EIO;
out:
	daemon_done(&d);
	free(abs_config);
	return r < 0 ? 1 : 0;
}

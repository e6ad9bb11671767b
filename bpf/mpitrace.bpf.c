// SPDX-License-Identifier: GPL-2.0-only
/* mpitrace.bpf.c -- uprobes on MPI calls: one record per completed call.
 *
 * The entry probe stashes what only the entry can see (arguments, time, the call chain) in
 * the per-thread "inflight" map; the return probe turns it into a pdi_event. The
 * inflight map doubles as "where is each thread right now", which is what a hang
 * diagnosis needs: a blocked call never returns, so it never reaches the ring buffer.
 *
 * One program pair serves every probed function; the attach cookie says which
 * function and where its request handle is (see lib/model/event.h). */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "event.h"

#define SIGSTOP 19
/* libbpf 1.1's bpf_tracing.h stops at the fifth argument */
#define PARM6(ctx) ((ctx)->r9)
#define MAX_ANCESTORS 16

/* Wake the consumer each time the backlog crosses another multiple of this: a wake-up per event
 * costs more than the probe itself (several us: an inter-processor interrupt). The daemon also
 * drains on a timer. 0: a wake-up per event. */
const volatile __u64 wakeup_bytes = 256 * 1024;
/* Past this backlog the daemon has fallen behind its tasks: every record wakes it, which slows
 * the callers down until it catches up, rather than letting the ring fill and lose events
 * (see emit_call). Set by pdimond to a fraction of the ring. */
const volatile __u64 behind_bytes = 4 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/* One entry per thread of the node that ever called a probed function and still runs; its size
 * is the setting inflight_threads. When full, calls of new threads are counted as lost. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64); /* pid_tgid */
	__type(value, struct pdi_inflight);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tgid */
	__type(value, __u64);
} lost SEC(".maps");

/* The call a thread (not the main one) of a process was inside when it exited, by tgid: where
 * a task that died inside MPI was, when its main thread was not in MPI. Kept by the thread exit
 * program for pdimond, which reads it once the process's pidfd says it has exited and forgets
 * it with the task (LRU: never full). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, struct pdi_inflight);
} exited_in SEC(".maps");

/* Processes (or ancestors of processes) whose MPI_Init must stop them until the
 * daemon has attached: registered Slurm tasks and the roots of "pdimon run". */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} watched SEC(".maps");

/* Argument N (1-based) of the call being entered; ARGS holds the six register ones. */
static __always_inline __u64 read_arg(const __u64 *args, __u64 sp, __u32 n)
{
	__u64 v = 0;

	if (n >= 1 && n <= PDI_NARGS)
		return args[n - 1];
	/* at entry *sp is the return address; the seventh argument sits just above it */
	if (n > PDI_NARGS && n <= 16)
		bpf_probe_read_user(&v, sizeof(v), (void *)(sp + 8 * (n - PDI_NARGS)));
	return v;
}

/* An MPI_Request handle: 4 bytes in MPICH, 8 in Open MPI; DST is zeroed beforehand. */
static __always_inline void read_handle(__u64 *dst, __u64 cookie, __u64 ptr)
{
	if (PDI_COOKIE_REQ_SIZE(cookie) == 4)
		bpf_probe_read_user(dst, 4, (void *)ptr);
	else
		bpf_probe_read_user(dst, 8, (void *)ptr);
}

static __always_inline void count_lost(__u32 tgid)
{
	static const __u64 zero;
	__u64 *n = bpf_map_lookup_elem(&lost, &tgid);

	/* two threads losing their first call at once both find no entry: the one whose insert
	 * fails adds to the other's, or one loss would go uncounted (Probe.inflight_full_counted) */
	if (!n) {
		bpf_map_update_elem(&lost, &tgid, &zero, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&lost, &tgid);
	}
	if (n)
		__sync_fetch_and_add(n, 1);
}

/* ---- the application's call site: hops over MPI bindings and libraries ----
 * (doc/design/call-sites.md). pdimond fills hop_ranges when it attaches to a process and
 * hops the first time a return address inside those ranges shows up; BPF only follows
 * what it was told, a bounded number of times, with bounded reads. */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, struct pdi_hop_ranges);
} hop_ranges SEC(".maps");

/* Bumped by pdimond after each change of hop_ranges or link_gens (pdi_tracer_procs_changed()): a
 * thread's entry keeps what its calls need of both maps (struct pdi_inflight) and looks them up
 * again only when this has moved since. Two lookups a call were ~15-60 ns of the entry program
 * (doc/design/overhead-budget.md, "the entry and return programs, piece by piece"). */
__u64 procs_epoch = 1;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct pdi_hop_key);
	__type(value, struct pdi_hop);
} hops SEC(".maps");

static __always_inline bool in_hop_ranges(const struct pdi_hop_ranges *rg, __u64 ra)
{
	for (int i = 0; i < PDI_HOP_RANGES; i++)
		if (i < rg->n && ra >= rg->start[i] && ra < rg->end[i])
			return true;
	return false;
}

/* The stack from the frame whose hop is unknown, for pdimond to finish the chain of the call
 * entered at T_ENTER. False when the ring is full. */
static __always_inline bool emit_frames(__u64 id, __u64 t_enter, __u32 hops, __u64 ra, __u64 sp, __u64 bp, __u64 via)
{
	struct pdi_frames *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count_lost(id >> 32);
		return false;
	}
	e->kind = PDI_EV_FRAMES;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->hops = hops;
	e->pad = 0;
	e->t_enter = t_enter;
	e->ra = ra;
	e->sp = sp;
	e->bp = bp;
	e->via = via;
	/* near the top of a stack the full window may not be mapped: try smaller ones */
	e->len = PDI_FRAMES_BYTES;
	if (bpf_probe_read_user(e->stack, PDI_FRAMES_BYTES, (void *)sp)) {
		e->len = PDI_FRAMES_BYTES / 8;
		if (bpf_probe_read_user(e->stack, PDI_FRAMES_BYTES / 8, (void *)sp))
			e->len = 0;
	}
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return true;
}

/* As emit_frames(), within the process's budget: a program whose stacks never resolve cannot
 * flood the ring. */
static __always_inline void send_frames(__u64 id, __u64 t_enter, __u32 hops, __u64 ra, __u64 sp, __u64 bp, __u64 via)
{
	__u32 tgid = id >> 32;
	struct pdi_hop_ranges *rg = bpf_map_lookup_elem(&hop_ranges, &tgid);

	if (!rg || rg->frames_budget == 0)
		return;
	__sync_fetch_and_add(&rg->frames_budget, -1);
	emit_frames(id, t_enter, hops, ra, sp, bp, via);
}

/* F->caller, F->via and F->chain for the call whose return address F->callsite is at SP
 * (F->ranges: the process's hop ranges, see procs_current()). */
static __always_inline void follow_call_chain(struct pdi_inflight *f, __u64 id, __u64 sp, __u64 bp)
{
	struct pdi_hop_key k = {.tgid = id >> 32};
	const struct pdi_hop_ranges *rg = &f->ranges;
	__u64 ra = f->callsite, via = 0, next;
	__u32 end = PDI_CHAIN_DONE;

	for (int i = 0; i <= PDI_HOP_MAX; i++) {
		struct pdi_hop *h;
		__u64 cfa;

		if (!in_hop_ranges(rg, ra))
			break;
		if (i == PDI_HOP_MAX) {
			end = PDI_CHAIN_CUT;
			break;
		}
		k.ra = ra;
		h = bpf_map_lookup_elem(&hops, &k);
		if (!h) {
			end = PDI_CHAIN_UNKNOWN;
			send_frames(id, f->t_enter, i, ra, sp, bp, via);
			break;
		}
		if (h->kind == PDI_HOP_STOP) {
			end = PDI_CHAIN_STOP;
			break;
		}
		cfa = (h->cfa_bp ? bp : sp) + (__s64)h->cfa_off;
		if (h->bp_off && bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + (__s64)h->bp_off))) {
			end = PDI_CHAIN_STOP;
			break;
		}
		sp = cfa - 8;
		if (bpf_probe_read_user(&next, sizeof(next), (void *)sp)) {
			end = PDI_CHAIN_STOP;
			break;
		}
		if (h->kind == PDI_HOP_LIBRARY)
			via = ra;
		ra = next;
	}
	f->caller = ra;
	f->via = via;
	f->chain = end;
}

/* ---- the call site: the return address, where it costs nothing ----
 * At entry the call site is *(u64 *)sp, a copy from user memory (~150 ns here: doc/design/
 * overhead-budget.md). Where the return probe will see the call end, the kernel has replaced that
 * word with its trampoline's address and, before it runs the return programs, puts the original
 * back into the registers' IP (handle_trampoline()): the return reads it there. Meanwhile the
 * kernel keeps it in the thread's uprobe state, where readers of a call in flight find it. */

/* Pending return instances looked at, innermost first: a probed call nested in the thread's call
 * in flight (its tail call) comes before it. */
#define PENDING_MAX 4

/* The kernel's record of the return TASK's return probe waits for, of the call entered at stack
 * pointer SP (uprobes.c, prepare_uretprobe(): ri->stack), or NULL. */
static __always_inline struct return_instance *pending_return(struct task_struct *task, __u64 sp)
{
	struct uprobe_task *ut = task->utask;
	struct return_instance *ri = ut ? ut->return_instances : NULL;

	for (int i = 0; i < PENDING_MAX && ri; i++) {
		if (ri->stack == sp)
			return ri;
		ri = ri->next;
	}
	return NULL;
}

/* F's call site is RA; with no call chain followed, its caller too. */
static __always_inline void set_callsite(struct pdi_inflight *f, __u64 ra)
{
	f->callsite = ra;
	f->caller = ra;
}

/* F, TASK's entry: the call site of its call in flight, where the entry left it to the return. */
static __always_inline void fill_callsite(struct pdi_inflight *f, struct task_struct *task)
{
	struct return_instance *ri;

	if (!f->active || !f->site_at_return || f->callsite)
		return;
	ri = pending_return(task, f->sp);
	if (ri)
		set_callsite(f, ri->orig_ret_vaddr);
}

/* The thread's entry, created at its first call and kept: see struct pdi_inflight. */
static __always_inline struct pdi_inflight *thread_entry(__u64 id)
{
	struct pdi_inflight *f = bpf_map_lookup_elem(&inflight, &id);
	static const struct pdi_inflight idle;

	if (f)
		return f;
	bpf_map_update_elem(&inflight, &id, &idle, BPF_NOEXIST);
	return bpf_map_lookup_elem(&inflight, &id);
}

/* ---- the overhead budget (daemon/probe/budget.c): probes that come and go ----
 * pdimond detaches a hot function's return probe, or all its probes, while a task calls it too
 * often. A call in flight then never reports its return; the next hit of the thread finds it
 * still marked active. Whether a hit is nested in the call in flight or the call has ended
 * unseen is told by the stack: a nested call runs below the call's entry stack pointer. */

/* The links that speak for each function of a process now (struct pdi_link_gens): written by
 * pdimond when the budget replaces links, deleted with the task. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, struct pdi_link_gens);
} link_gens SEC(".maps");

/* Bring F's copy of what it needs of process TGID's maps up to date (procs_epoch): the hop ranges,
 * and whether it has link generations at all. A process with link generations (its budget has
 * replaced links) is still looked up at each call: they change many times a second there. */
static __always_inline void procs_current(struct pdi_inflight *f, __u32 tgid)
{
	/* read before the maps: a change made meanwhile moves it past what F records */
	__u64 epoch = procs_epoch;
	struct pdi_hop_ranges *rg;

	if (f->procs_epoch == epoch)
		return;
	rg = bpf_map_lookup_elem(&hop_ranges, &tgid);
	if (rg)
		__builtin_memcpy(&f->ranges, rg, sizeof(f->ranges));
	else
		f->ranges.n = 0;
	f->gens_none = !bpf_map_lookup_elem(&link_gens, &tgid);
	f->procs_epoch = epoch;
}

/* Is the entry probe with COOKIE in process TGID one of the links that take its calls now (F: the
 * thread's entry, its copy current; NULL: look the process up)? A replaced link still fires until
 * its close completes: its hit is the current link's too. Only entries are filtered: a return is
 * taken by whichever link's return fires first while the thread's call is in flight (mpi_exit), so
 * a call entered through a link since replaced still ends, and a second return of the same call
 * finds the thread idle. */
static __always_inline bool link_is_current(const struct pdi_inflight *f, __u64 cookie, __u32 tgid)
{
	struct pdi_link_gens *g = f && f->gens_none ? NULL : bpf_map_lookup_elem(&link_gens, &tgid);
	__u32 fn = PDI_COOKIE_FN(cookie);

	if (!g)
		return PDI_COOKIE_GEN(cookie) == 0;
	if (fn >= PDI_LINK_GEN_FUNCS)
		return true;
	return g->gen[fn] == PDI_COOKIE_GEN(cookie);
}

/* A call's record in the ring: the event and the ring's 8-byte header. */
#define REC_BYTES (sizeof(struct pdi_event) + 8)

/* The wake-up a call's record asks for, given the backlog AVAIL (its own record included): one
 * as the backlog crosses each multiple of wakeup_bytes (a crossing two callers raced past is
 * followed by the next, or the timer), and one per record once the daemon is behind_bytes
 * behind. Waking at every record past wakeup_bytes made every call pay a wake-up whenever the
 * daemon was a moment late (hit_cost.py: 0.8 us of 1.0 us per call, kernel.bpf_stats_enabled);
 * waking only at crossings let a polling burst outrun a daemon short of CPU and fill the ring
 * (Budget.polling_burst_degraded_then_restored_mpich lost events), which the per-record wake-up
 * past behind_bytes prevents, as the old rule did, for a daemon really behind. */
static __always_inline __u64 wakeup_flag(__u64 avail)
{
	__u64 before = avail < REC_BYTES ? 0 : avail - REC_BYTES;

	if (!wakeup_bytes || avail >= behind_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return avail / wakeup_bytes != before / wakeup_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Hand the call F describes to the daemon. */
static __always_inline void emit_call(struct pdi_inflight *f, __u64 id, __u64 t_exit, __s64 ret, __u16 flags)
{
	struct pdi_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count_lost(id >> 32);
		return;
	}
	e->kind = PDI_EV_CALL;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->fn = PDI_COOKIE_FN(f->cookie);
	e->flags = flags;
	e->callsite = f->callsite;
	e->caller = f->caller;
	e->via = f->via;
	e->chain = f->chain;
	e->pad = 0;
	e->t_enter = f->t_enter;
	e->t_exit = t_exit;
	__builtin_memcpy(e->args, f->args, sizeof(e->args));
	e->comm = f->comm;
	e->req = f->reqs[0];
	if (f->req_ptr) {
		e->req = 0;
		read_handle(&e->req, f->cookie, f->req_ptr);
	}
	e->ret = ret;
	bpf_ringbuf_submit(e, wakeup_flag(bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA)));
}

/* Is a hit at SP inside the thread's call in flight? A call found to have ended unseen is emitted,
 * its end unknown, and the thread is idle again. */
static __always_inline bool hit_is_nested(struct pdi_inflight *f, __u64 id, __u64 sp)
{
	if (!f->active)
		return false;
	if (sp < f->sp)
		return true;
	/* MPI_x tail-calling PMPI_x (both probed): the same call, whose return the kernel still
	 * waits for at this SP (a call that has returned, seen or not, has left its record) */
	if (sp == f->sp && pending_return(bpf_get_current_task_btf(), sp))
		return true;
	/* its call site was left to its return, which is not to come: pdimond fills it in when it
	 * closes a return link with calls in flight (retired.c); a call missed otherwise is lost */
	if (f->callsite)
		emit_call(f, id, bpf_ktime_get_ns(), 0, PDI_EVF_NO_EXIT);
	else
		count_lost(id >> 32);
	f->active = 0;
	return false;
}

SEC("uprobe")
int BPF_KPROBE(mpi_enter)
{
	/* the registers first, before any branch: the verifier refuses a context pointer the
	 * compiler has offset to share one load between paths */
	__u64 sp = PT_REGS_SP(ctx), bp = PT_REGS_FP(ctx), a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx),
	      a3 = PT_REGS_PARM3(ctx), a4 = PT_REGS_PARM4(ctx), a5 = PT_REGS_PARM5(ctx), a6 = PARM6(ctx), ptr;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	struct pdi_inflight *f;
	__u32 arg, mode;

	barrier_var(sp);
	barrier_var(bp);
	f = thread_entry(id);
	if (!f) {
		/* the node-wide map is full: the call is lost, and said so, never silently (by the link
		 * that takes it: a replaced one's hit is the same call) */
		if (link_is_current(NULL, cookie, id >> 32))
			count_lost(id >> 32);
		return 0;
	}
	procs_current(f, id >> 32);
	if (!link_is_current(f, cookie, id >> 32))
		return 0;
	/* an MPI call made by an MPI call: only the outermost one is the application's */
	if (hit_is_nested(f, id, sp))
		return 0;
	f->cookie = cookie;
	f->t_enter = bpf_ktime_get_ns();
	f->sp = sp;
	/* the call site: read here only where the entry is the whole call, or where the call chain
	 * starts from it (a process with hop ranges); else the return takes it (see fill_callsite) */
	f->callsite = 0;
	f->site_at_return = !(cookie & PDI_COOKIE_ENTRY_ONLY) && !f->ranges.n;
	if (f->site_at_return) {
		set_callsite(f, 0);
		f->via = 0;
		f->chain = PDI_CHAIN_DONE;
	} else {
		bpf_probe_read_user(&f->callsite, sizeof(f->callsite), (void *)sp);
		follow_call_chain(f, id, sp, bp);
	}
	f->args[0] = a1;
	f->args[1] = a2;
	f->args[2] = a3;
	f->args[3] = a4;
	f->args[4] = a5;
	f->args[5] = a6;
	f->req_ptr = 0;
	f->reqs[0] = 0;
	f->nreqs = 0;
	f->comm = 0;
	arg = PDI_COOKIE_COMM_ARG(cookie);
	if (arg) {
		f->comm = read_arg(f->args, sp, arg);
		/* MPICH's handles are ints: what lies above them in a register or slot is noise */
		if (PDI_COOKIE_REQ_SIZE(cookie) == 4)
			f->comm = (__u32)f->comm;
	}

	arg = PDI_COOKIE_REQ_ARG(f->cookie);
	mode = PDI_COOKIE_REQ_MODE(f->cookie);
	if (arg) {
		ptr = read_arg(f->args, sp, arg);
		if (mode == PDI_REQ_OUT) {
			f->req_ptr = ptr;
		} else if (mode == PDI_REQ_IN) {
			read_handle(&f->reqs[0], f->cookie, ptr);
			f->nreqs = 1;
		} else if (mode == PDI_REQ_ARRAY) {
			__u64 cnt = (__u32)f->args[0], sz;

			if (cnt > PDI_NREQS)
				cnt = PDI_NREQS;
			sz = cnt * PDI_COOKIE_REQ_SIZE(f->cookie);
			if (sz > 0 && sz <= sizeof(f->reqs))
				bpf_probe_read_user(f->reqs, sz, (void *)ptr);
			f->nreqs = cnt;
		}
	}
	/* no return probe: the entry is the whole call for the model (the thread stays idle) */
	if (cookie & PDI_COOKIE_ENTRY_ONLY) {
		emit_call(f, id, f->t_enter, 0, PDI_EVF_NO_EXIT);
		return 0;
	}
	f->active = 1;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(mpi_exit)
{
	/* IP: the return address the kernel's trampoline took the place of, the call site */
	__u64 sp = PT_REGS_SP(ctx), rc = PT_REGS_RC(ctx), ip = PT_REGS_IP(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	struct pdi_inflight *f = bpf_map_lookup_elem(&inflight, &id);

	/* no entry, or idle: the return of a call entered before we attached */
	if (!f || !f->active)
		return 0;
	/* the return of a call nested in the thread's call in flight: SP is at most its entry's */
	if (sp <= f->sp)
		return 0;
	/* always: a reader's fill may have raced a call that has since ended (fill_callsite) */
	if (f->site_at_return)
		set_callsite(f, ip);
	emit_call(f, id, bpf_ktime_get_ns(), (__s64)rc, 0);
	f->active = 0;
	return 0;
}

/* ---- start-up: the processes of watched trees (registered Slurm tasks, "pdimon run") ---- */

/* The watched process that the current task is, or descends from; 0 when none. */
static __always_inline __u32 watched_root(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u32 pid = bpf_get_current_pid_tgid() >> 32;

	for (int i = 0; i < MAX_ANCESTORS && pid > 1; i++) {
		if (bpf_map_lookup_elem(&watched, &pid))
			return pid;
		task = BPF_CORE_READ(task, real_parent);
		pid = BPF_CORE_READ(task, tgid);
	}
	return 0;
}

/* A start-up record (PDI_EV_INIT, PDI_EV_EXEC) for the daemon, which it wants at once. */
static __always_inline struct pdi_event *startup_event(__u32 kind, __u64 id, __u32 root)
{
	struct pdi_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count_lost(id >> 32);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->t_enter = bpf_ktime_get_ns();
	e->args[0] = root;
	/* when the process started: pdimond acts on it only if its pid still names it */
	e->args[3] = BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), group_leader, start_boottime);
	return e;
}

/* A process of a watched tree has executed its program: the daemon attaches its probes now,
 * with its pid filter, to the MPI libraries it may map (uprobes are per inode: they take
 * effect when the library is mapped), so that at MPI_Init it need not be stopped. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(mpi_exec)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 root = watched_root();
	struct pdi_event *e;

	if (!root)
		return 0;
	e = startup_event(PDI_EV_EXEC, id, root);
	if (e)
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* Attached to MPI_Init/MPI_Init_thread of the MPI libraries for every process: fires
 * once per MPI process, so the cost is nil. A process of a watched tree is stopped here
 * until the daemon has attached its per-process probes and continues it, unless they are
 * attached already: then its entry probe, run before this one (the kernel runs the newest
 * consumer of a probe first), has just made this call the thread's call in flight. If the
 * kernel ran them the other way round, the process is stopped as before: never a call missed. */
SEC("uprobe")
int BPF_KPROBE(mpi_init_trap)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx), sp = PT_REGS_SP(ctx),
	      bp = PT_REGS_FP(ctx), ra = 0;
	__u32 root = watched_root(), fn = PDI_COOKIE_FN(cookie);
	struct pdi_inflight *f;
	struct pdi_event *e;
	bool seen;

	if (!root)
		return 0;
	e = startup_event(PDI_EV_INIT, id, root);
	if (!e)
		return 0;
	f = bpf_map_lookup_elem(&inflight, &id);
	seen = f && f->active && f->sp == sp && PDI_COOKIE_FN(f->cookie) == fn;
	e->fn = fn;
	e->flags = seen ? PDI_EVF_NOT_HELD : 0;
	/* read here: the entry probe may have left it to the return (all handlers of the hit run
	 * before the kernel replaces it with its trampoline) */
	bpf_probe_read_user(&ra, sizeof(ra), (void *)sp);
	e->callsite = ra;
	e->caller = ra;
	e->chain = PDI_CHAIN_UNKNOWN; /* pdimond finishes it from the stopped process's stack */
	e->args[1] = sp;
	e->args[2] = bp;
	e->args[4] = PDI_TRAP_LIB(cookie);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	if (!seen) {
		bpf_send_signal(SIGSTOP);
		return 0;
	}
	/* not held: the entry probe ran before pdimond knew the process, so it could not follow the
	 * call chain past the MPI bindings (no hop ranges yet): the stack goes along, for pdimond to
	 * finish the chain once the process has joined (one record per process) */
	if (f && f->chain == PDI_CHAIN_DONE && emit_frames(id, f->t_enter, 0, ra, sp, bp, 0))
		f->chain = PDI_CHAIN_UNKNOWN;
	return 0;
}

/* Thread exit, for every thread of the node: a thread's inflight entry must not outlive it,
 * or its tid, reused by another process, would be taken for a thread of the task (and
 * ptraced in its name). A main thread's entry stays: its tid is the process's pid, which no
 * other process gets while the task is not reaped, and pdimond reads it when the task ends
 * and then forgets it. Another thread's entry still inside a call moves to exited_in (the
 * first one only). Costs one hash lookup per thread exit when the thread was never probed
 * (see bench/thread_exit.c). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(thread_exit, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct pdi_inflight *f;

	f = bpf_map_lookup_elem(&inflight, &id);
	if (!f)
		return 0;
	/* the kernel's record of its return goes with the thread's memory (exit_mm(), after this
	 * tracepoint): the entry keeps the call site for pdimond to place an ended task by */
	fill_callsite(f, p);
	if ((__u32)id == tgid)
		return 0;
	if (f->active > 0)
		bpf_map_update_elem(&exited_in, &tgid, f, BPF_NOEXIST);
	bpf_map_delete_elem(&inflight, &id);
	return 0;
}

/* For pdimond's readers of a call in flight (pdi_tracer_inflight()): run on one thread (the
 * iterator's task filter), it fills in the call site its entry left to the return. The thread's
 * stack cannot tell it: the return probe has put the kernel's trampoline there. */
SEC("iter/task")
int inflight_callsite(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct pdi_inflight *f;
	__u64 id;

	if (!task)
		return 0;
	id = (__u64)task->tgid << 32 | (__u32)task->pid;
	f = bpf_map_lookup_elem(&inflight, &id);
	if (f)
		fill_callsite(f, task);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

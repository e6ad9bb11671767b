/* SPDX-License-Identifier: GPL-2.0-only */
/* stackwalk.c -- one thread's live call stack by ptrace and libunwind-ptrace (STAT's way).
 *
 * The ptrace part runs in a short-lived thread of its own: if the target never stops in
 * time, that thread exits and the kernel detaches the target and drops the pending stop,
 * so a stuck walk can never leave a task stopped behind it. */
#include <errno.h>
#include <inttypes.h>
#include <libunwind-ptrace.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#include "clock.h"
#include "elfobj.h"
#include "ident.h"
#include "stack_frames.h"
#include "stackwalk.h"

struct walk {
	pid_t pid, tid;
	uint64_t start_ticks; /* the thread's start, read before it was seized */
	uint64_t fixup, tramp_start, tramp_end;
	uint64_t ips[PDI_STACK_WALK_MAX_FRAMES]; /* innermost first */
	bool called[PDI_STACK_WALK_MAX_FRAMES];  /* ips[i] is a return address (after a call) */
	bool tramp[PDI_STACK_WALK_MAX_FRAMES];   /* ips[i] is a trampoline we could not replace */
	bool signal[PDI_STACK_WALK_MAX_FRAMES];  /* ips[i] is the kernel's return into code a signal interrupted */
	size_t n;
	int r;
};

/* Stop a seized thread. *RET_SIG: a signal it was about to take, to hand back at detach. */
static int interrupt_and_wait(pid_t tid, int *ret_sig)
{
	uint64_t deadline = pdi_now_ms() + PDI_STACK_WALK_TIMEOUT_MS;
	long pause_ns = 20000;

	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
		return -errno;
	for (;;) {
		int st;
		pid_t p = waitpid(tid, &st, __WALL | WNOHANG);

		if (p < 0)
			return errno == ECHILD ? -ESRCH : -errno;
		if (p == tid && (WIFEXITED(st) || WIFSIGNALED(st)))
			return -ESRCH;
		if (p == tid && WIFSTOPPED(st)) {
			/* a group-stop or our interrupt report PTRACE_EVENT_STOP; anything else
			 * here is a signal on its way to the thread */
			*ret_sig = (st >> 16) == 0 ? WSTOPSIG(st) : 0;
			return 0;
		}
		if (pdi_now_ms() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){.tv_nsec = pause_ns}, NULL);
		if (pause_ns < 5000000)
			pause_ns *= 2;
	}
}

/* libunwind writes through the accessors when a register is set (unw_set_reg() stores the
 * value where the frame saved it): on the target's stack or registers. We only ever set the
 * IP to read past a trampoline, so writes are dropped, and the task is left as it was. */
static unw_accessors_t readonly_accessors;

static int access_mem_ro(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	return write ? 0 : _UPT_accessors.access_mem(as, addr, val, 0, arg);
}

static int access_reg_ro(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
	return write ? 0 : _UPT_accessors.access_reg(as, reg, val, 0, arg);
}

static int access_fpreg_ro(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
	return write ? 0 : _UPT_accessors.access_fpreg(as, reg, val, 0, arg);
}

static void init_accessors(void)
{
	readonly_accessors = _UPT_accessors;
	readonly_accessors.access_mem = access_mem_ro;
	readonly_accessors.access_reg = access_reg_ro;
	readonly_accessors.access_fpreg = access_fpreg_ro;
	readonly_accessors.resume = NULL;
}

static bool in_tramp(const struct walk *w, uint64_t ip)
{
	return ip >= w->tramp_start && ip < w->tramp_end;
}

/* Is IP the kernel's return into code a signal interrupted, the sigreturn trampoline a
 * handler returns to (glibc's __restore_rt, musl's too): mov $15,%rax; syscall? Read from the
 * code itself: libunwind's unw_is_signal_frame() answers for the frame after it here. */
static bool at_sigreturn(unw_addr_space_t as, void *upt, uint64_t ip)
{
	static const uint8_t code[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
	unw_word_t words[2];

	if (readonly_accessors.access_mem(as, ip, &words[0], 0, upt) < 0 ||
	    readonly_accessors.access_mem(as, ip + sizeof(words[0]), &words[1], 0, upt) < 0)
		return false;
	return !memcmp(words, code, sizeof(code));
}

/* Record the frames of the stopped thread, replacing the first trampoline return address by
 * the real one. */
static int unwind(struct walk *w)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	bool called = false, fixed = false;
	unw_addr_space_t as;
	unw_cursor_t c;
	void *upt;

	(void)pthread_once(&once, init_accessors);
	as = unw_create_addr_space(&readonly_accessors, 0);
	if (!as)
		return -ENOMEM;
	upt = _UPT_create(w->tid);
	if (!upt) {
		unw_destroy_addr_space(as);
		return -ENOMEM;
	}
	if (unw_init_remote(&c, as, upt) == 0) {
		do {
			unw_word_t ip;

			if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || ip == 0)
				break;
			w->tramp[w->n] = in_tramp(w, ip) && (fixed || !w->fixup);
			if (in_tramp(w, ip) && !w->tramp[w->n]) {
				ip = w->fixup;
				(void)unw_set_reg(&c, UNW_REG_IP, ip); /* sets the cursor's IP; the write is dropped */
				fixed = true;
				called = true; /* also where a signal landed on the trampoline: a return address */
			}
			w->ips[w->n] = ip;
			w->signal[w->n] = at_sigreturn(as, upt, ip);
			w->called[w->n++] = called;
			if (w->tramp[w->n - 1])
				break; /* its caller is unknown: stepping would follow garbage */
			/* past a signal frame the next IP is where the thread was interrupted */
			called = !w->signal[w->n - 1];
		} while (w->n < PDI_STACK_WALK_MAX_FRAMES && unw_step(&c) > 0);
	}
	_UPT_destroy(upt);
	unw_destroy_addr_space(as);
	return w->n ? 0 : -EIO;
}

/* TID is still the thread of PID it was: a thread of that process, started when it did. */
static bool same_thread(const struct walk *w)
{
	uint64_t start;

	return pdi_proc_stat(w->pid, w->tid, &start, NULL, NULL) == 0 && start == w->start_ticks;
}

static void *walk_thread(void *arg)
{
	struct walk *w = arg;
	int sig = 0;

	if (ptrace(PTRACE_SEIZE, w->tid, 0, 0) < 0) {
		w->r = -errno;
		return NULL;
	}
	w->r = interrupt_and_wait(w->tid, &sig);
	if (w->r == 0) {
		/* stopped: if it is still the thread asked for, nothing can replace it now; if not,
		 * it is let go unread */
		w->r = same_thread(w) ? unwind(w) : -ESRCH;
		if (ptrace(PTRACE_DETACH, w->tid, 0, (void *)(long)sig) < 0 && w->r == 0)
			w->r = errno == ESRCH ? -ESRCH : 0;
	}
	/* not stopped in time: this thread's exit detaches it */
	return NULL;
}

/* The mapping of ADDR; the maps are reread once when ADDR is not in them (a library loaded
 * since they were read). */
static const struct pdi_mapping *find_mapping(pid_t tid, struct pdi_maps *maps, uint64_t addr)
{
	const struct pdi_mapping *m = maps->n ? pdi_maps_find(maps, addr) : NULL;

	if (m)
		return m;
	pdi_maps_free(maps);
	if (pdi_maps_read(tid, maps) < 0)
		return NULL;
	return pdi_maps_find(maps, addr);
}

/* "FUNC@FILE:LINE" (with LINES, where DWARF has it) or "FUNC@OBJECT+0xADDR", as sites.c names
 * call sites. */
static char *frame_name(pid_t tid, struct pdi_objcache *objs, bool lines, struct pdi_maps *maps, uint64_t ip,
			bool called)
{
	const struct pdi_mapping *m = find_mapping(tid, maps, ip);
	struct pdi_srcloc loc = {0};
	struct pdi_elfobj *obj = NULL;
	uint64_t vaddr = ip;
	char *s;

	if (m && m->path) {
		vaddr = ip - m->start + m->pgoff;
		if (pdi_objcache_get(objs, tid, m, &obj) == 0) {
			(void)pdi_elfobj_offset_to_vaddr(obj, vaddr, &vaddr);
			/* a return address follows the call: the call's own line is one byte earlier */
			if (lines)
				(void)pdi_elfobj_describe(obj, called && vaddr > 0 ? vaddr - 1 : vaddr, &loc);
			else
				(void)pdi_elfobj_symbol_at(obj, called && vaddr > 0 ? vaddr - 1 : vaddr, &loc);
		}
	}
	if (loc.file[0] && loc.line > 0)
		return asprintf(&s, "%s@%s:%d", loc.func[0] ? loc.func : "?", basename(loc.file), loc.line) < 0 ? NULL : s;
	if (m && m->path)
		return asprintf(&s, "%s@%s+0x%" PRIx64, loc.func[0] ? loc.func : "?", basename(m->path), vaddr) < 0 ? NULL : s;
	return asprintf(&s, "?@0x%" PRIx64, ip) < 0 ? NULL : s;
}

void pdi_stack_frames_free(char **frames, size_t n)
{
	if (!frames)
		return;
	for (size_t i = 0; i < n; i++)
		free(frames[i]);
	free(frames);
}

static int symbolize(const struct walk *w, struct pdi_objcache *objs, bool lines, struct pdi_maps *maps,
		     char ***ret_frames, size_t *ret_n)
{
	char **v = calloc(w->n, sizeof(*v));

	if (!v)
		return -ENOMEM;
	/* outermost first, as a prefix tree takes paths */
	for (size_t i = 0; i < w->n; i++) {
		size_t k = w->n - 1 - i;

		v[i] = w->tramp[k]    ? strdup(PDI_FRAME_UPROBES)
		       : w->signal[k] ? strdup(PDI_FRAME_SIGNAL)
				      : frame_name(w->tid, objs, lines, maps, w->ips[k], w->called[k]);
		if (!v[i]) {
			pdi_stack_frames_free(v, w->n);
			return -ENOMEM;
		}
	}
	*ret_frames = v;
	*ret_n = w->n;
	return 0;
}

int pdi_stack_walk_range(pid_t pid, pid_t tid, uint64_t uprobe_ret_fixup, uint64_t tramp_start,
			 uint64_t tramp_end, struct pdi_objcache *objs, bool lines, struct pdi_maps *maps,
			 char ***ret_frames, size_t *ret_n)
{
	struct walk *w = calloc(1, sizeof(*w));
	pthread_t th;
	int r;

	if (!w)
		return -ENOMEM;
	*w = (struct walk){.pid = pid, .tid = tid, .fixup = uprobe_ret_fixup, .tramp_start = tramp_start,
			   .tramp_end = tramp_end};
	/* before any ptrace: TID must be a thread of PID (a tid another process reuses is not) */
	r = pdi_proc_stat(pid, tid, &w->start_ticks, NULL, NULL);
	if (r == 0)
		r = -pthread_create(&th, NULL, walk_thread, w);
	if (r == 0) {
		(void)pthread_join(th, NULL);
		r = w->r;
	}
	if (r == 0)
		r = symbolize(w, objs, lines, maps, ret_frames, ret_n);
	free(w);
	return r;
}

/* The "[uprobes]" mapping, which procmaps.c leaves unnamed. */
static int find_tramp(pid_t tid, uint64_t *ret_start, uint64_t *ret_end)
{
	char fn[64], line[512];
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)tid);
	f = fopen(fn, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	*ret_start = *ret_end = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t a, b;

		if (strstr(line, "[uprobes]") && sscanf(line, "%" SCNx64 "-%" SCNx64, &a, &b) == 2) {
			*ret_start = a;
			*ret_end = b;
			break;
		}
	}
	fclose(f);
	return 0;
}

int pdi_stack_walk(pid_t pid, pid_t tid, uint64_t uprobe_ret_fixup, struct pdi_objcache *objs, bool lines,
		   struct pdi_maps *maps, char ***ret_frames, size_t *ret_n)
{
	uint64_t start, end;
	int r = find_tramp(pid, &start, &end);

	if (r < 0)
		return r;
	return pdi_stack_walk_range(pid, tid, uprobe_ret_fixup, start, end, objs, lines, maps, ret_frames, ret_n);
}

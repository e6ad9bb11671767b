#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_startup.py -- starting processes get their probes without being stopped at MPI_Init.

A starting process gets its probes as it executes its program, on the MPI library the program
links (read from its ELF dynamic section on its first run here, then learnt from where its
processes were attached: daemon/probe/startup.c). The ranks here wait between their exec and
MPI_Init until the daemon said it attached, so the test asserts the mechanism, never a timing: not
held, and every call seen, MPI_Init once, as when held; and so when they have ended before pdimond
could handle their MPI_Init.

Run one case as: test_startup.py Startup.test_attached_at_exec_openmpi
"""
import contextlib
import ctypes
import os
import re
import signal
import subprocess
import tempfile
import unittest

from harness import BUILD, PDIMON, DaemonTest, _ancestors, find_ranks, kill_tree, mpirun, wait_for

RANKS = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
_libc.ptrace.restype = ctypes.c_long
PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207


class StoppedThreads:
    """pdimond's threads named NAME held in a ptrace stop (the rest of pdimond runs on), those
    made meanwhile too at each stop_new(), until the block ends."""

    def __init__(self, pid, name):
        self.pid, self.name, self.tids = pid, name, []

    def stop_new(self):
        for tid in map(int, os.listdir(f"/proc/{self.pid}/task")):
            try:
                with open(f"/proc/{self.pid}/task/{tid}/comm") as f:
                    if f.read().strip() != self.name or tid in self.tids:
                        continue
            except OSError:
                continue
            if _libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0:
                raise OSError(ctypes.get_errno(), f"cannot trace thread {tid} of pdimond")
            self.tids.append(tid)
            _libc.ptrace(PTRACE_INTERRUPT, tid, None, None)
            os.waitpid(tid, 0x40000000)  # __WALL: until it is stopped
        return self.tids

    def __enter__(self):
        if not self.stop_new():
            raise AssertionError(f"pdimond has no thread {self.name}")
        return self

    def __exit__(self, *exc):
        for tid in self.tids:
            _libc.ptrace(PTRACE_DETACH, tid, None, None)


def startup_cmd(impl):
    exe = os.path.join(BUILD, f"bench/startup.{impl}")
    if impl == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS), exe]
    return ["mpirun.mpich", "-np", str(RANKS), exe]


class Startup(DaemonTest):
    settings = ("log_level=debug",)

    def calls(self, step, named=True):
        s = self.d.show(step)
        self.assertEqual(sorted(t["rank"] for t in s["tasks"]), list(range(RANKS)))
        out = {}
        for t in s["tasks"]:
            self.assertEqual(t["events_lost"], 0)
            # MPI_Init, MPI_Gather, MPI_Finalize (MPI_Comm_rank and _size are not probed): each once
            self.assertEqual(t["calls"], 3, f"rank {t['rank']}")
            if named:
                self.assertTrue([st for p in t["phases"] for st in p["states"]
                                 if st["name"].startswith("MPI_Init@startup.c:")])
            out[t["rank"]] = (t["pid"], t["calls"])
        return out

    def check(self, impl):
        # the first run of the program here: its probes go where its ELF says it links MPI; the
        # second: where the first run's ranks were attached. The ranks wait before MPI_Init until
        # their probes are attached, and are not held there
        for step in (f"first-{impl}", f"second-{impl}"):
            with self.waiting_ranks(step, impl) as (go, _):
                open(go, "w").close()
            ranks = self.calls(step)
            log = self.d.read_log()
            for pid, _ in ranks.values():
                self.assertRegex(log, rf"pid {pid} joined at MPI_Init, not held")
        # the third: pdimond is stopped from the ranks' attach until they have exited: they join
        # their step all the same, from their probes attached ahead, with every call
        with self.waiting_ranks(f"third-{impl}", impl) as (go, ranks):
            self.d.proc.send_signal(signal.SIGSTOP)
            try:
                open(go, "w").close()
                wait_for(lambda: not [r for r in ranks if os.path.exists(f"/proc/{r}")], 120,
                         "the ranks to end while pdimond is stopped")
            finally:
                self.d.proc.send_signal(signal.SIGCONT)
        # their maps and executable, read on a worker right after their attach, name their call
        # sites; where ld.so had mapped the MPI library by then, they place Open MPI's handles
        # (addresses in the process) too, and the calls keep their bytes
        third = self.calls(f"third-{impl}")
        self.assertEqual(sorted(str(pid) for pid, _ in third.values()), sorted(ranks))
        log = self.d.read_log()
        for t in self.d.show(f"third-{impl}")["tasks"]:
            if f"pid {t['pid']}: maps kept for its join, its MPI library mapped" not in log:
                continue
            sent = {st["name"]: st["bytes"] for p in t["phases"] for st in p["states"] if "bytes" in st}
            gather = [b for name, b in sent.items() if re.fullmatch(r"MPI_Gather@startup\.c:\d+", name)]
            self.assertEqual(gather, [3 * 8], f"rank {t['rank']}: {sent}")

    @contextlib.contextmanager
    def waiting_ranks(self, step, impl):
        """Step STEP started, its ranks waiting before MPI_Init for the file GO, their probes
        attached: yields (GO, their pids); the step must then end well."""
        offset = len(self.d.read_log())
        with tempfile.TemporaryDirectory() as tmp:
            go = os.path.join(tmp, "go")
            env = dict(self.d.env, PDI_STARTUP_WAIT=go)
            p = subprocess.Popen([PDIMON, "run", "--step", step, "--", *startup_cmd(impl)], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
            self.children.append(p)
            ranks = wait_for(lambda: (lambda pids: pids if len(pids) >= RANKS else None)(
                re.findall(r"pid (\d+): probes attached as it started", self.d.read_log()[offset:])),
                120, "the ranks' probes attached as they started")
            yield go, ranks
            self.assertEqual(p.wait(timeout=300), 0, p.stderr.read())

    def start(self, step, go):
        env = dict(self.d.env, PDI_STARTUP_WAIT=go)
        p = subprocess.Popen([PDIMON, "run", "--step", step, "--", *startup_cmd("openmpi")], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.children.append(p)
        return p

    def ranks_of(self, p):
        pids = []
        for d in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.path.basename(os.readlink(f"/proc/{d}/exe")) == "startup.openmpi" and \
                        p.pid in _ancestors(int(d)):
                    pids.append(int(d))
            except OSError:
                pass
        return pids if len(pids) == RANKS else None

    def race_outcome(self, offset):
        """The pids that reached MPI_Init while their probes were attached; "no race" when every
        rank's probes were attached first; None until one or the other."""
        log = self.d.read_log()[offset:]
        raced = re.findall(r"pid (\d+) reached MPI_Init while its probes were attached", log)
        if raced:
            return raced
        if len(re.findall(r"pid \d+ joined at MPI_Init, not held", log)) >= RANKS:
            return "no race"
        return None

    def test_attach_races_its_process(self):
        """The attach at exec runs on a worker of the pool "startup", and is committed on the loop.
        With that pool held in a ptrace stop, a rank reaches MPI_Init before its probes are
        attached: its MPI_Init waits (held) until the attach is done, then it joins with every call
        counted once, none twice. Ranks killed while their attach is queued leave no link open,
        and their step ends."""
        before = self.d.bpf_links()
        # the program's objects read once: the raced step's ranks wait for their attach only
        with self.waiting_ranks("warm", "openmpi") as (go, _):
            open(go, "w").close()
        self.calls("warm")
        # the pool's threads are made at pdimond's start: with all of them held, none runs an attach
        step = "raced"
        with tempfile.TemporaryDirectory() as tmp:
            go = os.path.join(tmp, "go")
            open(go, "w").close()  # straight to MPI_Init
            offset = len(self.d.read_log())
            with StoppedThreads(self.d.proc.pid, "pdi-startup") as stopped:
                p = self.start(step, go)
                outcome = wait_for(lambda: stopped.stop_new() and self.race_outcome(offset), 120,
                                   "a rank's MPI_Init while its probes are attached")
            self.assertEqual(p.wait(timeout=300), 0, p.stderr.read())
        self.assertNotEqual(outcome, "no race", "a startup thread attached every rank in time")
        raced = outcome
        log = self.d.read_log()[offset:]
        ranks = self.calls(step)
        for pid in raced:
            self.assertIn(int(pid), [pid for pid, _ in ranks.values()])
            self.assertRegex(log, rf"pid {pid}: probes attached as it started")
            self.assertRegex(log, rf"pid {pid} (held at MPI_Init|joined at MPI_Init, not held)")
        # killed as their attach waits for a worker: it finds them gone and attaches nothing (or, a
        # thread made meanwhile having taken one, the links go when the step's watch does); the
        # watch, ended by pdimon run meanwhile without waiting for them, goes once they are done
        with tempfile.TemporaryDirectory() as tmp:
            offset = len(self.d.read_log())
            with StoppedThreads(self.d.proc.pid, "pdi-startup") as stopped:
                p = self.start("killed", os.path.join(tmp, "go"))  # no go: they wait before MPI_Init
                pids = wait_for(lambda: stopped.stop_new() and self.ranks_of(p), 120, "the ranks to start")
                wait_for(lambda: stopped.stop_new() and all(
                    re.search(rf"pid {r}: probes being attached as it starts", self.d.read_log()[offset:])
                    for r in pids), 120, "their attaches queued")
                for r in pids:
                    os.kill(r, signal.SIGKILL)
                p.wait(timeout=120)
        wait_for(lambda: all(re.search(rf"pid {r}: (cannot attach its probes as it starts \(No such process\)|"
                                       rf"probes attached as it started)", self.d.read_log()[offset:])
                             for r in pids), 60, "the queued attaches done")
        wait_for(lambda: self.d.show("killed")["state"] == "ended", 60, "the killed step to end")
        wait_for(lambda: self.d.bpf_links() == before, 60, f"pdimond's BPF links back to {before}")
        self.assertTrue(self.d.status())

    @staticmethod
    def model_of(task):
        """What a task's model says of the program, whatever its timing: per phase, each state's
        visits and each transition's count."""
        return [({st["name"]: st["visits"] for st in ph["states"]},
                 {(tr["from"], tr["to"]): tr["count"] for tr in ph["transitions"]}) for ph in task["phases"]]

    def test_first_join_reads_objects_on_a_worker(self):
        """The first processes of a program to join after pdimond started find the object cache
        cold: the objects they map are read on a worker of the pool "startup", the records they send meanwhile kept and handled once read. Every call is
        counted once, none lost, and the models (sites named, states, transitions) are those of
        the same program joined with the cache warm, on the loop at once: for C ranks attached
        as they start and running on meanwhile, and for Fortran ranks held at MPI_Init."""
        offset = len(self.d.read_log())
        with self.waiting_ranks("cold", "openmpi") as (go, _):
            open(go, "w").close()
        cold_log = self.d.read_log()[offset:]
        cold = self.calls("cold")
        # a rank whose MPI_Init comes after its sibling's objects were read joins at once
        self.assertTrue([pid for pid, _ in cold.values() if re.search(
            rf"pid {pid} reached MPI_Init: the objects it maps are read on a worker", cold_log)], cold_log)
        read_cold = [int(n) for n in re.findall(r"(\d+) objects it maps read on a worker in", cold_log)]
        self.assertTrue(read_cold, cold_log)
        offset = len(self.d.read_log())
        with self.waiting_ranks("warm", "openmpi") as (go, _):
            open(go, "w").close()
        # the cache holds what the cold step read: at most an object the cold ranks did not get
        # to (one a worker could not read then, or read past the cache's bounds) is read again
        read_warm = [int(n) for n in re.findall(r"(\d+) objects it maps read on a worker in",
                                                 self.d.read_log()[offset:])]
        self.assertLess(sum(read_warm), max(read_cold), (read_cold, read_warm))
        models = {step: {t["rank"]: self.model_of(t) for t in self.d.show(step)["tasks"]} for step in ("cold", "warm")}
        self.assertEqual(models["cold"], models["warm"])
        self.calls("warm")
        # Fortran through Open MPI's bindings, held at MPI_Init (its program links MPI through them):
        # the same sites, named by the program's lines, cold and warm
        fsolver = [os.path.join(BUILD, "tests/mpi/fsolver.openmpi"), "20", "50", "5"]
        steps = {}
        for step in ("fcold", "fwarm"):
            offset = len(self.d.read_log())
            p = self.spawn([PDIMON, "run", "--step", step, "--", *startup_cmd("openmpi")[:-1], *fsolver])
            self.assertEqual(p.wait(timeout=300), 0, p.stderr.read())
            steps[step] = self.d.show(step)
            self.assertEqual(sorted(t["rank"] for t in steps[step]["tasks"]), list(range(RANKS)))
            for t in steps[step]["tasks"]:
                self.assertEqual((t["events_lost"], t["call_sites"]["unresolved"]), (0, 0), f"{step} rank {t['rank']}")
            read = "read on a worker" in self.d.read_log()[offset:]
            self.assertEqual(read, step == "fcold", f"{step}: objects read on a worker")
        self.assertTrue([x for x in steps["fcold"]["sites"] if re.fullmatch(r"MPI_Allreduce@fsolver\.F90:\d+", x["name"])],
                        steps["fcold"]["sites"])
        self.assertEqual({t["rank"]: self.model_of(t) for t in steps["fcold"]["tasks"]},
                         {t["rank"]: self.model_of(t) for t in steps["fwarm"]["tasks"]})

    def test_ranks_ended_before_join_keep_bytes(self):
        """Open MPI's datatype handles are addresses in the process. The first ranks of a program
        to join after pdimond started wait for a worker to read the objects they map (the pool
        "startup", held here in a ptrace stop), and run on to their end meanwhile: their sizes come
        from the maps read at their MPI_Init and the executable pinned then, and every call keeps
        its bytes (MPI_Gather of 3 uint64 per rank)."""
        offset = len(self.d.read_log())
        with self.waiting_ranks("ended", "openmpi") as (go, ranks):
            with StoppedThreads(self.d.proc.pid, "pdi-startup") as stopped:
                open(go, "w").close()
                wait_for(lambda: stopped.stop_new() and not [r for r in ranks if os.path.exists(f"/proc/{r}")],
                         120, "the ranks to end while the objects they map wait for a worker")
                log = self.d.read_log()[offset:]
                # the order is forced: they reached MPI_Init, and ended, before any read
                self.assertRegex(log, r"reached MPI_Init: the objects it maps are read on a worker")
                self.assertNotIn("objects it maps read on a worker in", log)
        # let go, the worker reads the objects and only then are the ranks' calls taken in: a view
        # built meanwhile shows them joined with their calls still to come (it never waits for a
        # worker on the loop)
        wait_for(lambda: all(t["calls"] == 3 for t in self.d.show("ended")["tasks"]), 60,
                 "the ended ranks' calls to be taken in once the worker read their objects")
        s = self.d.show("ended")
        self.assertEqual(sorted(str(t["pid"]) for t in s["tasks"]), sorted(ranks))
        for t in s["tasks"]:
            self.assertEqual((t["calls"], t["events_lost"]), (3, 0), f"rank {t['rank']}")
            # its executable, pinned at its MPI_Init, names its sites and holds MPI_UINT64_T's copy
            sent = {st["name"]: st["bytes"] for p in t["phases"] for st in p["states"] if "bytes" in st}
            gather = [b for name, b in sent.items() if re.fullmatch(r"MPI_Gather@startup\.c:\d+", name)]
            self.assertEqual(gather, [3 * 8], f"rank {t['rank']}: {sent}")

    def check_dlopen(self, impl, library):
        """A program that loads MPI with dlopen cannot be attached as it starts: held at MPI_Init,
        its probes are attached on a worker (on the library its trap is in), and it joins with
        every call, once. A rank that starts after a sibling's trap taught pdimond which library
        the program maps is attached as it starts instead (mpiexec may start it late on a busy
        node); the first rank to start never is."""
        mpirun = startup_cmd(impl)[:-1]
        step = f"dlopen-{impl}"
        offset = len(self.d.read_log())
        p = self.spawn([PDIMON, "run", "--step", step, "--", *mpirun, os.path.join(BUILD, "tests/mpi/dlinit"), library])
        self.assertEqual(p.wait(timeout=300), 0, p.stderr.read())
        log = self.d.read_log()[offset:]
        s = self.d.show(step)
        self.assertEqual(sorted(t["rank"] for t in s["tasks"]), list(range(RANKS)))
        held = 0
        for t in s["tasks"]:
            self.assertEqual((t["calls"], t["events_lost"]), (3, 0), f"rank {t['rank']}")  # Init, Barrier, Finalize
            if re.search(rf"pid {t['pid']}: probes being attached as it waits at MPI_Init", log):
                self.assertRegex(log, rf"pid {t['pid']} held at MPI_Init for")
                held += 1
            else:  # taught by a sibling: attached as it started (held, maybe, until that was done)
                self.assertRegex(log, rf"pid {t['pid']}: probes attached as it started")
        self.assertGreater(held, 0, f"no rank of {step} was held at MPI_Init:\n{log}")

    def test_dlopen_held_attached_on_a_worker(self):
        self.check_dlopen("openmpi", "libmpi.so.40")
        self.check_dlopen("mpich", "libmpich.so.12")

    def test_exited_ranks_links_closed_together(self):
        # a step's exited tasks' probe links are closed all at once, once none of its tasks runs,
        # or after a bound while one runs on; never one task's after another's as each exits
        # (daemon/probe/step_detach.c: each close walks every process that still maps the library)
        before = self.d.bpf_links()
        jobs = [subprocess.Popen(mpirun("mpich", 1, "ring", 10**7, 1000), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True) for _ in range(3)]
        self.children += jobs
        pids = [find_ranks("ring.mpich", 1, j.pid)[0] for j in jobs]
        self.d.pdimon("attach", "--step", "closing", "--pid", *pids)

        def closes():
            return re.findall(r"Step closing: closing the probe links of (\d+) exited tasks together \((.*)\)",
                              self.d.read_log())
        # one ends while the others run: its links go after the bound, theirs stay
        os.kill(pids[0], signal.SIGKILL)
        wait_for(closes, 60, "the links of the ended task closed while the others run")
        self.assertEqual(closes(), [("1", "waited long enough")])
        self.assertEqual([j.poll() for j in jobs[1:]], [None, None])
        # the others end at once: the last to end closes what is left, whether they came apart
        # by the bound or in one batch
        for p in pids[1:]:
            os.kill(p, signal.SIGKILL)
        wait_for(lambda: sum(int(n) for n, _ in closes()) == 3, 60, "the links of the last two closed")
        self.assertEqual(closes()[-1][1], "no task left running")
        wait_for(lambda: self.d.bpf_links() == before, 60, f"pdimond's BPF links back to {before}")

    def test_attached_at_exec_openmpi(self):
        self.check("openmpi")

    def test_attached_at_exec_mpich(self):
        self.check("mpich")


if __name__ == "__main__":
    unittest.main()

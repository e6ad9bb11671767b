#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_loop.py -- pdimond's loop keeps serving and its memory stays bounded, on one node
(issue 10 items 4-6, issue 14 item 8): analyses of stopped processes run off the loop, a
locked database stalls nothing, refused readers load nothing, ended steps leave memory.

Status is timed by a D-Bus client on the daemon's bus socket (harness.StatusProbe). Run one
case as: test_loop.py Loop.test_analysis_of_stopped_processes
"""
import contextlib
import json
import os
import re
import signal
import sqlite3
import tempfile
import time
import subprocess
import sys
import unittest

from harness import (HANG_MS, PDIMON, PDIMOND, Daemon, DaemonTest, StatusProbe, SystemBus, find_ranks, marker_line,
                     mpirun, wait_for)
from test_startup import StoppedThreads

USER = "pdimontest"


def ensure_user(name=USER):
    if subprocess.run(["id", "-u", name], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)


def bus_script(address, body, user=None):
    """Run python3 BODY (with `m`, the Monitor1 interface of pdimond on ADDRESS) as USER."""
    code = ("import dbus, json, sys\n"
            f"bus = dbus.bus.BusConnection({address!r})\n"
            "m = dbus.Interface(bus.get_object('org.pdimon.Monitor1', '/org/pdimon/Monitor1'), 'org.pdimon.Monitor1')\n"
            + body)
    cmd = [sys.executable, "-c", code]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"bus script failed: {r.stderr}")
    return r.stdout


class Loop(DaemonTest):
    settings = ("cache_steps=4", "checkpoint_s=1")

    def probe(self):
        return StatusProbe(self.d.bus.socket)

    def registrations(self, first_job, n):
        """N Slurm-like steps FIRST_JOB.. of a real process each (a sleep), registered and
        ended through the D-Bus API as slurmstepd does: the cheapest real steps there are."""
        sleeper = self.spawn(["sleep", "600"])
        bus_script(self.d.bus.address,
                   f"for j in range({first_job}, {first_job + n}):\n"
                   f"    m.RegisterTask(dbus.UInt32(j), dbus.UInt32(0), dbus.UInt32(0), dbus.UInt32({sleeper.pid}), dbus.UInt32(0), '')\n"
                   "    m.EndStep(dbus.UInt32(j), dbus.UInt32(0))\n")
        wait_for(lambda: self.d.read_log().count("ended\n") >= n and f"Step {first_job + n - 1}.0 ended" in self.d.read_log(),
                 120, f"{n} steps to end")

    def stored(self):
        with sqlite3.connect(f"file:{self.d.database}?mode=ro", uri=True, timeout=30) as db:
            return {name for (name,) in db.execute("SELECT name FROM steps WHERE ended != 0")}

    def test_analysis_of_stopped_processes(self):
        # rank 2 computes forever, the others wait in the barrier; then they are stopped with
        # SIGSTOP: a stack walk of each may take its whole timeout
        hung = self.spawn([PDIMON, "run", "--step", "hung", "--", *mpirun("openmpi", 4, "ring", 100000, 1000, 2, 5)])
        ranks = find_ranks("ring.openmpi", 4, hung.pid)

        def blocked():
            s = self.d.show("hung")
            return len(s["tasks"]) == 4 and sum(t["current"].get("in_mpi") == "MPI_Barrier" and
                                                 t["current"]["for_ns"] > HANG_MS * 1e6 for t in s["tasks"]) == 3
        wait_for(blocked, 60, "3 ranks blocked in MPI_Barrier")
        busy = self.spawn([PDIMON, "run", "--step", "busy", "--", *mpirun("mpich", 2, "ring", 2000000, 100)])
        wait_for(lambda: self.d.status()["events_per_s"] > 100, 60, "the busy step's events")
        for pid in ranks:
            os.kill(pid, signal.SIGSTOP)
        try:
            before = self.d.status()
            with self.probe() as probe:
                a = json.loads(self.d.pdimon("analyze", "hung", "--json").stdout)
            # the loop kept taking the busy step's events in: the budget may keep its probes
            # off most of a 1 s period (sampled 1/32, on one slot a second), so an analysis
            # that took 0.6 s may have seen none of them; wait for the next ones
            wait_for(lambda: self.d.status()["events"] > before["events"], 10, "the busy step's events taken in")
            after = self.d.status()
        finally:
            for pid in ranks:
                os.kill(pid, signal.SIGCONT)
        probe.check(self, "during the analysis of 4 stopped processes")
        self.assertEqual(a["verdict"]["least_progressed"], "[2]", json.dumps(a["verdict"]))
        self.assertGreater(after["events"], before["events"])
        self.assertEqual(after["events_lost"], 0, after)
        os.killpg(busy.pid, signal.SIGKILL)

    @contextlib.contextmanager
    def cold_ring_waiting(self, step):
        """An Open MPI ring past its MPI_Init, registered as STEP with `pdimon attach` to a daemon
        whose object cache has not read its DWARF, with the pool "startup" held in a ptrace stop:
        yields (the job, its ranks' pids) once both ranks' calls wait for a worker to read it and
        some have come."""
        # 20 iterations a second, 160 calls a second in all: the calls held wait far below the
        # bound of the held queue (site_warm.c: 16,384) for the whole test, past which they are
        # taken in on the loop by design and their sites named there (once in ~12 runs at 800
        # calls a second: a site named while the worker was held)
        job = self.spawn(mpirun("openmpi", 2, "ring", 100000, 50000))
        pids = find_ranks("ring.openmpi", 2, job.pid)

        def past_init(pid):
            with open(f"/proc/{pid}/maps") as f:
                return "/mca_pml_" in f.read()  # MPI_Init loads Open MPI's components
        wait_for(lambda: all(past_init(p) for p in pids), 60, "the ranks past MPI_Init")
        offset = len(self.d.read_log())
        with StoppedThreads(self.d.proc.pid, "pdi-startup"):
            self.d.pdimon("attach", "--step", step, "--pid", *pids)
            wait_for(lambda: self.d.read_log()[offset:].count("a call site's first name waits") == 2, 60,
                     "both ranks' calls waiting for a worker")
            # calls came (and are counted as they come)
            wait_for(lambda: self.d.status()["events"] >= 20, 60, "calls while the worker is held")
            yield job, pids

    def assert_every_call_named(self, step):
        """STEP ended with every call that came in its models, none lost, at sites named by lines."""
        s, st = self.d.show(step), self.d.status()
        self.assertEqual([t["events_lost"] for t in s["tasks"]], [0, 0])
        self.assertEqual(st["events_lost"], 0, st)
        self.assertEqual(sum(t["calls"] for t in s["tasks"]), st["events"], (s["tasks"], st))
        names = {f"MPI_{n}@ring.c:{marker_line('ring.c', m)}" for m, n in (("irecv", "Irecv"), ("isend", "Isend"))}
        for t in s["tasks"]:
            self.assertLessEqual(names, {x["name"] for p in t["phases"] for x in p["states"]}, t["rank"])

    def test_cold_site_named_off_the_loop(self):
        """A call site's first name reads the DWARF of the object it is in (a big Fortran code's
        takes long). With the cache cold (an Open MPI ring registered while it runs, past its
        MPI_Init) a worker of the pool "startup" reads it, held here in a ptrace stop, while the
        ranks' calls wait in order: Status is answered, no event is lost, and once it is read
        every call is counted, at sites named by their lines."""
        with self.cold_ring_waiting("cold") as (job, pids):
            with self.probe() as probe:
                self.assertEqual([t["calls"] for t in self.d.show("cold")["tasks"]], [0, 0])
                # a view built meanwhile says the call a rank is inside by its function: naming its
                # site waits for the same read (pdi_site_warm_inflight()), not made on the loop.
                # Rank 1 stopped, rank 0 waits for it inside a call (both only sleep between
                # their calls: a look finds one inside a call once in tens of seconds)
                os.kill(pids[1], signal.SIGSTOP)
                try:
                    inside = wait_for(lambda: [t["current"] for t in self.d.show("cold")["tasks"]
                                               if "in_mpi" in t["current"]], 60, "a rank inside a call")
                finally:
                    os.kill(pids[1], signal.SIGCONT)
                self.assertEqual([c for c in inside if "site" in c], [], inside)
        probe.check(self, "while a call site's object is read")
        wait_for(lambda: all(t["calls"] for t in self.d.show("cold")["tasks"]), 60, "the calls in once read")
        os.killpg(job.pid, signal.SIGKILL)
        wait_for(lambda: self.d.show("cold")["state"] == "ended", 60, "the step to end")
        self.assert_every_call_named("cold")
        self.assertRegex(self.d.read_log(), r"objects read on a worker in [0-9.]+ ms for a call site's name")

    def test_cold_site_ranks_end_while_waiting(self):
        """Ranks that end while their calls wait for a worker to read their site's DWARF (the pool
        "startup" held in a ptrace stop) end once the calls are in, every one of them, at sites
        named by their lines: their exits do not make the loop read that DWARF itself."""
        with self.cold_ring_waiting("ends") as (job, pids):
            os.killpg(job.pid, signal.SIGKILL)
            wait_for(lambda: not [p for p in pids if os.path.exists(f"/proc/{p}")], 60, "the ranks to exit")
            s = self.d.show("ends")
            self.assertEqual((s["state"], [t["calls"] for t in s["tasks"]]), ("running", [0, 0]))
        wait_for(lambda: self.d.show("ends")["state"] == "ended", 60, "the step to end once its calls are in")
        self.assert_every_call_named("ends")

    def test_line_table_read_on_a_worker(self):
        """A compile unit's line table is read whole at the unit's first call site (about 0.1 us a
        row: 48 ms for a big generated unit). With the executable's DWARF loaded when the ranks
        joined, the ranks' first calls still wait while a worker reads the table of ring.c's
        unit, not the loop; then every call is counted, at sites named by their lines."""
        r = self.d.pdimon("run", "--step", "lines", "--", *mpirun("openmpi", 2, "ring", 200), check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        wait_for(lambda: self.d.show("lines")["state"] == "ended", 60, "the step to end")
        self.assertRegex(self.d.read_log(), r"a call site's first name waits for 1 objects read on a worker, "
                                            r"with its compile unit's line table")
        s, st = self.d.show("lines"), self.d.status()
        self.assertEqual(st["events_lost"], 0)
        # every call that came is in, and MPI_Init of a rank held there (no event: it was trapped)
        calls = sum(t["calls"] for t in s["tasks"])
        self.assertTrue(st["events"] <= calls <= st["events"] + 2, (calls, st["events"]))
        sites = {x["name"] for t in s["tasks"] for p in t["phases"] for x in p["states"]
                 if x["kind"] == "communication"}
        self.assertIn(f"MPI_Irecv@ring.c:{marker_line('ring.c', 'irecv')}", sites)
        self.assertEqual({n for n in sites if not re.search(r"@ring\.c:[0-9]+$", n)}, set(), sites)

    def test_refused_readers_load_nothing(self):
        # issue 14.8: another user's stored steps are never loaded for them, however many
        # times they ask; the owner's are loaded into a cache of at most cache_steps
        ensure_user()
        self.registrations(1000, 40)
        wait_for(lambda: len(self.stored()) == 40, 60, "40 steps in the store")
        wait_for(lambda: self.d.status()["steps"] <= 4, 30, "ended steps to leave memory")
        rss = self.d.status()["memory_rss_bytes"]
        out = bus_script(self.d.bus.address,
                         "refused = 0\n"
                         "for i in range(200):\n"
                         "    try:\n"
                         "        m.GetStep('%d.0' % (1000 + i % 40), 'json')\n"
                         "    except dbus.DBusException as e:\n"
                         "        refused += 'no step named' in e.get_dbus_message()\n"
                         "print(refused)\n", user=USER)
        self.assertEqual(out.strip(), "200")
        st = self.d.status()
        self.assertLessEqual(st["steps"], 4, "refused readers loaded steps")
        # the review measured 2.5 MiB per refused call; the sanitizers' quarantine alone grows by
        # about 2 MiB over these calls, so the bound is a few MiB
        self.assertLess(st["memory_rss_bytes"] - rss, 8 << 20, f"RSS {rss} -> {st['memory_rss_bytes']}")
        # root reads them all: each is loaded, the cache keeps 4
        bus_script(self.d.bus.address, "for i in range(40):\n    m.GetStep('%d.0' % (1000 + i), 'json')\n")
        self.assertLessEqual(self.d.status()["steps"], 4)

    def test_a_step_that_cannot_be_loaded_leaves_nothing(self):
        # review bug: a stored step that fails half way through loading stayed in memory, half
        r = self.d.pdimon("run", "--step", "broken", "--", *mpirun("mpich", 2, "ring", 5), check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.d.stop()
        with sqlite3.connect(self.d.database) as db:  # a site of a function no pdimon knows
            db.execute("UPDATE sites SET fn = 'MPI_Frobnicate' WHERE idx = 1")
        self.d = Daemon(*self.settings, database=self.d.database)
        for _ in range(2):
            r = self.d.pdimon("show", "broken", check=False)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("cannot read step 'broken'", r.stderr)
        self.assertEqual(self.d.status()["steps"], 0)

    def test_ended_tasks_close_only_their_own_fds(self):
        # review bug: the job that closes an ended task's probes off the loop also closed fd 0,
        # which by then was someone else's (a trapped process's pidfd: it stayed stopped)
        def std_fds():
            paths = {fd: f"/proc/{self.d.proc.pid}/fd/{fd}" for fd in (0, 1, 2)}
            return {fd: os.readlink(p) if os.path.lexists(p) else "closed" for fd, p in paths.items()}
        before = std_fds()
        for k in range(2):
            r = self.d.pdimon("run", "--step", f"fds{k}", "--", *mpirun("mpich", 2, "ring", 5), check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
        wait_for(lambda: self.d.status()["workers"]["completed"] > 0 and not self.d.status()["workers"]["busy"]
                 and not self.d.status()["workers"]["queued"], 60, "the probes of the ended tasks to be closed")
        self.assertEqual(std_fds(), before)

    def test_locked_database_stalls_nothing(self):
        self.registrations(2000, 1)
        wait_for(lambda: "2000.0" in self.stored(), 30, "the first step stored")
        # another process holds the write lock: writes wait on the store's lane, not the loop
        locker = sqlite3.connect(self.d.database, timeout=30, isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")
        try:
            with self.probe() as probe:
                r = self.d.pdimon("run", "--step", "locked", "--", *mpirun("mpich", 2, "ring", 20), check=False)
                self.assertEqual(r.returncode, 0, r.stderr)
                wait_for(lambda: "Cannot store step locked: the database is locked by another process" in self.d.read_log(),
                         60, "the store to give up on the lock")
                self.assertEqual(self.d.show("locked")["state"], "ended")
            probe.check(self, "while another process holds the database's write lock")
        finally:
            locker.execute("ROLLBACK")
        # the lock gone, the step is written at a checkpoint: nothing was lost
        wait_for(lambda: "locked" in self.stored(), 60, "the step to be stored once the lock is gone")
        # (a lock that keeps readers out cannot be taken while pdimond holds the file open in
        # WAL mode; were it, the loop's reads give up after 50 ms: persist.c LOOP_BUSY_MS)
        locker.close()


class Service(unittest.TestCase):
    """pdimond as a real daemon (issue 10 item 7): in the background, and reloading."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pdimon-service-")
        os.chmod(self.dir, 0o755)
        self.bus = SystemBus(self.dir)
        self.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        self.pids = []

    def tearDown(self):
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.bus.stop()

    def pdimon(self, *args, check=True):
        r = subprocess.run([PDIMON, *map(str, args)], capture_output=True, text=True, timeout=120, env=self.env)
        if check and r.returncode != 0:
            raise AssertionError(f"pdimon {args}: {r.stderr}")
        return r

    def background(self, *settings):
        args = [PDIMOND, "--config", "/dev/null", "--set", f"database={self.dir}/pdimon.db", "--set", "peer_port=0"]
        for s in settings:
            args += ["--set", s]
        return subprocess.run(args, capture_output=True, text=True, timeout=120, env=self.env)

    def test_background_daemon_serves(self):
        # the command returns once the daemon serves, which then lives on its own
        r = self.background()
        self.assertEqual(r.returncode, 0, r.stderr)
        st = json.loads(self.pdimon("status", "--json").stdout)
        pid = st["pid"]
        self.pids.append(pid)
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        self.assertNotEqual(int(fields[1]), os.getpid(), "the daemon is still the launcher's child")
        self.assertEqual(int(fields[3]), pid, "the daemon leads no session of its own")
        # it monitors a real job, and a second one is refused with its reason on the terminal
        r = self.pdimon("run", "--step", "bg", "--", *mpirun("mpich", 2, "ring", 10), check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(self.pdimon("show", "bg", "--json").stdout)["state"], "ended")
        r = self.background()
        self.assertEqual(r.returncode, 1)
        self.assertIn("Another pdimond owns org.pdimon.Monitor1", r.stderr)
        # SIGTERM ends it: the name is free again
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 60, "the daemon to exit")
        r = self.pdimon("status", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("pdimond is not running", r.stderr)
        # a daemon that cannot start says why where it was started, and fails
        r = self.background("ring_buffer_kib=3")
        self.assertEqual((r.returncode, r.stderr.strip()), (1, "pdimond: --set ring_buffer_kib: invalid value (want KEY=VALUE)"))

    def test_sighup_rereads_the_configuration(self):
        conf = os.path.join(self.dir, "pdimond.conf")
        with open(conf, "w") as f:
            f.write("cache_steps = 4\nlog_level = info\n")
        d = Daemon(bus=self.bus, config=conf)
        try:
            with open(conf, "w") as f:
                f.write("cache_steps = 1\nlog_level = debug\n")
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "Reloaded the configuration from " + conf in d.read_log(), 30, "the reload")
            # a broken file changes nothing and says why in one line
            with open(conf, "w") as f:
                f.write("cache_steps = 1\nlog_level = loud\n")
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "Cannot reload" in d.read_log(), 30, "the refused reload")
            line = [x for x in d.read_log().splitlines() if "Cannot reload" in x]
            self.assertEqual(len(line), 1)
            self.assertTrue(line[0].endswith(f"keeping the running one: {conf}:2: invalid value"), line[0])
            d.status()  # still serving
            # what a running daemon cannot change waits for a restart, and says so
            with open(conf, "w") as f:
                f.write("cache_steps = 1\nlog_level = debug\nring_buffer_kib = 4096\n")
            d.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: d.read_log().count("Reloaded the configuration") == 2, 30, "the third reload")
            self.assertIn(f"Setting ring_buffer_kib changed in {conf}: it takes effect when pdimond restarts", d.read_log())
            # the new settings act: debug lines, and a cache of one step
            r = d.pdimon("run", "--step", "one", "--", *mpirun("mpich", 2, "ring", 5), check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = d.pdimon("run", "--step", "two", "--", *mpirun("mpich", 2, "ring", 5), check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("debug:", d.read_log())
            wait_for(lambda: d.status()["steps"] == 1, 30, "the cache to keep one ended step")
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()

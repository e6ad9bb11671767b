#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_spank.py -- srun --pdi-monitor on a real single-node Slurm with a real pdimond.

Each test starts its own cluster (slurmctld, slurmd, munged), private system bus and
pdimond, so that one test's failure cannot leak into the next. Run one case as:
test_spank.py Spank.test_monitored_step
"""
import glob
import json
import os
import sqlite3
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))
from cluster import SlurmCluster  # noqa: E402
from harness import BUILD, HANG_MS, Daemon, PDIMON, SystemBus, marker_line, wait_for  # noqa: E402

import tempfile  # noqa: E402

PLUGIN = os.path.join(BUILD, "slurm/spank_pdimon.so")
RING = os.path.join(BUILD, "tests/mpi/ring.openmpi")
USER = "pdimontest"


def site(name):
    fn = {"irecv": "Irecv", "isend": "Isend", "waitall": "Waitall", "barrier": "Barrier"}[name]
    return f"MPI_{fn}@ring.c:{marker_line('ring.c', name)}"


class Spank(unittest.TestCase):
    plugstack_args = ""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pdimon-slurm-test-")
        os.chmod(self.tmp, 0o755)
        self.bus = SystemBus(self.tmp)
        self.d = Daemon(bus=self.bus)
        self.c = SlurmCluster(plugstack=self.plugstack())
        self.c.start()
        self.ring = self.c.share(RING)

    def tearDown(self):
        try:
            self.c.stop()
        finally:
            self.d.stop()
            self.bus.stop()

    def plugstack(self, extra=""):
        return (f"optional {PLUGIN} bus={self.bus.address} timeout_ms=2000 wait_ms=5000 "
                f"{self.plugstack_args} {extra}\n")

    def srun(self, *args, user=None, timeout=120, cwd=None):
        return self.c.run(["srun", *map(str, args)], user=user, timeout=timeout, cwd=cwd,
                          env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})

    def steps(self):
        return json.loads(self.d.pdimon("steps", "--json").stdout)

    def test_monitored_step(self):
        r = self.srun("--pdi-monitor", "-n", 4, "--mpi=pmix", self.ring, 10)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("all 4 tasks completed", r.stderr)
        [step] = self.steps()
        name = step["step"]
        self.assertEqual(step["uid"], 0)
        self.assertEqual(step["state"], "ended")
        # the report file next to the user, the same verdict in it
        with open(os.path.join(self.c.dir, f"pdimon-{name}.json")) as f:
            rep = json.load(f)
        self.assertEqual(rep["verdict"]["kind"], "completed")
        self.assertEqual(sorted(t["rank"] for t in rep["tasks"]), [0, 1, 2, 3])
        self.assertTrue(all(t["calls"] == 42 for t in rep["tasks"]), rep["tasks"])
        # and the models say what the program did: 10 ring iterations per rank
        s = self.d.show(name)
        for t in s["tasks"]:
            tr = {(x["from"], x["to"]): x["count"] for x in t["phases"][0]["transitions"]}
            self.assertEqual(tr[(site("irecv"), f"{site('irecv')} -> {site('isend')}")], 10)

    def test_report_path_and_phases_option(self):
        out = os.path.join(self.c.dir, "custom.json")
        r = self.srun(f"--pdi-monitor=report={out},size=4096,phases=pcontrol", "-n", 2, "--mpi=pmix", self.ring, 5)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"full report in {out}", r.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["verdict"]["kind"], "completed")
        # size=N is the run's input size, for pdimon trends
        with sqlite3.connect(self.d.database) as db:
            self.assertEqual(db.execute("SELECT input_size FROM steps").fetchall(), [(4096,)])

    def test_unmonitored_without_the_flag(self):
        r = self.srun("-n", 2, "--mpi=pmix", self.ring, 5)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("pdimon", r.stderr)
        self.assertEqual(self.steps(), [])
        self.assertEqual(glob.glob(os.path.join(self.c.dir, "pdimon-*.json")), [])

    def test_default_on_and_opt_out(self):
        with open(self.c.plugstack, "w") as f:
            f.write(self.plugstack("default=on"))
        r = self.srun("-n", 2, "--mpi=pmix", self.ring, 5)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("all 2 tasks completed", r.stderr)
        self.assertEqual(len(self.steps()), 1)
        r = self.srun("--pdi-monitor=off", "-n", 2, "--mpi=pmix", self.ring, 5)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("pdimon", r.stderr)
        self.assertEqual(len(self.steps()), 1, "the opted-out step was monitored")

    def test_bad_option_refused(self):
        r = self.srun("--pdi-monitor=phases=sometimes", "-n", 1, self.ring, 1)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("invalid --pdi-monitor option 'phases=sometimes'", r.stderr)
        self.assertIn("valid: off, on, report=PATH, phases=pcontrol, phases=auto", r.stderr)

    def test_cancelled_hung_step(self):
        # rank 2 stops computing forever in iteration 5: the others block in the barrier
        p = self.c.popen(["srun", "--pdi-monitor", "-n", 4, "--mpi=pmix", self.ring, 100000, 1000, 2, 5],
                         env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})

        def hung():
            st = self.steps()
            if not st:
                return None
            s = self.d.show(st[0]["step"])
            blocked = [t for t in s["tasks"] if t["current"].get("in_mpi") == "MPI_Barrier"
                       and t["current"]["for_ns"] > HANG_MS * 1e6]
            return st[0] if len(s["tasks"]) == 4 and len(blocked) == 3 else None
        step = wait_for(hung, 90, "3 ranks blocked in MPI_Barrier")
        live = json.loads(self.d.pdimon("report", step["step"], "--json").stdout)
        groups = {(g["status"], g["where"]): g["ranks"] for g in live["verdict"]["groups"]}
        self.assertEqual(groups, {("blocked", site("barrier")): "[0-1,3]",
                                  ("computing", f"after {site('waitall')}"): "[2]"})
        self.c.run(["scancel", str(step["job_id"])], timeout=30)
        out, err = p.communicate(timeout=120)
        self.assertIn(f"[0-1,3] blocked in {site('barrier')}", err)
        self.assertIn("least progressed: [2]", err)
        with open(os.path.join(self.c.dir, f"pdimon-{step['step']}.json")) as f:
            rep = json.load(f)
        self.assertEqual(rep["verdict"]["kind"], "hang")
        self.assertEqual(rep["state"], "ended")

    def test_other_users(self):
        uid, _ = self.c.ensure_user(USER)
        home = os.path.expanduser(f"~{USER}")
        # a user's own monitored step: theirs to read, with the report in their directory
        r = self.srun("--pdi-monitor", "-n", 2, "--mpi=pmix", self.ring, 5, user=USER)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("all 2 tasks completed", r.stderr)
        [step] = self.steps()
        self.assertEqual(step["uid"], uid)
        self.assertTrue(os.path.exists(os.path.join(home, f"pdimon-{step['step']}.json")))
        mine = self.d.pdimon("report", step["step"], user=USER)
        self.assertEqual(mine.returncode, 0, mine.stderr)
        # root's step: invisible to them
        r = self.srun("--pdi-monitor", "-n", 1, "--mpi=pmix", self.ring, 2)
        self.assertEqual(r.returncode, 0, r.stderr)
        roots = [s["step"] for s in self.steps() if s["uid"] == 0]
        r = self.d.pdimon("show", roots[0], user=USER, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no step named", r.stderr)
        listed = json.loads(self.d.pdimon("steps", "--json", user=USER).stdout)
        self.assertEqual([s["step"] for s in listed], [step["step"]])
        # nor may they register tasks or end steps
        for call in (["RegisterTask", "uuuuus", 1, 0, 0, os.getpid(), uid, ""], ["EndStep", "uu", 1, 0],
                     ["Attach", "sau", "x", 1, os.getpid()]):
            r = subprocess.run(["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups",
                                "busctl", "--system", "call", "org.pdimon.Monitor1", "/org/pdimon/Monitor1",
                                "org.pdimon.Monitor1", *map(str, call)],
                               capture_output=True, text=True, env=self.d.env, timeout=30)
            self.assertNotEqual(r.returncode, 0, call[0])
            self.assertIn("Access denied", r.stderr)  # busctl shows the error's name only
        r = self.d.pdimon("attach", "--pid", os.getpid(), user=USER, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("attaching probes to processes needs root", r.stderr)

    def test_daemon_restart_mid_step(self):
        p = self.c.popen(["srun", "--pdi-monitor", "-n", 4, "--mpi=pmix", self.ring, 600, 3000],
                         env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})

        def calls():
            st = self.steps()
            if not st:
                return 0
            ts = self.d.show(st[0]["step"])["tasks"]
            return min((t["calls"] for t in ts), default=0) if len(ts) == 4 else 0
        wait_for(lambda: calls() > 100, 90, "100 calls per rank before the restart")
        [step] = self.steps()
        self.d.stop()
        self.d = Daemon(bus=self.bus, database=self.d.database)
        self.assertIn(f"Restored step {step['step']}: 4 tasks, 4 still running", self.d.read_log())
        out, err = p.communicate(timeout=180)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("all 4 tasks completed", err)
        rep = json.loads(self.d.pdimon("report", step["step"], "--json").stdout)
        self.assertEqual(rep["state"], "ended")
        self.assertTrue(all(t["calls"] > 100 for t in rep["tasks"]), rep["tasks"])

    def test_daemon_down_job_still_runs(self):
        self.d.stop()
        r = self.srun("--pdi-monitor", "-n", 2, "--mpi=pmix", self.ring, 5)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ring: 5 iterations on 2 ranks", r.stdout)
        self.assertRegex(r.stderr, r"pdimon: step \d+\.\d+ was not monitored: pdimond is not running on this node")
        self.d = Daemon(bus=self.bus)  # for tearDown


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_loop.py -- pdimond's loop keeps serving while gathers, Slurm and peers are slow
(issue 10 item 5, issue 14 item 2), on a real 3-node Slurm (cluster.py: network namespaces,
one slurmd, private bus and pdimond per node, one slurmctld, one munged).

While a gather waits for a peer that never answers, while two daemons gather from each
other, and while slurmctld is stopped, each pdimond answers Status within milliseconds
(measured by a D-Bus client on the node's bus socket) and loses no event. Root only; about
60 s: python3 tests/slurm/test_loop.py
"""
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "../integration")]
from cluster import NODE_BUS, NODE_BUS_SOCKET, SlurmCluster  # noqa: E402
from harness import HANG_MS, PDIMON, StatusProbe, wait_for  # noqa: E402
from multinode import PDIMOND, PLUGIN, RING, setUpModule  # noqa: E402,F401  (unittest calls setUpModule)

NODES = ["n1", "n2", "n3"]
LEVEL_MS = 5000          # gather_timeout_ms: how long a gather waits for a silent peer (the
                         # machine may be loaded: test_3 holds n1 stopped within it)
STALL_RANK = 3           # -N 3 -n 6: ranks 2-3 on n2


class LoopMultiNode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = SlurmCluster(
            nodes=3, cpus=2, pdimond=PDIMOND, pdimon=PDIMON, lock_timeout=120,
            pdimond_settings=[f"hang_timeout_ms={HANG_MS}", f"gather_timeout_ms={LEVEL_MS}"],
            plugstack=f"required {PLUGIN} bus={NODE_BUS} timeout_ms=2000 wait_ms=5000\n")
        cls.c.start()
        cls.step = None
        cls.hung = cls.c.popen(["srun", "--pdi-monitor", "-N", 3, "-n", 6, "--mpi=pmix",
                                RING, 100000, 1000, STALL_RANK, 5], node="n1")

        def running():
            if cls.hung.poll() is not None:
                raise AssertionError("srun of the hung step exited: %s\n%s" % (cls.hung.communicate(), cls.c.logs(20)))
            steps = [s for s in cls.c.pdimon_json("n1", "steps", "--json") if s["state"] == "running"]
            return steps[0] if steps and steps[0]["tasks"] == 2 else None
        try:
            cls.step = wait_for(running, 60, "the hung step to run on n1")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.step:
                cls.c.run(["scancel", str(cls.step["job_id"])])
            cls.hung.kill()
            cls.hung.communicate()
        finally:
            cls.c.stop()
        if cls.c.pdimond_exit != {n: 0 for n in NODES}:
            raise AssertionError(f"pdimond exit statuses: {cls.c.pdimond_exit}")

    def probe(self, node):
        return StatusProbe(self.c.node_dir(node, "tmp", os.path.basename(NODE_BUS_SOCKET)))

    def status(self, node):
        return self.c.pdimon_json(node, "status", "--json")

    def analyze(self, node, step):
        return self.c.popen([PDIMON, "analyze", step, "--json"], node=node,
                            env={"DBUS_SYSTEM_BUS_ADDRESS": NODE_BUS})

    def test_1_analyze_elsewhere_with_slurmctld_stopped(self):
        # issue 14.2: a node outside the step asks slurmctld for its nodes; slurmctld is
        # stopped: the answer is a timeout after gather_timeout_ms, and nobody waits meanwhile
        ctld = self.c._daemons["slurmctld"]
        os.kill(ctld.pid, signal.SIGSTOP)
        try:
            with self.probe("n3") as probe:
                t = time.monotonic()
                r = self.c.pdimon("n3", "analyze", "4242.0", check=False, timeout=120)
                took = time.monotonic() - t
        finally:
            os.kill(ctld.pid, signal.SIGCONT)
        probe.check(self, "n3 while scontrol waits for a stopped slurmctld")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("4242.0", r.stderr)
        self.assertIn("Slurm", r.stderr)
        self.assertLess(took, 2 * LEVEL_MS / 1000 + 5, r.stderr)

    def test_2_gather_with_a_silent_peer_loses_nothing(self):
        step = self.step
        # a busy monitored step on n1 beside the hung one: events keep coming during the gather
        busy = self.c.popen(["srun", "--pdi-monitor", "-N", 1, "-w", "n1", "-n", 2, "--mpi=pmix",
                             RING, 2000000, 50], node="n1")
        try:
            def busy_running():
                st = self.status("n1")
                return st if st["tasks_running"] >= 4 and st["events_per_s"] > 100 else None
            wait_for(busy_running, 60, "the busy step's events on n1")
            n3 = self.c._daemons["pdimond-n3"]
            os.kill(n3.pid, signal.SIGSTOP)    # a peer that accepts (the kernel does) and never answers
            try:
                before = self.status("n1")
                with self.probe("n1") as probe:
                    t = time.monotonic()
                    a = self.c.pdimon_json("n1", "analyze", step["step"], "--json", timeout=120)
                    took = time.monotonic() - t
                after = self.status("n1")
            finally:
                os.kill(n3.pid, signal.SIGCONT)
            self.assertEqual((a["nodes"]["count"], a["nodes"]["answered"]), (3, 2), a["nodes"])
            self.assertEqual([m["node"] for m in a["nodes"]["missing"]], ["n3"])
            self.assertGreater(took, LEVEL_MS / 2000, "the gather did not wait for the silent peer")
            probe.check(self, "n1 during a gather waiting for a stopped peer")
            self.assertGreater(after["events"], before["events"], "no event ingested during the gather")
            self.assertEqual(after["events_lost"], 0, after)
        finally:
            busy.kill()
            busy.communicate()

    def test_3_two_daemons_gather_from_each_other(self):
        step = self.step
        # n1 holds both gathers up, so that they are certainly in flight at the same time:
        # n2 waits for n3's part and n3 for n2's
        n1 = self.c._daemons["pdimond-n1"]
        os.kill(n1.pid, signal.SIGSTOP)
        try:
            p2, p3 = self.analyze("n2", step["step"]), self.analyze("n3", step["step"])

            def both_asked_n1():
                r = self.c.run(["ss", "-Htn", "state", "established", "( sport = :7087 )"], node="n1")
                return len(r.stdout.splitlines()) >= 2
            wait_for(both_asked_n1, 30, "n2 and n3 to send their requests to n1")
        finally:
            os.kill(n1.pid, signal.SIGCONT)
        import json
        for node, p in (("n2", p2), ("n3", p3)):
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, f"{node}: {err}")
            a = json.loads(out)
            self.assertEqual((a["nodes"]["count"], a["nodes"]["answered"], a["nodes"]["partial"]), (3, 3, False),
                             f"{node}: {a['nodes']}")
            self.assertEqual(a["verdict"]["least_progressed"], f"[{STALL_RANK}]", f"{node}: {json.dumps(a['verdict'])}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    unittest.main(verbosity=2)

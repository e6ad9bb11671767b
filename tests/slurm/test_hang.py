#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_hang.py -- hangs noticed as they happen (issue 11) on a real single-node Slurm with a
real pdimond: no one calls pdimon, yet the user of a hung step reads on srun's own output that
it looks hung, the site's action (cancel after a grace period) follows, and the step's report
says when it was first judged hung and when it was cancelled; a healthy step with a 15 s
legitimate wait (one rank computes while the others wait in a collective), run at the same
time on the same node, is never announced; and a hung step whose user asked for silence
(notify=off) is judged, but nothing is written on its output. The daemon runs with its
defaults: no timeout,
a false-alarm rate of one per 10,000 step-hours.

HangMultiNode: a step on two nodes (network namespaces, a slurmd and a pdimond each) is judged
across both. Its first node, whose ranks wait, suspects a hang; the gather of the whole step
confirms it when a rank of the other node is stuck (and the line names that rank), and does
not while that rank computes something never seen to end (25 s), so nothing is said.

Root only. Run as: test_hang.py Hang, test_hang.py HangMultiNode
"""
import json
import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../hostile"))
from cluster import NODE_BUS, SlurmCluster  # noqa: E402
from harness import BUILD, PDIMON, PDIMOND, Daemon, SystemBus, wait_for  # noqa: E402
from test_bus import Listener  # noqa: E402

PLUGIN = os.path.join(BUILD, "slurm/spank_pdimon.so")
WAITS = os.path.join(BUILD, "tests/mpi/waits.openmpi")
GRACE_S = 4


class Output:
    """A running srun's standard error, line by line as it comes (time since start, line)."""

    def __init__(self, p):
        self.p, self.t0, self.lines = p, time.monotonic(), []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.p.stderr:
            self.lines.append((time.monotonic() - self.t0, line.rstrip("\n")))

    def find(self, text):
        return next((t for t, line in list(self.lines) if text in line), None)

    def text(self):
        return "\n".join(f"{t:6.1f} {line}" for t, line in list(self.lines))


def wait_for_line(out, text, timeout, logs):
    """Wait for TEXT on OUT; on timeout, fail with what did come and LOGS()."""
    try:
        wait_for(lambda: out.find(text), timeout, f"{text!r} on srun's output")
    except AssertionError as e:
        raise AssertionError(f"{e}; srun's output:\n{out.text()}\n{logs()}") from None


class Hang(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pdimon-hang-test-")
        os.chmod(self.tmp, 0o755)
        self.bus = SystemBus(self.tmp)
        self.c = SlurmCluster(plugstack=f"optional {PLUGIN} bus={self.bus.address} timeout_ms=2000 wait_ms=5000\n")
        self.d = None
        self.c.start()
        self.waits = self.c.share(WAITS)
        # pdimond cancels with scancel, which reads this cluster's configuration; the harness's
        # short hang_timeout_ms is only a floor now: none here, the defaults
        os.environ["SLURM_CONF"] = self.c.conf
        try:
            self.d = Daemon("hang_timeout_ms=0", f"on_hang_grace_s={GRACE_S}", bus=self.bus)
        finally:
            del os.environ["SLURM_CONF"]

    def tearDown(self):
        try:
            self.c.stop()
        finally:
            if self.d:
                self.d.stop()
            self.bus.stop()

    def srun(self, options, ntasks, seconds, env):
        p = self.c.popen(["srun", f"--pdi-monitor={options}", "-n", ntasks, "--mpi=pmix", self.waits, seconds],
                         env=dict(env, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address))
        return p, Output(p)

    def steps(self):
        return {s["step"]: s for s in json.loads(self.d.pdimon("steps", "--json").stdout)}

    def test_hung_step_told_to_its_user_and_cancelled_healthy_one_never(self):
        listener = Listener(self.d.env)
        try:
            # rank 2 blocks for ever in a read(2) 5 s in; the others wait for it in MPI_Allreduce
            hung, hung_out = self.srun("on-hang=cancel", 4, 600, {"WAITS_STUCK_AT": "5", "WAITS_STUCK_RANK": "2"})
            # rank 0 computes 15 s alone from 5 s on while the other wait in MPI_Bcast
            ok, ok_out = self.srun("on", 2, 30, {"WAITS_LONG_S": "15", "WAITS_LONG_AT": "5"})
            # the same hang as the first, but its user wants no line on its output
            silent, silent_out = self.srun("notify=off", 2, 600, {"WAITS_STUCK_AT": "5", "WAITS_STUCK_RANK": "1"})

            # the user reads it on srun's own output while the step runs: nobody asked pdimon
            wait_for_line(hung_out, "looks hung since", 150, lambda: self.d.read_log()[-3000:])
            line = next(line for _, line in hung_out.lines if "looks hung since" in line)
            self.assertRegex(line, r"^pdimon: step \d+\.0 looks hung since \d\d:\d\d:\d\d \(no progress for \d+ s; "
                                   r"p [<=] [0-9.e-]+\): least progressed \[2\] on \S+, sleeping \(no CPU, no I/O\) "
                                   r"after MPI_Allreduce@waits\.c:\d+; the others wait in MPI_Allreduce@waits\.c:\d+$")
            name = line.split()[2]
            st = self.steps()[name]
            if st["state"] == "running":
                self.assertEqual(st["health"], "hung")
                self.assertGreater(st["health_since"], st["started"])
            # the site's action: cancelled after its grace, said first, then srun ends
            hung.communicate(timeout=120)
            with open(os.path.join(self.c.dir, f"pdimon-{name}.json")) as f:
                rep = json.load(f)
            health = rep["health"]
            # its user was told before the cancel: the line went out through the task's stderr
            # and was taken by slurmstepd before scancel ran (whether srun prints what is in
            # flight when its step is cancelled is Slurm's: not asserted)
            acts = [(a["action"], a["detail"]) for a in health["actions"]]
            told = [i for i, (a, d) in enumerate(acts) if a == "notified" and not d.startswith("failed")]
            self.assertEqual(len(told), 2, acts)
            print("the cancellation line on srun's output:", hung_out.find(f"step {name} is being cancelled"))
            self.assertEqual(health["health"], "hung")
            self.assertGreaterEqual(health["cancelled"], health["first_judged_hung"])
            self.assertGreaterEqual(health["cancelled"] - health["first_judged_hung"], GRACE_S - 1)
            actions = [a["action"] for a in health["actions"]]
            self.assertIn("announced", actions)
            self.assertIn("cancel", actions)
            # the signal reached a subscriber who may read the step
            wait_for(lambda: f"StepHealthChanged {name} hung " in listener.read(), 30, "the StepHealthChanged signal")

            # the silent one is judged hung too, and nothing reached its output
            def silent_hung():
                return next((s for s in self.steps().values()
                             if s["tasks"] == 2 and s["state"] == "running" and s["health"] == "hung"), None)
            step = wait_for(silent_hung, 120, "the silent step judged hung")
            self.assertIsNone(silent_out.find("pdimon: step"), silent_out.text())
            self.c.run(["scancel", str(step["job_id"])], timeout=30)
            silent.communicate(timeout=120)
            self.assertIsNone(silent_out.find("looks hung"), silent_out.text())

            # the healthy step with its 15 s wait ran beside it, and nothing was said of it
            ok.communicate(timeout=120)
            self.assertEqual(ok.returncode, 0, ok_out.text())
            self.assertIsNone(ok_out.find("looks hung"), ok_out.text())
            self.assertIsNone(ok_out.find("looks slow"), ok_out.text())
            ok_name = next(s for s, st in self.steps().items() if s != name and st["job_id"] != step["job_id"])
            self.assertEqual(self.steps()[ok_name]["health"], "ok")
            self.assertNotIn(f"StepHealthChanged {ok_name} ", listener.read())
            status = json.loads(self.d.pdimon("status", "--json").stdout)
            self.assertEqual(status["health_alarms"]["hung"], 2)
            self.assertEqual(status["detection_latency_s"]["count"], 2)
            print(f"hung step {name}:\n{hung_out.text()}\nhealthy step {ok_name}:\n{ok_out.text()}\n"
                  f"detection latency {status['detection_latency_s']['max']:.1f} s")
        finally:
            listener.stop()


class HangMultiNode(unittest.TestCase):
    def setUp(self):
        self.c = SlurmCluster(nodes=2, cpus=2, pdimond=os.environ.get("PDIMON_PDIMOND", PDIMOND), pdimon=PDIMON,
                              lock_timeout=120, pdimond_settings=["hang_timeout_ms=0"],
                              plugstack=f"required {PLUGIN} bus={NODE_BUS} timeout_ms=2000 wait_ms=5000\n")
        self.c.start()
        self.waits = self.c.share(WAITS)

    def tearDown(self):
        self.c.stop()

    def srun(self, seconds, env):
        # -N 2 -n 4 on 2 CPUs per node, block distribution: ranks 0-1 on n1, 2-3 on n2
        p = self.c.popen(["srun", "--pdi-monitor", "-N", 2, "-n", 4, "--mpi=pmix", self.waits, seconds],
                         node="n1", env=env)
        return p, Output(p)

    def test_judged_across_nodes(self):
        # rank 3 (on n2) blocks for ever in a read(2) 5 s in: n1's ranks wait in MPI_Allreduce
        hung, hung_out = self.srun(600, {"WAITS_STUCK_AT": "5", "WAITS_STUCK_RANK": "3"})
        # rank 3 computes 25 s alone from 5 s on, never seen before: n1's ranks wait in MPI_Bcast
        ok, ok_out = self.srun(45, {"WAITS_LONG_S": "25", "WAITS_LONG_AT": "5", "WAITS_LONG_RANK": "3"})

        wait_for_line(hung_out, "looks hung since", 150, lambda: self.c.logs(20))
        line = next(line for _, line in hung_out.lines if "looks hung since" in line)
        # the stuck rank is n2's, named from the gathered view; n1's own ranks only wait
        self.assertRegex(line, r"^pdimon: step \d+\.0 looks hung since \d\d:\d\d:\d\d \(no progress for \d+ s; "
                               r"p [<=] [0-9.e-]+\): least progressed \[3\], .*\(after MPI_Allreduce@waits\.c:\d+\); "
                               r"the others wait in MPI_Allreduce@waits\.c:\d+$")
        name = line.split()[2]
        self.c.run(["scancel", name.split(".")[0]], timeout=30)
        hung.communicate(timeout=120)

        ok.communicate(timeout=180)
        self.assertEqual(ok.returncode, 0, ok_out.text())
        self.assertIsNone(ok_out.find("looks hung"), ok_out.text())
        ok_name = next(s["step"] for s in self.c.pdimon_json("n1", "steps", "--json") if s["step"] != name)
        # n1 did suspect it (its ranks waited 25 s), and the step's view said no
        self.assertIn(f"Step {ok_name}: its tasks here have been quiet for", self.c.node_log("n1"))
        self.assertNotIn(f"Step {ok_name} looks hung", self.c.node_log("n1"))
        print(f"hung step {name}:\n{hung_out.text()}\nhealthy step {ok_name}:\n{ok_out.text()}")


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_spank.py -- the SPANK plugin against a hung pdimond and a hostile neighbour, on a
real single-node Slurm (issue 14, findings 10 and 11): a 16-task step whose pdimond is
stopped with SIGSTOP must start within the plugin's budget, and srun must not write its
report through a file another user planted beside it. Root only.
Run one case as: test_spank.py Spank.test_stopped_pdimond_costs_at_most_the_budget
"""
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../slurm"))
from cluster import SlurmCluster  # noqa: E402
from harness import BUILD, Daemon, SystemBus, wait_for  # noqa: E402

PLUGIN = os.path.join(BUILD, "slurm/spank_pdimon.so")
RING = os.path.join(BUILD, "tests/mpi/ring.openmpi")
USER = "pdimontest"
TASKS = 16
TIMEOUT_MS = 2000  # per call
BUDGET_MS = 3000   # per step
SLACK_S = 3.0      # Slurm's own start-up on a loaded 2-core machine, beyond its baseline


class Spank(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pdimon-hostile-spank-")
        os.chmod(cls.tmp, 0o755)
        cls.bus = SystemBus(cls.tmp)
        cls.d = Daemon(bus=cls.bus)
        cls.c = SlurmCluster(cpus=TASKS, plugstack=f"optional {PLUGIN} bus={cls.bus.address} "
                             f"timeout_ms={TIMEOUT_MS} budget_ms={BUDGET_MS} wait_ms=5000\n")
        try:
            cls.c.start()
            cls.ring = cls.c.share(RING)
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.c.stop()
        finally:
            cls.d.proc.send_signal(signal.SIGCONT)
            cls.d.stop()
            cls.bus.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def srun_timed(self, *args, user=None):
        """srun ARGS; its result, when it was started (time.time()) and how long it took."""
        t0 = time.time()
        r = self.c.run(["srun", *map(str, args)], user=user, timeout=180,
                       env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})
        return r, t0, time.time() - t0

    def start_delay(self, *flags):
        """How long after srun began the last of TASKS tasks started, in s."""
        r, t0, took = self.srun_timed(*flags, "-n", TASKS, "/bin/date", "+%s.%N")
        self.assertEqual(r.returncode, 0, r.stderr)
        starts = [float(x) for x in r.stdout.split()]
        self.assertEqual(len(starts), TASKS, r.stdout)
        return max(starts) - t0, took, r.stderr

    def test_stopped_pdimond_costs_at_most_the_budget(self):
        baseline, _, _ = self.start_delay("--pdi-monitor=off")
        self.d.proc.send_signal(signal.SIGSTOP)
        try:
            delay, took, err = self.start_delay("--pdi-monitor")
        finally:
            self.d.proc.send_signal(signal.SIGCONT)
        print(f"{TASKS}-task step, pdimond stopped (SIGSTOP): tasks started {delay:.2f} s after srun "
              f"(unmonitored: {baseline:.2f} s; budget {BUDGET_MS} ms, per call {TIMEOUT_MS} ms); "
              f"srun took {took:.2f} s in all", flush=True)
        self.assertLess(delay, baseline + BUDGET_MS / 1000 + SLACK_S,
                        "a stopped pdimond delayed the step by %.1f s" % (delay - baseline))
        self.assertIn("not monitored", err)
        # srun's own wait for the report at the end is bounded the same way
        self.assertLess(took, delay + BUDGET_MS / 1000 + SLACK_S, err)
        # the stepd said once why the others were skipped
        wait_for(lambda: "more tasks of step" in self.c.logs(200), 30, "the stepd's summary in the slurmd log")

    def test_report_temp_file_is_not_followed(self):
        """Another user plants a symlink where srun writes its report's temporary file."""
        uid, gid = self.c.ensure_user(USER)
        home = pwd.getpwnam(USER).pw_dir
        victim = os.path.join(home, "precious.txt")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.chown(victim, uid, gid)
        shared = self.c.path("shared")  # a group project directory: writable by all, no sticky bit
        os.makedirs(shared, exist_ok=True)
        os.chmod(shared, 0o777)
        report = os.path.join(shared, "r.json")
        # a step longer than the budget: the budget is time spent on pdimond, not a window,
        # so the stepd still ends the step with pdimond when it exits
        p = self.c.popen(["srun", f"--pdi-monitor=report={report}", "-n", 2, "--mpi=pmix", self.ring, 20,
                          (BUDGET_MS + 1000) * 1000 // 20],
                         user=USER, env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})
        # setpriv execs srun: its pid is srun's, and the old name was "<report>.tmp<pid>"
        for pid in range(p.pid, p.pid + 4):
            subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            "ln", "-s", victim, f"{report}.tmp{pid}"], check=True, timeout=10)
        out, err = p.communicate(timeout=180)
        self.assertEqual(p.returncode, 0, err)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n", "srun wrote its report through another user's symlink")
        self.assertFalse(os.path.islink(report), "the report is another user's symlink")
        with open(report) as f:
            self.assertEqual(json.load(f)["verdict"]["kind"], "completed")
        self.assertEqual(os.stat(report).st_uid, uid)
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(os.stat(report).st_mode & 0o777, 0o644 & ~mask, "mode 0644 less srun's umask")
        with open(self.c.path("slurmd.log")) as f:
            self.assertNotIn("cannot end step", f.read())


if __name__ == "__main__":
    if os.geteuid() != 0 or not shutil.which("slurmctld"):
        print("SKIP: root and Slurm only")
        sys.exit(77)
    unittest.main(verbosity=2)

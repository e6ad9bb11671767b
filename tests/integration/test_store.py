#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_store.py -- pdimond's SQLite store, across daemon restarts, with real MPI jobs.

Run one case as: test_store.py Store.test_restart_mid_step
"""
import json
import os
import subprocess
import tempfile
import unittest

from harness import PDIMON, PDIMOND, Daemon, SystemBus, find_ranks, kill_tree, marker_line, mpirun, wait_for

IRECV = f"MPI_Irecv@ring.c:{marker_line('ring.c', 'irecv')}"
ISEND = f"MPI_Isend@ring.c:{marker_line('ring.c', 'isend')}"


def irecv_count(task):
    return sum(t["count"] for p in task["phases"] for t in p["transitions"]
               if t["from"] == IRECV and t["to"] == f"{IRECV} -> {ISEND}")


class Store(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pdimon-store-")
        os.chmod(self.tmp, 0o755)
        self.bus = SystemBus(self.tmp)
        self.db = os.path.join(self.tmp, "pdimon.db")
        self.d = Daemon("checkpoint_s=1", bus=self.bus, database=self.db)
        self.jobs = []

    def tearDown(self):
        for j in self.jobs:
            kill_tree(j)
        if self.d:
            self.d.stop()
        self.bus.stop()

    def restart(self, *settings):
        self.d.stop()
        self.d = Daemon("checkpoint_s=1", *settings, bus=self.bus, database=self.db)

    def test_restart_mid_step(self):
        job = subprocess.Popen([PDIMON, "run", "--step", "long", "--", *mpirun("openmpi", 2, "ring", 1500, 4000)],
                               env=self.d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
        self.jobs.append(job)
        find_ranks("ring.openmpi", 2, job.pid)

        def progressed(n):
            s = self.d.show("long")
            return len(s["tasks"]) == 2 and all(irecv_count(t) >= n for t in s["tasks"])
        wait_for(lambda: progressed(50), 60, "50 iterations before the restart")
        self.restart()
        self.assertIn("Restored step long: 2 tasks, 2 still running", self.d.read_log())
        # the new daemon goes on counting where the old one stopped
        before = {t["rank"]: irecv_count(t) for t in self.d.show("long")["tasks"]}
        wait_for(lambda: progressed(max(before.values()) + 50), 60, "50 more iterations after the restart")
        out, err = job.communicate(timeout=120)
        self.assertEqual(job.returncode, 0, err)
        s = self.d.show("long")
        self.assertEqual(s["state"], "ended")
        for t in s["tasks"]:
            # what ran while no daemon watched is lost, but never more than that
            self.assertLessEqual(irecv_count(t), 1500)
            self.assertGreater(irecv_count(t), before[t["rank"]] + 50)
        rep = json.loads(self.d.pdimon("report", "long", "--json").stdout)
        self.assertEqual(rep["verdict"]["kind"], "completed")
        # Open MPI's datatype handles, read again from the ranks' maps by the new daemon: the calls
        # after the restart carry their bytes as those before (MPI_INT, 4 per Isend and Irecv)
        for t in s["tasks"]:
            sends = [st for p in t["phases"] for st in p["states"]
                     if st["kind"] == "communication" and st["name"].startswith(("MPI_Isend@", "MPI_Irecv@"))]
            self.assertTrue(sends, t["phases"])
            for st in sends:
                self.assertEqual(st["bytes"], 4 * st["visits"], f"rank {t['rank']}: {st}")

    def test_history_survives_restarts(self):
        r = self.d.pdimon("run", "--step", "done", "--", *mpirun("mpich", 2, "ring", 20), check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        counts = {t["rank"]: irecv_count(t) for t in self.d.show("done")["tasks"]}
        self.assertEqual(counts, {0: 20, 1: 20})
        self.restart()
        self.assertEqual(json.loads(self.d.pdimon("steps", "--json").stdout), [])
        listed = json.loads(self.d.pdimon("steps", "--all", "--json").stdout)
        self.assertEqual([(s["step"], s["state"], s["tasks"]) for s in listed], [("done", "ended", 2)])
        s = self.d.show("done")
        self.assertEqual({t["rank"]: irecv_count(t) for t in s["tasks"]}, counts)
        self.assertIn("all 2 tasks completed", self.d.pdimon("report", "done").stdout)

    def test_corrupt_or_unwritable_database_refused(self):
        self.d.stop()
        self.d = None
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        with open(self.db, "wb") as f:
            f.write(b"this is no database" * 200)
        r = subprocess.run([PDIMOND, "-f", "-c", "/dev/null", "--set", f"database={self.db}"], capture_output=True,
                           text=True, timeout=60, env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("refusing to run", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        with open(self.db, "rb") as f:
            self.assertTrue(f.read().startswith(b"this is no database"), "the file was touched")
        r = subprocess.run([PDIMOND, "-f", "-c", "/dev/null", "--set", "database=/proc/pdimon/pdimon.db"],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Cannot use the database /proc/pdimon/pdimon.db", r.stderr)

    def test_disk_full(self):
        small = os.path.join(self.tmp, "small")
        os.mkdir(small)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", small], check=True)
        try:
            self.restart(f"database={small}/pdimon.db")
            self.d.database = f"{small}/pdimon.db"
            r = self.d.pdimon("run", "--step", "first", "--", *mpirun("mpich", 2, "ring", 10), check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("Step first ended", self.d.read_log(), "stored when pdimon run returns")
            # fill the disk, then a step with many distinct sites cannot be stored
            try:
                with open(os.path.join(small, "filler"), "wb") as f:
                    while True:
                        f.write(b"\0" * 4096)
                        f.flush()
            except OSError:
                pass  # full
            r = self.d.pdimon("run", "--step", "second", "--", *mpirun("mpich", 2, "ring", 400), check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            wait_for(lambda: "Cannot store step second" in self.d.read_log(), 30, "the store to fail")
            self.assertIn("full; what was stored before is intact", self.d.read_log())
            self.d.status()  # still serving, with the step in memory
            self.assertEqual(self.d.show("second")["state"], "ended")
            os.unlink(os.path.join(small, "filler"))
            self.restart(f"database={small}/pdimon.db")
            listed = [s["step"] for s in json.loads(self.d.pdimon("steps", "--all", "--json").stdout)]
            self.assertIn("first", listed)
        finally:
            if self.d:
                self.d.stop()
                self.d = None
            subprocess.run(["umount", "-l", small])


if __name__ == "__main__":
    unittest.main()

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
import os
import re
import signal
import subprocess
import tempfile
import unittest

from harness import BUILD, PDIMON, DaemonTest, wait_for

RANKS = 2


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
        # (a process gone before it joined has no maps left to name its call sites from)
        third = self.calls(f"third-{impl}", named=False)
        self.assertEqual(sorted(str(pid) for pid, _ in third.values()), sorted(ranks))

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

    def test_attached_at_exec_openmpi(self):
        self.check("openmpi")

    def test_attached_at_exec_mpich(self):
        self.check("mpich")


if __name__ == "__main__":
    unittest.main()

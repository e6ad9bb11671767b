#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_budget.py -- the overhead budget on a real polling program, and where entry probes go.

Run one case as: test_budget.py Budget.test_polling_burst_degraded_then_restored
Asserts the mechanism and the marks in the model, never timings.
"""
import json
import os
import re
import signal
import subprocess
import unittest

from harness import BUILD, PDIMON, Daemon, DaemonTest, find_ranks, kill_tree, mpirun, wait_for

PROBE_FLOOR = os.path.join(BUILD, "bench/probe-floor")


class Budget(DaemonTest):
    settings = ("max_overhead_pct=3",)

    def check_burst(self, impl):
        # 1 s quiet, 2 s polling MPI_Test + MPI_Iprobe flat out, 6 s quiet
        r = self.d.pdimon("run", "--step", f"poll-{impl}", "--", *mpirun(impl, 2, "poll", "phases", 1, 2, 6),
                          check=False, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        log = self.d.read_log()
        self.assertRegex(log, r"A probed call costs [0-9.]+ us here")
        s = self.d.show(f"poll-{impl}")
        self.assertEqual(len(s["tasks"]), 2)
        for t in s["tasks"]:
            # when not, what the loop and the budget were doing says why
            self.assertEqual(t["events_lost"], 0, "\n".join(
                line for line in log.splitlines() if re.search(r"busy|lost|->|cannot", line))[-3000:])
            marks = [u for u in t["unobserved"] if u["function"] in ("MPI_Test", "MPI_Iprobe")]
            self.assertTrue(marks, f"rank {t['rank']}: the polling calls were not degraded: {t['unobserved']}")
            # the task's own rate when the level was set; 0 only where it took the level from the
            # other rank before its own rate was measured (2 slots): the log says so
            if marks[0]["rate_per_s"] == 0:
                self.assertRegex(log, rf"pid {t['pid']} \(rank \d+\) of step \S+: {marks[0]['function']} full -> "
                                 r"[^\n]*, as rank \d+ of its step needs",
                                 f"rank {t['rank']}: a mark at 0 calls/s that no other rank made: {marks} " +
                                 "; ".join(line for line in log.splitlines() if " -> " in line)[-1500:])
            for u in marks:
                self.assertIn(u["level"], ("entry only", "sampled", "detached"))
                self.assertIsNotNone(u["to_ns"], "every mark ends (restored, or the task ended)")
                self.assertGreater(u["to_ns"], u["from_ns"])
            # the quiet calls kept their probes: the last quiet phase's exchanges are all there
            self.assertFalse([u for u in t["unobserved"] if u["function"] in ("MPI_Sendrecv", "MPI_Bcast")])
            # degraded, then restored while the task still ran (a "-> full" line for its pid)
            pid = t["pid"]
            self.assertRegex(log, rf"pid {pid} .*: MPI_(Test|Iprobe) full -> ")
            self.assertRegex(log, rf"pid {pid} .*: MPI_(Test|Iprobe) [a-z0-9/ ]+ -> full")
        rep = self.d.pdimon("report", f"poll-{impl}", "--json").stdout
        self.assertIn('"unobserved"', rep)
        self.assertIn("max_overhead_pct", self.d.pdimon("analyze", f"poll-{impl}", check=False).stdout +
                      self.d.pdimon("report", f"poll-{impl}").stdout)

    def test_polling_burst_degraded_then_restored(self):
        self.check_burst("openmpi")

    def test_polling_burst_degraded_then_restored_mpich(self):
        self.check_burst("mpich")

    def test_step_ranks_share_levels(self):
        """Only rank 0 polls flat out; rank 1 polls once a millisecond, far within its budget. Both
        get the same level for the polling calls, from the same slot on, and back together: the
        ranks of a step are seen alike, so their models stay comparable."""
        r = self.d.pdimon("run", "--step", "lopsided", "--", *mpirun("openmpi", 2, "poll", "lopsided", 1, 2, 6),
                          check=False, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        log = self.d.read_log()
        tasks = {t["rank"]: t for t in self.d.show("lopsided")["tasks"]}
        self.assertEqual(sorted(tasks), [0, 1])
        marks = {rank: [(u["function"], u["level"], u["observed_share"], u["from_ns"], u["to_ns"])
                        for u in t["unobserved"] if u["function"] in ("MPI_Test", "MPI_Iprobe")]
                 for rank, t in tasks.items()}
        self.assertTrue(marks[0], f"rank 0's polling calls were not degraded: {tasks[0]['unobserved']}")
        self.maxDiff = None
        # the same levels from the same instants; a mark still open when its task ended was closed
        # then, which differs by rank
        self.assertEqual([m[:4] for m in marks[1]], [m[:4] for m in marks[0]],
                         "rank 1 is seen as rank 0 is, from the same slots")
        self.assertRegex(log, rf"pid {tasks[1]['pid']} .*: MPI_(Test|Iprobe) full -> .*, as rank 0 of its step needs")
        # restored together, if rank 0's polling calls were restored before the ranks ended (a
        # detached function is re-measured 2 and 3 s after its detach, then every 4 s only)
        # (before either rank ended: the log is in order)
        first_end = min(log.find(f"Task pid {t['pid']} ") for t in tasks.values())
        for fn in ("MPI_Test", "MPI_Iprobe"):
            restored = {rank: bool(re.search(rf"pid {t['pid']} .*: {fn} [a-z0-9/ ]+ -> full", log[:first_end]))
                        for rank, t in tasks.items()}
            self.assertEqual(restored[1], restored[0], f"rank 1's {fn} restored with rank 0's")
            if restored[0]:
                self.assertEqual([m for m in marks[1] if m[0] == fn], [m for m in marks[0] if m[0] == fn],
                                 f"{fn} restored at the same instant")

    def test_levels_learned_per_program(self):
        """A program whose polling calls had to be degraded starts its next step at those levels:
        its first task from its join (the mark begins before any rate of this run is measured,
        rate 0), the step's other tasks as their step's; the log says where the level came from."""
        for step in ("learn-1", "learn-2"):
            r = self.d.pdimon("run", "--step", step, "--", *mpirun("openmpi", 2, "poll", "phases", 0, 2, 0),
                              check=False, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
        log = self.d.read_log()
        first = {t["pid"] for t in self.d.show("learn-1")["tasks"]}
        tasks = self.d.show("learn-2")["tasks"]
        self.assertEqual(len(tasks), 2)
        self.assertFalse([p for p in first if re.search(rf"pid {p} .*as earlier runs of its program needed", log)],
                         "the first step had nothing to learn from")
        learned = [t for t in tasks if re.search(rf"pid {t['pid']} .*: MPI_(Test|Iprobe) full -> [a-z0-9/ ]+: 0 "
                                                 r"calls/s.*, as earlier runs of its program needed", log)]
        self.assertEqual(len(learned), 1, "the step's first task starts at the program's levels")
        for t in tasks:
            marks = [u for u in t["unobserved"] if u["function"] in ("MPI_Test", "MPI_Iprobe")]
            self.assertTrue(marks, f"rank {t['rank']}: {t['unobserved']}")
            # from the start: before this run measured a rate (the first task's), or as its step's
            self.assertTrue(any(u["rate_per_s"] == 0 for u in marks) or t is not learned[0],
                            f"rank {t['rank']}: {marks}")
        self.assertRegex(log, rf"pid {next(t['pid'] for t in tasks if t is not learned[0])} .*: "
                              r"MPI_(Test|Iprobe) full -> .*, as rank \d+ of its step needs")

    def test_levels_learned_survive_a_restart(self):
        """The levels a program needed are kept in the store: a pdimond restarted between two
        steps of the program starts the second's first task degraded from its join, and its
        marks, in show and in the report, say so."""
        poll = mpirun("openmpi", 2, "poll", "phases", 0, 2, 0)
        r = self.d.pdimon("run", "--step", "kept-1", "--", *poll, check=False, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(self.d.read_log(), r"MPI_(Test|Iprobe) full -> ", "the first step needed a level")
        self.d.stop()  # what it learned is written before pdimond exits, if not already
        self.d = Daemon(*self.settings, database=self.d.database)
        self.assertIn("Budget levels learned by earlier runs: 1 programs", self.d.read_log())
        r = self.d.pdimon("run", "--step", "kept-2", "--", *poll, check=False, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        log = self.d.read_log()
        tasks = self.d.show("kept-2")["tasks"]
        learned = [t for t in tasks if re.search(rf"pid {t['pid']} .*: MPI_(Test|Iprobe) full -> [a-z0-9/ ]+: 0 "
                                                 r"calls/s.*, as earlier runs of its program needed", log)]
        self.assertEqual(len(learned), 1, "the step's first task starts at the program's levels")
        marks = [u for u in learned[0]["unobserved"] if u["from_earlier_runs"]]
        self.assertTrue(marks, learned[0]["unobserved"])
        self.assertEqual({u["why"] for u in marks}, {"degraded from the start: earlier runs of this program needed it"})
        self.assertIn("earlier runs of this program needed it", self.d.pdimon("show", "kept-2").stdout)
        said = rf"ranks \[{learned[0]['rank']}\] were degraded from the start: earlier runs of this program needed it"
        self.assertRegex(self.d.pdimon("analyze", "kept-2").stdout, said)
        self.assertRegex(self.d.pdimon("analyze", "kept-2", "--json").stdout, said)
        self.assertRegex(self.d.pdimon("report", "kept-2", "--json").stdout,
                         r'"why": ?"degraded from the start: earlier runs of this program needed it"')

    def test_ranks_killed_while_probes_change(self):
        """The budget attaches a task's new probes on a worker and switches to them on the loop:
        ranks killed in a polling burst, as their probes change, leave no link open (each change
        in flight finds its task gone and closes what it attached), pdimond serves on and, in
        the sanitizer build, neither leaks nor touches freed memory."""
        # pdimond's own links (MPI_Init traps, the trapped libraries' probes kept registered, the
        # exec and thread-exit programs) are made before it is ready; every other is a task's
        before = self.d.bpf_links()
        p = self.spawn([PDIMON, "run", "--step", "killed", "--", *mpirun("openmpi", 2, "poll", "phases", 0, 60, 0)])
        ranks = find_ranks("poll.openmpi", 2, p.pid)
        # killed as the budget changes their probes: the slot it degrades them in
        wait_for(lambda: all(re.search(rf"pid {r} .*: MPI_(Test|Iprobe) full -> ", self.d.read_log()) for r in ranks),
                 120, "the budget to degrade both ranks' polling calls", longest_pause=0.005)
        for r in ranks:
            os.kill(r, signal.SIGKILL)
        kill_tree(p)
        wait_for(lambda: all(t["state"] == "ended" for t in self.d.show("killed")["tasks"]), 60,
                 "the killed ranks' tasks to end")
        wait_for(lambda: self.d.bpf_links() == before, 60,
                 f"pdimond's BPF links back to {before} (the killed ranks' closed)")
        self.assertTrue(self.d.status()["events"] > 0)
        self.assertNotIn("cannot switch", self.d.read_log())


class BudgetHeld(DaemonTest):
    """Calls in flight while the budget turns their function's probes off (tests/mpi/held.c): ranks
    0 and 3 wait in an MPI_Allreduce entered while it was fully probed, and ranks 1 and 2 call it
    flat out (until rank 3 is let go) so that a budget this small keeps it detached for the step. A replaced return probe is
    then the only one that can see those calls end: it is held while they are in flight, 2 s at
    most. Rank 0, let go during the hold, ends its call with its return (or, had the hold run out,
    is no longer shown in it); rank 3, held past it, is found waiting in MPI_Allreduce by its stack,
    then computing once let go. Return probes closed at the switch fail both: the thread's
    in-flight entry stays "in MPI_Allreduce" for good."""
    settings = ("max_overhead_pct=0.0005", "log_level=debug")

    def tasks(self):
        return {t["rank"]: t for t in self.d.show("held")["tasks"]}

    def reported(self, rank):
        """Rank RANK in a live report, whose stack walks place tasks the probes cannot."""
        rep = json.loads(self.d.pdimon("report", "held", "--json").stdout)
        return next(t for t in rep["tasks"] if t["rank"] == rank)

    def test_held_call_ends_or_is_placed_by_stack(self):
        before = self.d.bpf_links()
        job = self.spawn([PDIMON, "run", "--step", "held", "--", *mpirun("openmpi", 4, "held", 300)])
        find_ranks("held.openmpi", 4, job.pid)
        # both waiting ranks entered their call while it was fully probed: seen in it
        by = wait_for(lambda: (lambda ts: len(ts) == 4 and all(ts[r]["current"].get("in_mpi") == "MPI_Allreduce"
                                                                for r in (0, 3)) and ts)(self.tasks()),
                      60, "ranks 0 and 3 seen waiting in MPI_Allreduce")
        pid = {r: t["pid"] for r, t in by.items()}
        for r in (1, 2):
            os.kill(pid[r], signal.SIGUSR2)

        def said(rank, what):
            return re.search(rf"pid {pid[rank]} \(rank {rank}\): {what}", self.d.read_log())
        # detached for every rank: once rank 0's probes of it are off, the return probes replaced
        # under its call are held for it (on a loaded node the budget may sample it first, and the
        # hold then begins at that switch: the line is said once a hold, so either order)
        wait_for(lambda: said(0, r"\d+ replaced return probes held for calls in flight") and
                 re.search(rf"pid {pid[0]} .*: MPI_Allreduce [a-z0-9/ ]+ -> detached", self.d.read_log()), 60,
                 "rank 0's MPI_Allreduce detached and its replaced return probes held:\n" + self.d.read_log()[-3000:])
        # let go once the entry links replaced with them are closed (a grace period: return links
        # closed at the switch would be gone by then)
        switch_at = len(self.d.read_log())
        wait_for(lambda: re.search(r"\d+ probe links closed in", self.d.read_log()[switch_at:]), 60,
                 "the replaced entry links closed")
        calls = self.tasks()[0]["calls"]
        os.kill(pid[1], signal.SIGUSR1)
        # its call ends with its return (one call more), or the hold ran out first and said so
        wait_for(lambda: self.tasks()[0]["calls"] == calls + 1 or said(0, "replaced return probes closed after"), 60,
                 "rank 0's Allreduce to end")
        wait_for(lambda: "in_mpi" not in self.tasks()[0]["current"], 60,
                 f"rank 0, let go, no longer shown in MPI_Allreduce: {self.tasks()[0]}")

        # rank 3 waits on past the hold: its call is said to have lost its return, and its stack
        # places it where it is
        wait_for(lambda: said(3, r"replaced return probes closed after [0-9.]+ s with MPI_Allreduce in flight"), 60,
                 "rank 3's hold to run out:\n" + self.d.read_log()[-3000:])
        wait_for(lambda: (lambda t: t["by_stack"] and t["status"] in ("blocked", "in_mpi") and
                          t["where"].startswith("MPI_Allreduce") and t)(self.reported(3)), 60,
                 f"rank 3 placed in MPI_Allreduce by its stack: {self.reported(3)}")
        os.kill(pid[2], signal.SIGUSR1)
        wait_for(lambda: (lambda t: t["status"] == "computing" and t)(self.reported(3)), 60,
                 f"rank 3, let go, found computing: {self.reported(3)}")

        # the held return probes go with their tasks
        kill_tree(job)
        wait_for(lambda: all(t["state"] == "ended" for t in self.d.show("held")["tasks"]), 60, "the tasks to end")
        wait_for(lambda: self.d.bpf_links() == before, 60, f"pdimond's BPF links back to {before}")


class Placement(unittest.TestCase):
    """Entry probes sit on an emulated instruction wherever that is safe, on both MPI libraries."""

    def placements(self, impl):
        p = subprocess.Popen(mpirun(impl, 2, "poll", "phases", 30, 0, 0), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            pid = find_ranks(f"poll.{impl}", 2, p.pid)[0]

            def listed():
                r = subprocess.run([PROBE_FLOOR, "--list", "--pid", str(pid)], capture_output=True, text=True,
                                   timeout=60)
                return r.stdout if r.returncode == 0 and r.stdout else None
            out = wait_for(listed, 60, "the ranks to map their MPI library")
        finally:
            kill_tree(p)
        rows = {}
        for line in out.splitlines():
            _, fn, start, probe, skipped, kind, first, why = line.split("\t")
            rows.setdefault(fn, []).append((int(start, 16), int(probe, 16), int(skipped), kind, first, why))
        return rows

    def check(self, rows):
        for fn, probes in rows.items():
            for start, probe, skipped, kind, first, why in probes:
                self.assertEqual(probe - start, skipped, fn)
                if first == "emulated":
                    self.assertEqual(skipped, 0, f"{fn}: an emulated first instruction stays probed")
                if kind == "single-stepped":
                    self.assertEqual(skipped, 0, fn)
                    self.assertNotEqual(why, "-", f"{fn}: a single-stepped probe says why")
                if fn in ("MPI_Init", "MPI_Init_thread"):
                    self.assertEqual(skipped, 0, "MPI_Init stays where the start-up trap is")

    def test_openmpi(self):
        rows = self.placements("openmpi")
        self.check(rows)
        # Open MPI 4.1 begins these with a RIP-relative mov, then push: moved to the push
        for fn in ("MPI_Waitall", "MPI_Test"):
            start, probe, skipped, kind, first, why = rows[fn][0]
            self.assertEqual((first, kind), ("single-stepped", "emulated"), fn)
            self.assertGreater(skipped, 0, fn)
        self.assertGreater(len(rows), 60)

    def test_mpich(self):
        rows = self.placements("mpich")
        self.check(rows)
        # MPICH's MPI_File_read_all begins with sub $8,%rsp: it moves the stack, so it stays
        for start, probe, skipped, kind, first, why in rows["MPI_File_read_all"]:
            self.assertEqual(skipped, 0)
            self.assertIn("stack", why)
        self.assertGreater(len(rows), 60)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_hang.py -- the hang judge of a real pdimond on a real MPI job, through its bad inputs
(issue 11): a task held by a debugger is said once and never called hung; a task stopped by a
signal is, and the site's command runs for it, and the metrics file counts it; a pdimond
restarted in the middle of that hang takes it over without a second alarm or a second command,
and the end of the hang is said once. The user's side is the job's own output (mpirun's, which
carries the tasks' stderr); nobody asks pdimon. The false-alarm rate is raised to one per
step-hour so that the test is short: the thresholds are the same model's.

HangBudget: the judge of a step whose probes the overhead budget thinned (max_overhead_pct low):
a rank spins for good outside MPI while the others wait for it in an MPI_Allreduce that their
sampled probes mostly did not see begin. The judge places such ranks by their live stacks, as
the report does, so the hang is told with the spinning rank alone as least progressed.
HangDetached: the same with MPI_Allreduce detached, so that the waiting ranks' entries are not
seen and their stacks place them.

HangThreaded: ranks that call MPI from a second thread, one of them stopped: the others are
told waiting in their call (the judge reads every thread's entry, not the main thread's alone).

Run as: test_hang.py HangFaults.test_debugger_stop_and_restart
        test_hang.py HangThreaded.test_mpi_thread_not_main
        test_hang.py HangBudget.test_thinned_waiters_placed_by_stack
        test_hang.py HangDetached.test_detached_waiters_placed_by_stack
"""
import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from harness import BUILD, PDIMON, Daemon, SystemBus, find_ranks, kill_tree, mpirun, wait_for

RANKS = 4
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH = 0x4206, 0x4207, 17
WALL = 0x40000000  # waitpid's __WALL: the tracee is not our child


def ptrace(request, pid):
    if libc.ptrace(ctypes.c_long(request), ctypes.c_long(pid), None, None) != 0:
        raise OSError(ctypes.get_errno(), f"ptrace({request:#x}, {pid})")


class Lines:
    """A process's standard error, collected line by line as it comes."""

    def __init__(self, stream):
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(line.rstrip("\n") for line in stream), daemon=True).start()

    def count(self, text):
        return sum(text in line for line in list(self.lines))

    def text(self):
        return "\n".join(self.lines)


class DaemonAndJob(unittest.TestCase):
    """A pdimond on a private bus with a database of its own (settings from settings()), and the
    job a test starts (self.job), killed at the end."""

    def settings(self):
        return ()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pdimon-hang-")
        os.chmod(self.tmp, 0o755)
        self.bus = SystemBus(self.tmp)
        self.db = os.path.join(self.tmp, "pdimon.db")
        self.job = None
        self.d = Daemon(*self.settings(), bus=self.bus, database=self.db)

    def tearDown(self):
        try:
            if self.job:
                kill_tree(self.job)
        finally:
            if self.d:
                self.d.stop()
            self.bus.stop()


class HangFaults(DaemonAndJob):
    def settings(self):
        self.metrics = os.path.join(self.tmp, "pdimon.prom")
        self.ran = os.path.join(self.tmp, "on-hang.ran")
        command = os.path.join(self.tmp, "on-hang")
        with open(command, "w") as f:
            f.write(f'#!/bin/sh\necho "$1 $2 $PDIMON_STEP $PDIMON_HEALTH $PDIMON_SINCE" >> {self.ran}\n')
        os.chmod(command, 0o755)
        return ("hang_timeout_ms=0", "hang_false_alarm_rate=1", "checkpoint_s=1", "on_hang=command",
                f"on_hang_command={command}", f"metrics_path={self.metrics}", "metrics_interval_s=1")

    def health(self, step):
        return {s["step"]: s for s in json.loads(self.d.pdimon("steps", "--json").stdout)}[step]

    def test_debugger_stop_and_restart(self):
        self.job = subprocess.Popen([PDIMON, "run", "--step", "w", "--", *mpirun("openmpi", RANKS, "waits", 600)],
                                    env=self.d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
        out = Lines(self.job.stderr)
        ranks = find_ranks("waits.openmpi", RANKS, self.job.pid)
        wait_for(lambda: self.d.show("w")["tasks"] and all(t["calls"] > 100 for t in self.d.show("w")["tasks"]), 60,
                 "the ranks to run their loop")

        # a debugger holds rank 1 for longer than the step would be judged hung after
        ptrace(PTRACE_SEIZE, ranks[1])
        ptrace(PTRACE_INTERRUPT, ranks[1])
        os.waitpid(ranks[1], WALL)
        held = time.monotonic()
        wait_for(lambda: "a debugger holds rank 1" in self.d.read_log(), 30, "the debugger said")
        # the scenario itself: held past the time the step would be judged hung after
        hung_after = json.loads(self.d.pdimon("show", "w", "--json").stdout)["health"]["hung_after_s"]
        while time.monotonic() - held < hung_after + 5:
            time.sleep(1)
        ptrace(PTRACE_DETACH, ranks[1])
        self.assertEqual(self.d.read_log().count("a debugger holds"), 1, "said once")
        self.assertEqual(out.count("looks hung"), 0, out.text())
        self.assertEqual(self.health("w")["health"], "ok")

        # then rank 2 is stopped by a signal: that is a hang, told on the job's own output
        wait_for(lambda: all(t["calls"] > 0 for t in self.d.show("w")["tasks"]), 30, "the step to move again")
        os.kill(ranks[2], signal.SIGSTOP)
        stopped = time.monotonic()
        wait_for(lambda: out.count("looks hung since"), 120, "the hung line on the job's output:\n" + out.text())
        self.assertRegex(out.text(), r"pdimon: step w looks hung since .*: least progressed \[2\] on \S+, stopped by a signal")
        h = self.health("w")
        self.assertEqual(h["health"], "hung")
        # the site's command ran for it, once, with the step's name and since when
        wait_for(lambda: os.path.exists(self.ran), 30, "the on-hang command to run")
        with open(self.ran) as f:
            self.assertEqual(f.read().split(), ["w", "hung", "w", "hung", str(h["health_since"])])
        # the metrics file counts it, as status does: read by Prometheus's own parser
        wait_for(lambda: 'pdimon_steps{health="hung"} 1' in self.read_metrics(), 30, "the metrics file:\n" +
                 self.read_metrics())
        m = self.metric_samples()
        status = self.d.status()
        self.assertEqual(m[("pdimon_steps", (("health", "hung"),))], 1)
        self.assertEqual(m[("pdimon_health_alarms_total", (("health", "hung"),))], 1)
        self.assertEqual(m[("pdimon_tasks_monitored", ())], RANKS)
        self.assertEqual(m[("pdimon_steps_monitored", ())], 1)
        self.assertGreater(m[("pdimon_events_total", ())], 0)
        self.assertIn(("pdimon_events_per_second", ()), m)
        self.assertIn(("pdimon_events_lost_total", ()), m)
        # the detection latency: one hang, announced after the stop and before it was read here
        self.assertEqual(m[("pdimon_detection_latency_seconds_count", ())], 1)
        latency = m[("pdimon_detection_latency_seconds_sum", ())]
        self.assertGreater(latency, 0)
        self.assertLessEqual(latency, time.monotonic() - stopped + 1)
        self.assertEqual(m[("pdimon_detection_latency_seconds_max", ())], latency)
        # status --json carries the same numbers
        self.assertEqual(status["steps_by_health"]["hung"], 1)
        self.assertEqual(status["health_alarms"]["hung"], 1)
        self.assertEqual(status["detection_latency_s"]["count"], 1)
        self.assertAlmostEqual(status["detection_latency_s"]["max"], latency, places=2)
        self.assertEqual(status["probes_degraded"], m[("pdimon_probes_degraded", ())])
        self.assertEqual(status["tasks_running"], m[("pdimon_tasks_monitored", ())])

        # pdimond restarts in the middle of the hang: the new one takes it over, says nothing new
        self.d.stop()
        self.d = Daemon(*self.settings(), bus=self.bus, database=self.db)
        wait_for(lambda: "not announced again" in self.d.read_log(), 60, "the hang taken over:\n" + self.d.read_log())
        self.assertEqual(self.health("w")["health"], "hung")
        self.assertEqual(self.health("w")["health_since"], h["health_since"])
        # its end is said once, by the new daemon
        os.kill(ranks[2], signal.SIGCONT)
        wait_for(lambda: out.count("makes progress again"), 60, "the end of the hang:\n" + out.text())
        self.assertEqual(out.count("looks hung since"), 1, out.text())
        self.assertEqual(self.health("w")["health"], "ok")
        self.assertNotIn("health_since", self.health("w"))
        self.assertEqual(out.count("makes progress again"), 1, out.text())
        with open(self.ran) as f:
            self.assertEqual(len(f.readlines()), 1, "the command ran once for the one hang")

    def metric_samples(self):
        """The metrics file as Prometheus reads it: {(name, labels): value}; a file it cannot
        parse fails the test."""
        from prometheus_client.parser import text_string_to_metric_families
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in text_string_to_metric_families(self.read_metrics()) for s in f.samples}

    def read_metrics(self):
        try:
            with open(self.metrics) as f:
                return f.read()
        except FileNotFoundError:
            return ""


class HangThreaded(DaemonAndJob):
    """Ranks whose MPI thread is not their main one (MPI_THREAD_MULTIPLE: the loop runs in a
    second thread while the main thread waits in pthread_join()): when one is stopped, the others
    are told waiting in their MPI call, read from that thread's entry, not sleeping after it (the
    main thread's, which is never in MPI)."""

    def settings(self):
        return ("hang_timeout_ms=0", "hang_false_alarm_rate=1")

    def test_mpi_thread_not_main(self):
        cmd = mpirun("openmpi", RANKS, "waits", 600)
        cmd[1:1] = ["-x", "WAITS_THREAD"]
        self.job = subprocess.Popen([PDIMON, "run", "--step", "th", "--", "env", "WAITS_THREAD=1", *cmd],
                                    env=self.d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
        out = Lines(self.job.stderr)
        find_ranks("waits.openmpi", RANKS, self.job.pid)
        tasks = wait_for(lambda: len(self.d.show("th")["tasks"]) == RANKS and
                         all(t["calls"] > 100 for t in self.d.show("th")["tasks"]) and self.d.show("th")["tasks"], 60,
                         "the ranks to run their loop:\n" + out.text())
        # each rank's calls come from a thread of its own: not the main one
        for t in tasks:
            with open(f"/proc/{t['pid']}/task/{t['pid']}/wchan") as f:
                main_wchan = f.read()
            self.assertGreater(len(os.listdir(f"/proc/{t['pid']}/task")), 1)
            print(f"rank {t['rank']}: main thread in {main_wchan}", file=sys.stderr)
        stopped = next(t for t in tasks if t["rank"] == 2)
        os.kill(stopped["pid"], signal.SIGSTOP)
        wait_for(lambda: out.count("looks hung since"), 180, "the hung line on the job's output:\n" + out.text() +
                 "\n" + self.d.read_log()[-3000:])
        line = next(x for x in out.lines if "looks hung since" in x)
        print(line, file=sys.stderr)
        self.assertRegex(line, r"least progressed \[2\] on \S+, stopped by a signal .*; the others wait in \S+", line)
        self.assertNotIn("sleeping", line)
        # the view reads the same thread: the others are in their Allreduce
        for t in self.d.show("th")["tasks"]:
            if t["rank"] != 2:
                self.assertEqual(t["current"].get("in_mpi"), "MPI_Allreduce", t["current"])
        os.kill(stopped["pid"], signal.SIGCONT)


class HangBudget(DaemonAndJob):
    """Asserts what the design guarantees under noise: the hang is told, and the rank named least
    progressed is the spinning one alone (never a rank waiting in a call its probes missed)."""
    AGENT = os.path.join(BUILD, "tests/faults/libpdimon-spin-agent.so")  # bench/apps/spin_agent.c
    SPIN_SIGNAL = signal.SIGRTMIN + 7

    def settings(self):
        # a budget so low that the loop's MPI_Allreduce (a few hundred a second) is sampled
        return ("hang_timeout_ms=0", "hang_false_alarm_rate=1", "max_overhead_pct=0.02", "log_level=debug")

    def spin_while_unseen(self, level, quiet_s):
        """Rank 2 of the waits loop spins for good once the budget has every rank's MPI_Allreduce
        at LEVEL and no call was seen for QUIET_S (the probes are off); returns the hung line."""
        self.assertTrue(os.path.exists(self.AGENT), f"{self.AGENT}: build tests/faults first")
        cmd = mpirun("openmpi", RANKS, "waits", 600)
        cmd[1:1] = ["-x", "LD_PRELOAD", "-x", "PDIMON_SPIN_MS"]
        # the agent is preloaded from mpirun down, not into pdimon itself: the sanitizer build's
        # pdimon would refuse to start with a library ahead of its runtime
        self.job = subprocess.Popen([PDIMON, "run", "--step", "thin", "--", "env", f"LD_PRELOAD={self.AGENT}",
                                     "PDIMON_SPIN_MS=-1", "WAITS_SLICE=sleep", *cmd], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True, env=self.d.env)
        out = Lines(self.job.stderr)
        find_ranks("waits.openmpi", RANKS, self.job.pid)

        def thinned():
            tasks = self.d.show("thin")["tasks"]
            marks = [[u for u in t["unobserved"] if u["function"] == "MPI_Allreduce" and u["to_ns"] is None]
                     for t in tasks]
            return len(tasks) == RANKS and all(m and m[-1]["level"] == level for m in marks) and tasks
        tasks = wait_for(thinned, 120, f"the budget to make every rank's MPI_Allreduce {level}:\n" +
                         self.d.read_log()[-3000:])
        # the probes are on in a part of the time only: spun while they are off (no call seen
        # for a while), the others enter the Allreduce that waits for it unseen, most likely
        seen = {"calls": None, "at": 0.0}

        def probes_off():
            calls, now = sum(t["calls"] for t in self.d.show("thin")["tasks"]), time.monotonic()
            if calls != seen["calls"]:
                seen.update(calls=calls, at=now)
            return now - seen["at"] >= quiet_s
        wait_for(probes_off, 60, "a stretch where the probes are off", longest_pause=0.02)
        spinner = next(t for t in tasks if t["rank"] == 2)
        # the agent spins in its signal handler once the main thread is in the program's own code
        libc = ctypes.CDLL(None, use_errno=True)
        self.assertEqual(libc.syscall(234, spinner["pid"], spinner["pid"], int(self.SPIN_SIGNAL)), 0)  # tgkill
        wait_for(lambda: out.count("looks hung since"), 180, "the hung line on the job's output:\n" + out.text() +
                 "\n" + self.d.read_log()[-3000:])
        line = next(x for x in out.lines if "looks hung since" in x)
        print(line, file=sys.stderr)
        self.assertRegex(line, r"least progressed \[2\] on \S+, computing", line)
        self.assertEqual(out.count("looks hung since"), 1, out.text())
        # the judge read the spinning rank's stack on a worker: its last seen call was made while
        # its probes were thinned, so they alone could not tell it from one waiting unseen
        self.assertRegex(self.d.read_log(), r"rank 2, still and shown computing by its thinned probes, is outside MPI by its stack")
        return line

    def test_thinned_waiters_placed_by_stack(self):
        self.spin_while_unseen("sampled", 0.2)
        # and what it said is kept with rank 2's model, for the ended step's diagnosis
        # (model/stack_seen.h): the report shows it
        rep = json.loads(self.d.pdimon("report", "thin", "--json").stdout)
        seen = next(t for t in rep["tasks"] if t["rank"] == 2)["stack_seen"]
        self.assertIn("computing outside MPI", [x["doing"] for x in seen], seen)


class HangDetached(HangBudget):
    """The waiting ranks placed by their stacks: a budget so low that the loop's MPI_Allreduce is
    detached on every rank (no call seen but in one re-measuring slot of 1/32 s every 4 s), so
    the ranks that wait for the spinning one entered their call unseen: their stacks are read
    and place them in it. (With the sampled budget above, their entries were seen in every run.)
    A slot opening in the few ms between the spin and their entries would see them: about 1 run
    in 1000."""

    def settings(self):
        return ("hang_timeout_ms=0", "hang_false_alarm_rate=1", "max_overhead_pct=0.0005", "log_level=debug")

    def test_thinned_waiters_placed_by_stack(self):
        self.skipTest("HangBudget's own")

    def test_detached_waiters_placed_by_stack(self):
        self.spin_while_unseen("detached", 0.3)
        self.assertRegex(self.d.read_log(), r"rank [013], still and shown computing by its thinned probes, is in "
                                            r"MPI_Allreduce by its stack")


if __name__ == "__main__":
    unittest.main()

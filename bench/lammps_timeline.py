# SPDX-License-Identifier: GPL-2.0-only
# lammps_timeline.py -- where a monitored LAMMPS crack run's time goes: the budget's level changes per rank, its link swaps, pdimond's CPU.
"""lammps_timeline.py -- where a monitored LAMMPS crack run's time goes.

Runs LAMMPS crack on 4 ranks (as bench/lammps.py does) RUNS times one after the other under one
pdimond of its own (default budget, log_level=debug, extra --set SETTING as given), and prints for
each run a timeline, in seconds since the run was started:
  - LAMMPS's own lines that mark its phases (setup, the start of the timed loop, "Loop time");
  - every budget level change, per rank ("rank 0 MPI_Send full -> sampled 1/2");
  - per 0.25 s: the probe changes attached on workers and the links closed on workers, and
    pdimond's CPU time by thread (the loop "pdimond", the pools' threads by their names);
  - with sysctl kernel.bpf_stats_enabled=1, the traps at probed functions' entries (runs of the
    entry program, also on links no longer or not yet current) against the calls pdimond took in;
and a summary: totals of attaches, closes and pdimond CPU during the run, and the loop time.
The first run after pdimond starts is the cold one; the later ones are warm. Run it under
`flock -x /work/locks/heavy.lock` for figures that mean something.
"""
import argparse
import collections
import os
import re
import subprocess
import tempfile
import threading
import time

from benchlib import BenchError, Daemon, bpf_prog_stats, bpf_stats_enabled, end_run, spawn, threads_cpu
from lammps import LOOP, lammps_cmd

BUCKET = 0.25
LEVEL = re.compile(r"pid (\d+) \(rank (-?\d+)\) of step \S+: (MPI_\w+) ([a-z0-9/ ]+) -> ([a-z0-9/ ]+): ([0-9]+) calls/s"
                   r"(.*as rank (-?\d+) of its step needs)?")
ATTACHED = re.compile(r"new probes attached in (?P<ms>[0-9.]+) ms")
CLOSED = re.compile(r"(?P<links>\d+) probe links closed in (?P<ms>[0-9.]+) ms")
# the budget's replaced return links held for a call in flight (daemon/probe/retired.c), and how
# long (the second line, from the build that looks when the awaited call ends)
HELD = re.compile(r"replaced return probes held for calls in flight")
LET_GO = re.compile(r"replaced return probes let go after (?P<ms>[0-9.]+) ms held")
LAMMPS_MARKS = ("Setting up Verlet run", "Step ", "Loop time", "Total wall time")


def thread_cpu(pid):
    """{thread name: CPU seconds} of the threads of PID (threads of one name summed)."""
    out = collections.Counter()
    for name, secs in threads_cpu(pid).values():
        out[re.sub(r"[-_]?\d+$", "", name)] += secs
    return out


class Recorder:
    """Stamps new log lines of the daemon, LAMMPS's output lines and pdimond's CPU by thread."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.t0 = time.monotonic()
        self.lines = []   # (t, "log"|"lmp", text)
        self.cpu = []     # (t, Counter)
        self.stop = threading.Event()
        self.log = open(daemon.log_path)
        self.log.seek(0, os.SEEK_END)

    def now(self):
        return time.monotonic() - self.t0

    def poll(self):
        while not self.stop.is_set():
            for line in self.log.readlines():
                self.lines.append((self.now(), "log", line.rstrip()))
            self.cpu.append((self.now(), thread_cpu(self.daemon.proc.pid)))
            time.sleep(0.05)
        for line in self.log.readlines():
            self.lines.append((self.now(), "log", line.rstrip()))
        self.cpu.append((self.now(), thread_cpu(self.daemon.proc.pid)))

    def read_job(self, stream):
        for line in iter(stream.readline, b""):
            self.lines.append((self.now(), "lmp", line.decode(errors="replace").rstrip()))


def traps(daemon):
    """(entry program runs, events, {program: (run_time_ns, run_cnt)}): the first counts every trap
    at a probed function's entry, current link or not (kernel.bpf_stats_enabled), the second the
    calls pdimond took in, the third the entry and return programs' run time and runs."""
    stats = bpf_prog_stats(daemon.proc.pid) if bpf_stats_enabled() else {}
    return stats.get("mpi_enter", (0, 0))[1], daemon.status()["events"], stats


def one_run(daemon, tag):
    tmp = tempfile.mkdtemp(prefix="pdimon-timeline-")
    before = traps(daemon)
    rec = Recorder(daemon)
    poller = threading.Thread(target=rec.poll)
    poller.start()
    job = None
    try:
        job = spawn(daemon.pdimon_args("run", "--step", tag, "--") + lammps_cmd(), stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, cwd=tmp, env=daemon.env)
        reader = threading.Thread(target=rec.read_job, args=(job.stdout,))
        reader.start()
        job.wait(timeout=900)
        reader.join()
        time.sleep(1.0)  # closes still running on workers after the step ends show in the log
    finally:
        rec.stop.set()
        poller.join()
        rec.log.close()
        end_run(None, job, tmp)
    after = traps(daemon)
    rec.entry_runs, rec.events = after[0] - before[0], after[1] - before[1]
    rec.prog_ns = {}
    for name in ("mpi_enter", "mpi_exit"):
        (t0, c0), (t1, c1) = before[2].get(name, (0, 0)), after[2].get(name, (0, 0))
        if c1 > c0:
            rec.prog_ns[name] = ((t1 - t0) / (c1 - c0), c1 - c0)
    return rec


class Swaps:
    """The probe changes of one kind (attached, or closed, on workers): per bucket, in all, and the
    ms the log says they took."""

    def __init__(self, pattern):
        self.pattern = pattern
        self.per_bucket = collections.Counter()
        self.n = self.links = 0
        self.ms = 0.0

    def take(self, t, text):
        m = self.pattern.search(text)
        if m:
            self.per_bucket[int(t / BUCKET)] += 1
            self.n += 1
            self.ms += float(m.group("ms"))
            self.links += int(m.groupdict().get("links") or 0)
        return m


def cpu_rows(samples):
    """pdimond's CPU by thread name per bucket, [(bucket, Counter)], and in all."""
    prev = samples[0][1] if samples else collections.Counter()
    cur_bucket, acc, total, rows = 0, collections.Counter(), collections.Counter(), []
    for t, c in samples[1:]:
        b = int(t / BUCKET)
        if b != cur_bucket:
            rows.append((cur_bucket, acc))
            cur_bucket, acc = b, collections.Counter()
        for k in c:
            d = c[k] - prev.get(k, 0)
            if d > 0:
                acc[k] += d
                total[k] += d
        prev = c
    rows.append((cur_bucket, acc))
    return rows, total


def report(rec, title):
    print(f"== {title}")
    attached, closed = Swaps(ATTACHED), Swaps(CLOSED)
    loop_time, changes, held, held_ms = None, 0, 0, []
    for t, src, text in rec.lines:
        if src == "lmp":
            m = LOOP.search(text)
            if m:
                loop_time = float(m.group(1))
            if text.startswith("Step "):
                print(f"{t:7.2f}  lammps   (thermo header: the timed loop begins)")
            elif text.startswith(LAMMPS_MARKS):
                print(f"{t:7.2f}  lammps   {text[:90]}")
            continue
        m = LEVEL.search(text)
        if m:
            changes += 1
            by = f" (for rank {m.group(8)})" if m.group(8) else ""
            print(f"{t:7.2f}  rank {m.group(2)}   {m.group(3)} {m.group(4)} -> {m.group(5)} at {m.group(6)}/s{by}")
        elif HELD.search(text):
            held += 1
        elif LET_GO.search(text):
            held_ms.append(float(LET_GO.search(text).group("ms")))
        elif not attached.take(t, text):
            closed.take(t, text)
    print(f"{'t':>7}  {'attach':>6} {'close':>6}  pdimond CPU ms by thread")
    rows, total = cpu_rows(rec.cpu)
    for b, acc in rows:
        if acc or attached.per_bucket[b] or closed.per_bucket[b]:
            cpu = ", ".join(f"{k} {v * 1000:.0f}" for k, v in sorted(acc.items()))
            print(f"{b * BUCKET:7.2f}  {attached.per_bucket[b]:>6} {closed.per_bucket[b]:>6}  {cpu}")
    print(f"summary: loop time {loop_time} s; level changes {changes}; probe changes attached on workers "
          f"{attached.n} ({attached.ms:.0f} ms of attaching); close jobs {closed.n} ({closed.links} links, "
          f"{closed.ms:.0f} ms of closing); pdimond CPU during the run "
          + ", ".join(f"{k} {v:.2f} s" for k, v in sorted(total.items())), flush=True)
    if getattr(rec, "entry_runs", 0):
        print(f"traps at function entries {rec.entry_runs} (BPF entry program runs, current links or not), "
              f"calls taken in {rec.events}; BPF run time per run "
              + ", ".join(f"{k} {ns:.0f} ns ({n} runs)" for k, (ns, n) in rec.prog_ns.items()), flush=True)
        if rec.events:
            print("runs per call taken in: "
                  + ", ".join(f"{k} {n / rec.events:.2f}" for k, (ns, n) in rec.prog_ns.items()), flush=True)
    held_ms.sort()
    print(f"return links held for a call in flight {held} times"
          + (f"; let go after {held_ms[len(held_ms) // 2]:.1f} ms (median), {held_ms[-1]:.1f} ms at most"
             if held_ms else ""), flush=True)
    return loop_time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=2, help="runs one after the other (the first is cold)")
    ap.add_argument("--set", action="append", default=[], metavar="SETTING", help="a pdimond setting")
    ap.add_argument("--build", help="the build directory of the pdimond to use")
    args = ap.parse_args()
    kw = {"build": os.path.abspath(args.build)} if args.build else {}
    daemon = Daemon("log_level=debug", *args.set, **kw)
    try:
        for r in range(args.runs):
            report(one_run(daemon, f"timeline-{os.getpid()}-{r}"), f"run {r + 1} ({'cold' if r == 0 else 'warm'})")
    finally:
        rc = daemon.stop()
    if rc != 0:
        raise BenchError(f"pdimond exited with {rc}")


if __name__ == "__main__":
    try:
        main()
    except (BenchError, OSError, subprocess.SubprocessError) as e:
        raise SystemExit(f"lammps_timeline: {e}")

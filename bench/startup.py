#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""startup.py -- how long a monitored step's processes are held at MPI_Init (issue 10, 3e).

    python3 bench/startup.py [--ranks 1,4,16,64] [--rounds 3] [--impl openmpi,mpich] [--baseline BUILD]

One private pdimond for the whole run. For each MPI implementation and rank count, ROUNDS times
in turn: bench/startup.IMPL unmonitored, then under `pdimon run` (a new step each time). pdimond
logs, per process, "held at MPI_Init for X ms" (from the trap to its SIGCONT) or "not held" (its
probes were attached when it executed the program: daemon/probe/startup.c). A step waits for its
slowest rank inside MPI_Init, so a step's delay is its largest hold. Round 1 is a program's first
run on the node (its probes go where its ELF says it links MPI); the later rounds, where the first
run's ranks were attached.
Also printed: MPI_Init's own duration per rank (CLOCK_MONOTONIC around it, median), unmonitored
and monitored, which the machine's load moves far more than the hold.
Target: a step's delay <= 20 ms + 2 ms per rank.
With --baseline BUILD, a pdimond of that build directory runs beside ours (each watches only its
own steps), and every round also runs the step under it, right after ours: both columns side by
side, from the same minutes of the machine's load.
With --set log_level=debug, also printed per pdimond: its probe link closes over the run (how
many, their total and largest time on a worker): a step's closes run on while the next step
starts, and take the kernel's dup_mmap_sem as its attaches do. --keep-log PATH keeps our
pdimond's log at PATH and the baseline's at PATH.base.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def command(impl, n):
    exe = os.path.join(bl.BUILD, f"bench/startup.{impl}")
    if impl == "openmpi":
        return bl.MPIRUN + ["-np", str(n), exe]
    return ["mpirun.mpich", "-np", str(n), exe]


def init_times(out):
    """{pid: MPI_Init duration in ms} from the program's 'init RANK PID BEFORE AFTER' lines."""
    t = {}
    for line in out.splitlines():
        if line.startswith("init "):
            _, _, pid, before, after = line.split()
            t[int(pid)] = (int(after) - int(before)) / 1e6
    return t


def holds(log, pids):
    """{pid: ms held at MPI_Init} (0 when not held) from pdimond's log."""
    h = {}
    for pid in pids:
        m = re.search(rf"pid {pid} held at MPI_Init for ([0-9.]+) ms", log)
        if m:
            h[pid] = float(m.group(1))
        elif re.search(rf"pid {pid} joined at MPI_Init, not held", log):
            h[pid] = 0.0
    return h


def run(cmd, env, timeout):
    p = bl.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        bl.kill_tree(p)
        raise bl.BenchError(f"{' '.join(cmd[:4])}... did not finish within {timeout}s")
    if p.returncode != 0:
        raise bl.BenchError(f"{' '.join(cmd[:4])}... failed ({p.returncode}): {err[-400:]}")
    return out


class Figures:
    """One daemon's figures for one implementation and rank count, over the rounds."""

    def __init__(self):
        self.first, self.later, self.init, self.not_held = None, [], [], [0, 0]

    def add(self, rnd, h, it, n):
        delay = max(h.values())
        self.init += it.values()
        if rnd == 0:
            self.first = delay
        else:
            self.later.append(delay)
            self.not_held[0] += sum(1 for v in h.values() if v == 0)
            self.not_held[1] += n
        return delay

    def cells(self):
        nan = float("nan")
        return (self.first, statistics.median(self.later) if self.later else nan,
                max(self.later) if self.later else nan, self.not_held, bl.median(self.init))


def monitored(d, tag, step, impl, n, rnd, fig, timeout):
    out = run(d.pdimon_args("run", "--step", step, "--") + command(impl, n), d.env, timeout)
    it = init_times(out)
    h = holds(d.read_log(), it.keys())
    if len(h) != n:
        raise bl.BenchError(f"{tag}: {impl} {n} ranks: pdimond logged {len(h)} of {n} joins")
    delay = fig.add(rnd, h, it, n)
    print(f"{tag:4s} {impl} {n:3d} ranks round {rnd + 1}: step delay {delay:7.1f} ms, held "
          f"{sum(1 for v in h.values() if v > 0)}/{n}, holds (ms) "
          f"{' '.join(f'{v:.1f}' for v in sorted(h.values()))}", flush=True)


def closes(log):
    """The link closes pdimond logged at debug level: (how many, total ms, largest ms)."""
    ms = [float(x) for x in re.findall(r"\d+ probe links closed in ([0-9.]+) ms on a worker", log)]
    return len(ms), sum(ms), max(ms, default=0.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="1,4,16,64")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--impl", default="openmpi,mpich")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--baseline", metavar="BUILD", help="also under the pdimond of this build directory")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a pdimond setting, e.g. log_level=debug (repeatable)")
    ap.add_argument("--keep-log", metavar="PATH", help="copy pdimond's log to PATH at the end")
    a = ap.parse_args()
    ranks = [int(x) for x in a.ranks.split(",")]
    d = bl.Daemon(*a.set)
    base = bl.Daemon(*a.set, build=os.path.abspath(a.baseline)) if a.baseline else None
    rows = []
    try:
        step = 0
        for impl in a.impl.split(","):
            for n in ranks:
                plain_init, this, before = [], Figures(), Figures()
                for rnd in range(a.rounds):
                    plain_init += init_times(run(command(impl, n), d.env, a.timeout)).values()
                    step += 1
                    monitored(d, "this", f"startup-{step}", impl, n, rnd, this, a.timeout)
                    if base:
                        monitored(base, "base", f"startup-{step}-b", impl, n, rnd, before, a.timeout)
                rows.append((impl, n, bl.median(plain_init), this.cells(), before.cells() if base else None))
    finally:
        logs = {"this": d.read_log(), "base": base.read_log() if base else None}
        if a.keep_log:
            for tag, path in (("this", a.keep_log), ("base", a.keep_log + ".base")):
                if logs[tag] is not None:
                    with open(path, "w") as f:
                        f.write(logs[tag])
        rc = d.stop()
        if base:
            base.stop()
    print()
    print("step delay = the largest hold at MPI_Init among the step's processes (ms); target 20 + 2 x ranks")
    print(f"{'impl':8s} {'ranks':>5s} {'target':>7s} {'pdimond':>7s} {'1st run':>8s} {'later med':>9s} "
          f"{'later max':>9s} {'not held':>9s} {'init plain':>10s} {'init mon':>9s}")
    for impl, n, pi, this, before in rows:
        for tag, (first, med, mx, nh, mi) in (("this", this), ("base", before)) if before else (("this", this),):
            print(f"{impl:8s} {n:5d} {20 + 2 * n:7d} {tag:>7s} {first:8.1f} {med:9.1f} {mx:9.1f} "
                  f"{nh[0]:4d}/{nh[1]:<4d} {pi:10.1f} {mi:9.1f}")
    for tag, log in logs.items():
        n, total, most = closes(log or "")
        if n:
            print(f"{tag}: {n} probe link closes on workers, {total / 1e3:.1f} s in all, the longest {most:.1f} ms")
    return 0 if rc in (0, None) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except bl.BenchError as e:
        print(f"startup.py: {e}", file=sys.stderr)
        sys.exit(1)

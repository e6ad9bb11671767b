#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""overhead.py -- what pdimond with its default budget costs a polling program and hpcc (issue 10, 3b-c).

    python3 bench/overhead.py [--rounds 5] [--only poll,hpcc] [--poll-iters 300000] [--hpcc-n 1000]

One private pdimond (max_overhead_pct 3, the default) for the whole run. Each round runs,
interleaved, unmonitored then under `pdimon run`:
  poll   tests/mpi/poll.openmpi work ITERS SLICE on 2 ranks: MPI_Test + MPI_Iprobe between
         slices of computation (5000 steps, a few us: 200k+ calls per second per rank, about 8 s
         here; with slices of 200 steps it makes millions of calls per second and ends in
         0.1 s, before any budget has seen a full period of it); timed by the program itself
         (poll_s, the polling loop alone, between two barriers)
  hpcc   Debian's hpcc on 4 ranks (Open MPI), HPL order N; timed as the whole run's wall time
  nwchem Debian's NWChem (Fortran, Global Arrays over MPI) on 4 ranks: B3LYP/6-31G energy of
         benzene; timed as the whole run's wall time (not in the default set: --only nwchem)
With --baseline BUILD, each round also runs the program under a pdimond of that build (e.g.
main's), to compare a change side by side. Prints per program the medians, the median of
per-round ratios monitored/unmonitored (target <= 1.03), the calls per second per rank of the
polling program, pdimond's events per program, each daemon's events lost and longest loop
wake-up (loop_max_wakeup_ms: how long the ring buffer and the bus waited at worst), and the
per-call costs pdimond measured at start-up (its log). Ratios, never assertions.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import BUILD, MPIRUN, BenchError, Daemon, kill_tree, median, spawn  # noqa: E402
from trends_hpcc import HPCC, hpccinf  # noqa: E402

POLL = os.path.join(BUILD, "tests/mpi/poll.openmpi")
NWCHEM = "/usr/bin/nwchem.openmpi"
NWCHEM_INPUT = """start benzene
geometry units angstrom
  C  0.000  1.396 0.0
  C  1.209  0.698 0.0
  C  1.209 -0.698 0.0
  C  0.000 -1.396 0.0
  C -1.209 -0.698 0.0
  C -1.209  0.698 0.0
  H  0.000  2.479 0.0
  H  2.147  1.240 0.0
  H  2.147 -1.240 0.0
  H  0.000 -2.479 0.0
  H -2.147 -1.240 0.0
  H -2.147  1.240 0.0
end
basis
  * library 6-31g
end
dft
  xc b3lyp
end
task dft energy
"""


def timed(cmd, env, cwd, timeout):
    """Run CMD; (its stdout, wall seconds)."""
    job = None
    t0 = time.monotonic()
    try:
        job = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
        out, err = job.communicate(timeout=timeout)
        if job.returncode != 0:
            raise BenchError(f"{' '.join(cmd[:6])}... failed ({job.returncode}): {err[-600:]}")
        return out, time.monotonic() - t0
    finally:
        if job:
            kill_tree(job)  # mpirun's session, whatever is left of it


def run_poll(d, monitored, tag, a, work):
    cmd = MPIRUN + ["-np", "2", POLL, "work", str(a.poll_iters), str(a.poll_slice)]
    if monitored:
        cmd = d.pdimon_args("run", "--step", tag, "--") + cmd
    out, _ = timed(cmd, d.env, work, 600)
    m = re.search(r"poll_s=([0-9.]+) polls=\d+ calls_per_s_per_rank=([0-9.]+)", out)
    if not m:
        raise BenchError(f"poll printed no result: {out[-300:]}")
    return float(m.group(1)), float(m.group(2))


def run_hpcc(d, monitored, tag, a, work):
    hpccinf(os.path.join(work, "hpccinf.txt"), a.hpcc_n, 4)
    cmd = MPIRUN + ["-np", "4", HPCC]
    if monitored:
        cmd = d.pdimon_args("run", "--step", tag, "--") + cmd
    _, wall = timed(cmd, d.env, work, 900)
    return wall, 0.0


def run_nwchem(d, monitored, tag, a, work):
    inp = os.path.join(work, "benzene.nw")
    with open(inp, "w") as f:
        f.write(NWCHEM_INPUT)
    cmd = MPIRUN + ["-np", "4", "--wdir", work, NWCHEM, inp]
    if monitored:
        cmd = d.pdimon_args("run", "--step", tag, "--") + cmd
    out, wall = timed(cmd, d.env, work, 900)
    if "Total DFT energy" not in out:
        raise BenchError(f"NWChem printed no energy: {out[-300:]}")
    return wall, 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="poll,hpcc")
    ap.add_argument("--poll-iters", type=int, default=1000000)
    ap.add_argument("--poll-slice", type=int, default=5000, help="computation steps between two polls")
    ap.add_argument("--hpcc-n", type=int, default=1000)
    ap.add_argument("--baseline", metavar="BUILD", help="also under the pdimond of this build directory")
    a = ap.parse_args()
    progs = {"poll": run_poll, "hpcc": run_hpcc, "nwchem": run_nwchem}
    which = a.only.split(",")
    res = {p: {"plain": [], "pdimond": [], "baseline": [], "rate": [], "events": 0} for p in which}
    work = tempfile.mkdtemp(prefix="pdimon-overhead-")
    d = Daemon()
    base = None
    try:
        if a.baseline:
            base = Daemon(build=os.path.abspath(a.baseline))
        for r in range(a.rounds):
            for p in which:
                plain, rate = progs[p](d, False, None, a, work)
                before = d.status()["events"]
                mon, _ = progs[p](d, True, f"{p}-{os.getpid()}-{r}", a, work)
                res[p]["events"] += d.status()["events"] - before
                res[p]["plain"].append(plain)
                res[p]["pdimond"].append(mon)
                res[p]["rate"].append(rate)
                line = f"round {r + 1} {p}: unmonitored {plain:.3f} s, pdimond {mon:.3f} s"
                if base:
                    res[p]["baseline"].append(progs[p](base, True, f"{p}-{os.getpid()}-{r}-b", a, work)[0])
                    line += f", baseline {res[p]['baseline'][-1]:.3f} s"
                print(line, flush=True)
        status = d.status()
        base_status = base.status() if base else None
        costs = d.calibration()
    finally:
        rc = d.stop()
        if base:
            base.stop()
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{'program':8s} {'plain_s':>9s} {'pdimond_s':>9s} {'ratio':>7s}  (medians of {a.rounds}; target <= 1.03)")
    for p in which:
        ratio = median([m / u for u, m in zip(res[p]["plain"], res[p]["pdimond"])])
        print(f"{p:8s} {median(res[p]['plain']):9.3f} {median(res[p]['pdimond']):9.3f} {ratio:7.3f}")
        if base:
            bratio = median([m / u for u, m in zip(res[p]["plain"], res[p]["baseline"])])
            print(f"{p + '@base':8s} {median(res[p]['plain']):9.3f} {median(res[p]['baseline']):9.3f} {bratio:7.3f}")
    if "poll" in which:
        print(f"poll: {median(res['poll']['rate']):.0f} MPI calls per second per rank unmonitored")
    for p in which:
        print(f"{p}: pdimond events per monitored run {res[p]['events'] / a.rounds:.0f}")
    # the longest the loop was kept from the ring buffer and the bus in one wake-up
    print(f"pdimond: events={status['events']} events_lost={status['events_lost']} "
          f"loop_max_wakeup_ms={status.get('loop_max_wakeup_ms', 0):.1f}")
    if base_status:
        print(f"baseline: events={base_status['events']} events_lost={base_status['events_lost']} "
              f"loop_max_wakeup_ms={base_status.get('loop_max_wakeup_ms', 0):.1f}")
    print(f"pdimond: {costs}")
    return 0 if rc in (0, None) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"overhead.py: {e}", file=sys.stderr)
        sys.exit(1)

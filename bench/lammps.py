# SPDX-License-Identifier: GPL-2.0-only
# lammps.py -- what monitoring costs a real application: LAMMPS "crack" on 4 ranks, with and without pdimond.
"""lammps.py -- what monitoring costs a real application: LAMMPS "crack" on 4 ranks, with and without pdimond.

Each round runs, interleaved, in a fresh temporary directory:
  unmonitored  mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 lmp -in in.crack -log none
  pdimond      pdimon run -- (the same command), pdimond with its default budget (max_overhead_pct 3)
  nobudget     the same under a second pdimond with max_overhead_pct=off (every call probed)
and, unless --no-floor, "floor": the same command with bench/probe-floor's do-nothing programs
attached to the 4 ranks as soon as they map their MPI library (before the timed run loop).
With --baseline BUILD, also "baseline": under a pdimond (default budget) of another build, e.g.
main's, to compare a change side by side; with --baseline-off that pdimond has the budget off too,
and its time added per call is set against the floor's as the nobudget variant's is.
The two pdimonds serve all rounds: round 1 is each one's cold run (a pdimond learns the levels
its budget needed per program), the later rounds warm, and both are printed apart. Prints LAMMPS's "Loop time" medians, the slowdown ratios
(median of per-round ratios to the unmonitored run; target <= 1.03 for pdimond), the time added
per call against the floor's with the budget off (target <= 1.10x the floor's) and the
daemons' events and events_lost (from `pdimon status --json`) at the end.

With --record FILE, instead: one monitored run under a pdimond of its own started with
--set record=FILE, which then holds one struct pdi_call_record per ingested call (for
`bench-ingest --replay FILE`).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import (end_run, MPIRUN, PROBE_FLOOR, BenchError, Daemon, cpu_seconds, find_procs, kill_tree, median,
                      read_line, spawn, wait_exit)

INPUT = "/usr/share/lammps/examples/crack/in.crack"
NRANKS = 4
LOOP = re.compile(r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps")


def lammps_cmd():
    return MPIRUN + ["-np", str(NRANKS), "lmp", "-in", INPUT, "-log", "none"]


def attach_floor(job):
    """probe-floor on the ranks of JOB, retried until they map their MPI library (at most 60 s)."""
    pids = find_procs("lmp", NRANKS, job.pid)
    deadline = time.monotonic() + 60
    while True:
        floor = spawn([PROBE_FLOOR, "--max-seconds", "900", "--pid", *map(str, pids)],
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = read_line(floor, 60, "probe-floor")
        except BenchError:
            line = ""
        if line.startswith("attached "):
            return floor
        try:
            _, err = floor.communicate(timeout=30)  # closes its stdin: it detaches and exits
        except subprocess.TimeoutExpired:
            kill_tree(floor)
            raise BenchError("probe-floor did not exit")
        err = err.decode()
        if job.poll() is not None or "No such process" in err:
            raise FloorLate(f"probe-floor could not attach before the run ended: {err}")
        if time.monotonic() > deadline:
            raise BenchError(f"probe-floor could not attach: {err}")
        time.sleep(0.01)


class FloorLate(BenchError):
    """The run ended (or its ranks went) before probe-floor could attach: a run to make again."""


def run_once(variant, daemon, tag, tries=3):
    """One crack run; returns (loop time in s, steps). A floor run the floor missed is made again."""
    for i in range(tries):
        try:
            return run_once_try(variant, daemon, tag)
        except FloorLate:
            if i == tries - 1:
                raise


def run_once_try(variant, daemon, tag):
    tmp = tempfile.mkdtemp(prefix="pdimon-lammps-")
    cmd = lammps_cmd()
    if variant in ("pdimond", "nobudget", "baseline"):
        cmd = daemon.pdimon_args("run", "--step", tag, "--") + cmd
    job = floor = None
    try:
        job = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp, env=daemon.env)
        if variant == "floor":
            floor = attach_floor(job)
        out, err = job.communicate(timeout=900)
        if job.returncode != 0:
            raise BenchError(f"{variant} LAMMPS run failed ({job.returncode}):\n{out.decode()[-2000:]}\n"
                             f"{err.decode()[-2000:]}")
        m = LOOP.search(out.decode())
        if not m or int(m.group(2)) != NRANKS:
            raise BenchError(f"no 'Loop time' from LAMMPS:\n{out.decode()[-2000:]}")
        return float(m.group(1)), int(m.group(3))
    except subprocess.TimeoutExpired:
        raise BenchError(f"{variant} LAMMPS run did not finish within 900 s")
    finally:
        end_run(floor, job, tmp)


def record(path):
    daemon = Daemon(f"record={path}")
    try:
        loop, steps = run_once("pdimond", daemon, f"record-{os.getpid()}")
        status = daemon.status()
    finally:
        rc = daemon.stop()
    if rc != 0:
        raise BenchError(f"pdimond exited with {rc}")
    size = os.path.getsize(path)
    print(f"recorded LAMMPS crack ({steps} steps, loop time {loop:.3f} s): {path}, {size} bytes, "
          f"events {status['events']}, events_lost {status['events_lost']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-floor", action="store_true", help="leave out the empty-probe variant")
    ap.add_argument("--record", metavar="FILE", help="record one monitored run into FILE, nothing else")
    ap.add_argument("--baseline", metavar="BUILD", help="also under the pdimond of this build directory")
    ap.add_argument("--baseline-off", action="store_true", help="that pdimond with max_overhead_pct=off")
    args = ap.parse_args()
    if not shutil.which("lmp") or not os.path.exists(INPUT):
        sys.exit(f"lammps.py: needs lmp and {INPUT}: apt-get install lammps lammps-examples (LAMMPS is "
                 "kept out of scripts/install-deps.sh: it is reserved for evaluating the diagnosis, and no "
                 "test uses it)")
    if args.record:
        record(os.path.abspath(args.record))
        return

    variants = (["unmonitored"] + ([] if args.no_floor else ["floor"]) + ["pdimond", "nobudget"] +
                (["baseline"] if args.baseline else []))
    res = {v: [] for v in variants}
    daemon = Daemon()
    daemons = {"unmonitored": daemon, "floor": daemon, "pdimond": daemon}
    try:
        daemons["nobudget"] = Daemon("max_overhead_pct=off")
        if args.baseline:
            daemons["baseline"] = Daemon(*(["max_overhead_pct=off"] if args.baseline_off else []),
                                         build=os.path.abspath(args.baseline))
        print(f"lammps: {args.rounds} rounds of crack on {NRANKS} ranks, interleaved {', '.join(variants)}",
              flush=True)
        watched = [v for v in ("pdimond", "nobudget", "baseline") if v in daemons]
        before = {v: daemons[v].status() for v in watched}
        cpu0 = {v: cpu_seconds(daemons[v].proc.pid) for v in watched}
        for r in range(args.rounds):
            row = []
            for v in variants:
                loop, steps = run_once(v, daemons[v], f"lammps-{os.getpid()}-{r}")
                res[v].append(loop)
                row.append(f"{v} {loop:.3f}")
            print(f"  round {r + 1}: loop time s: " + ", ".join(row), flush=True)
        status = {v: daemons[v].status() for v in watched}
        cpu = {v: cpu_seconds(daemons[v].proc.pid) - cpu0[v] for v in watched}
        costs = daemon.calibration()
        changes = daemon.budget_changes()
    finally:
        for d in {id(d): d for d in daemons.values()}.values():
            rc = d.stop()
            if rc != 0:
                print(f"lammps: warning: pdimond exited with {rc}", file=sys.stderr)

    # every call is an event with the budget off: the calls a run makes
    events = status["nobudget"]["events"] - before["nobudget"]["events"]
    per_rank_run = max(events / NRANKS / args.rounds, 1)  # 1: pdimond saw nothing (a library it does not trap)
    print(f"{'variant':<12} {'loop_time_s':>12}   (medians of {args.rounds}, {steps} steps)")
    for v in variants:
        print(f"{v:<12} {median(res[v]):>12.3f}")
    added = {}
    for v in variants[1:]:
        slow = median([b / a for a, b in zip(res["unmonitored"], res[v])])
        added[v] = median([b - a for a, b in zip(res["unmonitored"], res[v])])
        target = " (target <= 1.03)" if v == "pdimond" or (v == "baseline" and not args.baseline_off) else ""
        print(f"slowdown {v}={slow:.3f}{target}, added {added[v]:.3f} s per run, "
              f"{added[v] * 1e9 / per_rank_run:.0f} ns per call per rank")
    # the budget learns each program's levels (budget_programs): its first run after pdimond
    # started pays what the later ones do not, and is said apart
    for v in ("pdimond", "nobudget", "baseline"):
        if v in res and args.rounds > 1:
            ratios = [b / a for a, b in zip(res["unmonitored"], res[v])]
            print(f"{v}: cold (round 1, its pdimond's first run) {ratios[0]:.3f}, warm (rounds 2-{args.rounds}, "
                  f"median) {median(ratios[1:]):.3f}")
    if "floor" in added and added["floor"] > 0:
        print(f"added per call, pdimond with the budget off / floor = {added['nobudget'] / added['floor']:.3f} "
              f"(target <= 1.10)")
        if args.baseline_off:
            print(f"added per call, baseline pdimond with the budget off / floor = "
                  f"{added['baseline'] / added['floor']:.3f}")
    for v in watched:
        ev = status[v]['events'] - before[v]['events']
        print(f"{v} status: events={ev} events_lost={status[v]['events_lost']}, daemon CPU {cpu[v]:.2f} s "
              f"({cpu[v] * 1e9 / max(ev, 1):.0f} ns per event)")
    print(f"{per_rank_run:.0f} calls per rank per run")
    print(f"pdimond: {costs}")
    print("pdimond budget level changes (all runs): " +
          (", ".join(f"{k} x{v}" for k, v in sorted(changes.items())) or "none"))


if __name__ == "__main__":
    try:
        main()
    except (BenchError, OSError, subprocess.SubprocessError) as e:
        sys.exit(f"lammps: {e}")

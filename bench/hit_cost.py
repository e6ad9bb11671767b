# SPDX-License-Identifier: GPL-2.0-only
"""hit_cost.py -- what a probe hit adds to each probed MPI function, entry probe on the first byte vs placed.

For Open MPI and MPICH, rounds interleave three runs of `hitcost CALLS WAITFILE` on one rank:
unprobed, with bench/probe-floor --at-start (every entry probe on its function's first byte:
before the placement of entry probes), and with probe-floor as pdimond places them (after:
past a single-stepped first instruction onto an emulated one where safe). Prints per function
the medians of ns per call added over the unprobed run of the same round, before and after,
and the kind of instruction each entry probe sits on (probe-floor --list).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from benchlib import (end_run, BUILD, PROBE_FLOOR, BenchError, find_procs, median, read_line, spawn, wait_exit)

VARIANTS = ("unprobed", "at_start", "placed")
MPIRUN = {"openmpi": ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "1"],
          "mpich": ["mpirun.mpich", "-np", "1"]}


def run_once(impl, variant, calls, kinds):
    tmp = tempfile.mkdtemp(prefix="pdimon-hitcost-")
    waitfile = os.path.join(tmp, "go")
    exe = os.path.join(BUILD, f"bench/hitcost.{impl}")
    job = floor = None
    try:
        job = spawn(MPIRUN[impl] + [exe, str(calls), waitfile], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True, cwd=tmp)
        pid = find_procs(os.path.basename(exe), 1, job.pid)[0]
        if variant != "unprobed":
            flags = ["--at-start"] if variant == "at_start" else []
            if variant not in kinds:
                r = subprocess.run([PROBE_FLOOR, "--list", *flags, "--pid", str(pid)], capture_output=True,
                                   text=True, timeout=60)
                kinds[variant] = {l.split("\t")[1]: l.split("\t")[5] for l in r.stdout.splitlines()}
            floor = spawn([PROBE_FLOOR, *flags, "--max-seconds", "600", "--pid", str(pid)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            line = read_line(floor, 60, "probe-floor")
            if not line.startswith("attached "):
                raise BenchError(f"probe-floor said {line!r}")
        open(waitfile, "w").close()
        wait_exit(job, 600, "hitcost")
        out, err = job.communicate(timeout=30)
        if job.returncode != 0:
            raise BenchError(f"hitcost failed ({job.returncode}): {err}")
        return {m.group(1): float(m.group(2)) for m in re.finditer(r"hitcost (\S+) ([0-9.]+)", out)}
    finally:
        end_run(floor, job, tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--impl", choices=("openmpi", "mpich", "both"), default="both")
    args = ap.parse_args()
    impls = ("openmpi", "mpich") if args.impl == "both" else (args.impl,)
    for impl in impls:
        res = {v: [] for v in VARIANTS}
        kinds = {}
        for _ in range(args.rounds):
            for v in VARIANTS:
                res[v].append(run_once(impl, v, args.calls, kinds))
        print(f"{impl}: ns added per call by an empty entry+return probe pair (medians of {args.rounds} "
              f"interleaved rounds, {args.calls} calls each)")
        print(f"  {'function':<16} {'unprobed_ns':>11} {'before_ns':>10} {'after_ns':>9} {'after/before':>12}"
              f"  entry instruction before -> after")
        for fn in res["unprobed"][0]:
            base = median([r[fn] for r in res["unprobed"]])
            before = median([b[fn] - a[fn] for a, b in zip(res["unprobed"], res["at_start"])])
            after = median([b[fn] - a[fn] for a, b in zip(res["unprobed"], res["placed"])])
            ratio = after / before if before > 0 else float("nan")
            print(f"  {fn:<16} {base:>11.1f} {before:>10.1f} {after:>9.1f} {ratio:>12.2f}  "
                  f"{kinds.get('at_start', {}).get(fn, '?')} -> {kinds.get('placed', {}).get(fn, '?')}")
        sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except (BenchError, OSError, subprocess.SubprocessError) as e:
        sys.exit(f"hit_cost: {e}")

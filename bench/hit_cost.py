# SPDX-License-Identifier: GPL-2.0-only
"""hit_cost.py -- what a probe hit adds to each probed MPI function, entry probe on the first byte vs placed.

For Open MPI and MPICH, rounds interleave three runs of `hitcost CALLS WAITFILE` on one rank:
unprobed, with bench/probe-floor --at-start (every entry probe on its function's first byte:
before the placement of entry probes), and with probe-floor as pdimond places them (after:
past a single-stepped first instruction onto an emulated one where safe), and under a pdimond
with the budget off (`pdimon attach`: its real programs, placed alike). Times are the rank's CPU
time (hitcost.c), which other processes' load hardly moves. Prints per function the medians of
ns per call added over the unprobed run of the same round, before, after and with pdimond, the
kind of instruction each entry probe sits on (probe-floor --list), and pdimond's own CPU time
per event it took (the daemon's share of a call: on a node whose cores the job fills, the job
pays it too). With --baseline BUILD, a second pdimond from another build takes the same calls
in the same rounds (variant "baseline"): its ns per call added are printed beside this build's, and
the two daemons' CPU per event side by side with their ratio. With sysctl kernel.bpf_stats_enabled=1,
the run time of each BPF program per run (entry and return apart) is printed for the floor and each
pdimond: where the per-call difference lies, apart from the trap both pay.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from benchlib import (end_run, BUILD, PROBE_FLOOR, BenchError, Daemon, bpf_prog_stats, bpf_stats_enabled, cpu_seconds,
                      find_procs, median, read_line, spawn, wait_exit, wait_for)

VARIANTS = ("unprobed", "at_start", "placed", "pdimond")
NFUNCS = 17  # the functions hitcost.c times, each CALLS times
PROGS = {"floor": ("empty_enter", "empty_exit"), "pdimond": ("mpi_enter", "mpi_exit")}
MPIRUN = {"openmpi": ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "1"],
          "mpich": ["mpirun.mpich", "-np", "1"]}


def run_once(impl, variant, calls, kinds, daemon, tag):
    tmp = tempfile.mkdtemp(prefix="pdimon-hitcost-")
    waitfile = os.path.join(tmp, "go")
    exe = os.path.join(BUILD, f"bench/hitcost.{impl}")
    job = floor = None
    try:
        job = spawn(MPIRUN[impl] + [exe, str(calls), waitfile], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True, cwd=tmp)
        pid = find_procs(os.path.basename(exe), 1, job.pid)[0]
        if variant in ("pdimond", "baseline"):
            before, cpu0 = daemon.status()["events"], cpu_seconds(daemon.proc.pid)
            bpf0 = bpf_prog_stats(daemon.proc.pid)
            daemon.pdimon("attach", "--step", tag, "--pid", pid)
        elif variant != "unprobed":
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
        res = {m.group(1): float(m.group(2)) for m in re.finditer(r"hitcost (\S+) ([0-9.]+)", out)}
        if variant in ("pdimond", "baseline"):
            # every timed call reaches the daemon (budget off): its CPU time per event, once drained
            n = wait_for(lambda: (lambda e: e if e >= NFUNCS * calls else None)(daemon.status()["events"] - before),
                         60, f"pdimond to take the {NFUNCS * calls} calls")
            res["daemon_ns_per_event"] = (cpu_seconds(daemon.proc.pid) - cpu0) * 1e9 / n
            res.update(prog_ns(bpf0, bpf_prog_stats(daemon.proc.pid), PROGS["pdimond"]))
        elif floor:
            res.update(prog_ns({}, bpf_prog_stats(floor.pid), PROGS["floor"]))
        return res
    finally:
        end_run(floor, job, tmp)


def prog_ns(before, after, names):
    """{"bpf NAME": ns per run} of the BPF programs NAMES between two bpf_prog_stats() readings."""
    out = {}
    for n in names:
        (t0, c0), (t1, c1) = before.get(n, (0, 0)), after.get(n, (0, 0))
        if c1 > c0 and t1 > t0:
            out[f"bpf {n}"] = (t1 - t0) / (c1 - c0)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--impl", choices=("openmpi", "mpich", "both"), default="both")
    ap.add_argument("--baseline", metavar="BUILD", help="a second pdimond's build directory, timed alike")
    args = ap.parse_args()
    variants = VARIANTS + (("baseline",) if args.baseline else ())
    impls = ("openmpi", "mpich") if args.impl == "both" else (args.impl,)
    for impl in impls:
        res = {v: [] for v in variants}
        kinds = {}
        daemon = Daemon("max_overhead_pct=off")
        base = None
        try:
            if args.baseline:
                base = Daemon("max_overhead_pct=off", build=os.path.abspath(args.baseline))
            for r in range(args.rounds):
                for v in variants:
                    res[v].append(run_once(impl, v, args.calls, kinds, base if v == "baseline" else daemon,
                                           f"hitcost-{os.getpid()}-{impl}-{r}"))
            calibration = daemon.calibration()
        finally:
            daemon.stop()
            if base:
                base.stop()
        print(f"{impl}: CPU ns added per call by an empty entry+return probe pair and by pdimond's (medians of "
              f"{args.rounds} interleaved rounds, {args.calls} calls each)")
        print(f"  {'function':<16} {'unprobed_ns':>11} {'before_ns':>10} {'after_ns':>9} {'after/before':>12}"
              f" {'pdimond_ns':>10} {'pdimond/after':>13}  entry instruction before -> after")
        for fn in (f for f in res["unprobed"][0] if f != "daemon_ns_per_event"):
            base = median([r[fn] for r in res["unprobed"]])
            added = {v: median([b[fn] - a[fn] for a, b in zip(res["unprobed"], res[v])]) for v in VARIANTS[1:]}
            before, after, mon = added["at_start"], added["placed"], added["pdimond"]
            ratio = after / before if before > 0 else float("nan")
            mratio = mon / after if after > 0 else float("nan")
            print(f"  {fn:<16} {base:>11.1f} {before:>10.1f} {after:>9.1f} {ratio:>12.2f} {mon:>10.1f} {mratio:>13.2f}"
                  f"  {kinds.get('at_start', {}).get(fn, '?')} -> {kinds.get('placed', {}).get(fn, '?')}")
        if args.baseline:
            print(f"  ns per call added, this build's pdimond / baseline's ({args.baseline}), per function:")
            for fn in (f for f in res["unprobed"][0] if f != "daemon_ns_per_event"):
                mon, bas = (median([b[fn] - a[fn] for a, b in zip(res["unprobed"], res[v])]) for v in ("pdimond",
                                                                                                       "baseline"))
                after = median([b[fn] - a[fn] for a, b in zip(res["unprobed"], res["placed"])])
                print(f"    {fn:<16} {mon:>8.1f} / {bas:>8.1f} ns;  / floor: {mon / after:.2f} / {bas / after:.2f}"
                      if after > 0 else f"    {fn:<16} {mon:>8.1f} / {bas:>8.1f} ns")
        if bpf_stats_enabled():
            row = []
            for v, progs in (("placed", PROGS["floor"]), ("pdimond", PROGS["pdimond"]), ("baseline", PROGS["pdimond"])):
                vals = [median([r[f"bpf {p}"] for r in res.get(v, []) if f"bpf {p}" in r] or [float("nan")])
                        for p in progs]
                if v in res:
                    row.append(f"{'floor' if v == 'placed' else v} {vals[0]:.0f} + {vals[1]:.0f}")
            print(f"  BPF run time per run, entry + return (kernel.bpf_stats_enabled, medians): {', '.join(row)} ns")
        daemon_ns = median([r["daemon_ns_per_event"] for r in res["pdimond"]])
        print(f"  pdimond's own CPU per event: {daemon_ns:.0f} ns (median of {args.rounds}); "
              f"{calibration}")
        if args.baseline:
            base_ns = median([r["daemon_ns_per_event"] for r in res["baseline"]])
            print(f"  baseline pdimond ({args.baseline}) CPU per event: {base_ns:.0f} ns (median of {args.rounds});"
                  f" this build / baseline: {daemon_ns / base_ns:.2f}")
        sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except (BenchError, OSError, subprocess.SubprocessError) as e:
        sys.exit(f"hit_cost: {e}")

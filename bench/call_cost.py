# SPDX-License-Identifier: GPL-2.0-only
# call_cost.py -- what a probed MPI call costs: unmonitored vs empty probes (floor) vs pdimond.
"""call_cost.py -- what a probed MPI call costs: unmonitored vs empty probes (floor) vs pdimond.

Each round runs `mpirun -np 2 pingpong ITERS WAITFILE` three times, interleaved:
(a) unmonitored, (b) with bench/probe-floor's do-nothing programs on the very probes pdimond
uses, (c) under `pdimon attach` to one pdimond started at the beginning. The probes are
attached while the ranks wait for WAITFILE, after MPI_Init; then WAITFILE is created.

Prints, for the ping-pong, the barrier and the local MPI_Iprobe loop (the one that waits for
no other rank, so the cleanest view of the probes' own cost): the medians of ns per call per
variant, the cost each monitoring adds per call (median of the per-round differences with the
unmonitored run of the same round), the ratio pdimond_added / floor_added (target <= 1.15)
and the slowdowns (median of the per-round ratios). It also checks that pdimond counted
every call of its runs and that the floor probes as many functions as pdimond.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from benchlib import (end_run, MPIRUN, PINGPONG, PROBE_FLOOR, BenchError, Daemon, bpf_prog_stats, bpf_stats_enabled,
                      cpu_seconds, find_procs, median, read_line, spawn, wait_exit, wait_for)

VARIANTS = ("unmonitored", "floor", "pdimond")
METRICS = ("pingpong", "barrier", "iprobe")
RESULT = re.compile(r"pingpong_ns_per_call=([0-9.]+) barrier_ns_per_call=([0-9.]+) iprobe_ns_per_call=([0-9.]+)")


def per_call_ns(before, after, names):
    """Mean BPF run time per probed call: the sum over NAMES of run time / run count."""
    ns = 0.0
    for n in names:
        t0, c0 = before.get(n, (0, 0))
        t1, c1 = after.get(n, (0, 0))
        if c1 <= c0:
            return None
        ns += (t1 - t0) / (c1 - c0)
    return ns


def run_once(variant, daemon, iters, nranks, tag, info):
    """One pingpong run; returns ns per call for each of METRICS."""
    tmp = tempfile.mkdtemp(prefix="pdimon-pingpong-")
    waitfile = os.path.join(tmp, "go")
    job = floor = None
    try:
        job = spawn(MPIRUN + ["-np", str(nranks), PINGPONG, str(iters), waitfile],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)
        pids = find_procs(os.path.basename(PINGPONG), nranks, job.pid)
        if variant == "floor":
            floor = spawn([PROBE_FLOOR, "--max-seconds", "600", "--pid", *map(str, pids)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            line = read_line(floor, 60, "probe-floor")
            m = re.match(r"attached (\d+) probes", line)
            if not m:
                raise BenchError(f"probe-floor said {line!r}")
            info.setdefault("floor_probes", set()).add(int(m.group(1)) // nranks)
        elif variant == "pdimond":
            bpf0, cpu0 = bpf_prog_stats(daemon.proc.pid), cpu_seconds(daemon.proc.pid)
            before = daemon.status()
            daemon.pdimon("attach", "--step", tag, "--pid", *pids)
            info.setdefault("pdimond_probes", set()).update(daemon.probes_per_task()[-nranks:])
        open(waitfile, "w").close()
        wait_exit(job, 300, "the pingpong job")
        out, err = job.communicate(timeout=30)
        if job.returncode != 0:
            raise BenchError(f"pingpong failed ({job.returncode}):\n{out}\n{err}")
        m = RESULT.search(out)
        if not m:
            raise BenchError(f"no result from pingpong:\n{out}\n{err}")
        if variant == "pdimond":
            # the daemon must really have taken the calls: wait until it has drained them all
            expect = 2 * nranks * iters + 2 * (iters + 100) * 2  # barriers, iprobes, ping-pongs
            after = wait_for(lambda: (lambda s: s if s["events"] - before["events"] >= expect else None)(
                daemon.status()), 30, f"pdimond to count {expect} events")
            info.setdefault("pdimond_events", []).append(after["events"] - before["events"])
            info.setdefault("pdimond_cpu_ns_per_event", []).append(
                (cpu_seconds(daemon.proc.pid) - cpu0) * 1e9 / (after["events"] - before["events"]))
            info.setdefault("pdimond_bpf_ns", []).append(
                per_call_ns(bpf0, bpf_prog_stats(daemon.proc.pid), ("mpi_enter", "mpi_exit")))
            info["pdimond_events_lost"] = after["events_lost"]
        if floor:
            info.setdefault("floor_bpf_ns", []).append(
                per_call_ns({}, bpf_prog_stats(floor.pid), ("empty_enter", "empty_exit")))
        return tuple(float(x) for x in m.groups())
    finally:
        end_run(floor, job, tmp, check_floor=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--np", type=int, default=2, dest="nranks")
    args = ap.parse_args()
    for exe in (PINGPONG, PROBE_FLOOR):
        if not os.access(exe, os.X_OK):
            sys.exit(f"call_cost: {exe} is missing; build with ninja -C build")

    res = {v: [] for v in VARIANTS}
    info = {}
    daemon = Daemon()
    try:
        print(f"call_cost: {args.rounds} rounds of `mpirun -np {args.nranks} pingpong {args.iters}`, "
              f"interleaved {', '.join(VARIANTS)}", flush=True)
        for r in range(args.rounds):
            row = []
            for v in VARIANTS:
                x = run_once(v, daemon, args.iters, args.nranks, f"callcost-{os.getpid()}-{r}", info)
                res[v].append(x)
                row.append(f"{v} " + "/".join(f"{n:.0f}" for n in x))
            print(f"  round {r + 1}: ns per call {'/'.join(METRICS)}: " + ", ".join(row), flush=True)
        status = daemon.status()
    finally:
        rc = daemon.stop()
    if rc != 0:
        print(f"call_cost: warning: pdimond exited with {rc}", file=sys.stderr)

    def col(v, k):
        return [x[k] for x in res[v]]

    print(f"probes per rank: floor {sorted(info.get('floor_probes', []))}, "
          f"pdimond {sorted(info.get('pdimond_probes', []))}")
    print(f"pdimond events per run {info.get('pdimond_events')}, events_lost {status['events_lost']}")
    print(f"pdimond CPU per event (median, status queries included): "
          f"{median(info.get('pdimond_cpu_ns_per_event', [])):.0f} ns")
    if bpf_stats_enabled():
        fb = [x for x in info.get("floor_bpf_ns", []) if x is not None]
        db = [x for x in info.get("pdimond_bpf_ns", []) if x is not None]
        print(f"BPF run time per probed call, entry + return (kernel.bpf_stats_enabled, median): "
              f"floor {median(fb):.0f} ns, pdimond {median(db):.0f} ns")
    else:
        print("BPF run time per probed call: not measured (sysctl kernel.bpf_stats_enabled=1 to see it)")
    print(f"{'variant':<12}" + "".join(f"{m + '_ns/call':>18}" for m in METRICS) + f"   (medians of {args.rounds})")
    for v in VARIANTS:
        print(f"{v:<12}" + "".join(f"{median(col(v, k)):>18.1f}" for k in range(len(METRICS))))
    added, slow = {}, {}
    for v in VARIANTS[1:]:
        for k, name in enumerate(METRICS):
            added[v, name] = median([b - a for a, b in zip(col("unmonitored", k), col(v, k))])
            slow[v, name] = median([b / a for a, b in zip(col("unmonitored", k), col(v, k))])
    for name in METRICS:
        f, d = added["floor", name], added["pdimond", name]
        ratio = d / f if f > 0 else float("inf")
        print(f"{name}: added ns/call floor={f:.1f} pdimond={d:.1f} pdimond_added/floor_added={ratio:.2f} "
              f"(target <= 1.15) slowdown floor={slow['floor', name]:.3f} pdimond={slow['pdimond', name]:.3f}")


if __name__ == "__main__":
    try:
        main()
    except (BenchError, OSError, subprocess.SubprocessError) as e:
        sys.exit(f"call_cost: {e}")

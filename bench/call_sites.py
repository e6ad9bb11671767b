#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""call_sites.py -- what naming the application's call site costs per MPI call.

pdimond follows a call past the MPI Fortran bindings and libraries such as ScaLAPACK in BPF,
one map lookup and one stack read per frame hopped over (doc/design/call-sites.md). This
benchmark runs, interleaved round by round, each workload unmonitored, under a pdimond with
call_site_hops=no and under one with call_site_hops=yes (the default), and prints:

  - the BPF entry program's run time per call (kernel.bpf_stats_enabled), hops off and on:
    the hop's own cost, free of the trap's noise;
  - the median wall-clock slowdown of each monitored variant against the unmonitored run of
    the same round.

Workloads: ring (C, no frame to hop over: must cost nothing more), fsolver (Fortran through
Open MPI's bindings: one hop per call), xdlu (Debian's ScaLAPACK LU tester: calls through
ScaLAPACK, PBLAS and BLACS, up to 16 hops). Run as root on an otherwise idle machine:
    flock -x /work/locks/heavy.lock python3 bench/call_sites.py [--rounds N]
"""
import argparse
import os
import subprocess
import sys
import time

from benchlib import BUILD, MPIRUN, BenchError, Daemon, bpf_prog_stats, bpf_stats_enabled, median

SCALAPACK = "/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests"
MPI = os.path.join(BUILD, "tests/mpi")
WORKLOADS = {
    "ring (C)": (MPIRUN + ["-np", "4", os.path.join(MPI, "ring.openmpi"), "3000", "0"], None),
    "fsolver (Fortran)": (MPIRUN + ["-np", "4", os.path.join(MPI, "fsolver.openmpi"), "3000", "0", "10"], None),
    "xdlu (ScaLAPACK)": (MPIRUN + ["-np", "4", os.path.join(SCALAPACK, "xdlu")], SCALAPACK),
}
VARIANTS = ("unmonitored", "hops off", "hops on")


def run(variant, cmd, cwd):
    """Wall seconds of one run, and the BPF entry program's (run ns, calls) over it."""
    d = None
    try:
        if variant != "unmonitored":
            d = Daemon(f"call_site_hops={'yes' if variant == 'hops on' else 'no'}")
            cmd = d.pdimon_args("run", "--step", "bench", "--") + cmd
        before = bpf_prog_stats(d.proc.pid) if d else {}
        t0 = time.monotonic()
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=d.env if d else None)
        wall = time.monotonic() - t0
        if r.returncode != 0:
            raise BenchError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-2000:]}")
        after = bpf_prog_stats(d.proc.pid) if d else {}
        t_b, c_b = before.get("mpi_enter", (0, 0))
        t_a, c_a = after.get("mpi_enter", (0, 0))
        return wall, (t_a - t_b, c_a - c_b)
    finally:
        if d:
            d.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="run the workloads whose name contains this")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("call_sites.py: run as root (it loads BPF programs)")
    if not bpf_stats_enabled():
        sys.exit("call_sites.py: enable BPF run-time accounting first: sysctl kernel.bpf_stats_enabled=1")
    print(f"call_sites.py: {args.rounds} rounds, load average {os.getloadavg()[0]:.2f}")
    for name, (cmd, cwd) in WORKLOADS.items():
        if args.only and args.only not in name:
            continue
        if not os.path.exists(cmd[len(MPIRUN) + 2]):
            print(f"{name}: {cmd[len(MPIRUN) + 2]} missing, skipped")
            continue
        walls = {v: [] for v in VARIANTS}
        bpf = {v: [0, 0] for v in VARIANTS[1:]}
        for _ in range(args.rounds):
            for v in VARIANTS:
                wall, (ns, calls) = run(v, cmd, cwd)
                walls[v].append(wall)
                if v in bpf:
                    bpf[v][0] += ns
                    bpf[v][1] += calls
        per_call = {v: bpf[v][0] / bpf[v][1] if bpf[v][1] else float("nan") for v in bpf}
        slow = {v: median([w / u for w, u in zip(walls[v], walls["unmonitored"])]) for v in VARIANTS[1:]}
        print(f"{name}: BPF entry {per_call['hops off']:.0f} ns/call without hops, {per_call['hops on']:.0f} ns/call "
              f"with (+{per_call['hops on'] - per_call['hops off']:.0f} ns) over {bpf['hops on'][1]} calls; "
              f"wall {median(walls['unmonitored']):.2f} s unmonitored, slowdown {slow['hops off']:.3f}x without hops, "
              f"{slow['hops on']:.3f}x with")
    print(f"call_sites.py: load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"call_sites.py: {e}")

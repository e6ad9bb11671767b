#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""attach_scale.py -- what one process's uprobe attach costs against how many processes map the
library (issue 10, 3e: does a step's start-up grow with the rank count squared?).

    python3 bench/attach_scale.py [--mapped 1,4,16,32,64] [--impl openmpi,mpich]

For each count K: K processes (bench/startup.IMPL, waiting before MPI_Init) map a private copy of
the MPI library, so that nobody else's processes or probes are on it; then probe-floor attaches
pdimond's probes (the same offsets, one uprobe_multi link for the entries and one for the returns,
pid filter) to each of them in turn and prints what the two link-create syscalls took per process.
Every registration (one per offset and link) walks every address space that maps the library
under the global dup_mmap_sem (kernel/events/uprobes.c, register_for_each_vma), so a process's
attach should grow with K, and a step's K attaches with K squared. Printed per K: the median and
largest attach, and the median divided by the registrations (2 x probes) and by K (one address
space's visit). No daemon, no MPI job: only the kernel's side. Idle machine or not, run it under
`flock -x /work/locks/heavy.lock` beside nothing else.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

os.environ["PDIMON_BENCH_PRIVATE_MPI"] = "1"  # a library nobody else maps or probes
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def maps_library(pid, lib):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any(line.rstrip().endswith(lib) and " r-xp " in line for line in f)
    except OSError:
        return False


def measure(impl, k, timeout):
    """The attach times (ms) of K processes, each with K processes mapping the library."""
    exe = os.path.join(bl.BUILD, f"bench/startup.{impl}")
    lib = os.path.join(bl.PRIVATE_MPI, "libmpi.so.40" if impl == "openmpi" else "libmpich.so.12")
    go = tempfile.mktemp(prefix="pdimon-attach-scale-")
    env = dict(os.environ, PDI_STARTUP_WAIT=go)
    holders = [bl.spawn([exe], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(k)]
    try:
        bl.wait_for(lambda: all(maps_library(p.pid, lib) for p in holders), timeout, f"{k} processes to map {lib}")
        pf = subprocess.run([bl.PROBE_FLOOR, "--max-seconds", "1", "--pid"] + [str(p.pid) for p in holders],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        times = [float(m.group(2)) for m in re.finditer(r"pid \d+: (\d+) probes in .*, attached in ([0-9.]+) ms",
                                                        pf.stderr)]
        probes = [int(m.group(1)) for m in re.finditer(r"pid \d+: (\d+) probes in", pf.stderr)]
        if pf.returncode != 0 or len(times) != k:
            raise bl.BenchError(f"probe-floor failed ({pf.returncode}): {pf.stderr[-400:]}")
        return times, probes[0]
    finally:
        for p in holders:
            bl.kill_tree(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mapped", default="1,4,16,32,64")
    ap.add_argument("--impl", default="openmpi,mpich")
    ap.add_argument("--timeout", type=int, default=120)
    a = ap.parse_args()
    print(f"{'impl':8s} {'K':>3s} {'probes':>6s} {'attach med ms':>13s} {'max ms':>8s} {'us/registration':>15s} "
          f"{'us/visit':>8s} {'K attaches ms':>13s}")
    for impl in a.impl.split(","):
        for k in (int(x) for x in a.mapped.split(",")):
            times, n = measure(impl, k, a.timeout)
            med = statistics.median(times)
            print(f"{impl:8s} {k:3d} {n:6d} {med:13.2f} {max(times):8.2f} {med * 1e3 / (2 * n):15.2f} "
                  f"{med * 1e3 / (2 * n * k):8.3f} {sum(times):13.1f}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except bl.BenchError as e:
        print(f"attach_scale.py: {e}", file=sys.stderr)
        sys.exit(1)

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""checkpoint_sites.py -- what a step with many call sites costs each checkpoint (issue 14, 7).

A program calls MPI_Barrier from N distinct return addresses (tests/hostile's generated code),
under a private pdimond that keeps them all (max_task_memory 256 MiB) and checkpoints every
second; then `pdimon status` is timed for SECONDS: a checkpoint that rewrites every site stalls
the loop, and the slowest answers show it. Prints the median and the slowest answers, and the
database's size. Run as root after ninja -C build; PDIMON_BUILD selects the build to measure.

    python3 bench/checkpoint_sites.py [N] [SECONDS]
"""
import os
import subprocess
import sys
import time

from benchlib import BUILD, Daemon, median, read_line, spawn, kill_tree

HOSTILE = os.path.join(BUILD, "tests/hostile/hostile")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10
    d = Daemon("max_task_memory=268435456", "checkpoint_s=1", f"mpi_libraries={BUILD}/tests/hostile/libfakempi.so")
    p = None
    try:
        p = spawn(d.pdimon_args("run", "--step", "sites", "--", HOSTILE, "sites", n), env=d.env,
                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        read_line(p, 300, "sites done")
        lat = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.monotonic()
            d.status()
            lat.append(time.monotonic() - t0)
        lat.sort()
        db = os.path.getsize(os.path.join(d.dir, "pdimon.db"))
        print(f"{BUILD}: {n} sites, {len(lat)} status calls in {seconds:.0f} s with checkpoints every 1 s: "
              f"median {median(lat) * 1e3:.1f} ms, 99th {lat[int(len(lat) * 0.99)] * 1e3:.1f} ms, "
              f"slowest {lat[-1] * 1e3:.1f} ms; database {db >> 20} MiB; load {os.getloadavg()[0]:.1f}")
    finally:
        if p:
            kill_tree(p)
        d.stop()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""cold_site.py -- how long a call site's first name keeps pdimond's loop when the object it is in
is cold: the loop's longest wake-up (status loop_max_wakeup_ms) around a program with a big DWARF
registered while it runs, for this build and, side by side, a baseline build.

The test ring (tests/mpi/ring.c) is built with mpicc -g twice: as it is ("small"), and after
--types struct types ("big": about 140 bytes of .debug_info each; 400,000 make some 54 MiB of
DWARF, as a big Fortran code has). Each round starts a fresh pdimond, registers the small ring's 2
Open MPI ranks with `pdimon attach` past their MPI_Init (the libraries read), reads the loop's
longest wake-up so far, then does the same with the big ring. Before the change the big ring's
first site loaded its executable's DWARF on the loop; after it, a worker does (probe/site_warm.c:
how long, from pdimond's log) and the big ring costs the loop no more than its registration.
Rounds alternate the builds.

Usage: cold_site.py [--baseline BUILD] [--rounds N] [--types N] [--programs DIR]
With --programs the two rings are built in DIR once and reused (build them before taking the
machine for the timed part: `cold_site.py --programs DIR --build-only`).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from benchlib import BUILD, MPIRUN, Daemon, find_procs, kill_tree, median, spawn, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
RING = os.path.join(HERE, "../tests/mpi/ring.c")  # ITERATIONS COMPUTE_US: Irecv, Isend, Waitall, Barrier


def build_ring(tmp, name, types):
    exe = os.path.join(tmp, f"{name}{types}")
    if os.path.exists(exe):
        return exe
    src = exe + ".c"
    with open(src, "w") as f, open(RING) as ring:
        for i in range(types):
            f.write(f"struct s{i} {{ int a{i}; double b; long c; char d[{i % 7 + 1}]; struct s{i} *next; "
                    "unsigned short e, f, g; };\n")
        f.write(ring.read())
    subprocess.run(["mpicc", "-g", "-O0", "-fno-eliminate-unused-debug-types", src, "-o", exe], check=True)
    return exe


def past_init(pid):
    with open(f"/proc/{pid}/maps") as f:
        return "/mca_pml_" in f.read()  # MPI_Init loads Open MPI's components


def attach(d, exe, step):
    job = spawn([*MPIRUN, "-np", "2", exe, "1000000", "10000"])
    pids = find_procs(os.path.basename(exe), 2, job.pid)
    wait_for(lambda: all(past_init(p) for p in pids), 60, f"{step} past MPI_Init")
    d.pdimon("attach", "--step", step, "--pid", *map(str, pids))
    wait_for(lambda: all(t["calls"] > 0 for t in json.loads(d.pdimon("show", step, "--json"))["tasks"]), 120,
             f"{step}'s calls in its models")
    return job


def one_round(build, small, big):
    d = Daemon(build=build)
    jobs = []
    try:
        jobs.append(attach(d, small, "small"))
        libs = d.status()["loop_max_wakeup_ms"]
        jobs.append(attach(d, big, "big"))
        big_ms = d.status()["loop_max_wakeup_ms"]
        # what a worker spent reading sites' objects, where one does: the longest read (the big ring's)
        read = [float(x) for x in re.findall(r"objects read on a worker in ([0-9.]+) ms for a call site's name",
                                              d.read_log())]
        return libs, big_ms, max(read) if read else None
    finally:
        for j in jobs:
            kill_tree(j)
        d.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="a build of the code before the change")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--types", type=int, default=400000)
    ap.add_argument("--programs", help="where the rings are built, kept and reused")
    ap.add_argument("--build-only", action="store_true")
    a = ap.parse_args()
    tmp = a.programs or tempfile.mkdtemp(prefix="pdimon-cold-site-")
    os.makedirs(tmp, exist_ok=True)
    try:
        small, big = build_ring(tmp, "small", 0), build_ring(tmp, "big", a.types)
        if a.build_only:
            return 0
        dwarf = subprocess.run(["readelf", "-S", "-W", big], capture_output=True, text=True).stdout
        size = sum(int(line.split()[5], 16) for line in dwarf.splitlines() if " .debug_" in line and
                   len(line.split()) > 5 and line.split()[1].startswith(".debug_"))
        print(f"big ring: {a.types} struct types, {size / 2**20:.1f} MiB of .debug_* sections", flush=True)
        builds = [("this", BUILD)] + ([("baseline", os.path.abspath(a.baseline))] if a.baseline else [])
        out = {name: [] for name, _ in builds}
        for r in range(a.rounds):
            for name, b in builds:
                libs, big_ms, read = one_round(b, small, big)
                out[name].append((libs, big_ms))
                print(f"round {r + 1} {name:8}: longest wake-up {libs:7.1f} ms after the small ring, "
                      f"{big_ms:7.1f} ms after the big ring" +
                      (f" (a worker read sites' objects for {read:.1f} ms)" if read is not None else ""), flush=True)
        for name, v in out.items():
            print(f"{name:8}: median longest wake-up {median([x[0] for x in v]):.1f} ms (small ring), "
                  f"{median([x[1] for x in v]):.1f} ms (big ring), of {len(v)} rounds")
    finally:
        if not a.programs:
            shutil.rmtree(tmp, True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""restore_latency.py -- how soon a polling function the overhead budget detached comes back.

Runs tests/mpi/poll (Open MPI, 2 ranks: QUIET s of a ring exchange, BURST s of MPI_Test and
MPI_Iprobe flat out, 6 s quiet again) under a pdimond of each build given, side by side, ROUNDS
times, with max_overhead_pct BUDGET (default 0.5: at 3 a short burst is only sampled). For each rank and polling function that was detached,
prints when it came back to full probes, in seconds after the burst's end: the burst ends BURST s
after it began, and it began at the function's first degrade (within two 31 ms slots of it). A
function still degraded when its rank ended prints "not back". Run it under
`flock -s /work/locks/heavy.lock` (it measures latencies of seconds, not ratios).

  python3 bench/restore_latency.py [--burst 1,3] [--rounds 2] [--budget 0.5] [--baseline BUILD_DIR]
"""
import argparse
import json
import os
import re
import subprocess

from benchlib import BUILD, Daemon

POLLING = ("MPI_Test", "MPI_Iprobe")


def poll_cmd(build, quiet, burst, after):
    exe = os.path.join(build, "tests/mpi/poll.openmpi")
    return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "2", exe, "phases", str(quiet),
            str(burst), str(after)]


def one_run(build, step, burst, budget, quiet=1, after=6):
    """{(rank, function): seconds after the burst's end it came back, or None}."""
    d = Daemon(f"max_overhead_pct={budget}", build=build)
    try:
        r = subprocess.run(d.pdimon_args("run", "--step", step, "--", *poll_cmd(build, quiet, burst, after)),
                           capture_output=True, text=True, timeout=300, env=d.env)
        if r.returncode != 0:
            raise SystemExit(f"{step}: {r.stderr}")
        s = json.loads(d.pdimon("show", step, "--json"))
        log = d.read_log()
    finally:
        d.stop()
    out = {}
    for t in s["tasks"]:
        for fn in POLLING:
            marks = [u for u in t["unobserved"] if u["function"] == fn]
            if not [u for u in marks if u["level"] == "detached"]:
                continue
            restored = re.search(rf"pid {t['pid']} .*: {fn} [a-z0-9/ ]+ -> full", log)
            back = (marks[-1]["to_ns"] - marks[0]["from_ns"]) / 1e9 - burst if restored else None
            out[(t["rank"], fn)] = back
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--burst", default="1,3", help="burst lengths in seconds, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline", help="another build directory, run side by side")
    ap.add_argument("--budget", default="0.5", help="max_overhead_pct: low enough that the polling calls are detached")
    a = ap.parse_args()
    builds = [("this", BUILD)] + ([("baseline", os.path.abspath(a.baseline))] if a.baseline else [])
    print(f"load {os.getloadavg()[0]:.1f}")
    for burst in map(float, a.burst.split(",")):
        for rnd in range(a.rounds):
            for name, build in builds:
                got = one_run(build, f"restore-{name}-{burst:g}-{rnd}", burst, a.budget)
                cells = ", ".join(f"rank {rank} {fn} " + ("not back" if v is None else f"{v:+.2f} s")
                                  for (rank, fn), v in sorted(got.items())) or "nothing detached"
                print(f"burst {burst:g} s, round {rnd + 1}, {name}: {cells}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

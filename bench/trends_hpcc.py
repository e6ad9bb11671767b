#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""trends_hpcc.py -- pdimon trends on a real application from Debian: the HPC Challenge
benchmark (hpcc, Open MPI) at 1, 2 and 4 ranks, one problem size, under a private pdimond.
Prints the trend table (text), and keeps the JSON and the SVG chart.

Usage (as root, after ninja -C build): python3 bench/trends_hpcc.py [--ranks 1,2,4] [--n 500]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from benchlib import BenchError, Daemon

HPCC = "/usr/bin/hpcc"
EXAMPLE = "/usr/share/doc/hpcc/examples/_hpccinf.txt"


def grid(n):
    """The squarest P x Q = n, P <= Q, as HPL wants it."""
    p = max(d for d in range(1, int(n ** 0.5) + 1) if n % d == 0)
    return p, n // p


def hpccinf(path, n, ranks):
    p, q = grid(ranks)
    with open(EXAMPLE) as f:
        lines = f.read().splitlines()
    # the example's lines 6, 11, 12: Ns, Ps, Qs
    lines[5] = f"{n:<13d}Ns"
    lines[10] = f"{p:<13d}Ps"
    lines[11] = f"{q:<13d}Qs"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--n", type=int, default=500, help="HPL's matrix order: the input size")
    ap.add_argument("--out", default=None, help="where to keep trends.json and trends.svg")
    a = ap.parse_args()
    if not os.path.exists(HPCC) or not os.path.exists(EXAMPLE):
        print("trends_hpcc: hpcc is not installed (apt-get install hpcc)", file=sys.stderr)
        return 1
    out = a.out or tempfile.mkdtemp(prefix="pdimon-trends-hpcc-")
    os.makedirs(out, exist_ok=True)
    d = Daemon()
    try:
        for ranks in map(int, a.ranks.split(",")):
            work = tempfile.mkdtemp(prefix=f"hpcc-{ranks}-", dir=d.dir)
            hpccinf(os.path.join(work, "hpccinf.txt"), a.n, ranks)
            cmd = d.pdimon_args("run", "--step", f"hpcc-{ranks}", "--size", a.n, "--",
                                "mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", ranks, HPCC)
            r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=1800, env=d.env)
            if r.returncode != 0:
                raise BenchError(f"hpcc on {ranks} ranks failed ({r.returncode}): {r.stderr[-2000:]}")
            with open(os.path.join(work, "hpccoutf.txt")) as f:
                if "End of HPC Challenge tests." not in f.read():
                    raise BenchError(f"hpcc on {ranks} ranks did not finish its tests")
        print(f"(load average: {open('/proc/loadavg').read().split()[:3]}; a shared 2-core VM)")
        print(d.pdimon("trends", HPCC))
        with open(os.path.join(out, "trends.json"), "w") as f:
            f.write(d.pdimon("trends", HPCC, "--json"))
        d.pdimon("trends", HPCC, "--svg", os.path.join(out, "trends.svg"))
        print(f"JSON and SVG in {out}")
    finally:
        d.stop()
        shutil.rmtree(d.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"trends_hpcc: {e}", file=sys.stderr)
        sys.exit(1)

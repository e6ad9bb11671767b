#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""interference_share.py -- what apps.py's CPU interference takes from the rank, outside pdimon.

Each application of bench/apps.py runs plainly (no pdimond) with its full input, 4 ranks. Once
every rank used some CPU, its counts are read for 0.7 s (before); then rank 1 is pinned to the
CPU it is on with apps.py's hog (`cpu`, 6 s), in the job's session (job), the campaign's own
(own), or not at all (none), and read again until the hog ends or the job does (during). Printed
per rank window: the CPU rate (s of CPU a second, /proc/PID/schedstat), its share of the time it
was ready to run (cpu / (cpu + run-queue wait)), the run-queue wait a second, the peers'
medians, and the rank's share over its peers'. Run as root, under the heavy lock (exclusive: the
shares are the machine's).

Usage: interference_share.py [--apps gromacs,hpcc,...] [--modes none,own,job] [--out FILE.jsonl]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apps  # noqa: E402  (the applications, the hog and rank_pids: one place)

VICTIM = 1
HOG_S = 6


def sample(pid):
    """(monotonic s, CPU s, run-queue wait s, CPU it last ran on) of the process PID."""
    with open(f"/proc/{pid}/schedstat") as f:
        run, wait, _ = (int(x) for x in f.read().split())
    with open(f"/proc/{pid}/stat") as f:
        cpu = int(f.read().rsplit(")", 1)[1].split()[36])
    return time.monotonic(), run / 1e9, wait / 1e9, cpu


def window(a, b):
    dt = b[0] - a[0]
    run, wait = b[1] - a[1], b[2] - a[2]
    return {"rate": run / dt, "share": run / (run + wait) if run + wait > 0 else 0.0, "wait": wait / dt}


def ready_pids(p, marker):
    """{rank: pid} once every rank exists and used 0.3 s of CPU; {} if the job ended first."""
    pids = {}
    while p.poll() is None:
        pids = apps.rank_pids(marker)
        if len(pids) == apps.RANKS and all(sample(pid)[1] > 0.3 for pid in pids.values()):
            return pids
        time.sleep(0.1)
    return {}


def one(app, mode, workroot):
    wd = tempfile.mkdtemp(prefix=f"{app}-{mode}-", dir=workroot)
    cmd, _usual = apps.APPS[app](wd, False)
    marker = f"share-{os.getpid()}-{app}-{mode}"
    env = dict(os.environ, PDIMON_APPS_RUN=marker, LD_PRELOAD="", PDIMON_SPIN_MS="0", PDIMON_SPIN_TRUTH=os.devnull,
               PDIMON_SPIN_IO="")
    job, fifo = list(cmd), None
    if mode == "job":
        fifo = os.path.join(wd, "hog.fifo")
        os.mkfifo(fifo)
        job = ["sh", "-c", apps.HOG_IN_JOB, "sh", fifo, apps.HOG, "cpu", str(HOG_S), *job]
    t0 = time.monotonic()
    with open(os.path.join(wd, "out"), "w") as out:
        p = subprocess.Popen(job, cwd=wd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    res = {"app": app, "mode": mode, "load": os.getloadavg()[0]}
    try:
        pids = ready_pids(p, marker)
        s0 = {r: sample(pid) for r, pid in pids.items()}
        time.sleep(0.7)
        s1 = {r: sample(pid) for r, pid in pids.items()}
        if mode != "none":
            cpu = s1[VICTIM][3]
            os.sched_setaffinity(pids[VICTIM], {cpu})
            if fifo:
                with open(fifo, "w") as f:
                    f.write(f"{cpu}\n")
                fifo = None
            else:
                subprocess.Popen(["taskset", "-c", str(cpu), apps.HOG, "cpu", str(HOG_S)], start_new_session=True)
        s2, end = dict(s1), time.monotonic() + HOG_S
        while time.monotonic() < end:
            s2 = {r: sample(pid) for r, pid in pids.items()}
            time.sleep(0.1)
    except (OSError, KeyError) as e:  # the job ended: what was read so far
        res["ended"] = str(e)
    try:
        res["before"] = {r: window(s0[r], s1[r]) for r in s0}
        res["during"] = {r: window(s1[r], s2[r]) for r in s0}
        res["during_s"] = s2[VICTIM][0] - s1[VICTIM][0]
    except (NameError, KeyError, ZeroDivisionError):
        res["error"] = "the job ended before the hog"
    p.wait(timeout=600)
    res["wall_s"] = time.monotonic() - t0
    if fifo:
        try:  # the job's hog starter still waits for a CPU to be named: end it
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    return res


def line(res):
    head = f"{res['app']:8} {res['mode']:4} wall {res['wall_s']:5.1f}s load {res['load']:.2f}"
    if "error" in res:
        return f"{head}: {res['error']}"
    out = []
    for w in ("before", "during"):
        d = res[w]
        v, peers = d[VICTIM], [d[r] for r in d if r != VICTIM]
        ms = statistics.median(x["share"] for x in peers)
        mr = statistics.median(x["rate"] for x in peers)
        out.append(f"{w}: rank {VICTIM} {v['rate']:.2f} CPU/s share {v['share']:.2f} wait {v['wait']:.2f}/s, "
                   f"peers {mr:.2f} CPU/s share {ms:.2f} (rank/peers {v['share'] / ms if ms else 0:.2f})")
    return f"{head} during {res['during_s']:.1f}s: " + "; ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default="halo,meep,gromacs,hpcc,nwchem,mpb")
    ap.add_argument("--modes", default="none,own,job")
    ap.add_argument("--out", default=None, help="each run's figures as JSON lines")
    args = ap.parse_args()
    workroot = tempfile.mkdtemp(prefix="interference-share-")
    for app in args.apps.split(","):
        for mode in args.modes.split(","):
            res = one(app, mode, workroot)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps(res) + "\n")
            print(line(res), flush=True)


if __name__ == "__main__":
    main()

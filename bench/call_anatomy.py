# SPDX-License-Identifier: GPL-2.0-only
# call_anatomy.py -- where a monitored LAMMPS call's cost goes, part by part: BPF programs, pdimond's threads, wake-ups.
"""call_anatomy.py -- where a monitored LAMMPS call's cost goes, part by part.

LAMMPS crack on 4 ranks (as bench/lammps.py runs it), rounds of interleaved runs:
  floor     bench/probe-floor's empty programs on the ranks (as lammps.py attaches them)
  off       under a pdimond with max_overhead_pct=off (every call probed)
  on        under a pdimond with its default budget
  NAME      with --variant NAME=SETTING[,SETTING...]: under a pdimond with the budget off and
            those settings (e.g. off-nowake=wakeup_kib=1048576)
  baseline  with --baseline BUILD: under a pdimond of that build, default budget
  NAME      with --build NAME=BUILD: under the pdimond of that build with the budget off (its BPF
            programs' run times side by side with this build's "off")
Per run it prints what lammps.py's ratios cannot split apart, in figures the machine's load moves
less than wall time: each BPF program's runs and run time per run (needs sysctl
kernel.bpf_stats_enabled=1, which the script never sets: the accounting adds ~25 ns to every
program run on the node), the events pdimond took in, the CPU time its loop thread and its other
threads (workers: probe switches, start-up, the step's analysis at its end) used per event, and how
often the loop woke (its voluntary context switches). With --perf DIR, a `perf record -g` of each
pdimond during each run is kept in DIR (VARIANT-ROUND.perf) for `perf report --sort comm,sym`.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile

from benchlib import BenchError, Daemon, bpf_prog_stats, bpf_stats_enabled, end_run, spawn, threads_cpu
from lammps import LOOP, attach_floor, lammps_cmd


def loop_wakeups(pid):
    """Voluntary context switches of PID's main thread (pdimond's loop): its wake-ups."""
    with open(f"/proc/{pid}/task/{pid}/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                return int(line.split()[1])
    return 0


def daemon_cpu(pid):
    """(loop thread, other threads) CPU seconds of PID."""
    loop = other = 0.0
    for tid, (_, secs) in threads_cpu(pid).items():
        if int(tid) == pid:
            loop += secs
        else:
            other += secs
    return loop, other


def daemon_sample(daemon):
    pid = daemon.proc.pid
    return {"bpf": bpf_prog_stats(pid), "cpu": daemon_cpu(pid), "wakeups": loop_wakeups(pid),
            "events": daemon.status()["events"]}


def per_run(stats0, stats1):
    """{program: (ns per run, runs)} between two bpf_prog_stats() readings."""
    out = {}
    for name, (ns, runs) in stats1.items():
        ns0, runs0 = stats0.get(name, (0, 0))
        if runs > runs0:
            out[name] = ((ns - ns0) / (runs - runs0), runs - runs0)
    return out


def programs(stats):
    return "; ".join(f"{name} {ns:.0f} ns x {runs}" for name, (ns, runs) in sorted(stats.items()))


def one_run(variant, daemon, tag, perf_path):
    """One crack run; returns its printed line."""
    tmp = tempfile.mkdtemp(prefix="pdimon-anatomy-")
    cmd = lammps_cmd()
    job = floor = perf = None
    before = None
    if daemon:
        cmd = daemon.pdimon_args("run", "--step", tag, "--") + cmd
        before = daemon_sample(daemon)
        if perf_path:
            perf = subprocess.Popen(["perf", "record", "-q", "-F", "4000", "-g", "-p", str(daemon.proc.pid), "-o",
                                     perf_path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        job = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp,
                    env=daemon.env if daemon else None)
        if not daemon:
            floor = attach_floor(job)
        out, err = job.communicate(timeout=900)
        m = LOOP.search(out.decode())
        if job.returncode != 0 or not m:
            raise BenchError(f"{variant} LAMMPS run failed ({job.returncode}):\n{err.decode()[-2000:]}")
        line = f"{variant:<10} loop {float(m.group(1)):7.3f} s"
        if floor:
            return line + "; " + programs(per_run({}, bpf_prog_stats(floor.pid)))
    except subprocess.TimeoutExpired:
        raise BenchError(f"{variant} LAMMPS run did not finish within 900 s")
    finally:
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(60)
        end_run(floor, job, tmp)
    after = daemon_sample(daemon)
    events = max(after["events"] - before["events"], 1)
    loop = (after["cpu"][0] - before["cpu"][0]) * 1e9 / events
    other = (after["cpu"][1] - before["cpu"][1]) * 1e9 / events
    return (f"{line}, events {events}, pdimond CPU per event: loop {loop:.0f} ns, other threads {other:.0f} ns; "
            f"loop wake-ups {after['wakeups'] - before['wakeups']}; " + programs(per_run(before["bpf"], after["bpf"])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=SETTING[,SETTING...]",
                    help="also under a pdimond with the budget off and these settings")
    ap.add_argument("--baseline", metavar="BUILD", help="also under the pdimond (default budget) of this build")
    ap.add_argument("--build", action="append", default=[], metavar="NAME=BUILD",
                    help="also under the pdimond of this build with the budget off")
    ap.add_argument("--perf", metavar="DIR", help="keep a perf record of each pdimond's run in DIR")
    args = ap.parse_args()
    if not bpf_stats_enabled():
        print("call_anatomy: kernel.bpf_stats_enabled is 0: no BPF run times", file=sys.stderr)
    if args.perf:
        os.makedirs(args.perf, exist_ok=True)
    daemons = {"floor": None}
    try:
        daemons["off"] = Daemon("max_overhead_pct=off")
        daemons["on"] = Daemon()
        for v in args.variant:
            name, _, settings = v.partition("=")
            daemons[name] = Daemon("max_overhead_pct=off", *filter(None, settings.split(",")))
        for b in args.build:
            name, _, build = b.partition("=")
            if not name or not build:
                raise BenchError(f"--build {b}: expected NAME=BUILD")
            daemons[name] = Daemon("max_overhead_pct=off", build=os.path.abspath(build))
        if args.baseline:
            daemons["baseline"] = Daemon(build=os.path.abspath(args.baseline))
        print(f"call_anatomy: {args.rounds} rounds of crack on 4 ranks, interleaved {', '.join(daemons)}", flush=True)
        for r in range(args.rounds):
            for v, d in daemons.items():
                perf = os.path.join(args.perf, f"{v}-{r + 1}.perf") if args.perf and d else None
                print(f"round {r + 1} " + one_run(v, d, f"anatomy-{os.getpid()}-{v}-{r}", perf), flush=True)
        print(f"on: {daemons['on'].calibration()}")
    finally:
        for d in daemons.values():
            if d and d.stop() != 0:
                print("call_anatomy: warning: a pdimond exited with an error", file=sys.stderr)


if __name__ == "__main__":
    try:
        main()
    except (BenchError, OSError, subprocess.SubprocessError) as e:
        sys.exit(f"call_anatomy: {e}")

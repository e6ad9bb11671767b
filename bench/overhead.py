#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""overhead.py -- what pdimond with its default budget costs a polling program and hpcc (issue 10, 3b-c).

    python3 bench/overhead.py [--rounds 5] [--only poll,hpcc] [--poll-iters 300000] [--hpcc-n 1000]

One private pdimond (max_overhead_pct 3, the default) for the whole run. Each round runs,
interleaved, unmonitored then under `pdimon run`:
  poll   tests/mpi/poll.openmpi work ITERS SLICE on 2 ranks: MPI_Test + MPI_Iprobe between
         slices of computation (5000 steps, a few us: 200k+ calls per second per rank, about 8 s
         here; with slices of 200 steps it makes millions of calls per second and ends in
         0.1 s, before any budget has seen a full period of it); timed by the program itself
         (poll_s, the polling loop alone, between two barriers)
  hpcc   Debian's hpcc on 4 ranks (Open MPI), HPL order N; timed as the whole run's wall time
  nwchem Debian's NWChem (Fortran, Global Arrays over MPI) on 4 ranks: B3LYP/6-31G energy of
         benzene; timed as the whole run's wall time (not in the default set: --only nwchem)
With --baseline BUILD, each round also runs the program under a pdimond of that build (e.g.
main's), to compare a change side by side. Prints per program the medians, the median of
per-round ratios monitored/unmonitored (target <= 1.03), the calls per second per rank of the
polling program, pdimond's events per program, each daemon's events lost and longest loop
wake-up (loop_max_wakeup_ms: how long the ring buffer and the bus waited at worst), and the
per-call costs pdimond measured at start-up (its log). Ratios, never assertions.

With --breakdown, the time each monitored run added (its whole wall time, start-up included, less the
unmonitored run's of the same round) is split, per program, median of the rounds: the start-up hold (the step's longest
"held at MPI_Init", pdimond's log), the kernel CPU the job's processes added (the traps and BPF
programs are charged there; of it, pdimond's BPF programs' run time with kernel.bpf_stats_enabled=1,
which the script never sets: 0 otherwise), pdimond's own CPU (all its threads: the loop's share
apart), each CPU figure as wall time over the node's cores (the job fills them: a CPU-second anyone
takes from the node is 1/cores of its wall time), and the rest (the probe changes' waits on the
ranks' memory maps, caches, the scheduler); beside them what the budget believed its probes cost
the ranks (each rank's "by the budget's account", their mean). For hpcc also what each MPI
sub-benchmark added (its own time in hpccoutf.txt: RandomAccess, PTRANS, FFT, latency/bandwidth, HPL;
"other" is the rest of the wall time: start-up, the single-process tests, MPI_Finalize, exit).
"""
import argparse
import collections
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (BUILD, MPIRUN, BenchError, Daemon, bpf_prog_stats, bpf_stats_enabled, kill_tree,  # noqa: E402
                      median, spawn, threads_cpu, wait_for)
from trends_hpcc import HPCC, hpccinf  # noqa: E402

POLL = os.path.join(BUILD, "tests/mpi/poll.openmpi")
NWCHEM = "/usr/bin/nwchem.openmpi"
NWCHEM_INPUT = """start benzene
geometry units angstrom
  C  0.000  1.396 0.0
  C  1.209  0.698 0.0
  C  1.209 -0.698 0.0
  C  0.000 -1.396 0.0
  C -1.209 -0.698 0.0
  C -1.209  0.698 0.0
  H  0.000  2.479 0.0
  H  2.147  1.240 0.0
  H  2.147 -1.240 0.0
  H  0.000 -2.479 0.0
  H -2.147 -1.240 0.0
  H -2.147  1.240 0.0
end
basis
  * library 6-31g
end
dft
  xc b3lyp
end
task dft energy
"""


RANKS = {"poll": 2, "hpcc": 4, "nwchem": 4}


# seconds: wall time, kernel CPU of all its processes, and (hpcc) each sub-benchmark's own time
Job = collections.namedtuple("Job", "wall sys sections", defaults=(None,))

# hpcc's sub-benchmarks that talk MPI, as hpccoutf.txt times them (its summary, or the latency and
# bandwidth test's own line); "other" in the breakdown is the run's wall time less their sum: start-up,
# MPI_Init, the single-process tests (Star*, Single*), MPI_Finalize and exit
HPCC_SECTIONS = {"RandomAccess": r"\nMPIRandomAccess_time=(\S+)", "RandomAccess_LCG": r"\nMPIRandomAccess_LCG_time=(\S+)",
                 "PTRANS": r"\nPTRANS_time=(\S+)", "FFT": r"\nMPIFFT_time\d=(\S+)",
                 "LatencyBandwidth": r"Execution time \(wall clock\)\s+=\s+(\S+)", "HPL": r"\nHPL_time=(\S+)"}


def hpcc_sections(path):
    """{sub-benchmark: seconds} from hpcc's output file PATH (FFT: its timed steps summed)."""
    with open(path) as f:
        out = f.read()
    return {name: sum(float(x) for x in re.findall(pat, out)) for name, pat in HPCC_SECTIONS.items()}


def timed(cmd, env, cwd, timeout):
    """Run CMD; (its stdout, Job). Its processes' kernel CPU is where the probes' traps and BPF
    programs are charged: what mpirun reaped of its ranks is counted when we reap mpirun."""
    job = None
    t0 = time.monotonic()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        job = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
        out, err = job.communicate(timeout=timeout)
        if job.returncode != 0:
            raise BenchError(f"{' '.join(cmd[:6])}... failed ({job.returncode}): {err[-600:]}")
        return out, Job(time.monotonic() - t0, resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime - ru0.ru_stime)
    finally:
        if job:
            kill_tree(job)  # mpirun's session, whatever is left of it


def run_poll(d, monitored, tag, a, work):
    cmd = MPIRUN + ["-np", "2", POLL, "work", str(a.poll_iters), str(a.poll_slice)]
    if monitored:
        cmd = d.pdimon_args("run", "--step", tag, "--") + cmd
    out, job = timed(cmd, d.env, work, 600)
    m = re.search(r"poll_s=([0-9.]+) polls=\d+ calls_per_s_per_rank=([0-9.]+)", out)
    if not m:
        raise BenchError(f"poll printed no result: {out[-300:]}")
    return float(m.group(1)), float(m.group(2)), job


def run_hpcc(d, monitored, tag, a, work):
    hpccinf(os.path.join(work, "hpccinf.txt"), a.hpcc_n, 4)
    outf = os.path.join(work, "hpccoutf.txt")
    if os.path.exists(outf):
        os.unlink(outf)  # hpcc appends to it
    cmd = MPIRUN + ["-np", "4", HPCC]
    if monitored:
        cmd = d.pdimon_args("run", "--step", tag, "--") + cmd
    _, job = timed(cmd, d.env, work, 900)
    sections = hpcc_sections(outf)
    sections["other"] = job.wall - sum(sections.values())
    return job.wall, 0.0, job._replace(sections=sections)


def run_nwchem(d, monitored, tag, a, work):
    inp = os.path.join(work, "benzene.nw")
    with open(inp, "w") as f:
        f.write(NWCHEM_INPUT)
    cmd = MPIRUN + ["-np", "4", "--wdir", work, NWCHEM, inp]
    if monitored:
        cmd = d.pdimon_args("run", "--step", tag, "--") + cmd
    out, job = timed(cmd, d.env, work, 900)
    if "Total DFT energy" not in out:
        raise BenchError(f"NWChem printed no energy: {out[-300:]}")
    return job.wall, 0.0, job


def thread_cpu(pid):
    """(all threads', the main (loop) thread's) CPU seconds of process PID."""
    threads = threads_cpu(pid)
    return sum(secs for _, secs in threads.values()), threads.get(pid, ("", 0))[1]


class Account:
    """What one monitored run cost, from what pdimond's process, BPF programs and log say."""

    def __init__(self, d):
        self.d = d
        self.log_at = len(d.read_log())
        self.cpu = thread_cpu(d.proc.pid)
        self.bpf = self._bpf_ns()
        self.events = d.status()["events"]

    def _bpf_ns(self):
        """(run time ns, runs) of pdimond's BPF programs, summed."""
        if not bpf_stats_enabled():
            return 0, 0
        st = bpf_prog_stats(self.d.proc.pid).values()
        return sum(ns for ns, _ in st), sum(n for _, n in st)

    def end(self, mon, plain, ranks):
        """{part: seconds} of what the monitored run MON (a Job) of RANKS ranks added to the
        unmonitored PLAIN, and what the budget believed (once pdimond has ended the ranks)."""
        wait_for(lambda: self.d.read_log()[self.log_at:].count("by the budget's account") >= ranks, 30,
                 "pdimond to end the step's tasks")
        cores = os.cpu_count()
        log = self.d.read_log()[self.log_at:]
        cpu, loop = thread_cpu(self.d.proc.pid)
        bpf_ns, bpf_runs = self._bpf_ns()
        holds = [float(x) / 1e3 for x in re.findall(r"held at MPI_Init for ([0-9.]+) ms", log)]
        charged = [float(x) / 1e3 for x in re.findall(r"its probes took ([0-9.]+) ms of its", log)]
        part = {"added": mon.wall - plain.wall, "hold": max(holds, default=0.0),
                "job_sys": (mon.sys - plain.sys) / cores, "bpf": (bpf_ns - self.bpf[0]) / 1e9 / cores,
                "pdimond": (cpu - self.cpu[0]) / cores, "loop": (loop - self.cpu[1]) / cores,
                "believed": sum(charged) / len(charged) if charged else float("nan")}
        part["events"] = self.d.status()["events"] - self.events
        part["bpf_runs"] = bpf_runs - self.bpf[1]
        print(f"  breakdown: added {part['added'] * 1e3:.0f} ms, hold {part['hold'] * 1e3:.0f} ms, job kernel CPU "
              f"{mon.sys * 1e3:.0f} ms (plain {plain.sys * 1e3:.0f}), bpf {part['bpf'] * cores * 1e3:.0f} ms CPU in "
              f"{part['bpf_runs']} runs, pdimond CPU {part['pdimond'] * cores * 1e3:.0f} ms (loop "
              f"{part['loop'] * cores * 1e3:.0f}), {part['events']} events, believed {part['believed'] * 1e3:.1f} ms "
              f"per rank", flush=True)
        part["rest"] = part["added"] - part["hold"] - max(part["job_sys"], part["bpf"]) - part["pdimond"]
        if mon.sections and plain.sections:
            part["sections"] = {k: mon.sections[k] - plain.sections[k] for k in mon.sections}
            print("  added per sub-benchmark: " + ", ".join(f"{k} {v * 1e3:.0f} ms (plain {plain.sections[k] * 1e3:.0f})"
                                                          for k, v in part["sections"].items()), flush=True)
        return part


def print_breakdown(which, res):
    cols = ["added", "hold", "job_sys", "bpf", "pdimond", "loop", "rest", "believed"]
    print()
    print("time added per monitored run, ms (median of rounds): hold = the longest at MPI_Init; job_sys = the "
          "job's added kernel CPU (traps and BPF), bpf = pdimond's BPF programs' run time (part of job_sys), pdimond "
          "(loop: its loop thread alone): CPU over the node's cores; rest = added - hold - job_sys - pdimond; "
          "believed = the budget's own account")
    print(f"{'program':8s} " + " ".join(f"{c:>9s}" for c in cols))
    for p in which:
        for tag, parts in ((p, res[p]["parts"]), (p + "@base", res[p]["parts_base"])):
            if parts:
                print(f"{tag:8s} " + " ".join(f"{median([x[c] for x in parts]) * 1e3:9.1f}" for c in cols))
    for p in which:
        for tag, parts in ((p, res[p]["parts"]), (p + "@base", res[p]["parts_base"])):
            if parts and "sections" in parts[0]:
                print(f"{tag}: added per sub-benchmark, ms (median of rounds): " +
                      ", ".join(f"{k} {median([x['sections'][k] for x in parts]) * 1e3:.1f}" for k in parts[0]["sections"]))
    if not bpf_stats_enabled():
        print("(bpf is 0: kernel.bpf_stats_enabled is not 1)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="poll,hpcc")
    ap.add_argument("--poll-iters", type=int, default=1000000)
    ap.add_argument("--poll-slice", type=int, default=5000, help="computation steps between two polls")
    ap.add_argument("--hpcc-n", type=int, default=1000)
    ap.add_argument("--baseline", metavar="BUILD", help="also under the pdimond of this build directory")
    ap.add_argument("--breakdown", action="store_true", help="split the time each monitored run added")
    a = ap.parse_args()
    progs = {"poll": run_poll, "hpcc": run_hpcc, "nwchem": run_nwchem}
    which = a.only.split(",")
    res = {p: {"plain": [], "pdimond": [], "baseline": [], "rate": [], "events": 0, "parts": [],
             "parts_base": []} for p in which}
    work = tempfile.mkdtemp(prefix="pdimon-overhead-")
    d = Daemon()
    base = None
    try:
        if a.baseline:
            base = Daemon(build=os.path.abspath(a.baseline))
        for r in range(a.rounds):
            for p in which:
                plain, rate, plain_job = progs[p](d, False, None, a, work)
                before = d.status()["events"]
                acct = Account(d) if a.breakdown else None
                mon, _, mon_job = progs[p](d, True, f"{p}-{os.getpid()}-{r}", a, work)
                if acct:
                    res[p]["parts"].append(acct.end(mon_job, plain_job, RANKS[p]))
                res[p]["events"] += d.status()["events"] - before
                res[p]["plain"].append(plain)
                res[p]["pdimond"].append(mon)
                res[p]["rate"].append(rate)
                line = f"round {r + 1} {p}: unmonitored {plain:.3f} s, pdimond {mon:.3f} s"
                if base:
                    bacct = Account(base) if a.breakdown else None
                    bmon, _, bjob = progs[p](base, True, f"{p}-{os.getpid()}-{r}-b", a, work)
                    res[p]["baseline"].append(bmon)
                    if bacct:
                        res[p]["parts_base"].append(bacct.end(bjob, plain_job, RANKS[p]))
                    line += f", baseline {res[p]['baseline'][-1]:.3f} s"
                print(line, flush=True)
        status = d.status()
        base_status = base.status() if base else None
        costs = d.calibration()
        changes = {"pdimond": d.budget_changes(), "baseline": base.budget_changes() if base else {}}
    finally:
        rc = d.stop()
        if base:
            base.stop()
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{'program':8s} {'plain_s':>9s} {'pdimond_s':>9s} {'ratio':>7s}  (medians of {a.rounds}; target <= 1.03)")
    for p in which:
        ratio = median([m / u for u, m in zip(res[p]["plain"], res[p]["pdimond"])])
        print(f"{p:8s} {median(res[p]['plain']):9.3f} {median(res[p]['pdimond']):9.3f} {ratio:7.3f}")
        if base:
            bratio = median([m / u for u, m in zip(res[p]["plain"], res[p]["baseline"])])
            print(f"{p + '@base':8s} {median(res[p]['plain']):9.3f} {median(res[p]['baseline']):9.3f} {bratio:7.3f}")
    if a.breakdown:
        print_breakdown(which, res)
    if "poll" in which:
        print(f"poll: {median(res['poll']['rate']):.0f} MPI calls per second per rank unmonitored")
    for p in which:
        print(f"{p}: pdimond events per monitored run {res[p]['events'] / a.rounds:.0f}")
    # the longest the loop was kept from the ring buffer and the bus in one wake-up
    print(f"pdimond: events={status['events']} events_lost={status['events_lost']} "
          f"loop_max_wakeup_ms={status.get('loop_max_wakeup_ms', 0):.1f}")
    if base_status:
        print(f"baseline: events={base_status['events']} events_lost={base_status['events_lost']} "
              f"loop_max_wakeup_ms={base_status.get('loop_max_wakeup_ms', 0):.1f}")
    print(f"pdimond: {costs}")
    # each change is a probe switch of every rank of the step: a level that flaps costs them
    for who, n in changes.items():
        if n:
            top = sorted(n.items(), key=lambda kv: -kv[1])[:6]
            print(f"{who}: budget level changes per monitored run {sum(n.values()) / a.rounds / len(which):.1f} "
                  f"(all programs; most: " + ", ".join(f"{k} x{v}" for k, v in top) + ")")
    return 0 if rc in (0, None) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"overhead.py: {e}", file=sys.stderr)
        sys.exit(1)

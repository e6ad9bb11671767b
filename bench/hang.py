#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""hang.py -- hangs noticed as they happen, measured (issue 11): how soon pdimond tells a
user that a step hung and whether it names the stuck rank, and how often it cries wolf.

  detect  Real applications from Debian's archive (bench/apps.py's GROMACS, HPCC, meep, MPB,
          with their own inputs) and programs of ours (tests/mpi waits, solver), 4 ranks under
          `pdimon run`, each first run healthy once (its program's history, and its longest
          normal wait), then hung from outside at a time drawn from the seed:
            stop      SIGSTOP for good
            spin      the rank spins for good outside MPI (bench/apps/spin_agent.c)
            io        the rank blocks for good in a read(2) outside MPI (the same agent)
            deadlock  two ranks each in an MPI_Recv from the other (ours only: tests/mpi/fault.h)
          Per run: the time from the hang to the line "looks hung" on the job's own output (the
          user's side: nobody calls pdimon), and whether the least-progressed rank it names is
          the stuck one. Target: within max(30 s, 3x the program's longest normal wait);
          least-progressed correct in at least 95% of the runs.
  soak    Healthy runs only, several at a time under one pdimond with one database (a site's
          daemon: programs build their history), including codes with legitimately long waits
          (one rank computes or writes 10-30 s while the others wait in a collective, a long
          barrier before a checkpoint), and the real applications. Counts hung and slow alarms
          (on the jobs' output and in pdimond's status) against the total step time. Target:
          0 hung alarms.

LAMMPS, Quantum ESPRESSO and CP2K are reserved for an independent evaluation: never here.
pdimond runs with its defaults (no timeout: a false-alarm rate of one per 10,000 step-hours).
Run as root under the heavy lock, shared (it prints no overhead ratio):
  flock -s /work/locks/heavy.lock python3 bench/hang.py detect --seeds 3
  flock -s /work/locks/heavy.lock python3 bench/hang.py soak --runs 220 --parallel 2
  flock -s /work/locks/heavy.lock python3 bench/hang.py soak --runs 400 --parallel 8 --low-cpu --nice 10
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
sys.path.insert(0, os.path.join(HERE, "../tests/faults"))
import apps  # noqa: E402  (the applications, their inputs, the injectors: one place)
import campaign  # noqa: E402
import harness  # noqa: E402

RANKS = apps.RANKS
DEFAULTS = ("hang_timeout_ms=0",)  # the harness's short floor off: pdimond's own defaults
LP = re.compile(r"least progressed \[([0-9,\-]+)\]")


def ranks_of(text):
    out = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


class Output:
    """A job's output, line by line with the CLOCK_MONOTONIC time each came (ns)."""

    def __init__(self, stream, path):
        self.lines, self.f, self.t0 = [], open(path, "w"), time.monotonic_ns()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append((time.monotonic_ns(), line.rstrip("\n")))
            self.f.write(line)
        self.f.close()

    def first(self, text):
        return next(((t, line) for t, line in list(self.lines) if text in line), (None, None))

    def count(self, text):
        return sum(text in line for _, line in list(self.lines))


def ours(prog, seconds):
    def build(d, short):
        return apps.mpirun_openmpi(os.path.join(harness.MPI_DIR, f"{prog}.openmpi"), str(seconds)), seconds
    return build


# the solver's usual run, measured monitored on this shared 2-core VM (bench/hang.py detect
# --programs solver --seeds 0): 100,000 iterations took 367 s at load average 13-15, six times
# the 60 s once written here (its healthy run outlasted the deadline); 25,000 took 49 s at
# load 5-9 and about 92 s at 13-15: like waits, a minute and a half at most, faults inside it
SOLVER_ITERATIONS, SOLVER_USUAL_S = 25000, 95


def solver(d, short):
    return apps.mpirun_openmpi(os.path.join(harness.MPI_DIR, "solver.openmpi"), str(SOLVER_ITERATIONS), "60000"), \
        SOLVER_USUAL_S


PROGRAMS = dict(apps.APPS)
PROGRAMS.pop("halo", None)
PROGRAMS.update({"waits": ours("waits", 90), "solver": solver})
NEEDS = dict(apps.NEEDS, waits=None, solver=None)
OURS = {"waits", "solver"}


def yielding(cmd):
    """Open MPI's waiting ranks yield the CPU when they find nothing to do (they still poll)."""
    i = cmd.index("-np")
    return cmd[:i] + ["--mca", "mpi_yield_when_idle", "1"] + cmd[i:]


def with_io_export(cmd):
    """Open MPI's mpirun passes on only the variables it is told to."""
    i = cmd.index("-np")
    return cmd[:i] + ["-x", "PDIMON_SPIN_IO"] + cmd[i:]


def start(d, name, cmd, workdir, env, out_path):
    p = subprocess.Popen([harness.PDIMON, "run", "--step", name, "--", *cmd], cwd=workdir,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env=dict(d.env, PDIMON_APPS_RUN=name, **env))
    return p, Output(p.stderr, out_path)


def running(d, name):
    show = campaign.query_json(d, "show", name, "--json") or {}
    tasks = show.get("tasks") or []
    return len(tasks) == RANKS and all(t.get("calls", 0) > 1 for t in tasks)


def finish(p, name):
    campaign.signal_all(apps.rank_pids(name).values(), signal.SIGCONT)
    harness.kill_tree(p)
    campaign.signal_all(apps.rank_pids(name).values(), signal.SIGKILL)


def health_of(d, name):
    return ((campaign.query_json(d, "show", name, "--json") or {}).get("health")) or {}


# ---------------------------------------------------------------------------------------------
# detection

def healthy_run(prog, cmd, workdir, db, usual_s, log):
    """The program once, healthy: its history, and the longest quiet it shows."""
    bus = campaign.new_bus()
    d = harness.Daemon(*DEFAULTS, bus=bus, database=db)
    name = f"hang-{os.getpid()}-{prog}-healthy"
    try:
        p, out = start(d, name, cmd, workdir, {}, os.path.join(log, name + ".out"))
        p.wait(timeout=6 * usual_s + 120)
        harness.wait_for(lambda: (campaign.query_json(d, "show", name, "--json") or {}).get("state") == "ended", 60,
                         "the step to end")
        longest = health_of(d, name).get("longest_healthy_quiet_s", 0.0)
        return longest, out.count("looks hung"), out.count("looks slow"), (time.monotonic_ns() - out.t0) / 1e9
    finally:
        d.stop()
        bus.stop()


def detect_one(prog, fault, seed, cmd, workdir, db, usual_s, log):
    rnd = random.Random(f"{prog}/{fault}/{seed}")
    rank = rnd.randrange(RANKS)
    at_s = usual_s * rnd.uniform(0.25, 0.55)
    name = f"hang-{os.getpid()}-{prog}-{fault}-{seed}"
    truth_file = os.path.join(workdir, name + ".truth")
    env = {"PDIMON_SPIN_MS": "-1", "PDIMON_SPIN_TRUTH": truth_file}
    if fault == "io":
        env["PDIMON_SPIN_IO"] = "1"
        cmd = with_io_export(cmd)
    if fault == "deadlock":
        # by iteration, early enough that the busiest machine gets there long before the end
        env.update(PDIMON_FAULT="deadlock", PDIMON_FAULT_RANK=str(rank), PDIMON_FAULT_WHERE="mpi",
                   PDIMON_FAULT_ITER=str(rnd.randrange(300, 1300)), PDIMON_FAULT_TRUTH=truth_file)
    bus = campaign.new_bus()
    d = harness.Daemon(*DEFAULTS, bus=bus, database=db)
    res = {"program": prog, "fault": fault, "seed": seed, "rank": rank}
    p = None
    try:
        p, out = start(d, name, cmd, workdir, env, os.path.join(log, name + ".out"))
        harness.wait_for(lambda: running(d, name) or p.poll() is not None, 180, "the ranks to run")
        t_fault = None
        if fault != "deadlock":
            time.sleep(at_s)  # the plan's own time: the fault comes that far into the run
            pid = apps.rank_pids(name).get(rank)
            if pid is None:
                return dict(res, end="no such rank")
            t_fault = time.monotonic_ns()
            if fault == "stop":
                os.kill(pid, signal.SIGSTOP)
            else:
                apps.tgkill(pid, pid, apps.SPIN_SIGNAL)  # the main thread, the program's
        limit = 6 * usual_s + 300
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and p.poll() is None and out.first("looks hung")[0] is None:
            time.sleep(0.2)
        t_alarm, line = out.first("looks hung")
        if fault in ("spin", "io", "deadlock"):
            try:  # when it really began: when the rank left MPI (spin, io), or entered the Recv
                with open(truth_file) as f:
                    txt = f.read()
                t_fault = json.loads(txt)["t_ns"] if fault == "deadlock" else int(txt)
            except (OSError, ValueError, KeyError):
                t_fault = None
        res.update(end="alarm" if line else ("exit" if p.poll() is not None else "no alarm"), line=line)
        if line and t_fault:
            res["latency_s"] = (t_alarm - t_fault) / 1e9
        m = LP.search(line or "")
        named = ranks_of(m.group(1)) if m else set()
        stuck = {rank, (rank + 1) % RANKS} if fault == "deadlock" else {rank}
        res["lp"] = sorted(named)
        res["lp_correct"] = bool(named) and named <= stuck
        res["health"] = health_of(d, name).get("health")
        return res
    finally:
        if p is not None:
            finish(p, name)
        try:
            d.stop()
        except AssertionError as e:
            res["daemon"] = str(e)[:200]
        bus.stop()


def detect(args):
    out_dir = args.out or tempfile.mkdtemp(prefix="pdimon-hang-bench-")
    os.makedirs(out_dir, exist_ok=True)
    results = []
    for prog in args.programs.split(","):
        if NEEDS.get(prog) and not shutil.which(NEEDS[prog]):
            print(f"# {prog}: {NEEDS[prog]} is not installed, skipped", flush=True)
            continue
        workdir = tempfile.mkdtemp(prefix=f"pdimon-hang-{prog}-")
        os.chmod(workdir, 0o755)
        cmd, usual_s = PROGRAMS[prog](workdir, False)
        usual_s = getattr(usual_s, "wall_s", usual_s)  # apps.py's Usual, or seconds
        db = os.path.join(workdir, "pdimon.db")
        longest, hung, slow, took = healthy_run(prog, cmd, workdir, db, usual_s, out_dir)
        target = max(30.0, 3 * longest)
        print(f"# {prog}: healthy run of {took:.0f} s: longest quiet {longest:.1f} s (target {target:.0f} s); "
              f"{hung} hung and {slow} slow alarms", flush=True)
        usual_s = took  # the faults come within the run as this machine runs it now
        for fault in args.faults.split(","):
            if fault == "deadlock" and prog not in OURS:
                continue
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                try:
                    r = detect_one(prog, fault, seed, cmd, workdir, db, usual_s, out_dir)
                except AssertionError as e:  # a daemon that did not start in time on a loaded machine
                    r = {"program": prog, "fault": fault, "seed": seed, "end": f"not run: {str(e)[:120]}"}
                r["target_s"] = target
                r["in_time"] = r.get("latency_s") is not None and r["latency_s"] <= target
                results.append(r)
                print(json.dumps(r), flush=True)
    alarms = [r for r in results if r.get("line")]
    lat = sorted(r["latency_s"] for r in results if r.get("latency_s") is not None)
    print(f"\ndetection: {len(alarms)}/{len(results)} hangs announced, "
          f"{sum(r['in_time'] for r in results)}/{len(results)} within target, "
          f"least progressed correct {sum(r.get('lp_correct', False) for r in results)}/{len(results)}")
    if lat:
        print(f"latency: median {lat[len(lat) // 2]:.1f} s, max {lat[-1]:.1f} s")
    for prog in sorted({r["program"] for r in results}):
        for fault in sorted({r["fault"] for r in results if r["program"] == prog}):
            rs = [r for r in results if r["program"] == prog and r["fault"] == fault]
            ls = [f"{r['latency_s']:.0f}" for r in rs if r.get("latency_s") is not None]
            print(f"  {prog:8} {fault:9} alarms {sum(bool(r.get('line')) for r in rs)}/{len(rs)}  "
                  f"in time {sum(r['in_time'] for r in rs)}/{len(rs)}  LP {sum(r.get('lp_correct', False) for r in rs)}"
                  f"/{len(rs)}  latency s {','.join(ls)}  (target {rs[0]['target_s']:.0f} s)")
    print(f"runs' output in {out_dir}")


# ---------------------------------------------------------------------------------------------
# soak

def soak_programs():
    """(name, builder, environment): healthy runs, the long legitimate waits among them."""
    w = lambda s: ours("waits", s)  # noqa: E731
    progs = [
        ("waits-busy", w(45), {}),
        ("waits-compute-15", w(75), {"WAITS_LONG_S": "15", "WAITS_LONG_AT": "8", "WAITS_LONG_EVERY": "30"}),
        ("waits-compute-30", w(60), {"WAITS_LONG_S": "30", "WAITS_LONG_AT": "12", "WAITS_LONG_RANK": "1"}),
        ("waits-compute-10", w(60), {"WAITS_LONG_S": "10", "WAITS_LONG_AT": "5", "WAITS_LONG_EVERY": "15",
                                     "WAITS_LONG_RANK": "3"}),
        ("waits-io-20", w(70), {"WAITS_LONG_S": "20", "WAITS_LONG_AT": "10", "WAITS_LONG_EVERY": "35",
                                "WAITS_LONG_KIND": "io"}),
        ("waits-checkpoint-25", w(80), {"WAITS_LONG_S": "25", "WAITS_LONG_AT": "15", "WAITS_LONG_EVERY": "45",
                                        "WAITS_LONG_KIND": "barrier", "WAITS_LONG_RANK": "2"}),
        ("solver", lambda d, s: (apps.mpirun_openmpi(os.path.join(harness.MPI_DIR, "solver.openmpi"), "3000"), 30), {}),
    ]
    for app in ("gromacs", "hpcc", "meep", "mpb"):
        if shutil.which(apps.NEEDS[app]):
            progs.append((app, apps.APPS[app], {}))
    return progs


def soak(args):
    out_dir = args.out or tempfile.mkdtemp(prefix="pdimon-hang-soak-")
    os.makedirs(out_dir, exist_ok=True)
    os.chmod(out_dir, 0o755)
    progs = soak_programs()
    if args.programs:
        progs = [p for p in progs if p[0] in args.programs.split(",")]
    # low CPU: our programs twice as often as the real applications, which compute for real
    ours_ = [p[0] for p in progs if p[0] not in apps.APPS]
    schedule = ours_ * (2 if args.low_cpu else 1) + [p[0] for p in progs if p[0] in apps.APPS]
    cmds = {}
    for name, build, env in progs:
        workdir = os.path.join(out_dir, name)
        os.makedirs(workdir, exist_ok=True)
        os.chmod(workdir, 0o755)
        cmd = build(workdir, False)[0]
        if args.low_cpu:
            cmd = yielding(cmd)
            if name.startswith("waits"):
                env = dict(env, WAITS_SLICE="sleep")
        if args.nice:
            cmd = ["nice", "-n", str(args.nice)] + cmd
        cmds[name] = cmd, workdir, env
    bus = campaign.new_bus()
    d = harness.Daemon(*DEFAULTS, bus=bus, database=os.path.join(out_dir, "pdimon.db"))
    lock = threading.Lock()
    results, todo, jobs = [], list(range(args.runs)), {}

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop(0)
            prog = schedule[i % len(schedule)]
            cmd, workdir, env = cmds[prog]
            name = f"soak-{i:04d}-{prog}"
            env = dict(env, WAITS_DIR=workdir)
            t0 = time.monotonic()
            p, out = start(d, name, cmd, workdir, env, os.path.join(out_dir, name + ".out"))
            with lock:
                jobs[name] = p
            try:
                p.wait(timeout=3600)
            except subprocess.TimeoutExpired:
                finish(p, name)
            with lock:
                jobs.pop(name, None)
            out.thread.join(timeout=30)
            r = {"run": i, "program": prog, "exit": p.returncode, "seconds": time.monotonic() - t0,
                 "hung": out.count("looks hung"), "slow": out.count("looks slow"),
                 "longest_quiet_s": health_of(d, name).get("longest_healthy_quiet_s")}
            with lock:
                results.append(r)
            print(json.dumps(r), flush=True)

    status = {}
    try:
        threads = [threading.Thread(target=worker, daemon=True) for _ in range(args.parallel)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        status = campaign.query_json(d, "status", "--json") or {}
    except KeyboardInterrupt:
        print("# interrupted: the runs so far", flush=True)
    finally:
        with lock:
            todo.clear()
            for name, p in list(jobs.items()):
                finish(p, name)
        d.stop()
        bus.stop()
    hours = sum(r["seconds"] for r in results) / 3600
    print(f"\nsoak: {len(results)} step-runs, {hours:.2f} step-hours of healthy steps, "
          f"{sum(r['hung'] for r in results)} hung alarms, {sum(r['slow'] for r in results)} slow alarms "
          f"(pdimond counted {status.get('health_alarms')}), {sum(r['exit'] != 0 for r in results)} runs failed")
    for prog in sorted({r["program"] for r in results}):
        rs = [r for r in results if r["program"] == prog]
        print(f"  {prog:20} runs {len(rs):4}  step-hours {sum(r['seconds'] for r in rs) / 3600:6.2f}  "
              f"hung {sum(r['hung'] for r in rs)}  slow {sum(r['slow'] for r in rs)}  failed "
              f"{sum(r['exit'] != 0 for r in rs)}")
    print(f"runs' output in {out_dir}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("detect")
    a.add_argument("--programs", default="gromacs,hpcc,meep,mpb,waits,solver")
    a.add_argument("--faults", default="stop,spin,io,deadlock")
    a.add_argument("--seeds", type=int, default=2)
    a.add_argument("--first-seed", type=int, default=0)
    a.add_argument("--out")
    b = sub.add_parser("soak")
    b.add_argument("--runs", type=int, default=220)
    b.add_argument("--parallel", type=int, default=2)
    b.add_argument("--low-cpu", action="store_true",
                   help="our programs sleep their loop's slice (WAITS_SLICE=sleep) and every rank yields "
                        "when idle (mpi_yield_when_idle): more steps at once on a small machine")
    b.add_argument("--nice", type=int, default=0, help="the steps' niceness (a shared machine)")
    b.add_argument("--programs", help="only these soak programs (comma-separated names)")
    b.add_argument("--out")
    args = ap.parse_args()
    # a benchmark in the background ignores SIGINT: SIGTERM stops it cleanly (jobs, pdimond)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if os.geteuid() != 0:
        sys.exit("hang.py: run as root (BPF, other users' processes)")
    (detect if args.mode == "detect" else soak)(args)


if __name__ == "__main__":
    main()

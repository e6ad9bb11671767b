#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""campaign.py -- the fault-injection evaluation: real MPI programs, a real pdimond, scored.

For each (program, fault, where, seed) it starts a private system bus and pdimond (the
integration harness's Daemon), runs `pdimon run --step NAME -- mpirun -np 8 PROGRAM` with
the fault set in the environment (tests/mpi/fault.h: rank, iteration, call site and stall
length drawn from the seed), waits -- on conditions, with deadlines -- until the job ends or
hangs (every task stuck: verdict "hang" and no task moved for a while), takes the analysis
(`pdimon analyze STEP --json` where the CLI has it, else `pdimon report STEP --json`) and the
phase windows (`pdimon show STEP --json`), kills what it started and scores the analysis
against the ground truth the faulty rank wrote (PDIMON_FAULT_TRUTH):

  phase   automaded.faulty_phase is the faulty rank's phase whose time window holds the
          injection (the last phase that started at or before it)
  task    automaded.faulty_rank is the faulty rank (or automaded.faulty_ranks, when given,
          holds it and at most half of the tasks)
  top1/5  the first / one of the first five automaded.transitions has a state ("from" or
          "to") at the injection's call site file:line: the call the fault stands beside
          (mpi), or either call around the computation it is in (compute)
  LP      hang-type faults (hang, drop) that hung: recall = the truly least-progressed
          rank is in verdict.least_progressed; precision = the share of the reported ranks
          that are truly least progressed. As in PDI (sec. 5.2), a hang's truly LP task is
          the hung one. For a dropped message it is the rank the message was for: it is
          stuck at the earliest point of the run, waiting for a message that never comes,
          and every other rank waits for it, directly or not -- the rank that skipped the
          send went on and blocks later, on a rank that waits for the lost message.
          (The fault's origin, the sender, is what "task" scores.)

It prints one table per fault x where (runs, phase %, task %, top-1 %, top-5 %, LP recall %,
LP precision %) and writes a line per run, reported vs. truth, to the log; with --out, every
run's analysis, show output and truth are kept there. --floor makes it a test: it exits 1
when a figure is below its floor, or when a pdimond did not exit cleanly (crash, sanitizer).

Usage: campaign.py [--programs halo,master_worker,solver] [--faults hang,stall:compute,...]
                   [--seeds N] [--first-seed S] [--impl openmpi|mpich] [--floor SPEC|FILE]
                   [--log FILE] [--out DIR] [--jobs 1]
A floor SPEC is comma- or line-separated METRIC=PERCENT, FAULT.METRIC=PERCENT or
FAULT:WHERE.METRIC=PERCENT; METRIC is phase, task, top1, top5, lp_recall or lp_precision.
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))
import harness  # noqa: E402  (the integration tests' daemon, bus and MPI helpers)

RANKS = 8
FAULTS = ["hang", "stall", "cpu", "mem", "drop", "extra"]
WHERES = {"hang": ["compute", "mpi"], "stall": ["compute", "mpi"], "cpu": ["compute", "mpi"],
          "mem": ["compute", "mpi"], "drop": ["mpi"], "extra": ["mpi"]}
HANG_TYPE = {"hang", "drop"}  # the faults that hang the job: LP is scored on them
METRICS = ["phase", "task", "top1", "top5", "lp_recall", "lp_precision"]
DAEMON_FAILURES = []  # runs whose pdimond crashed or did not exit 0: a failure under --floor

# Per program: its arguments, its iteration (or round) count, and the call sites ("@marker"
# in tests/mpi/PROGRAM.c) a fault may be put at, per rank role ("all", or "master"/"worker").
# A compute site names the call the computation follows. None: the first chance.
PROGRAMS = {
    "halo": {"args": [800], "iters": 800, "sites": {
        "compute": {"all": ["waitall", "allreduce"]},
        "mpi": {"all": ["irecv", "isend", "waitall", "allreduce"]},
        "send": {"all": [None]}}},
    "master_worker": {"args": [200], "iters": 200, "sites": {
        "compute": {"master": ["recv_result"], "worker": ["recv_work"]},
        "mpi": {"master": ["bcast", "send_work", "recv_result", "reply", "reduce"],
                "worker": ["bcast", "recv_work", "send_result", "reduce"]},
        "send": {"worker": ["send_result"]}}},
    "solver": {"args": [300], "iters": 300, "sites": {
        "compute": {"all": ["recv_right", "allreduce_pq"]},
        "mpi": {"all": ["send_right", "recv_left", "send_left", "recv_right", "allreduce_pq",
                        "allreduce_rr", "allgather", "bcast"]},
        "send": {"all": [None]}}},
}


def log(f, *a):
    print(*a, file=f, flush=True)


# ---------------------------------------------------------------------------------------------
# reading pdimon's output: the member names live here only

def read_analysis(doc):
    """What the scoring needs from the analysis JSON (pdimon analyze/report --json): its
    "diagnosis", the verdict whichever analysis made it (PDI for a hang: the phase and place
    the least-progressed task stopped in; AutomaDeD otherwise); the "automaded" member of a
    CLI that has no diagnosis yet."""
    a = doc.get("automaded") or {}
    d = doc.get("diagnosis") or {}
    v = doc.get("verdict") or {}
    ranks = d.get("faulty_ranks", a.get("faulty_ranks"))
    # where a hang's least-progressed task stopped is the transition it never completed
    stopped = [(x.get("where", ""), "") for x in d.get("stopped_at") or []]
    return {
        "faulty_phase": d.get("faulty_phase", a.get("faulty_phase")),
        "faulty_rank": ranks[0] if ranks else a.get("faulty_rank"),
        "faulty_ranks": ranks,
        "phase_scores": a.get("phase_scores"),
        "transitions": stopped + [(t.get("from", ""), t.get("to", ""))
                                  for t in d.get("transitions", a.get("transitions")) or []],
        "verdict": v.get("kind"),
        "lp": parse_ranges(v.get("least_progressed") or ""),
    }


def phase_windows(show, rank):
    """[(t_start_ns, t_end_ns)] of RANK's phases in `pdimon show --json`."""
    for t in show.get("tasks", []):
        if t.get("rank") == rank:
            return [(p.get("t_start_ns"), p.get("t_end_ns")) for p in t.get("phases", [])]
    return []


def parse_ranges(text):
    """"[0-3,5]" -> [0, 1, 2, 3, 5]."""
    out = []
    for part in text.strip().strip("[]").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


# ---------------------------------------------------------------------------------------------
# one run

class Plan:
    """What one (program, fault, where, seed) injects, drawn from the seed."""

    def __init__(self, program, fault, where, seed):
        rng = random.Random(f"{program}/{fault}/{where}/{seed}")
        spec = PROGRAMS[program]
        self.program, self.fault, self.where, self.seed = program, fault, where, seed
        kind = "send" if fault in ("drop", "extra") else where
        sites = spec["sites"][kind]
        if "all" in sites:
            self.rank = rng.randrange(RANKS)
            choices = sites["all"]
        else:
            roles = [r for r in ("master", "worker") if r in sites]
            role = rng.choice(roles) if len(roles) > 1 else roles[0]
            self.rank = 0 if role == "master" else rng.randrange(1, RANKS)
            choices = sites[role]
        self.site = rng.choice(choices)
        # away from the prologue (the first 96 collectives) and the end
        self.iter = rng.randrange(int(spec["iters"] * 0.35), int(spec["iters"] * 0.7))
        self.us = rng.randrange(1000000, 5000001) if fault == "stall" else 0

    def env(self, truth):
        e = {"PDIMON_FAULT": self.fault, "PDIMON_FAULT_RANK": str(self.rank),
             "PDIMON_FAULT_ITER": str(self.iter), "PDIMON_FAULT_WHERE": self.where,
             "PDIMON_FAULT_TRUTH": truth, "PDIMON_FAULT_SITE": self.site or ""}
        if self.us:
            e["PDIMON_FAULT_US"] = str(self.us)
        return e

    def __str__(self):
        s = f"{self.program} {self.fault}:{self.where} seed={self.seed} rank={self.rank} iter={self.iter}"
        return s + (f" site={self.site}" if self.site else "") + (f" us={self.us}" if self.us else "")


def cli_has_analyze():
    """Whether this build's pdimon has `analyze` (its usage says so; no daemon needed)."""
    r = subprocess.run([harness.PDIMON, "--help"], capture_output=True, text=True, timeout=60)
    return re.search(r"^\s+analyze\b", r.stdout + r.stderr, re.M) is not None


def query_json(d, *args):
    """`pdimon ARGS`' JSON, or None while the step is unknown or the daemon busy."""
    try:
        r = d.pdimon(*args, check=False, timeout=60)
    except subprocess.TimeoutExpired:
        return None
    if r.returncode != 0:
        return None
    try:
        return json.loads(r.stdout)
    except ValueError:
        return None


def stuck(rep, stuck_ns):
    """Every task of a hang verdict has not moved for STUCK_NS: the job will not go on."""
    if not rep or (rep.get("verdict") or {}).get("kind") != "hang":
        return False
    tasks = rep.get("tasks") or []
    running = [t for t in tasks if t.get("state") == "running"]
    return len(tasks) == RANKS and running and all(t.get("for_ns", 0) >= stuck_ns for t in running)


def job_processes(truth):
    """Pids of processes whose environment names our truth file (the ranks of our job)."""
    pids, key = [], f"PDIMON_FAULT_TRUTH={truth}".encode()
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/environ", "rb") as f:
                    if key in f.read().split(b"\0"):
                        pids.append(int(p))
            except OSError:
                pass
    return pids


def signal_all(pids, sig):
    """SIG to each of PIDS that still exists."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def new_bus():
    """A private system bus of our own (the Daemon's own would outlive a daemon that fails to start)."""
    directory = tempfile.mkdtemp(prefix="pdimon-faults-bus-")
    return harness.SystemBus(directory)


def run_one(plan, impl, analyze_cmd, workdir, runlog, job_timeout):
    """Runs PLAN under a fresh pdimond; returns (truth, analysis doc, show doc, how it ended)."""
    name = f"flt-{os.getpid()}-{plan.program}-{plan.fault}-{plan.where}-{plan.seed}"
    truth_path = os.path.join(workdir, name + ".truth")
    bus = new_bus()
    try:
        d = harness.Daemon(bus=bus)
    except AssertionError:
        bus.stop()
        raise
    p = None
    end, doc, show = "timeout", None, None
    try:
        env = dict(d.env, **plan.env(truth_path))
        cmd = [harness.PDIMON, "run", "--step", name, "--",
               *harness.mpirun(impl, RANKS, plan.program, *PROGRAMS[plan.program]["args"])]
        with open(os.path.join(workdir, name + ".out"), "w") as out:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        # a job that hangs is taken when nothing moved for this long; a stall must not look so
        stuck_ns = 1.5e9 if plan.fault in HANG_TYPE else plan.us * 1000 + 3e9
        deadline = time.monotonic() + job_timeout + plan.us / 1e6
        while True:
            if p.poll() is not None:
                end = f"exit {p.returncode}"
                break
            rep = query_json(d, "report", name, "--json")
            if stuck(rep, stuck_ns):
                end = "hang"
                break
            if time.monotonic() > deadline:
                break
            try:
                p.wait(timeout=0.5)  # the job's end or the next look, whichever first
            except subprocess.TimeoutExpired:
                pass
        if end.startswith("exit"):
            # the step ends when pdimond has seen every task go: wait for it, bounded
            try:
                harness.wait_for(lambda: (query_json(d, "show", name, "--json") or {}).get("state") == "ended",
                                 60, "the step to end")
            except AssertionError:
                end += ", but the step never ended in pdimond"
        doc = query_json(d, analyze_cmd, name, "--json")
        show = query_json(d, "show", name, "--json")
        if end == "timeout":
            tail = d.read_log()[-1500:].replace("\n", " / ")
            log(runlog, f"# {name}: neither ended nor hung in time; pdimond said: {tail}")
    finally:
        if p is not None:
            harness.kill_tree(p)
        signal_all(job_processes(truth_path), signal.SIGKILL)  # ranks that left the job's process group
        try:
            d.stop()
        except AssertionError as e:
            DAEMON_FAILURES.append(name)
            log(runlog, f"# {name}: pdimond did not stop cleanly: {str(e)[:200]} ... {str(e)[-1500:]}")
        bus.stop()
    truth = None
    if os.path.exists(truth_path):
        with open(truth_path) as f:
            truth = json.load(f)
    return truth, doc, show, end


# ---------------------------------------------------------------------------------------------
# scoring

def site_pattern(program, marker):
    line = harness.marker_line(f"{program}.c", marker)
    return re.compile(rf"@{re.escape(program)}\.c:{line}(?!\d)")


def score(plan, truth, doc, show, end):
    """{metric: True/False, or None where it does not apply} and a line for the log."""
    s = {m: None for m in METRICS}
    if truth is None:  # a miss on every count: a run that broke must lower the figures
        s.update(phase=False, task=False, top1=False, top5=False)
        if plan.fault in HANG_TYPE:
            s["lp_recall"] = False
        return s, f"no ground truth: the fault did not fire ({end})"
    a = read_analysis(doc or {})
    rank = truth["rank"]
    # the phase whose window holds the injection, per the faulty rank's model
    windows = phase_windows(show or {}, rank)
    tphase = None
    for k, (t0, _t1) in enumerate(windows):
        if t0 is not None and t0 <= truth["t_ns"]:
            tphase = k
    s["phase"] = a["faulty_phase"] is not None and a["faulty_phase"] == tphase
    cluster = a["faulty_ranks"]
    s["task"] = a["faulty_rank"] == rank or (isinstance(cluster, list) and rank in cluster
                                              and len(cluster) <= RANKS // 2)
    markers = [truth["site"]] + ([truth["next"]] if truth.get("where") == "compute" and truth.get("next") else [])
    pats = [site_pattern(plan.program, m) for m in markers]

    def hit(tr):
        return any(p.search(tr[0]) or p.search(tr[1]) for p in pats)
    s["top1"] = bool(a["transitions"]) and hit(a["transitions"][0])
    s["top5"] = any(hit(t) for t in a["transitions"][:5])
    lp_truth = None
    if plan.fault in HANG_TYPE:
        lp_truth = {rank} if plan.fault == "hang" else {truth["peer"]}
        got = set(a["lp"]) if end == "hang" and a["verdict"] == "hang" else set()
        s["lp_recall"] = bool(lp_truth & got)
        s["lp_precision"] = len(lp_truth & got) / len(got) if got else None
    line = (f"truth: rank={rank} phase={tphase} site={','.join(markers)}"
            f"{' lp=' + str(sorted(lp_truth)) if lp_truth else ''} | "
            f"reported: verdict={a['verdict']} phase={a['faulty_phase']} rank={a['faulty_rank']}"
            f"{' ranks=' + str(cluster) if cluster is not None else ''} lp={a['lp']} "
            f"top={[f'{x} => {y}' for x, y in a['transitions'][:5]]}")
    return s, line


class Tally:
    def __init__(self):
        self.runs = 0
        self.hits = {m: 0 for m in METRICS}
        self.n = {m: 0 for m in METRICS}
        self.sums = {m: 0.0 for m in METRICS}

    def add(self, s):
        self.runs += 1
        for m, v in s.items():
            if v is None:
                continue
            self.n[m] += 1
            self.sums[m] += float(v)

    def pct(self, m):
        return 100.0 * self.sums[m] / self.n[m] if self.n[m] else None


def fmt(v):
    return "    -" if v is None else f"{v:5.0f}"


def table(tallies, out):
    head = f"{'fault':<16} {'runs':>4} {'phase%':>6} {'task%':>6} {'top1%':>6} {'top5%':>6} {'LPrec%':>6} {'LPprec%':>7}"
    print(head, file=out)
    for key in sorted(tallies, key=lambda k: (k == "all", FAULTS.index(k.split(":")[0]) if k != "all" else 0, k)):
        t = tallies[key]
        print(f"{key:<16} {t.runs:>4} {fmt(t.pct('phase')):>6} {fmt(t.pct('task')):>6} {fmt(t.pct('top1')):>6} "
              f"{fmt(t.pct('top5')):>6} {fmt(t.pct('lp_recall')):>6} {fmt(t.pct('lp_precision')):>7}", file=out)


def parse_floor(spec, metrics=METRICS):
    """"task=80, hang.lp_recall=100" (or a file of such lines) -> {(scope, metric): percent}."""
    if spec and os.path.isfile(spec):
        with open(spec) as f:
            spec = ",".join(l.split("#")[0] for l in f)
    floor = {}
    for tok in re.split(r"[,\s]+", spec or ""):
        if not tok:
            continue
        key, _, val = tok.partition("=")
        scope, _, metric = key.rpartition(".")
        if metric not in metrics:
            raise SystemExit(f"campaign: unknown metric in floor: {tok}")
        floor[(scope or "all", metric)] = float(val)
    return floor


def check_floor(floor, by_key, by_fault, overall):
    bad = []
    for (scope, metric), want in floor.items():
        t = overall if scope == "all" else by_key.get(scope) or by_fault.get(scope)
        got = t.pct(metric) if t else None
        if got is None or got < want:
            bad.append(f"{scope}.{metric} = {'n/a' if got is None else f'{got:.0f}'}% < floor {want:.0f}%")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--faults", default=",".join(FAULTS),
                    help="FAULT (every place it can be put) or FAULT:WHERE, comma-separated")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--impl", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--floor", default="")
    ap.add_argument("--log", default="", help="the per-run lines (default: a file in --out or /tmp)")
    ap.add_argument("--out", default="", help="keep every run's truth, analysis and show JSON here")
    ap.add_argument("--jobs", type=int, default=1, help="1 only: the runs share the machine's cores")
    ap.add_argument("--job-timeout", type=float, default=60, help="seconds a job may run before it is taken as it is")
    args = ap.parse_args()
    # stopped (meson's timeout, ^C, kill): unwind, so that every run's finally kills its job
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.jobs != 1:
        raise SystemExit("campaign: --jobs 1 only (the ranks already oversubscribe the cores)")
    if os.geteuid() != 0:
        raise SystemExit("campaign: pdimond loads BPF programs: run as root")
    programs = [p for p in args.programs.split(",") if p]
    for p in programs:
        if p not in PROGRAMS:
            raise SystemExit(f"campaign: unknown program {p}")
    combos = []
    for f in args.faults.split(","):
        fault, _, where = f.partition(":")
        if fault not in FAULTS or (where and where not in WHERES[fault]):
            raise SystemExit(f"campaign: unknown fault {f}")
        combos += [(fault, w) for w in ([where] if where else WHERES[fault])]
    floor = parse_floor(args.floor)
    out = args.out or tempfile.mkdtemp(prefix="pdimon-faults-")
    os.makedirs(out, exist_ok=True)
    logpath = args.log or os.path.join(out, "campaign.log")
    runlog = open(logpath, "a")
    analyze_cmd = "analyze" if cli_has_analyze() else "report"
    log(runlog, f"# campaign {time.strftime('%Y-%m-%d %H:%M:%S')} impl={args.impl} analysis=pdimon {analyze_cmd} "
                f"programs={programs} combos={combos} seeds={args.first_seed}..{args.first_seed + args.seeds - 1}")
    print(f"campaign: {len(programs) * len(combos) * args.seeds} runs, {args.impl}, pdimon {analyze_cmd}; "
          f"per-run lines in {logpath}", flush=True)
    by_key, by_fault, overall = {}, {}, Tally()
    started = time.monotonic()
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for program in programs:
            for fault, where in combos:
                plan = Plan(program, fault, where, seed)
                t0 = time.monotonic()
                for attempt in range(2):
                    try:
                        truth, doc, show, end = run_one(plan, args.impl, analyze_cmd, out, runlog, args.job_timeout)
                    except (AssertionError, OSError, subprocess.SubprocessError) as e:
                        truth, doc, show, end = None, None, None, f"error: {str(e)[:300]}"
                    if truth is not None:
                        break
                    # the fault never fired: the job did not get that far (a machine too
                    # busy to start it, say) -- no verdict on the analysis; once more
                    log(runlog, f"# {plan}: no ground truth ({end}){', retried' if attempt == 0 else ''}")
                s, line = score(plan, truth, doc, show, end)
                for store, key in ((by_key, f"{fault}:{where}"), (by_fault, fault)):
                    store.setdefault(key, Tally()).add(s)
                overall.add(s)
                marks = " ".join(f"{m}={'-' if v is None else (int(v) if isinstance(v, bool) else f'{v:.2f}')}"
                                 for m, v in s.items())
                log(runlog, f"{plan} end={end} {time.monotonic() - t0:.0f}s | {marks} | {line}")
                with open(os.path.join(out, f"{program}-{fault}-{where}-{seed}.json"), "w") as f:
                    json.dump({"plan": str(plan), "end": end, "truth": truth, "score": s,
                               "analysis": doc, "show_phases": {t["rank"]: [(p.get("t_start_ns"), p.get("t_end_ns"))
                                                                           for p in t.get("phases", [])]
                                                                for t in (show or {}).get("tasks", [])}}, f)
                print(f"  {plan}: {end}, {marks}", flush=True)
    by_key["all"] = overall
    print(f"\n{overall.runs} runs in {time.monotonic() - started:.0f} s ({args.impl}, pdimon {analyze_cmd})")
    table(by_key, sys.stdout)
    table(by_key, runlog)
    bad = check_floor(floor, by_key, by_fault, overall)
    if DAEMON_FAILURES:
        print(f"campaign: pdimond did not exit cleanly in {len(DAEMON_FAILURES)} runs: "
              f"{', '.join(DAEMON_FAILURES)} (see {logpath})", file=sys.stderr)
        if floor:
            bad.append("pdimond must exit cleanly in every run")
    for b in bad:
        print(f"campaign: below the floor: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""apps.py -- the diagnosis on real applications: faults injected from outside, scored.

Real MPI applications from Debian's archive, with their own example inputs, 4 ranks under a
fresh pdimond each (`pdimon run --step NAME -- mpirun -np 4 ...`), plus our own halo program
(tests/mpi). The program is never changed: every fault comes from outside, at a rank and a
time drawn from the seed: once the job has done 25-65% (uniformly) of its usual work, counted
as the CPU time its ranks used since MPI_Init, so that an idle machine and a loaded one inject
at the same stretch of the program (a delay in seconds overshoots the end of a short input on
an idle machine):

  none       a fault-free run: anything but "nothing abnormal found" is a false alarm
  stop       SIGSTOP for 2-5 s, then SIGCONT
  spin       the rank spins in compute for 2-5 s: SIGRTMIN+7 to an LD_PRELOAD agent
             (bench/apps/spin_agent.c) that busy-loops in the signal handler, outside MPI
  hang-stop  SIGSTOP for good
  hang-spin  the agent spins for good
  hang-io    the agent reads a file of a file system that does not answer, for good: the rank
             waits in uninterruptible sleep (tests/faults/stallfs.c, FUSE), as on a hung NFS
  deadlock   our halo only: two ranks each block in MPI_Recv from the other (tests/mpi/fault.h)
  cpu        a busy process (bench/apps/hog.c) pinned with the rank to the rank's CPU, 6 s
  mem        the same with a process streaming through 256 MiB (memory bandwidth), 6 s

Placement (--placement pinned, the default): while the hog runs, every thread of the victim rank is
pinned to the CPU it was on, where the hog runs too, and every thread of every other rank to the
other CPUs; each gets back the affinity it had once the hog is gone. The fault is a process on the
rank's CPU, as on a node with a core per rank: with 4 ranks on 2 CPUs and nothing pinned, the
scheduler put a second rank, at times three, beside the hog, and those lost as much as the victim
(spin13's and usage13's fresh seeds 900-911: a second rank in 7 of their 30 interference runs,
every rank alike in 3 more), so "alone" measured the placement. --placement free leaves the other ranks where the scheduler puts them, as a site
does (the analysis must not rely on the pinning: measure some runs so).

The busy process runs in the job's session (--hog-group job, the default): it competes with
the rank task against task, as a stray process of the job, a second job placed on the same CPU
in the same scheduling group, or any process on a kernel without autogroup (RHEL's, most HPC
nodes) does. Measured outside pdimon (every application of this file, full inputs, load
0.5-4): the rank it shares the CPU with falls to 1-4% of a CPU, 0.02-0.16 of its peers' share.
With --hog-group own it runs in the campaign's own session: Debian's kernel schedules each
session as one group (sched_autogroup), so the hog takes its CPU time from the job as a group;
the same measurement gave the rank 19-21% of a CPU, 0.56-0.65 of its peers' share (at a load
of 11, earlier, every rank fell alike by a quarter), a slowdown the analysis does not call
interference (it wants a third of the peers' share or less: lib/analysis/starved.h).

LAMMPS, Quantum ESPRESSO and CP2K are reserved for an independent evaluation: never here.

Scored per run, against the ground truth the injector knows (rank, CLOCK_MONOTONIC time --
the BPF timestamps' clock -- and what it did). The time is when the fault began on the rank: a
spin when the agent left MPI to spin, an interference when the busy process began (it writes
its clock as it starts; exec'ing it after the rank was pinned took 3-26 ms at load 9-21), a stop
when it was sent. A verdict of "nothing abnormal found" names no phase and no task to its
reader: phase, task, alone and top5 count only when the diagnosis says abnormal (a hang always
does).
  phase        diagnosis.faulty_phase is the faulty rank's phase whose wall-clock window
               holds the injection (from `pdimon show --json`)
  task         the faulty rank is among diagnosis.faulty_ranks, with at most half the ranks
  alone        diagnosis.faulty_ranks is the faulty rank alone (a deadlock: its two ranks)
  top5         one of the first five characteristic transitions was found in the faulty rank (a
               hang: the place a least-progressed rank stopped at is the faulty rank's)
  LP recall/precision  hangs: the truly least-progressed ranks (the stopped or spinning
               rank; both ranks of a deadlock, which are least progressed together)
               against verdict.least_progressed
  quiet        fault-free runs: diagnosis.abnormal is false ("nothing abnormal found")
  hist         the analysis judged the run against earlier runs of the program (--history)
  taskV        cpu/mem: "task" again, over only the runs where the victim alone lost CPU (every
               other rank kept at least twice its part of its share over the hog's 6 s; "all":
               every other rank kept less than 1.5 times it; hog_took_from(), logged as
               hog_took_from=victim|several|all); shown as %/runs.
               Unpinned, the hog often takes from several ranks or from every rank alike, and
               no rank then stands apart for "task" to find (doc/design/diagnosis-campaign.md)
A fault that did not fire (the application ended before the planned point; a spin the agent
never began) leaves nothing to be right about: such a run is counted in the "unfired" column
and left out of the percentages; the "all runs" columns count it as a miss for phase, task and
alone, as the scorer did before it told them apart (figures comparable with earlier reports).

Each run's directory under --out keeps what scoring it needs (run.json: the plan, the truth,
`pdimon show --json` and `analyze --json`), node.log (bench/node_log.py: the node's runnable tasks
and the ranks' kernel counts every 50 ms; a cpu/mem run's line ends with the job's CPU and the
tasks runnable beside its ranks over the hog's 6 s and the 6 s before: node_figures()) and the
run's pdimond database (pdimon.db), so that
--reanalyze DIR scores a changed analysis on the same runs: a fresh pdimond on each run's
database analyses its ended step again. Hangs are scored from their recorded analysis (what
the kernel said of a stuck task is gone once the job is); --reanalyze skips them.

--job-cgroup runs each job in a cgroup v2 of its own (created under the cgroup v2 mount, here
/sys/fs/cgroup/unified, and removed after the run, also when it fails), as a site whose jobs get
per-job cgroups (Slurm's proctrack/cgroup or task/cgroup) does: pdimond then reads the CPU the
job's group used beside its ranks' (daemon/probe/step_group.h). With --hog-group job the hog is
in it; with --hog-group own it is not. The cpu controller stays where the node has it (v1 here):
only the accounting moves, the scheduling is the same.

--history K runs like a site, where pdimond sees the same program many times: per application one
store (pdimond's database) kept across all of its runs, K fault-free runs of the same input and
rank count first (seeds 1000..; not scored with the others, listed as "(earlier runs)"), then the
measured runs, each judged against the earlier runs pdimond finds there as AutomaDeD's sample
runs (the three most recent that completed with nothing abnormal found). Every measured run goes
into the store too, as on a site. Without it (the default) every run has a fresh store: no
earlier run of the program. The table's head says which; its column "hist%" is the share of runs
the analysis judged against earlier runs (a floor may name it: CLASS.hist=PCT).

Usage: apps.py [--apps gromacs,hpcc,meep,mpb,nwchem,halo] [--faults none,stop,...] [--seeds N]
               [--first-seed S] [--short] [--hog-group own|job] [--placement pinned|free]
               [--budget PCT] [--history K] [--job-cgroup]
               [--floor SPEC|FILE] [--out DIR]
       apps.py --reanalyze DIR [--own-phases-only] [--apps ...] [--faults ...]
--short sizes every input for a run of a few seconds (the CI subset); the full inputs run
20-60 s each at 4 ranks on this 2-core machine. Run as root, under the heavy lock (shared).
"""
import argparse
import ctypes
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../tests/integration"))
sys.path.insert(0, os.path.join(HERE, "../tests/faults"))
import harness  # noqa: E402
import campaign  # noqa: E402  (reading pdimon's output: one place)
import node_log  # noqa: E402

RANKS = 4
BUILD = os.environ.get("PDIMON_BUILD", os.path.join(HERE, "../build"))
AGENT = os.path.join(BUILD, "tests/faults/libpdimon-spin-agent.so")  # built by tests/faults/meson.build
HOG = os.path.join(BUILD, "tests/faults/pdimon-hog")
SPIN_SIGNAL = signal.SIGRTMIN + 7
FAULTS = ["none", "stop", "spin", "hang-stop", "hang-spin", "hang-io", "deadlock", "cpu", "mem"]
HANGS = {"hang-stop", "hang-spin", "hang-io", "deadlock"}
SPUN = {"spin", "hang-spin", "hang-io"}  # the agent's signal: the fault began when it left MPI
STALLFS = os.path.join(BUILD, "tests/faults/pdimon-stallfs")
INTERFERENCE_S = 6.0
HOG_GROUP = "job"  # --hog-group: the session (scheduling group) the interference runs in
PLACEMENT = "pinned"  # --placement: the other ranks kept off the victim's CPU during an interference, or not
BUDGET = None  # --budget PCT: pdimond's max_overhead_pct (None: its default)
JOB_CGROUP = False  # --job-cgroup: each job in a cgroup v2 of its own (harness.Cgroup)
# --hog-group job: the job's session leader starts the hog when the injector names the CPU in
# the FIFO ($1); then it becomes the job's command
HOG_IN_JOB = 'f=$1; hog=$2; kind=$3; secs=$4; truth=$5; shift 5; ' \
             '(read cpu < "$f" && exec taskset -c "$cpu" "$hog" "$kind" "$secs" "$truth") & exec "$@"'
HISTORY_FIRST_SEED = 1000  # --history: the seeds of the earlier fault-free runs, apart from the measured ones
SAMPLE_RUNS = 3  # the earlier runs pdimond takes as sample runs by default (pdimond.conf(5): sample_runs)
METRICS = ["phase", "task", "alone", "top5", "lp_recall", "lp_precision", "quiet", "hist", "task_v"]
AS_BEFORE = ["phase", "task", "alone"]  # also over every run, a fault that did not fire a miss


# ---------------------------------------------------------------------------------------------
# the applications: (set-up of their inputs in DIR, the command, its usual run)

class Usual:
    """An application's usual run from its ranks' MPI_Init on, as measured here: WALL_S seconds
    (about the longest seen: what deadlines allow for; a load average near 60 stretched the
    full inputs of meep, MPB and HPCC to 150-290 s) and CPU_S seconds of CPU summed over its
    ranks: its work, which the faults are placed in. A rank waiting in Open MPI polls, so a
    loaded machine makes the same work cost more CPU (meep's full input: 5.2 CPU-s at a load
    of 4, 12-22 at 11-57); CPU_S is 0.8 of the least whole run seen (fault-free runs at loads
    4-60), so that a fault planned at 65% of it still comes before the end on an idle machine
    (at 18 and 16 CPU-s, meep's and HPCC's stops never fired at a load of 4)."""

    def __init__(self, wall_s, cpu_s):
        self.wall_s, self.cpu_s = wall_s, cpu_s


def mpirun_openmpi(*cmd):
    # the spin agent goes into the ranks alone: preloaded into `pdimon run` too, it would come
    # before an ASan build's runtime, which then refuses to start
    return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS), "-x", f"LD_PRELOAD={AGENT}",
            "-x", "PDIMON_SPIN_MS", "-x", "PDIMON_SPIN_TRUTH", "-x", "PDIMON_SPIN_IO", *cmd]


def gromacs(d, short):
    """GROMACS (C++, domain decomposition, PME): a 3 nm box of SPC water from its own data."""
    top = os.path.join(d, "topol.top")
    with open(top, "w") as f:
        f.write('#include "oplsaa.ff/forcefield.itp"\n#include "oplsaa.ff/spc.itp"\n'
                "[ system ]\nwater\n[ molecules ]\n")
    with open(os.path.join(d, "md.mdp"), "w") as f:
        f.write("integrator = md\ndt = 0.002\nnsteps = 100000\ncutoff-scheme = Verlet\ncoulombtype = PME\n"
                "rcoulomb = 0.9\nrvdw = 0.9\nconstraints = h-bonds\ntcoupl = v-rescale\ntc-grps = System\n"
                "tau-t = 0.1\nref-t = 300\nnstlog = 500\nnstenergy = 500\nnstcalcenergy = 100\n")
    subprocess.run(["gmx", "-quiet", "solvate", "-cs", "spc216.gro", "-box", "3", "3", "3", "-o", "w.gro",
                    "-p", "topol.top"], cwd=d, check=True, capture_output=True)
    subprocess.run(["gmx", "-quiet", "grompp", "-f", "md.mdp", "-c", "w.gro", "-p", "topol.top", "-o", "md.tpr",
                    "-maxwarn", "5"], cwd=d, check=True, capture_output=True)
    steps = 500 if short else 1000
    return mpirun_openmpi("gmx_mpi", "mdrun", "-quiet", "-s", "md.tpr", "-ntomp", "1", "-nb", "cpu", "-notunepme",
                          "-nsteps", str(steps), "-deffnm", "run"), \
        Usual(12, 2.6) if short else Usual(60, 2.6)


HPCC_INPUT = """HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
{n}          Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
2            Ps
2            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                               Number of additional problem sizes for PTRANS
1200 10000 30000                values of N
0                               number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64        values of NB
"""


def hpcc(d, short):
    """HPC Challenge (C): HPL, DGEMM, STREAM, PTRANS, RandomAccess, FFT, latency/bandwidth in a
    row -- phases that differ by nature."""
    with open(os.path.join(d, "hpccinf.txt"), "w") as f:
        f.write(HPCC_INPUT.format(n=500 if short else 1000))
    return mpirun_openmpi("hpcc"), Usual(20, 2.9) if short else Usual(70, 4.0)


def meep(d, short):
    """meep (C++, FDTD, Scheme front end): its straight-waveguide tutorial in 2-D."""
    with open(os.path.join(d, "waveguide.ctl"), "w") as f:
        f.write("(set! geometry-lattice (make lattice (size 16 8 no-size)))\n"
                "(set! geometry (list (make block (center 0 0) (size infinity 1 infinity)\n"
                "  (material (make dielectric (epsilon 12))))))\n"
                "(set! sources (list (make source (src (make continuous-src (frequency 0.15)))\n"
                "  (component Ez) (center -7 0))))\n"
                "(set! pml-layers (list (make pml (thickness 1.0))))\n"
                f"(set! resolution {10 if short else 20})\n(run-until {150 if short else 200})\n")
    return mpirun_openmpi("meep", "waveguide.ctl"), Usual(8, 2.6) if short else Usual(70, 4.1)


def mpb(d, short):
    """MPB (C, FFTW-MPI eigensolver, Scheme front end): its square lattice of rods tutorial."""
    with open(os.path.join(d, "rods.ctl"), "w") as f:
        f.write("(set! num-bands 8)\n"
                "(set! k-points (list (vector3 0 0 0) (vector3 0.5 0 0) (vector3 0.5 0.5 0) (vector3 0 0 0)))\n"
                f"(set! k-points (interpolate {4 if short else 12} k-points))\n"
                "(set! geometry (list (make cylinder (center 0 0 0) (radius 0.2) (height infinity)\n"
                "  (material (make dielectric (epsilon 12))))))\n"
                "(set! geometry-lattice (make lattice (size 1 1 no-size)))\n"
                f"(set! resolution {32 if short else 64})\n(run-tm)\n(run-te)\n")
    return mpirun_openmpi("mpb-mpi", "rods.ctl"), Usual(10, 1.8) if short else Usual(70, 14.9)


NWCHEM_INPUT = """start {name}
geometry units angstrom noautosym
{atoms}
end
basis
  * library {basis}
end
{method}
"""
# water's SCF (short), and benzene's DFT (B3LYP): Global Arrays over MPI, ScaLAPACK
NWCHEM_SCF = "scf\n  maxiter 60\nend\ntask scf energy"
NWCHEM_DFT = "dft\n  xc b3lyp\n  iterations 60\nend\ntask dft energy"
NWCHEM_WATER = "  O  0.000  0.000  0.117\n  H  0.000  0.757 -0.467\n  H  0.000 -0.757 -0.467"
NWCHEM_BENZENE = "\n".join(f"  {e} {x:8.4f} {y:8.4f} 0.0000" for e, x, y in (
    ("C", 0.0000, 1.3970), ("C", 1.2098, 0.6985), ("C", 1.2098, -0.6985), ("C", 0.0000, -1.3970),
    ("C", -1.2098, -0.6985), ("C", -1.2098, 0.6985), ("H", 0.0000, 2.4810), ("H", 2.1486, 1.2405),
    ("H", 2.1486, -1.2405), ("H", 0.0000, -2.4810), ("H", -2.1486, -1.2405), ("H", -2.1486, 1.2405)))


def nwchem(d, short):
    """NWChem (Fortran, Global Arrays over MPI, ScaLAPACK): an energy with its own basis library
    (benzene's SCF in 6-31G* converges within a second of CPU: too short to place a fault in)."""
    with open(os.path.join(d, "job.nw"), "w") as f:
        f.write(NWCHEM_INPUT.format(name="job", atoms=NWCHEM_WATER if short else NWCHEM_BENZENE,
                                    basis="sto-3g" if short else "6-31g*",
                                    method=NWCHEM_SCF if short else NWCHEM_DFT))
    return mpirun_openmpi("nwchem.openmpi", "job.nw"), Usual(10, 1.5) if short else Usual(90, 12)


HALO_ITERS = (12000, 4000)  # full, short


def halo(d, short):
    """Our own 2-D halo exchange (tests/mpi/halo.c), Open MPI."""
    return mpirun_openmpi(os.path.join(harness.MPI_DIR, "halo.openmpi"), str(HALO_ITERS[short])), \
        Usual(15, 3.0) if short else Usual(70, 6.4)


APPS = {"gromacs": gromacs, "hpcc": hpcc, "meep": meep, "mpb": mpb, "nwchem": nwchem, "halo": halo}
NEEDS = {"gromacs": "gmx_mpi", "hpcc": "hpcc", "meep": "meep", "mpb": "mpb-mpi", "nwchem": "nwchem.openmpi",
         "halo": None}


# ---------------------------------------------------------------------------------------------
# injecting from outside

def rank_pids(marker):
    """{rank: pid} of the processes whose environment carries MARKER and an MPI rank."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except OSError:
            continue
        if env.get(b"PDIMON_APPS_RUN") != marker.encode():
            continue
        r = env.get(b"OMPI_COMM_WORLD_RANK") or env.get(b"PMI_RANK")
        if r is not None:
            # the rank's own process: the launcher's helpers carry no rank
            out.setdefault(int(r), int(p))
    return out


def tgkill(tgid, tid, sig):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(234, tgid, tid, int(sig)) < 0:  # SYS_tgkill on x86-64
        raise ProcessLookupError(ctypes.get_errno(), "tgkill")


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def job_cpu_s(pids, last):
    """The CPU time (s) the processes PIDS used so far, summed; LAST keeps each one's latest
    reading, so that a process gone keeps counting what it used."""
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            last[pid] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        except (OSError, ValueError, IndexError):
            pass
    return sum(last.values())


def threads_of(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def place_ranks(pids, victim, cpu):
    """Pins every thread of the VICTIM rank to CPU, where the hog will run, and, with
    --placement pinned, every thread of every other rank to the other CPUs: the victim and the
    hog share their CPU and no other rank does, as on a node with a core per rank (a rank left
    beside them loses as much, and "alone" would measure the scheduler's placement). Returns
    {tid: affinity it had} for restore_affinity()."""
    cpus = os.sched_getaffinity(0)
    others = cpus - {cpu}
    placed = {}
    for rank, pid in pids.items():
        if rank != victim and (PLACEMENT == "free" or not others):
            continue
        for tid in threads_of(pid):
            try:
                placed[tid] = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, {cpu} if rank == victim else others)
            except OSError:  # a thread gone
                placed.pop(tid, None)
    return placed


def restore_affinity(placed):
    for tid, cpus in placed.items():
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:
            pass


class Injector(threading.Thread):
    """Waits for the ranks, then once the job has done the planned share of its usual work does
    the fault to the planned rank. The job's progress is the CPU time its ranks used since they
    were all past MPI_Init: a wall-clock delay would inject after the end on an idle machine
    and early on a loaded one (AppCampaign.subset missed every fault on an idle CI machine)."""

    def __init__(self, plan, marker, daemon):
        super().__init__(daemon=True)
        self.plan, self.marker, self.d = plan, marker, daemon
        self.truth = None
        self.stop_flag = threading.Event()
        self.hog = None
        self.hog_fifo = None  # --hog-group job: where to name the CPU for the job's hog
        self.hog_truth = None  # where the hog writes when it began (hog.c)
        self.placed = {}  # {tid: affinity before the interference}, restored after it
        self.cpu_s = None  # the ranks' CPU time since they were ready: at the fault, or at the end
        self.ran_s = None  # the wall time since they were ready, alike

    def wait_ready(self):
        """{rank: pid} once every rank is monitored and past MPI_Init, or None."""
        deadline = time.monotonic() + 120
        while not self.stop_flag.is_set() and time.monotonic() < deadline:
            show = campaign.query_json(self.d, "show", self.marker, "--json") or {}
            tasks = show.get("tasks") or []
            if len(tasks) == RANKS and all(t.get("calls", 0) > 1 for t in tasks):
                pids = rank_pids(self.marker)
                return pids if len(pids) == RANKS else None
            self.stop_flag.wait(0.2)
        return None

    def wait_progress(self, pids, cpu_s):
        """Whether the ranks used CPU_S seconds of CPU from now before the job ended (sampled
        until then otherwise, for the record)."""
        last = {}
        t0, c0 = time.monotonic(), job_cpu_s(pids.values(), last)
        while True:
            used = job_cpu_s(pids.values(), last) - c0
            alive = any(os.path.exists(f"/proc/{pid}") for pid in pids.values())
            if alive:
                self.cpu_s, self.ran_s = used, time.monotonic() - t0
            if cpu_s is not None and used >= cpu_s:
                return True
            if not alive or self.stop_flag.wait(0.05):
                return False

    def run(self):
        pids = self.wait_ready()
        if not pids:
            return
        if self.plan.fault in ("none", "deadlock"):
            self.wait_progress(pids, None)
            return
        if not self.wait_progress(pids, self.plan.at_cpu_s):
            return
        pid, f = pids[self.plan.rank], self.plan.fault
        t = time.monotonic_ns()  # CLOCK_MONOTONIC: the clock of the BPF timestamps
        try:
            if f in ("stop", "hang-stop"):
                os.kill(pid, signal.SIGSTOP)
            elif f in SPUN:
                tgkill(pid, pid, SPIN_SIGNAL)  # the main thread: the program's, not MPI's helpers
            elif f in ("cpu", "mem"):
                cpu = cpu_of(pid)
                self.placed = place_ranks(pids, self.plan.rank, cpu)
                if self.hog_fifo:
                    with open(self.hog_fifo, "w") as fifo:
                        fifo.write(f"{cpu}\n")
                else:
                    self.hog = subprocess.Popen(["taskset", "-c", str(cpu), HOG, f, str(INTERFERENCE_S),
                                                 self.hog_truth])
        except (ProcessLookupError, OSError):
            return
        self.truth = {"fault": f, "rank": self.plan.rank, "t_ns": t, "pid": pid}
        if f == "stop":
            self.stop_flag.wait(self.plan.length_s)
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        if f in ("cpu", "mem"):
            try:
                if self.hog_fifo:
                    self.stop_flag.wait(INTERFERENCE_S)
                else:
                    self.hog.wait(timeout=INTERFERENCE_S + 30)
            except (subprocess.TimeoutExpired, ProcessLookupError, OSError):
                pass
            restore_affinity(self.placed)

    def finish(self):
        self.stop_flag.set()
        if self.hog and self.hog.poll() is None:
            self.hog.kill()
        self.join(timeout=10)


class Plan:
    """What one (application, fault, seed) injects, drawn from the seed: the rank, the share of
    the application's usual work done when the fault comes (25-65%), and a stall's length."""

    def __init__(self, app, fault, seed, usual):
        rnd = random.Random(f"{app}/{fault}/{seed}")
        self.app, self.fault, self.seed = app, fault, seed
        self.rank = rnd.randrange(RANKS)
        self.at = rnd.uniform(0.25, 0.65)
        self.at_cpu_s = usual.cpu_s * self.at
        self.length_s = rnd.uniform(2.0, 5.0)

    def spin_ms(self):
        return {"spin": int(self.length_s * 1000), "hang-spin": -1, "hang-io": -1}.get(self.fault, 0)

    def __str__(self):
        return (f"{self.app} {self.fault} seed={self.seed} rank={self.rank} at={self.at:.0%} ({self.at_cpu_s:.1f} CPU-s) "
                f"len={self.length_s:.1f}s")


# ---------------------------------------------------------------------------------------------
# one run

class Stallfs:
    """A file system that does not answer (tests/faults/stallfs.c), mounted at MOUNTPOINT for at
    most MAX_S seconds: a read of its file waits in the kernel until release()."""

    def __init__(self, mountpoint, max_s):
        self.mountpoint = mountpoint
        os.makedirs(mountpoint, exist_ok=True)
        self.proc = subprocess.Popen([STALLFS, mountpoint, str(int(max_s))], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        try:
            harness.wait_for(self.mounted, 20, "stallfs to mount")
        except AssertionError:
            self.release()
            raise

    def mounted(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"stallfs exited with {self.proc.returncode}")
        with open("/proc/mounts") as f:
            return any(line.split()[1] == self.mountpoint for line in f)

    def release(self):
        """Reads fail from now on; then unmount and end."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], capture_output=True)


def run_one(plan, cmd, workdir, usual, short, runlog, store=None):
    """One run under a pdimond of its own: on a fresh database, or on STORE (--history: the
    application's store, kept across its runs), which then stays where it is and a copy of it
    as the run left it is kept in WORKDIR."""
    name = f"app-{os.getpid()}-{plan.app}-{plan.fault}-{plan.seed}"
    bus = campaign.new_bus()
    d = harness.Daemon(*([f"max_overhead_pct={BUDGET}"] if BUDGET is not None else []), bus=bus, database=store)
    p, inj, node, end, doc, show, fs, cg = None, None, None, "timeout", None, None, None, None
    truth_file = os.path.join(workdir, "deadlock.truth")
    try:
        spin_truth = os.path.join(workdir, "spin.truth")
        hog_truth = os.path.join(workdir, "hog.truth")
        env = dict(d.env, PDIMON_APPS_RUN=name, PDIMON_SPIN_MS=str(plan.spin_ms()),
                   PDIMON_SPIN_TRUTH=spin_truth, PDIMON_SPIN_IO="")
        if plan.fault == "hang-io":
            fs = Stallfs(os.path.join(workdir, "stalled"), 4 * usual.wall_s + 120)
            env["PDIMON_SPIN_IO"] = os.path.join(fs.mountpoint, "data")
        if plan.fault == "deadlock":
            env.update(PDIMON_FAULT="deadlock", PDIMON_FAULT_RANK=str(plan.rank), PDIMON_FAULT_WHERE="mpi",
                       PDIMON_FAULT_ITER=str(int(plan.at * HALO_ITERS[short])),
                       PDIMON_FAULT_TRUTH=truth_file)
        job = [harness.PDIMON, "run", "--step", name, "--", *cmd]
        hog_fifo = None
        if HOG_GROUP == "job" and plan.fault in ("cpu", "mem"):
            hog_fifo = os.path.join(workdir, "hog.fifo")
            os.mkfifo(hog_fifo)
            job = ["sh", "-c", HOG_IN_JOB, "sh", hog_fifo, HOG, plan.fault, str(INTERFERENCE_S), hog_truth, *job]
        if JOB_CGROUP:
            if not harness.cgroup2_mount():
                raise SystemExit("apps: --job-cgroup needs a cgroup v2 mount")
            cg = harness.Cgroup(name)
            job = cg.command(job)
        with open(os.path.join(workdir, name + ".out"), "w") as out:
            p = subprocess.Popen(job, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                 env=env)
        node = node_log.NodeLog(os.path.join(workdir, "node.log"), lambda: rank_pids(name), RANKS)
        node.start()
        inj = Injector(plan, name, d)
        inj.hog_fifo = hog_fifo
        inj.hog_truth = hog_truth
        inj.start()
        # a hang is taken once it was injected and every rank stood still longer than any
        # stall lasts (Plan: at most 5 s)
        stuck_ns = 6e9
        deadline = time.monotonic() + 4 * usual.wall_s + 90
        while True:
            if p.poll() is not None:
                end = f"exit {p.returncode}"
                break
            if plan.fault in HANGS and (inj.truth is not None or os.path.exists(truth_file)):
                rep = campaign.query_json(d, "report", name, "--json")
                if stuck_all(rep, stuck_ns):
                    end = "hang"
                    break
            if time.monotonic() > deadline:
                break
            try:
                p.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        if end.startswith("exit"):
            try:
                harness.wait_for(lambda: (campaign.query_json(d, "show", name, "--json") or {}).get("state")
                                 == "ended", 60, "the step to end")
            except AssertionError:
                end += ", but the step never ended in pdimond"
        doc = campaign.query_json(d, "analyze", name, "--json")
        show = campaign.query_json(d, "show", name, "--json")
    finally:
        if fs:
            fs.release()  # the stuck read fails: the rank can be killed
        if inj:
            inj.finish()
        if node:
            node.stop()
        if p is not None:
            campaign.signal_all(rank_pids(name).values(), signal.SIGCONT)  # a stopped rank must not outlive its job
            harness.kill_tree(p)
            campaign.signal_all(rank_pids(name).values(), signal.SIGKILL)
        if cg:
            try:
                cg.remove()
            except (AssertionError, OSError) as e:
                print(f"apps: could not remove {cg.path}: {e}", file=sys.stderr)
        try:
            d.stop()
        except AssertionError as e:
            campaign.log(runlog, f"# {name}: pdimond did not stop cleanly: {str(e)[:300]}")
        bus.stop()
        keep_database(d, workdir, kept_across_runs=store is not None)
    truth = inj.truth if inj else None
    if truth and plan.fault in SPUN:
        try:  # the spin began when the rank left MPI (the agent spins outside MPI only)
            with open(spin_truth) as f:
                truth["t_ns"] = int(f.read())
        except (OSError, ValueError):
            truth = None  # it never spun: a miss
    if truth and plan.fault in ("cpu", "mem"):
        try:  # the interference began when the hog did; the injector's decision is kept beside it
            with open(hog_truth) as f:
                truth["injected_ns"], truth["t_ns"] = truth["t_ns"], int(f.read())
        except (OSError, ValueError):
            truth = None  # it never began
    if plan.fault == "deadlock" and os.path.exists(truth_file):
        with open(truth_file) as f:
            t = json.load(f)
        truth = {"fault": "deadlock", "rank": t["rank"], "peer": t["peer"], "t_ns": t["t_ns"]}
    if plan.fault == "none":
        truth = {"fault": "none"}
    # how far the job got after MPI_Init: at the fault, or at its end (Usual's measures)
    progress = {"cpu_s": inj.cpu_s, "ran_s": inj.ran_s} if inj else {}
    return name, truth, doc, show, end, progress


def keep_database(d, workdir, kept_across_runs=False):
    """The run's database into WORKDIR (for --reanalyze; a copy of it when the application's
    runs share it: a fresh pdimond on the copy finds the same earlier runs); the daemon's
    directory goes."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(d.database + suffix):
            (shutil.copyfile if kept_across_runs else shutil.move)(d.database + suffix,
                                                                   os.path.join(workdir, "pdimon.db" + suffix))
    shutil.rmtree(d.dir, ignore_errors=True)


def reanalyze(workdir, name, runlog, settings=()):
    """`pdimon analyze NAME --json` by a fresh pdimond (with SETTINGS) on the run's kept database.
    A pdimond that does not stop cleanly (a sanitizer report, a non-zero exit) is a failure of the
    re-analysis: its log is kept in WORKDIR/reanalysis-pdimond.log and it is counted in
    REANALYSIS_FAILURES, which fails the re-scoring."""
    bus = campaign.new_bus()
    d = None
    try:
        d = harness.Daemon(*settings, bus=bus, database=os.path.join(workdir, "pdimon.db"))
        return campaign.query_json(d, "analyze", name, "--json")
    finally:
        if d:
            try:
                d.stop()
            except AssertionError as e:
                REANALYSIS_FAILURES.append(name)
                shutil.copyfile(d.log_path, os.path.join(workdir, "reanalysis-pdimond.log"))
                campaign.log(runlog, f"# {name}: pdimond did not stop cleanly (log kept in "
                             f"{workdir}/reanalysis-pdimond.log): {str(e)[:300]}")
            shutil.rmtree(d.dir, ignore_errors=True)
        bus.stop()


REANALYSIS_FAILURES = []  # runs whose re-analysing pdimond did not stop cleanly


def stuck_all(rep, stuck_ns):
    """A hang verdict, every running task in place for STUCK_NS."""
    if not rep or (rep.get("verdict") or {}).get("kind") != "hang":
        return False
    tasks = [t for t in rep.get("tasks") or [] if t.get("state") == "running"]
    return len(rep.get("tasks") or []) == RANKS and tasks and all(t.get("for_ns", 0) >= stuck_ns for t in tasks)


# ---------------------------------------------------------------------------------------------
# scoring

def stack_looks(doc):
    """How many times the hang judge read a live stack during the step, per rank: [rank, looks]
    for each rank with at least one (the tasks' stack_seen records, pdimon(1))."""
    out = []
    for t in (doc or {}).get("tasks") or []:
        n = sum(r.get("looks", 0) for r in t.get("stack_seen") or [])
        if n:
            out.append([t.get("rank"), n])
    return out


def sample_runs(doc):
    """How many earlier runs the analysis judged the run against (AutomaDeD's sample runs)."""
    return ((doc or {}).get("automaded") or {}).get("sample_runs", 0)


def kept_share(show, rank, t_ns):
    """The share of its ready time on a CPU that RANK got over the interference (INTERFERENCE_S
    from T_NS), over the share it got in as long before it: each phase's kernel counts (`pdimon
    show --json`) spread evenly over its time. None when unknown."""
    phases = [p for t in show.get("tasks", []) if t.get("rank") == rank for p in t.get("phases", [])]

    def share(a, b):
        cpu = wait = 0.0
        for p in phases:
            u, start = p.get("usage") or {}, p.get("t_start_ns")
            wall = u.get("wall_ns") or 0
            if start is not None and wall > 0:
                f = max(0, min(start + wall, b) - max(start, a)) / wall
                cpu, wait = cpu + f * u.get("cpu_ns", 0), wait + f * u.get("wait_ns", 0)
        return cpu / (cpu + wait) if cpu + wait > 0 else None

    span = INTERFERENCE_S * 1e9
    during, before = share(t_ns, t_ns + span), share(t_ns - span, t_ns)
    return during / before if during is not None and before else None


def hog_took_from(show, truth):
    """Whom an interference took the CPU from, by the share each rank kept (kept_share()):
    "victim" when every other rank kept at least twice the victim's part of its share, "all" when
    every other rank kept less than 1.5 times it (every rank lost nearly alike: the scheduler moved
    the ranks through the hog's CPU, or the hog took from the job's scheduling group as a whole),
    else "several"; None when unknown. Over the hog's whole 6 s, by phases: a victim that lost
    alone for part of it may count as "several" or "all".
    Unpinned (--placement free), "task" asks the analysis to single out a victim that lost no
    more than the others in a third of the runs (interf15, doc/design/diagnosis-campaign.md)."""
    kept = {t.get("rank"): kept_share(show, t.get("rank"), truth["t_ns"]) for t in show.get("tasks", [])}
    victim = kept.pop(truth["rank"], None)
    others = [k for k in kept.values() if k is not None]
    if victim is None or not others:
        return None
    if all(k >= 2 * victim for k in others):
        return "victim"
    return "all" if all(k < 1.5 * victim for k in others) else "several"


def node_figures(workdir, truth):
    """' node: job_cpu=B>D beside=B>D': the job's CPU (in CPUs) and the tasks runnable beside its
    ranks (node_log.window()) over the hog's time and as long before it; '' without a node log."""
    samples = node_log.read(os.path.join(workdir, "node.log")) if workdir else []
    span = int(INTERFERENCE_S * 1e9)
    before, during = (node_log.window(samples, a, a + span) for a in (truth["t_ns"] - span, truth["t_ns"]))
    if not before or not during:
        return ""
    return f" node: job_cpu={before[0]:.2f}>{during[0]:.2f} beside={before[1]:.1f}>{during[1]:.1f}"


def score(plan, truth, doc, show, end, workdir=None):
    s = {m: None for m in METRICS}
    doc = doc or {}
    diag = doc.get("diagnosis") or {}
    looks = f" stack_looks={stack_looks(doc)} samples={sample_runs(doc)}"
    s["hist"] = doc != {} and sample_runs(doc) > 0
    if plan.fault == "none":
        s["quiet"] = doc != {} and not diag.get("abnormal", True)
        return s, f"abnormal={diag.get('abnormal')} method={diag.get('method')} phase={diag.get('faulty_phase')} " \
                  f"ranks={diag.get('faulty_ranks')} confidence={diag.get('confidence_words')} " \
                  f"z={diag.get('noise_z')}{looks}"
    s["fired"] = truth is not None
    if truth is None:  # scored apart: no ground truth to be right or wrong about
        return s, f"no ground truth: the fault did not fire ({end})"
    a = campaign.read_analysis(doc)
    rank = truth["rank"]
    tphase = None
    for k, (t0, _t1) in enumerate(campaign.phase_windows(show or {}, rank)):
        if t0 is not None and t0 <= truth["t_ns"]:
            tphase = k
    ranks = a["faulty_ranks"] or []
    said = bool(diag.get("abnormal")) or a["verdict"] == "hang"  # "nothing abnormal" names nothing
    culprits = [rank, truth["peer"]] if plan.fault == "deadlock" else [rank]
    s["phase"] = said and a["faulty_phase"] is not None and a["faulty_phase"] == tphase
    s["task"] = said and rank in ranks and len(ranks) <= RANKS // 2
    s["alone"] = said and sorted(ranks) == sorted(culprits)
    top = (doc.get("automaded") or {}).get("transitions") or diag.get("transitions") or []
    if a["verdict"] == "hang":  # the transition a hang's task never completed: where it stopped
        top = [{"ranks": f"[{x.get('rank')}]"} for x in diag.get("stopped_at") or []]
    s["top5"] = said and any(rank in campaign.parse_ranges(t.get("ranks", "")) for t in top[:5])
    lp_truth = None
    if plan.fault in HANGS:
        lp_truth = set(culprits)
        got = set(a["lp"]) if end == "hang" and a["verdict"] == "hang" else set()
        s["lp_recall"] = lp_truth <= got
        s["lp_precision"] = len(lp_truth & got) / len(got) if got else None
    took = ""
    if plan.fault in ("cpu", "mem"):  # "task" again over the runs where the victim alone lost CPU
        whom = hog_took_from(show or {}, truth)
        s["task_v"] = s["task"] if whom == "victim" else None
        took = f" hog_took_from={whom}{node_figures(workdir, truth)}"
    doing = "; ".join(x.get("doing", "") for x in diag.get("stopped_at") or [])
    began = f" began={(truth['t_ns'] - truth['injected_ns']) / 1e6:.0f}ms" if "injected_ns" in truth else ""
    line = (f"truth: rank={rank} phase={tphase}{began}{' lp=' + str(sorted(lp_truth)) if lp_truth else ''} | end={end} "
            f"reported: verdict={a['verdict']} method={diag.get('method')} phase={a['faulty_phase']} ranks={ranks} "
            f"lp={a['lp']} abnormal={diag.get('abnormal')} confidence={diag.get('confidence_words')} "
            f"z={diag.get('noise_z')}{looks}{took}{' doing: ' + doing if doing else ''}")
    return s, line


class Tally(campaign.Tally):
    """Percentages over the runs whose fault fired; unfired counts the others (a fault planned
    after the application's end, a spin the agent never began), which pct_all counts as misses
    as the scorer did before it told them apart."""

    def __init__(self):
        self.runs = 0
        self.unfired = 0
        self.n = {m: 0 for m in METRICS}
        self.sums = {m: 0.0 for m in METRICS}
        self.hits = {m: 0 for m in METRICS}

    def add(self, s):
        if s.get("fired") is False:
            self.runs += 1
            self.unfired += 1
            return
        super().add({m: v for m, v in s.items() if m in METRICS})

    def pct_all(self, m):
        n = self.n[m] + self.unfired
        return 100.0 * self.sums[m] / n if self.n[m] or (self.unfired and m in AS_BEFORE) else None


def fmt(v):
    return "    -" if v is None else f"{v:5.0f}"


def table(tallies, out):
    print(f"{'app / fault':<22} {'runs':>4} {'unfired':>7} {'phase%':>6} {'task%':>6} {'alone%':>6} {'top5%':>6} "
          f"{'LPrec%':>6} {'LPprec%':>7} {'quiet%':>6} {'hist%':>6} {'taskV%':>9} | all runs: {'phase%':>6} "
          f"{'task%':>6} {'alone%':>6}", file=out)
    for key in sorted(tallies):
        t = tallies[key]
        victim = f"{fmt(t.pct('task_v'))}/{t.n['task_v']:<3}" if t.n["task_v"] else "    -    "
        print(f"{key:<22} {t.runs:>4} {t.unfired:>7} " + " ".join(f"{fmt(t.pct(m)):>6}" for m in METRICS[:5]) +
              f" {fmt(t.pct('lp_precision')):>7} {fmt(t.pct('quiet')):>6} {fmt(t.pct('hist')):>6} {victim:>9} |" +
              "           " + " ".join(f"{fmt(t.pct_all(m)):>6}" for m in AS_BEFORE), file=out)


def fault_class(f):
    return {"stop": "stall", "spin": "stall", "hang-stop": "hang", "hang-spin": "hang", "hang-io": "hang",
            "deadlock": "hang",
            "cpu": "interference", "mem": "interference"}.get(f, f)


def load_average():
    return float(open("/proc/loadavg").read().split()[0])


def mode(history, own_phases_only=False):
    """The campaign's mode, for the table's head."""
    if own_phases_only:
        return (f"mode: re-analysed against each run's own phases only (pdimond sample_runs=0)"
                f"{f', the runs of --history {history}' if history else ''}")
    if not history:
        return "mode: a fresh store per run (no earlier runs of the program)"
    return (f"mode: --history {history}, one store per application kept across its runs: {history} fault-free "
            f"runs first, then each measured run judged against the earlier ones (pdimond takes the "
            f"{SAMPLE_RUNS} most recent normal runs as sample runs)")


def report(by_key, by_class, overall, out, started, loads, mode_line):
    print(f"\n{mode_line}")
    print(f"{overall.runs} runs in {time.monotonic() - started:.0f} s on this shared 2-core VM, load average "
          f"{min(loads)}-{max(loads)} (median {sorted(loads)[len(loads) // 2]}) at the runs' starts "
          f"(per-run lines: {os.path.join(out, 'apps.log')})")
    table(by_key, sys.stdout)
    print()
    table(dict(by_class, all=overall), sys.stdout)


def check_floor(floor_spec, by_class, overall):
    floor = campaign.parse_floor(floor_spec, METRICS)
    bad = []
    for (scope, metric), want in floor.items():
        t = overall if scope == "all" else by_class.get(scope)
        got = t.pct(metric) if t else None
        if got is None or got < want:
            bad.append(f"{scope}.{metric} = {'n/a' if got is None else f'{got:.0f}'}% < floor {want:.0f}%")
    if bad:
        print("BELOW THE FLOOR: " + "; ".join(bad))
        return 1
    return 0


def tally(by_key, by_class, overall, app, fault, s):
    for t in (by_key.setdefault(f"{app} {fault}", Tally()), by_class.setdefault(fault_class(fault), Tally()), overall):
        t.add(s)


def print_run(plan, s, end, seconds, doc=None, earlier=False):
    looks = sum(n for _r, n in stack_looks(doc))
    end += f", {looks} stack looks" if looks else ""
    end += f", judged against {sample_runs(doc)} earlier runs" if sample_runs(doc) else ""
    plan = f"earlier run: {plan}" if earlier else plan
    if s.get("fired") is False:
        print(f"  {plan}: fault did not fire ({end}, {seconds:.0f} s)", flush=True)
        return
    print(f"  {plan}: " + " ".join(f"{m}={v:.2f}" if isinstance(v, float) else f"{m}={int(bool(v))}"
                                   for m, v in s.items() if v is not None and m in METRICS) + f" ({end}, {seconds:.0f} s)", flush=True)


def rescore(args, apps, faults):
    """--reanalyze: every kept run of APPS and FAULTS analysed again and scored."""
    runlog = open(os.path.join(args.reanalyze, "reanalyze.log"), "w")
    by_key, by_class, overall, loads, history = {}, {}, Tally(), [], 0
    started = time.monotonic()
    for run in sorted(os.listdir(args.reanalyze)):
        path = os.path.join(args.reanalyze, run, "run.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            rec = json.load(f)
        app, fault, seed = rec.get("app"), rec.get("fault"), rec.get("seed")
        if app not in apps or fault not in faults or "name" not in rec:
            continue
        plan = Plan(app, fault, seed, Usual(**rec["usual"]) if "usual" in rec else Usual(rec["usual_s"], 0))
        doc = rec["analysis"]
        if fault not in HANGS and os.path.exists(os.path.join(args.reanalyze, run, "pdimon.db")):
            doc = reanalyze(os.path.join(args.reanalyze, run), rec["name"], runlog,
                            ["sample_runs=0"] if args.own_phases_only else [])
            kept = "reanalysis-own-phases.json" if args.own_phases_only else "reanalysis.json"
            with open(os.path.join(args.reanalyze, run, kept), "w") as f:
                json.dump(doc, f)
        s, line = score(plan, rec["truth"], doc, rec.get("show"), rec["end"], os.path.join(args.reanalyze, run))
        campaign.log(runlog, f"{plan} | {line}")
        print_run(plan, s, rec["end"], 0, doc, rec.get("earlier_run"))
        history = rec.get("history") or 0
        if rec.get("earlier_run"):
            by_key.setdefault(f"{app} (earlier runs)", Tally()).add(s)
            continue
        loads.append(rec.get("load", 0.0))
        tally(by_key, by_class, overall, app, fault, s)
    if not overall.runs:
        raise SystemExit(f"apps: no kept run of those applications and faults in {args.reanalyze}")
    print(f"re-analysed by this build: {args.reanalyze}")
    report(by_key, by_class, overall, args.reanalyze, started, loads, mode(history, args.own_phases_only))
    if REANALYSIS_FAILURES:
        print(f"apps: pdimond did not stop cleanly re-analysing {len(REANALYSIS_FAILURES)} runs "
              f"({', '.join(REANALYSIS_FAILURES)}): read reanalysis-pdimond.log in their directories")
        return 1
    return check_floor(args.floor, by_class, overall) if args.floor else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--apps", default=",".join(APPS))
    ap.add_argument("--faults", default=",".join(FAULTS))
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--short", action="store_true", help="inputs of a few seconds (the CI subset)")
    ap.add_argument("--hog-group", choices=["own", "job"], default="job",
                    help="the session the cpu/mem interference runs in: the job's (default) or its own")
    ap.add_argument("--placement", choices=["pinned", "free"], default="pinned",
                    help="cpu/mem interference: the other ranks pinned off the victim's CPU while the hog runs "
                         "(default), or left where the scheduler puts them, as on a site")
    ap.add_argument("--floor", default="", help="METRIC=PCT or CLASS.METRIC=PCT (CLASS: stall, hang, "
                                                "interference, none), comma-separated or a file")
    ap.add_argument("--budget", type=float, default=None, metavar="PCT",
                    help="pdimond's max_overhead_pct for the runs (default: pdimond's own); a tiny one thins the "
                         "probes so that the hang judge reads still tasks' stacks")
    ap.add_argument("--history", type=int, default=0, metavar="K",
                    help="run like a site: per application one store kept across its runs, K fault-free runs "
                         "first, then the measured runs judged against the earlier ones (AutomaDeD's sample runs)")
    ap.add_argument("--job-cgroup", action="store_true",
                    help="each job in a cgroup v2 of its own, as on a site with per-job cgroups (removed after "
                         "the run): pdimond reads the CPU its group used beside its ranks'")
    ap.add_argument("--out", default="")
    ap.add_argument("--reanalyze", default="", metavar="DIR", help="score the kept runs in DIR again")
    ap.add_argument("--own-phases-only", action="store_true",
                    help="with --reanalyze: judge every run against its own phases only (pdimond sample_runs=0), "
                         "as without --history, whatever its kept store holds")
    args = ap.parse_args()
    global HOG_GROUP, BUDGET, PLACEMENT, JOB_CGROUP
    HOG_GROUP, BUDGET, PLACEMENT, JOB_CGROUP = args.hog_group, args.budget, args.placement, args.job_cgroup
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if os.geteuid() != 0:
        raise SystemExit("apps: pdimond loads BPF programs: run as root")
    apps = [a for a in args.apps.split(",") if a]
    faults = [f for f in args.faults.split(",") if f]
    for a in apps:
        if a not in APPS:
            raise SystemExit(f"apps: unknown application {a} (known: {', '.join(APPS)})")
    for f in faults:
        if f not in FAULTS:
            raise SystemExit(f"apps: unknown fault {f} (known: {', '.join(FAULTS)})")
    if args.reanalyze:
        return rescore(args, apps, faults)
    for a in apps:
        if NEEDS[a] and not shutil.which(NEEDS[a]):
            raise SystemExit(f"apps: {a} needs {NEEDS[a]}: install it (scripts/install-deps.sh --apps)")
    out = args.out or tempfile.mkdtemp(prefix="pdimon-apps-")
    os.makedirs(out, exist_ok=True)
    runlog = open(os.path.join(out, "apps.log"), "a")
    by_key, by_class, overall, loads = {}, {}, Tally(), []
    started = time.monotonic()
    print(f"apps: {len(apps)} applications x {len(faults)} faults x {args.seeds} seeds, 4 ranks, "
          f"{'short' if args.short else 'full'} inputs, interference in the {HOG_GROUP} session, "
          f"the other ranks {'off' if PLACEMENT == 'pinned' else 'free to share'} the victim's CPU, "
          f"max_overhead_pct {'default' if BUDGET is None else BUDGET}"
          f"{', each job in a cgroup of its own' if JOB_CGROUP else ''}; "
          f"load average {load_average()}", flush=True)
    for app in apps:
        # --history: the application's one store, where K fault-free runs go first
        store = os.path.join(tempfile.mkdtemp(prefix=f"{app}-store-", dir=out), "pdimon.db") if args.history else None
        runs = [("none", HISTORY_FIRST_SEED + k, True) for k in range(args.history)]
        runs += [(fault, seed, False) for fault in faults if fault != "deadlock" or app == "halo"  # ours only
                 for seed in range(args.first_seed, args.first_seed + args.seeds)]
        for fault, seed, earlier in runs:
            workdir = tempfile.mkdtemp(prefix=f"{app}-{'history' if earlier else fault}-{seed}-", dir=out)
            cmd, usual = APPS[app](workdir, args.short)
            plan = Plan(app, fault, seed, usual)
            t_run = time.monotonic()
            load = load_average()
            name, truth, doc, show, end, progress = run_one(plan, cmd, workdir, usual, args.short, runlog, store)
            s, line = score(plan, truth, doc, show, end, workdir)
            with open(os.path.join(workdir, "run.json"), "w") as f:
                json.dump({"plan": str(plan), "app": app, "fault": fault, "seed": seed, "usual": vars(usual),
                           "budget": BUDGET, "placement": PLACEMENT, "job_cgroup": JOB_CGROUP, "history": args.history, "earlier_run": earlier,
                           "name": name, "load": load, "truth": truth, "analysis": doc, "show": show,
                           "end": end, "progress": progress}, f)
            done = " ".join(f"{k}={v:.1f}" for k, v in progress.items() if v is not None)
            campaign.log(runlog, f"{'earlier run: ' if earlier else ''}{plan} load={load} {done} | {line}")
            print_run(plan, s, end, time.monotonic() - t_run, doc, earlier)
            if earlier:  # the store's history, scored apart: not one of the measured runs
                by_key.setdefault(f"{app} (earlier runs)", Tally()).add(s)
                continue
            loads.append(load)
            tally(by_key, by_class, overall, app, fault, s)
    report(by_key, by_class, overall, out, started, loads, mode(args.history))
    return check_floor(args.floor, by_class, overall) if args.floor else 0


if __name__ == "__main__":
    sys.exit(main())

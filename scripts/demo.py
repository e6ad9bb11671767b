#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""demo.py -- pdimon on a real Slurm: a 4-rank Open MPI job in which one rank hangs.

Starts a private single-node Slurm (munged, slurmctld, slurmd), a private system bus and
pdimond, runs `srun --pdi-monitor -n 4 --mpi=pmix ring ...` where rank 2 stops computing
forever, waits until the job is visibly hung, cancels it as a user would (scancel), and
shows what pdimon reports: srun's verdict, the report file, and `pdimon` views.
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("PDIMON_BUILD", os.path.join(ROOT, "build"))
os.environ.setdefault("PDIMON_SRC", ROOT)
sys.path[:0] = [os.path.join(ROOT, "tests/slurm"), os.path.join(ROOT, "tests/integration")]

from cluster import SlurmCluster  # noqa: E402
from harness import BUILD, Daemon, SystemBus, wait_for  # noqa: E402

import tempfile  # noqa: E402


def banner(text):
    print(f"\n== {text}", flush=True)


def main():
    tmp = tempfile.mkdtemp(prefix="pdimon-demo-")
    os.chmod(tmp, 0o755)
    bus = SystemBus(tmp)
    daemon = Daemon(bus=bus)
    plugstack = (f"optional {BUILD}/slurm/spank_pdimon.so bus={bus.address} timeout_ms=2000 wait_ms=5000\n")
    cluster = SlurmCluster(plugstack=plugstack)
    try:
        cluster.start()
        ring = cluster.share(os.path.join(BUILD, "tests/mpi/ring.openmpi"))
        banner("srun --pdi-monitor -n 4 --mpi=pmix ring 100000 1000 2 200")
        print("   a ring (Irecv, Isend, Waitall, Barrier) with 1 ms of compute per iteration;")
        print("   rank 2 stops computing forever in iteration 200")
        job = cluster.popen(["srun", "--pdi-monitor", "-n", "4", "--mpi=pmix", ring, "100000", "1000", "2", "200"],
                            env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address})

        def hung():
            steps = json.loads(daemon.pdimon("steps", "--json").stdout)
            if not steps:
                return None
            s = daemon.show(steps[0]["step"])
            blocked = [t for t in s["tasks"] if t["current"].get("for_ns", 0) > 2e9]
            return steps[0] if len(s["tasks"]) == 4 and len(blocked) == 4 else None
        step = wait_for(hung, 120, "the job to hang for 2 seconds")

        banner("pdimon steps            (an admin's view while the job hangs)")
        print(daemon.pdimon("steps").stdout, end="")
        banner(f"pdimon report {step['step']}   (live)")
        print(daemon.pdimon("report", step["step"]).stdout, end="")

        banner(f"scancel {step['job_id']}              (the user gives up)")
        cluster.run(["scancel", str(step["job_id"])], timeout=30)
        out, err = job.communicate(timeout=120)
        banner("what srun printed on the user's terminal")
        print("\n".join(line for line in err.splitlines() if line.startswith("pdimon")))

        path = os.path.join(cluster.dir, f"pdimon-{step['step']}.json")
        with open(path) as f:
            rep = json.load(f)
        banner(f"the report file {os.path.basename(path)}: verdict")
        print(json.dumps(rep["verdict"], indent=2))
        # kept beside the build (build/demo/), where it outlives the demo's private Slurm
        outdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "demo")
        os.makedirs(outdir, exist_ok=True)
        html = os.path.normpath(os.path.join(outdir, f"pdimon-{step['step']}.html"))
        banner(f"pdimon render {os.path.basename(path)} --html {os.path.basename(html)}")
        daemon.pdimon("render", path, "--html", html)
        print(f"the HTML report (one self-contained file, opens offline in any browser): {html}")
        print(f"   (srun --pdi-monitor=report=NAME.html writes one directly)")
        banner(f"pdimon show {step['step']}   (rank 2's model, first lines)")
        text = daemon.pdimon("show", step["step"]).stdout.split("\nrank ")
        print("rank " + "\n".join(next(t for t in text if t.startswith("2 ")).splitlines()[:9]))
    finally:
        cluster.stop()
        daemon.stop()
        bus.stop()


if __name__ == "__main__":
    main()

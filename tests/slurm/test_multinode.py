#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_multinode.py -- srun --pdi-monitor across 4 Slurm nodes on one machine (issue 5).

cluster.py's nodes=4: four network namespaces n1..n4 on a bridge, each with its own slurmd,
private system bus and real pdimond; one slurmctld, one munged. srun runs inside n1, as on
a login shell of the allocation's first node. Each node's pdimond must monitor exactly the
step's tasks on that node (PIDs and BPF are shared by all four) and know the step's node
list; a rank hung on n3 must show on every node's own view. Root only; about 40 s:
python3 tests/slurm/test_multinode.py
"""
import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "../integration")]
from cluster import NODE_BUS, SlurmCluster, ensure_user, reap_stale  # noqa: E402
from harness import HANG_MS, PDIMON, marker_line, wait_for  # noqa: E402
from harness import PDIMOND as BUILT_PDIMOND  # noqa: E402
from multinode import PDIMOND, PLUGIN, RING, setUpModule  # noqa: E402,F401  (unittest calls setUpModule)

NODES = ["n1", "n2", "n3", "n4"]
# -N 4 -n 8 on 2 CPUs per node, block distribution: ranks 2K-2 and 2K-1 on nK
RANKS = {n: [2 * k, 2 * k + 1] for k, n in enumerate(NODES)}
STALL_RANK = 4                     # on n3


def site(name):
    fn = {"irecv": "Irecv", "isend": "Isend", "waitall": "Waitall", "barrier": "Barrier"}[name]
    return f"MPI_{fn}@ring.c:{marker_line('ring.c', name)}"


def network_state():
    """What a multi-node cluster adds to the machine: links, namespaces, /etc/hosts."""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    netns = sorted(os.listdir("/var/run/netns")) if os.path.isdir("/var/run/netns") else []
    with open("/etc/hosts") as f:
        hosts = f.read()
    return ([ln.split(":")[1].strip().split("@")[0] for ln in links.splitlines()
             if ln.split(":")[1].strip().startswith(("pb", "pv"))],
            [n for n in netns if n.startswith("pdimon-")], hosts)


class MultiNode(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.before = network_state()
        t = time.monotonic()
        cls.c = SlurmCluster(
            nodes=4, cpus=2, pdimond=PDIMOND, pdimon=PDIMON, lock_timeout=120,
            pdimond_settings=[f"hang_timeout_ms={HANG_MS}"],
            plugstack=f"required {PLUGIN} bus={NODE_BUS} timeout_ms=2000 wait_ms=5000\n")
        cls.c.start()
        cls.start_s = time.monotonic() - t

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        # every pdimond exits 0 on SIGTERM: under the sanitizers, a leak makes that fail
        if cls.c.pdimond_exit != {n: 0 for n in NODES}:
            raise AssertionError(f"pdimond exit statuses: {cls.c.pdimond_exit}")

    def test_9_every_pdimond_exits_cleanly(self):
        # last: no daemon crashed serving the others' gathers (a crash shows as a missing node),
        # and none has a sanitizer report in its log
        for n in NODES:
            p = self.c._daemons.get("pdimond-" + n)
            self.assertIsNotNone(p, n)
            self.assertIsNone(p.poll(), f"pdimond of {n} died:\n{self.c.node_log(n)[-3000:]}")
            report = re.search(r"(AddressSanitizer|LeakSanitizer|runtime error:)", self.c.node_log(n))
            self.assertIsNone(report, report and f"{n}: {self.c.node_log(n)[report.start() - 300:][:3000]}")

    def srun(self, *args, timeout=90):
        return self.c.run(["srun", "--pdi-monitor", "-N", 4, "-n", 8, "--mpi=pmix", *args],
                          node="n1", timeout=timeout)

    def steps(self, node):
        return self.c.pdimon_json(node, "steps", "--json")

    def show(self, node, step):
        return self.c.pdimon_json(node, "show", step, "--json")

    def test_1_four_nodes_up(self):
        r = self.c.run(["sinfo", "-h", "-N", "-o", "%N %c %T"], check=True)
        self.assertEqual(r.stdout.split(), [w for n in NODES for w in (n, "2", "idle")])
        self.assertLess(self.start_s, 30)
        # each node is its own host: its hostname, its address, its own /tmp
        for n in NODES:
            r = self.c.run(["sh", "-c", "hostname; ls /tmp"], node=n, check=True)
            self.assertEqual(r.stdout.split()[0], n)
            self.assertIn("pdimon_system_bus_socket", r.stdout.split())
            self.assertIn("pdimond", self.c.pdimon(n, "status").stdout)

    def test_2_each_node_monitors_its_own_tasks(self):
        r = self.srun(RING, 10)
        self.assertEqual(r.returncode, 0, r.stderr + self.c.logs(20))
        self.assertIn("ring: 10 iterations on 8 ranks", r.stdout)
        # srun's verdict comes from n1's pdimond (its own tasks until the gather exists)
        self.assertRegex(r.stderr, r"pdimon: step \d+\.0: all \d tasks completed")
        names = set()
        for n in NODES:
            [step] = self.steps(n)
            names.add(step["step"])
            self.assertEqual(step["state"], "ended", n)
            s = self.show(n, step["step"])
            self.assertEqual(sorted(t["rank"] for t in s["tasks"]), RANKS[n], n)
            for t in s["tasks"]:
                tr = {(x["from"], x["to"]): x["count"] for x in t["phases"][0]["transitions"]}
                self.assertEqual(tr[(site("irecv"), f"{site('irecv')} -> {site('isend')}")], 10, (n, t["rank"]))
            # the step's node list, expanded by the plugin with Slurm's hostlist code
            self.assertIn(f"Step {step['step']}: on 4 nodes (n1+n2+n3+n4), this one {n}", self.c.node_log(n))
        self.assertEqual(len(names), 1, names)

    def test_3_rank_hung_on_node_3(self):
        # rank 4 (on n3) stops computing forever in iteration 5: everyone else blocks in
        # the barrier, on all four nodes
        p = self.c.popen(["srun", "--pdi-monitor", "-N", 4, "-n", 8, "--mpi=pmix",
                          RING, 100000, 1000, STALL_RANK, 5], node="n1")
        seen = {}

        def blocked_everywhere():
            for n in NODES:
                if n in seen:
                    continue
                running = [s for s in self.steps(n) if s["state"] == "running"]
                if not running:
                    return False
                s = self.show(n, running[0]["step"])
                blocked = sorted(t["rank"] for t in s["tasks"] if t["current"].get("in_mpi") == "MPI_Barrier"
                                 and t["current"]["for_ns"] > HANG_MS * 1e6)
                want = [r for r in RANKS[n] if r != STALL_RANK]
                if len(s["tasks"]) != 2 or blocked != want:
                    return False
                seen[n] = running[0]
            return True
        wait_for(blocked_everywhere, 60, "every node to see its ranks blocked in MPI_Barrier")
        self.assertEqual(len({s["step"] for s in seen.values()}), 1, seen)
        step = seen["n1"]
        gathered = {("blocked", site("barrier")): "[0-3,5-7]", ("computing", f"after {site('waitall')}"): "[4]"}
        for n in NODES:
            # from any node, the whole step gathered up the tree: the hung rank of n3 found
            a = self.c.pdimon_json(n, "analyze", step["step"], "--json")
            self.assertEqual((a["nodes"]["count"], a["nodes"]["answered"], a["nodes"]["partial"]), (4, 4, False), n)
            groups = {(g["status"], g["where"]): g["ranks"] for g in a["verdict"]["groups"]}
            self.assertEqual(groups, gathered, n)
            self.assertEqual(a["verdict"]["least_progressed"], "[4]", n)
            self.assertEqual(a["diagnosis"]["faulty_ranks"], [STALL_RANK], n)
            self.assertEqual(a["prefix_tree"]["count"], 8, n)
            # the report: the whole step on the first node, each node's own part elsewhere
            live = self.c.pdimon_json(n, "report", step["step"], "--json")
            groups = {(g["status"], g["where"]): g["ranks"] for g in live["verdict"]["groups"]}
            if n == "n1":
                self.assertEqual(groups, gathered, n)
            elif n == "n3":
                self.assertEqual(groups, {("blocked", site("barrier")): "[5]",
                                          ("computing", f"after {site('waitall')}"): "[4]"}, n)
            else:
                lo, hi = RANKS[n]
                self.assertEqual(groups, {("blocked", site("barrier")): f"[{lo}-{hi}]"}, n)
        text = self.c.pdimon("n2", "analyze", step["step"]).stdout
        self.assertIn("least progressed: [4]", text)
        # another user may not gather root's step, from any node
        ensure_user("pdimontest")
        r = self.c.pdimon("n2", "analyze", step["step"], user="pdimontest", check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn(f"no step named '{step['step']}'", r.stderr)
        t = time.monotonic()
        self.c.run(["scancel", str(step["job_id"])], check=True)
        out, err = p.communicate(timeout=60)
        self.assertNotEqual(p.returncode, 0)
        # srun asks n1, the step's first node: the whole step's verdict, gathered
        self.assertRegex(err, r"\[0-3,5-7\] blocked in " + re.escape(site("barrier")))
        for n in NODES:
            wait_for(lambda: self.steps(n)[-1]["state"] == "ended", 30, f"the step to end on {n}")
        self.assertLess(time.monotonic() - t, 60)

    def test_4_bad_node_options_refused(self):
        # what pdimond accepts from the plugin: node= one of nodes=, names of [A-Za-z0-9._-]
        holder = self.c._daemons["holder-n2"].pid
        for opt in ("node=x,nodes=n1+n2", "nodes=n1++n2", "nodes=n1+n 2", "nodes=", "node=n2,node=n1",
                    "color=red", "ntasks=0", "ntasks=-3", "ntasks=8x"):
            r = self.c.run(["busctl", "--system", "call", "org.pdimon.Monitor1", "/org/pdimon/Monitor1",
                            "org.pdimon.Monitor1", "RegisterTask", "uuuuus", 1, 0, 0, holder, 0, opt],
                           node="n2", env={"DBUS_SYSTEM_BUS_ADDRESS": NODE_BUS})
            self.assertEqual(r.returncode, 1, opt)
            self.assertIn(f"invalid options '{opt}'", r.stderr)

    @contextlib.contextmanager
    def hung_step(self, srun_args, stall_rank, ask):
        """A ring step (srun SRUN_ARGS, from n1) in which STALL_RANK hangs: yields the step
        and its analysis once node ASK's gathered verdict names the rank least progressed;
        cancelled at the end."""
        p = self.c.popen(["srun", "--pdi-monitor", *srun_args, "--mpi=pmix", RING, 100000, 1000, stall_rank, 5],
                         node="n1")
        try:
            last = {}

            def hung():
                running = [s for s in self.steps("n1") if s["state"] == "running"]
                last["steps on n1"] = running
                if not running:
                    return None
                a = self.c.pdimon_json(ask, "analyze", running[0]["step"], "--json")
                last["analysis"] = {k: a.get(k) for k in ("nodes", "verdict", "diagnosis")}
                return (running[0], a) if a["verdict"].get("least_progressed") == f"[{stall_rank}]" else None
            try:
                step, a = wait_for(hung, 60, f"{ask}'s gathered verdict to find the hung rank {stall_rank}")
            except AssertionError as e:
                # what it last saw, srun's state and the daemons' logs: a timeout alone says nothing
                slurm = [self.c.run(cmd).stdout for cmd in (["sinfo", "-h", "-N", "-o", "%N %T %E"], ["squeue", "-h"])]
                raise AssertionError(f"{e}\nlast seen: {last}\nsrun: {p.poll()}\nnodes and jobs: {slurm}\n"
                                     f"{self.c.logs(30)}") from None
            yield step, a
            self.c.run(["scancel", str(step["job_id"])], check=True)
            p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()

    def test_5_node_gone_partial_verdict(self):
        with self.hung_step(["-N", 4, "-n", 8], STALL_RANK, "n2") as (step, _):
            self.c.stop_pdimond("n4")
            try:
                # a node whose pdimond is gone: the verdict is partial and names it, and is
                # no less right about the others
                t0 = time.monotonic()
                a = self.c.pdimon_json("n2", "analyze", step["step"], "--json")
                self.assertLess(time.monotonic() - t0, 30)
                self.assertEqual((a["nodes"]["count"], a["nodes"]["answered"], a["nodes"]["partial"]), (4, 3, True),
                                 a["nodes"]["missing"])
                self.assertEqual([m["node"] for m in a["nodes"]["missing"]], ["n4"])
                # the ranks it held, from Slurm's task count (ntasks= from the plugin)
                self.assertEqual(a["nodes"]["missing_ranks"], "[6-7]")
                self.assertTrue(any(x.startswith("partial: 3 of 4 nodes answered; missing n4") and
                                    x.endswith("; ranks not heard from [6-7]")
                                    for x in a["diagnosis"]["limits"]), a["diagnosis"]["limits"])
                self.assertEqual(a["verdict"]["least_progressed"], "[4]")
                self.assertIn("partial: 3 of 4 nodes answered", self.c.pdimon("n1", "analyze", step["step"]).stdout)
            finally:
                self.c.start_pdimond("n4")

    def test_6_analyze_from_a_node_outside_the_step(self):
        # a 2-node step on n1 and n2, rank 2 (on n2) hung: n4 has no part in it, asks Slurm
        # for its nodes and gathers from them
        with self.hung_step(["-N", 2, "-w", "n1,n2", "-n", 4], 2, "n4") as (step, a):
            self.assertNotIn(step["step"], [s["step"] for s in self.steps("n4")], "n4 monitors nothing of it")
            self.assertEqual((a["nodes"]["count"], a["nodes"]["answered"], a["nodes"]["partial"]), (2, 2, False))
            self.assertEqual(sorted(t["rank"] for t in a["tasks"]), [0, 1, 2, 3])
            # another user is told there is no such step, from outside as from inside
            ensure_user("pdimontest")
            for n in ("n4", "n1"):
                r = self.c.pdimon(n, "analyze", step["step"], user="pdimontest", check=False)
                self.assertEqual(r.returncode, 1, (n, r.stdout))
                self.assertIn(f"no step named '{step['step']}'", r.stderr, n)
        # a step Slurm does not know, from a node without it
        r = self.c.pdimon("n4", "analyze", "999999.0", check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no step named '999999.0'", r.stderr)


class Teardown(unittest.TestCase):
    def test_stop_and_reap_leave_nothing(self):
        before = network_state()
        # stop(): everything goes, pdimonds exit cleanly, /etc/hosts byte for byte
        c = SlurmCluster(nodes=2, cpus=2, pdimond=BUILT_PDIMOND, pdimon=PDIMON, lock_timeout=120)
        c.start()
        d = c.dir
        self.assertNotEqual(network_state(), before)
        c.stop()
        self.assertEqual(c.pdimond_exit, {"n1": 0, "n2": 0})
        self.assertEqual(network_state(), before)
        self.assertFalse(os.path.exists(d))
        # an owner killed outright: the next start (here reap_stale) cleans up after it
        # (the plain build: cluster.py loads the plugin next to it into slurmd)
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "cluster.py"), "up", "2", BUILT_PDIMOND],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            ready, _, _ = select.select([p.stdout], [], [], 60)
            line = p.stdout.readline().decode() if ready else ""
            self.assertTrue(line.startswith("export SLURM_CONF="), "cluster.py up said %r" % line)
            killed = os.path.dirname(line.strip().split("=", 1)[1])
        finally:
            p.kill()
            p.wait()
            p.stdout.close()
        self.assertNotEqual(network_state(), before)
        self.assertIn(killed, reap_stale())
        self.assertEqual(network_state(), before)
        self.assertFalse(os.path.exists(killed))


if __name__ == "__main__":
    # meson's timeout sends SIGTERM: exit through atexit, which stops the cluster
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    unittest.main(verbosity=2)

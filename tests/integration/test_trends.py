#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_trends.py -- pdimon trends (ti-trend-prof) on real MPI runs stored by a real pdimond.

Run one case as: test_trends.py Trends.test_growing_site_ranked_first
"""
import json
import os
import shutil
import tempfile
import unittest

from harness import MPI_DIR, DaemonTest, marker_line, mpirun

EXCHANGE = f"MPI_Sendrecv@grow.c:{marker_line('grow.c', 'exchange')}"
BCAST = f"MPI_Bcast@grow.c:{marker_line('grow.c', 'bcast')}"
ITERS = 20


class Trends(DaemonTest):
    def run_step(self, name, impl, n, prog, size, *cmd):
        args = ["run", "--step", name, "--size", size, "--"] + (list(cmd) or mpirun(impl, n, prog, ITERS, size))
        r = self.d.pdimon(*args, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)

    def trends(self, program, *args, user=None):
        r = self.d.pdimon("trends", program, "--json", *args, user=user)
        return json.loads(r.stdout)

    def test_growing_site_ranked_first(self):
        for n in (2, 4, 8):
            self.run_step(f"g{n}", "openmpi", n, "grow", 64)
        t = self.trends("grow.openmpi")
        self.assertEqual((t["feature"], t["runs"], t["sizes"], t["input_size"]), ("tasks", 3, [2, 4, 8], 64))
        first = t["sites"][0]
        self.assertEqual(first["site"], EXCHANGE, t["sites"][:3])
        calls = next(s for s in t["sites"] if s["site"] == EXCHANGE and s["metric"] == "calls")
        # n - 1 exchanges per iteration: calls per task = 20 n - 20, exactly
        self.assertAlmostEqual(calls["exponent"], 1.0, delta=0.05)
        self.assertAlmostEqual(calls["coefficient"], ITERS, delta=0.5)
        self.assertGreater(calls["fit"]["r2"], 0.99)
        self.assertTrue(calls["flagged"])
        flagged = {(s["site"], s["metric"]) for s in t["sites"] if s["flagged"]}
        self.assertEqual(flagged, {(EXCHANGE, "calls"), (EXCHANGE, "bytes")})
        # the input size: Bcasts per task grow with it, not with the task count
        for size in (128, 256):
            self.run_step(f"s{size}", "openmpi", 4, "grow", size)
        t = self.trends(os.path.join(MPI_DIR, "grow.openmpi"))
        self.assertEqual((t["runs"], t["sizes"]), (3, [2, 4, 8]), "the task-count trend keeps one input size")
        by_size = t["other_features"][0]
        self.assertEqual((by_size["feature"], by_size["tasks"], by_size["sizes"]), ("input_size", 4, [64, 128, 256]))
        bcast = next(s for s in by_size["sites"] if s["site"] == BCAST and s["metric"] == "calls")
        self.assertEqual(by_size["sites"][0]["site"], BCAST)
        self.assertAlmostEqual(bcast["exponent"], 1.0, delta=0.05)
        self.assertTrue(bcast["flagged"])
        text = self.d.pdimon("trends", "grow.openmpi").stdout
        self.assertIn(f"! {EXCHANGE}: calls per task grows as n^1.00", text)
        svg = os.path.join(self.d.dir, "trends.svg")
        self.d.pdimon("trends", "grow.openmpi", "--svg", svg)
        with open(svg) as f:
            self.assertIn("</svg>", f.read())
        # another user reads only their own runs, as over every other method
        r = self.d.pdimon("trends", "grow.openmpi", check=False, user=65534)  # nobody
        self.assertEqual(r.returncode, 1)
        self.assertIn("no stored run of grow.openmpi that you may read", r.stderr)

    def test_nothing_grows_nothing_flagged(self):
        self.run_step("f2", "mpich", 2, "flat", 64)
        self.assert_refused(["trends", "flat.mpich"], "has 1 stored run; trends need runs at 2 or more task counts")
        self.run_step("f2b", "mpich", 2, "flat", 64)
        self.assert_refused(["trends", "flat.mpich"], "all ran at 2 tasks and one input size")
        for n in (4, 8):
            self.run_step(f"f{n}", "mpich", n, "flat", 64)
        t = self.trends("flat.mpich")
        self.assertEqual((t["runs"], t["sizes"], t["runs_per_size"]), (4, [2, 4, 8], [2, 1, 1]))
        self.assertEqual(t["flagged"], 0, [s for s in t["sites"] if s["flagged"]])
        for s in t["sites"]:
            if s["metric"] == "calls":
                self.assertEqual(s["model"], "flat", s)

    def test_rebuilt_program_is_not_compared(self):
        tmp = tempfile.mkdtemp(prefix="pdimon-rebuilt-", dir=self.d.dir)
        os.chmod(tmp, 0o755)
        prog = os.path.join(tmp, "solver")
        shutil.copy(os.path.join(MPI_DIR, "grow.mpich"), prog)
        for n in (2, 4):
            self.run_step(f"r{n}", None, n, None, 64, "mpirun.mpich", "-np", str(n), prog, ITERS, 64)
        os.unlink(prog)  # a rebuild: other code at the same path
        shutil.copy(os.path.join(MPI_DIR, "flat.mpich"), prog)
        self.run_step("r8", None, 8, None, 64, "mpirun.mpich", "-np", "8", prog, ITERS, 64)
        self.assert_refused(["trends", "solver"], f"{prog} has 1 usable run of its latest build (2 of an earlier build")
        self.assert_refused(["trends", "nosuchprogram"], "no stored run of nosuchprogram")
        self.assert_refused(["trends", "solver", "--xml"], "unknown option '--xml'")


if __name__ == "__main__":
    unittest.main()

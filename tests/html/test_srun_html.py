#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_srun_html.py -- srun --pdi-monitor=report=NAME.html on a real single-node Slurm.

The extension decides: srun's plugin has the CLI render the report as an HTML page, which
must open in headless Chromium with no console message; when the CLI cannot run, the JSON
report is written instead and srun says so, and the job's status is untouched either way.

Run one case as: test_srun_html.py SrunHtml.test_html_report
"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../slurm"))
from cluster import SlurmCluster  # noqa: E402
from harness import BUILD, PDIMON, Daemon, SystemBus  # noqa: E402
from browser import dom, open_page  # noqa: E402

PLUGIN = os.path.join(BUILD, "slurm/spank_pdimon.so")
RING = os.path.join(BUILD, "tests/mpi/ring.openmpi")
SHOTS = os.path.join(BUILD, "meson-logs", "html")


class SrunHtml(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pdimon-html-slurm-")
        os.chmod(self.tmp, 0o755)
        self.bus = SystemBus(self.tmp)
        self.d = Daemon(bus=self.bus)

    def tearDown(self):
        try:
            self.c.stop()
        finally:
            self.d.stop()
            self.bus.stop()

    def cluster(self, cli):
        self.c = SlurmCluster(plugstack=f"optional {PLUGIN} bus={self.bus.address} timeout_ms=2000 wait_ms=5000 "
                                        f"cli={cli}\n")
        self.c.start()
        return self.c.share(RING)

    def srun(self, *args):
        return self.c.run(["srun", *map(str, args)], timeout=120, env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})

    def test_html_report(self):
        ring = self.cluster(PDIMON)
        out = os.path.join(self.c.dir, "step.html")
        r = self.srun(f"--pdi-monitor=report={out}", "-n", 2, "--mpi=pmix", ring, 20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"full report in {out}", r.stderr)
        os.makedirs(SHOTS, exist_ok=True)
        text, console = open_page(out, os.path.join(SHOTS, "srun.png"))
        self.assertEqual(console, [])
        root, _ = dom(text)
        self.assertIn("completed (2 tasks)", root.find(id="verdict").text())

    def test_cli_missing_writes_json(self):
        ring = self.cluster("/nonexistent/pdimon")
        out = os.path.join(self.c.dir, "step.html")
        r = self.srun(f"--pdi-monitor=report={out}", "-n", 2, "--mpi=pmix", ring, 5)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cannot write the HTML report", r.stderr)
        self.assertIn("cannot run /nonexistent/pdimon", r.stderr)
        with open(os.path.join(self.c.dir, "step.json")) as f:
            self.assertEqual(json.load(f)["verdict"]["kind"], "completed")
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main(verbosity=2)

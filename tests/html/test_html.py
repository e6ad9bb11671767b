#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_html.py -- the HTML reports of real steps, opened in a real browser.

A real pdimond watches real MPI jobs: a hung step (a rank stopped for good), a stalled one (a
rank stalled 0.5 s once) and a program whose source file name is hostile HTML. Their pages,
from `pdimon report --html`, `pdimon analyze --html` and `pdimon render`, are opened in
Debian's headless Chromium: they must load with no console message, show what the report
found, and run no script but their own. Screenshots are kept in the build's meson-logs/html/.

Run one case as: test_html.py Html.test_hung_step
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))
from harness import BUILD, PDIMON, DaemonTest, kill_tree, mpirun, wait_for  # noqa: E402
from browser import dom, open_page  # noqa: E402

SHOTS = os.path.join(BUILD, "meson-logs", "html")
MAX_BYTES = 5 * 1024 * 1024


class Html(DaemonTest):
    def setUp(self):
        super().setUp()
        os.makedirs(SHOTS, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="pdimon-html-")

    def page(self, path, name):
        """Open PATH in Chromium; its DOM root. It must load with no console message and be
        well formed; its screenshot is kept as NAME.png."""
        self.assertLess(os.path.getsize(path), MAX_BYTES)
        with open(path, encoding="utf-8") as f:
            _, unbalanced = dom(f.read())
        self.assertEqual(unbalanced, [], f"{path}: elements closed out of order")
        text, console = open_page(path, os.path.join(SHOTS, name + ".png"))
        with open(os.path.join(SHOTS, name + ".dom.html"), "w") as f:
            f.write(text)
        self.assertEqual(console, [], f"{path}: console messages")
        root, _ = dom(text)
        scripts = root.find_all("script")
        self.assertEqual(len(scripts), 3, "the chart data, Vega and the page's script, nothing injected")
        self.assertTrue(root.find(id="verdict").text().strip())
        for chart in root.find_all(cls="chart"):
            self.assertEqual(chart.attrs.get("data-drawn"), "yes", f"chart {chart.attrs.get('id')} not drawn")
        return root

    def html_of(self, *args):
        r = self.d.pdimon(*args)
        self.assertIn("HTML report in", r.stdout)
        return args[-1]

    def test_hung_step(self):
        # rank 2 stops for good in iteration 5; the others wait in the barrier
        p = self.spawn([PDIMON, "run", "--step", "hung", "--", *mpirun("openmpi", 4, "ring", 1000, 0, 2, 5)])

        def hung():
            r = self.d.pdimon("report", "hung", "--json", check=False)
            rep = json.loads(r.stdout) if r.returncode == 0 else {}
            v = rep.get("verdict", {})
            return rep if v.get("kind") == "hang" and v.get("least_progressed") == "[2]" else None
        # rank 2 is the one stopped for good: wait for that verdict, not for a moment earlier
        # in which a rank descheduled on a loaded machine kept the others waiting a while
        rep = wait_for(hung, 90, "the step to hang with rank 2 least progressed")
        lp = rep["verdict"]["least_progressed"]
        for cmd, name in (("report", "hung-report"), ("analyze", "hung-analyze")):
            root = self.page(self.html_of(cmd, "hung", "--html", os.path.join(self.tmp, name + ".html")), name)
            verdict = root.find(id="verdict").text()
            self.assertIn("hung", verdict)
            self.assertIn(f"least progressed, rank {lp}", " ".join(verdict.split()))
            # the PDG drawn by Graphviz, its least-progressed group marked
            lp_nodes = root.find(id="pdg").find_all("g", cls="lp")
            self.assertEqual(len(lp_nodes), 1, "one least-progressed group")
            self.assertIn(lp, lp_nodes[0].text())
            self.assertIn("least progressed", lp_nodes[0].text())
            self.assertTrue(root.find(id="tree").find("svg"), "the prefix tree drawn")
            groups = root.find(id="hang").find("table").text()
            self.assertIn("blocked", groups)
            self.assertIn(lp, groups)
        kill_tree(p)

    def test_stalled_step(self):
        # rank 1 stalls 2 s once, in iteration 500 of 800: four times the whole run's normal
        # length, so that the verdict is abnormal even on a loaded machine (this tests the page,
        # not the diagnosis's sensitivity, which bench/ measures)
        r = self.d.pdimon("run", "--step", "stalled", "--", *mpirun("mpich", 2, "ring", 800, 300, 1, 500, 2000000),
                          check=False, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = json.loads(self.d.pdimon("report", "stalled", "--json").stdout)
        diag = rep["diagnosis"]
        self.assertTrue(diag["abnormal"], json.dumps(diag))
        faulty = diag["faulty_phase"]
        rows = rep["rank_phases"]["rows"]
        self.assertEqual([r["ranks"] for r in rows], ["[0]", "[1]"])
        self.assertEqual(len(rep["phases"]), len(rows[0]["mpi"]))
        root = self.page(self.html_of("report", "stalled", "--html", os.path.join(self.tmp, "stalled.html")),
                         "stalled-report")
        verdict = " ".join(root.find(id="verdict").text().split())
        self.assertIn(f"phase {faulty}", verdict)
        self.assertIn("s after start", verdict, "the faulty phase placed in time")
        marked = root.find(id="timeline").find_all("tr", cls="faulty")
        self.assertEqual([m.attrs["data-phase"] for m in marked], [str(faulty)])
        # Vega drew the timeline with the faulty phase named, and the ranks x phases map
        self.assertIn(f"faulty phase {faulty}", root.find(id="timeline-chart").text())
        self.assertTrue(root.find(id="heatmap-chart").find("svg"))
        self.assertTrue(root.find(id="transitions").find("td", cls="site"), "call sites of the transitions")
        # the same document rendered offline from the JSON, as srun's plugin does
        doc = os.path.join(self.tmp, "stalled.json")
        with open(doc, "w") as f:
            f.write(self.d.pdimon("analyze", "stalled", "--json").stdout)
        out = os.path.join(self.tmp, "stalled-render.html")
        r = subprocess.run([PDIMON, "render", doc, "--html", out], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.page(out, "stalled-analyze")

    def test_trends_page(self):
        # a call site whose calls per task grow with the task count (tests/mpi/grow.c), run at
        # 2 and 4 tasks: `pdimon trends --html` draws its points and fits, log-log
        for n in (2, 4):
            r = self.d.pdimon("run", "--step", f"grow{n}", "--", *mpirun("mpich", n, "grow", 10, 64),
                              check=False, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
        t = json.loads(self.d.pdimon("trends", "grow.mpich", "--json").stdout)
        first = t["sites"][0]["site"]
        root = self.page(self.html_of("trends", "grow.mpich", "--html", os.path.join(self.tmp, "trends.html")),
                         "trends")
        self.assertIn("grow.mpich", root.find(id="verdict").text())
        self.assertTrue(root.find(id="trends-chart").find("svg"), "the log-log chart drawn")
        self.assertIn(first, root.find(id="trend-table").text(), "the least scalable call site listed")

    def test_hostile_names(self):
        # a real program whose source file is named with what HTML, SVG and DOT must escape:
        # its call sites (FUNCTION@FILE:LINE) carry the name into every part of the page
        name = "<img src=x onerror=alert(1)><b>&amp;\"q'\\N\nz.c"
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../mpi/ring.c")) as f:
            code = f.read()
        with open(os.path.join(self.tmp, name), "w") as f:
            f.write(code)
        exe = os.path.join(self.tmp, "evil")
        subprocess.run(["mpicc.mpich", "-g", "-O1", "-w", "-o", exe, name], cwd=self.tmp, check=True)
        p = self.spawn([PDIMON, "run", "--step", "evil", "--", "mpirun.mpich", "-np", "2", exe, "1000", "0", "1", "3"])

        def hung():
            r = self.d.pdimon("report", "evil", "--json", check=False)
            rep = json.loads(r.stdout) if r.returncode == 0 else {}
            return rep if rep.get("verdict", {}).get("kind") == "hang" else None
        rep = wait_for(hung, 90, "the hostile program to hang")
        where = [g["where"] for g in rep["verdict"]["groups"]]
        self.assertTrue(any(name in w for w in where), where)
        root = self.page(self.html_of("analyze", "evil", "--html", os.path.join(self.tmp, "evil.html")), "hostile")
        self.assertIn(name, root.find(id="hang").text(), "the name shown as it is")
        # Graphviz shows it as it is too: neither its escapes (\\N) nor entities (&amp;) act,
        # and the newline breaks the label's line
        tree = root.find(id="tree").find("svg").text()
        self.assertIn("<img src=x onerror=alert(1)><b>&amp;\"q'\\N", tree)
        self.assertIsNone(root.find("img"), "no markup from the name")
        self.assertIsNone(root.find("b"), "no markup from the name")
        kill_tree(p)

if __name__ == "__main__":
    unittest.main(verbosity=2)

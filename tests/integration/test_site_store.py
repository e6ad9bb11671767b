#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_site_store.py -- the site store on a real PostgreSQL: steps get there, survive its
outages, feed trends, stay private; bad site stores leave local monitoring alone.

Run one case as: test_site_store.py SiteStore.test_outage_loses_nothing
"""
import json
import os
import tempfile
import unittest

from harness import Daemon, SystemBus, marker_line, mpirun, wait_for
from pgserver import PASSWORD, PostgresServer

EXCHANGE = f"MPI_Sendrecv@grow.c:{marker_line('grow.c', 'exchange')}"


class SiteStore(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pdimon-site-")
        os.chmod(self.tmp, 0o755)
        self.bus = SystemBus(self.tmp)
        self.pg = PostgresServer(self.tmp)
        self.db = os.path.join(self.tmp, "pdimon.db")
        self.secret = self.credentials(PASSWORD)
        self.d = None

    def tearDown(self):
        if self.d:
            self.d.stop()
        self.pg.remove()
        self.bus.stop()

    def credentials(self, password, mode=0o600, name="site.secret"):
        path = os.path.join(self.tmp, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")
        os.chmod(path, mode)
        return path

    def start(self, secret=None, uri=None, *more, database=None):
        if self.d:
            self.d.stop()
        self.d = Daemon(f"site_store={uri or self.pg.uri}", f"site_store_credentials={secret or self.secret}",
                        "site_store_retry_s=1", *more, bus=self.bus, database=database or self.db)

    def run_step(self, name, n, prog="grow", impl="mpich"):
        r = self.d.pdimon("run", "--step", name, "--size", 64, "--", *mpirun(impl, n, prog, 10, 64), check=False)
        self.assertEqual(r.returncode, 0, r.stderr)

    def site(self):
        return self.d.status()["site_store"]

    def wait_written(self, n):
        wait_for(lambda: self.site()["pending"] == 0 and self.site()["written"] >= n, 60,
                 f"{n} steps in the site store: {self.site()}")

    def test_steps_and_trends_from_the_site_store(self):
        self.start()
        for n in (2, 4, 8):
            self.run_step(f"g{n}", n)
        self.wait_written(3)
        self.assertEqual(self.site()["state"], "up")
        self.assertEqual(self.pg.psql("SELECT count(*) FROM pdimon.steps"), "3")
        self.assertEqual(self.pg.psql("SELECT sum(ntasks) FROM pdimon.steps WHERE verdict = 'completed'"), "14")
        self.assertEqual(self.pg.psql(f"SELECT calls FROM pdimon.sites s JOIN pdimon.steps t ON t.id = s.step"
                                      f" WHERE t.name = 'g4' AND s.name = '{EXCHANGE}'"), str(10 * 3 * 4))
        self.assertEqual(self.pg.psql("SELECT count(*) FROM pdimon.tasks WHERE model IS NOT NULL"), "14")
        self.assertIn('"kind":"completed"', self.pg.psql("SELECT report FROM pdimon.steps WHERE name = 'g2'"))
        self.assertEqual(self.pg.psql("SELECT version FROM pdimon.schema_version"), "1")
        t = json.loads(self.d.pdimon("trends", "grow.mpich", "--json").stdout)
        self.assertEqual((t["source"], t["runs"], t["sizes"]), ("site store", 3, [2, 4, 8]))
        self.assertEqual(t["sites"][0]["site"], EXCHANGE, t["sites"][:3])
        # another user reads only their own runs there too
        r = self.d.pdimon("trends", "grow.mpich", check=False, user=65534)  # nobody
        self.assertEqual(r.returncode, 1)
        self.assertIn("no stored run of grow.mpich that you may read", r.stderr)
        # a run of theirs (as another node would have written it): that one only
        self.pg.psql("UPDATE pdimon.steps SET uid = 65534 WHERE name = 'g2'")
        r = self.d.pdimon("trends", "grow.mpich", check=False, user=65534)
        self.assertIn("has 1 stored run", r.stderr)

    def test_outage_loses_nothing(self):
        self.start()
        self.run_step("before", 2)
        self.wait_written(1)
        self.pg.stop()
        # steps end while the database is down (one of them was running when it went)
        self.run_step("during1", 2)
        self.run_step("during2", 4)
        wait_for(lambda: self.site()["state"] == "down", 60, "the outage to be noticed")
        self.assertEqual(self.site()["pending"], 2)
        self.assertIn("unreachable", self.d.read_log())
        # local monitoring and trends go on, from the local store, saying so
        self.assertEqual(self.d.show("during2")["state"], "ended")
        t = json.loads(self.d.pdimon("trends", "grow.mpich", "--json").stdout)
        self.assertTrue(t["source"].startswith("local store (the site store is unavailable"), t["source"])
        # a restart of pdimond meanwhile forgets nothing either: the outbox is in the local store
        self.start()
        self.pg.start()
        self.wait_written(2)
        self.assertEqual(self.pg.psql("SELECT string_agg(name, ',' ORDER BY name) FROM pdimon.steps"),
                         "before,during1,during2")
        self.assertEqual(self.site()["state"], "up")

    def test_sample_runs_from_another_node(self):
        # two normal runs on "node a" reach the site store (as long as the third: a run of one
        # phase is no sample of one of several, analysis.c)...
        self.start(None, None, "node_name=a")
        for k in range(2):
            r = self.d.pdimon("run", "--step", f"normal{k}", "--", *mpirun("mpich", 4, "ring", 150), check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
        self.wait_written(2)
        # ...and are AutomaDeD's sample runs on "node b", whose own store has never seen the program
        self.start(None, None, "node_name=b", "log_level=debug", database=os.path.join(self.tmp, "b.db"))
        r = self.d.pdimon("run", "--step", "third", "--", *mpirun("mpich", 4, "ring", 150, 20000), check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Step third: 2 sample run(s) from the site store", self.d.read_log())
        a = json.loads(self.d.pdimon("analyze", "third", "--json").stdout)
        self.assertEqual(a["automaded"]["sample_runs"], 2, json.dumps(a["automaded"]))

    def test_bad_site_stores_leave_monitoring_alone(self):
        # wrong credentials
        self.start(secret=self.credentials("wrong", name="wrong.secret"))
        self.run_step("w", 2)
        wait_for(lambda: self.site()["state"] == "down", 60, "the refusal")
        self.assertIn("password authentication failed", self.site()["error"])
        self.assertIn("wrong credentials", self.d.read_log())
        self.assertEqual(self.d.show("w")["state"], "ended")
        self.assertEqual(self.site()["pending"], 1)
        # a credentials file others may read is refused before any use
        self.start(secret=self.credentials(PASSWORD, mode=0o644, name="open.secret"))
        self.assertIn("may be read by others (mode 0644): chmod 600 it", self.d.read_log())
        self.assertIsNone(self.d.status()["site_store"])
        # a password in the URI (pdimond.conf is readable by all) is refused too
        self.start(uri=self.pg.uri.replace(f"pdimon@", f"pdimon:{PASSWORD}@"))
        self.assertIn("carries a password", self.d.read_log())
        # a schema newer than this pdimond's
        self.start()
        self.wait_written(1)
        self.pg.psql("UPDATE pdimon.schema_version SET version = 99")
        self.start()
        self.run_step("n", 2)
        wait_for(lambda: self.site()["state"] == "down", 60, "the newer schema to be noticed")
        self.assertIn("newer than this pdimond knows", self.site()["error"])
        self.assertEqual(self.d.show("n")["state"], "ended")
        # unreachable: nothing listens there
        self.pg.psql("UPDATE pdimon.schema_version SET version = 1")
        self.pg.stop()
        self.start()
        self.run_step("u", 2)
        wait_for(lambda: self.site()["state"] == "down", 60, "the unreachable store")
        self.assertEqual(self.d.show("u")["state"], "ended")
        r = self.d.pdimon("status")
        self.assertIn("down", r.stdout)


if __name__ == "__main__":
    unittest.main()

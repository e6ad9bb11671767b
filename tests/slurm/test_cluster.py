# SPDX-License-Identifier: GPL-2.0-only
"""test_cluster.py -- the real single-node Slurm of cluster.py runs, as root and as another
user, real Open MPI steps, cancels a hung one, reads our plugstack file, and leaves nothing
behind. Run as root: python3 tests/slurm/test_cluster.py (about 15 s)."""

import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster import SlurmCluster  # noqa: E402

BUILD = os.environ.get("PDIMON_BUILD", os.path.join(HERE, "../../build"))
RING = os.path.join(BUILD, "tests/mpi/ring.openmpi")
USER = "pdimontest"
PLUGSTACK = "# pdimon tests/slurm/test_cluster.py: no plugin\n"


def setUpModule():
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root")
    if not os.path.exists(RING):
        subprocess.run(["ninja", "-C", BUILD, "tests/mpi/ring.openmpi"], check=True)


def running(pid):
    """pid exists and is not a zombie waiting for PID 1 to reap it."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class ClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        t = time.monotonic()
        cls.c = SlurmCluster(plugstack=PLUGSTACK)
        cls.c.start()
        cls.start_s = time.monotonic() - t
        cls.c.ensure_user(USER)
        # The second user must be able to read and execute the program where it is;
        # if some directory on the way is closed to them, use a shared copy.
        r = cls.c.run(["test", "-x", RING, "-a", "-r", RING], user=USER)
        cls.user_ring = RING if r.returncode == 0 else cls.c.share(RING)

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def srun(self, *args, user=None, timeout=60):
        # Debian's Open MPI 4.1 needs --mpi=pmix (MpiDefault=none): without it, or with
        # pmi2, MPI_Init aborts ("OMPI was not built with SLURM's PMI support"). No OMPI_MCA_*
        # variable is needed. (Debian's MPICH runs under --mpi=pmi2 instead; under pmix it
        # starts N singletons.)
        r = self.c.run(["srun"] + list(args), user=user, timeout=timeout)
        self.assertEqual(r.returncode, 0, "srun %s: exit %d\nstdout: %s\nstderr: %s\n%s"
                         % (" ".join(args), r.returncode, r.stdout, r.stderr, self.c.logs(20)))
        return r

    def test_node_idle_with_8_cpus(self):
        r = self.c.run(["sinfo", "-h", "-N", "-o", "%N %c %T"], check=True)
        self.assertEqual(r.stdout.split(), [self.c.node, "8", "idle"])
        self.assertLess(self.start_s, 30)

    def test_ring_root(self):
        r = self.srun("-n", "4", "--mpi=pmix", RING, "10")
        self.assertIn("ring: 10 iterations on 4 ranks", r.stdout)

    def test_ring_8_ranks_on_2_cores(self):
        r = self.srun("-n", "8", "--mpi=pmix", RING, "3")
        self.assertIn("ring: 3 iterations on 8 ranks", r.stdout)

    def test_ring_second_user(self):
        uid, _ = self.c.ensure_user(USER)
        self.assertEqual(self.c.ensure_user(USER)[0], uid)     # idempotent
        self.assertNotEqual(uid, 0)
        r = self.srun("-n", "4", "--mpi=pmix", self.user_ring, "10", user=USER)
        self.assertIn("ring: 10 iterations on 4 ranks", r.stdout)
        r = self.srun("-n", "1", "id", "-u", user=USER)
        self.assertEqual(r.stdout.strip(), str(uid))

    def test_scancel_hung_step(self):
        # Rank 2 sleeps forever at iteration 5; the others wait in MPI_Barrier.
        name = "hang%d" % os.getpid()
        p = self.c.popen(["srun", "-n", "4", "--mpi=pmix", "-J", name,
                          RING, "100000", "1000", "2", "5"])
        try:
            def running():
                r = self.c.run(["squeue", "-h", "-n", name, "-t", "R", "-o", "%i"])
                jobs = r.stdout.split()
                return jobs if jobs and len(self.c.pids(RING)) == 4 else None
            job = self.c.wait_for(running, 30, "4 ring tasks of job %s" % name)[0]
            time.sleep(1)                        # well past iteration 5
            self.assertIsNone(p.poll(), "hung step ended by itself")
            t = time.monotonic()
            self.c.run(["scancel", job], check=True)
            p.communicate(timeout=20)
            self.assertNotEqual(p.returncode, 0)
            self.c.wait_for(lambda: not self.c.pids(RING), 10, "ring tasks to end")
            self.c.wait_for(lambda: not self.c.jobs(), 20, "job %s to leave squeue" % job)
            self.assertLess(time.monotonic() - t, 20)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()

    def test_plugstack_is_ours(self):
        r = self.c.run(["scontrol", "show", "config"], check=True)
        lines = [ln.split("=", 1)[1].strip() for ln in r.stdout.splitlines()
                 if ln.split("=", 1)[0].strip() == "PlugStackConfig"]
        self.assertEqual(lines, [self.c.plugstack])
        with open(self.c.plugstack) as f:
            self.assertEqual(f.read(), PLUGSTACK)
        r = self.c.run(["srun", "--help"], check=True)      # parses it, no plugin options
        self.assertIn("--mpi", r.stdout)


class StopTest(unittest.TestCase):
    def test_stop_leaves_nothing(self):
        c = SlurmCluster()
        c.start()
        d = c.dir
        daemons = [p.pid for p in c._daemons.values()]
        p = c.popen(["srun", "-n", "2", "--mpi=pmix", RING, "100000", "1000", "1", "2"])
        c.wait_for(lambda: len(c.pids(RING)) == 2, 30, "2 ring tasks")
        marked = c.pids()
        t = time.monotonic()
        c.stop()
        self.assertLess(time.monotonic() - t, 30)
        self.assertIsNotNone(p.poll())
        self.assertFalse(os.path.exists(d))
        self.assertEqual([pid for pid in set(marked + daemons) if running(pid)], [])
        c.stop()                                             # idempotent
        self.assertEqual(c.pids(), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)

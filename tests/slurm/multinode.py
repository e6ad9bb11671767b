# SPDX-License-Identifier: GPL-2.0-only
"""multinode.py -- what the multi-node Slurm tests (test_multinode.py, test_loop.py) share:
the files they run and the module set-up that checks for them.

PDIMOND is the daemon under test: scripts/test.sh runs MultiNode with the sanitizer build's
(PDIMON_PDIMOND); the plugin stays the plain build's (slurmd has no sanitizer runtime).
"""
import os
import unittest

from harness import BUILD, PDIMON
from harness import PDIMOND as BUILT_PDIMOND

PDIMOND = os.environ.get("PDIMON_PDIMOND", BUILT_PDIMOND)
PLUGIN = os.path.join(BUILD, "slurm/spank_pdimon.so")
RING = os.path.join(BUILD, "tests/mpi/ring.openmpi")


def setUpModule():
    """Imported by each test module: unittest calls it before the module's first test."""
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root")
    for path in (PDIMOND, PDIMON, PLUGIN, RING):
        if not os.path.exists(path):
            raise unittest.SkipTest(f"{path} is not built")

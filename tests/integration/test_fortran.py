#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_fortran.py -- Fortran programs and library codes: call sites name the application's
code past the MPI Fortran bindings and libraries such as ScaLAPACK, automatic phases line up
across ranks, and a real library code fits the memory bound without an incomplete model.

Run one case as: test_fortran.py Fortran.test_call_sites
"""
import os
import re
import unittest

from harness import DaemonTest, marker_line, mpirun

RANKS = 4
SCALAPACK_TESTS = "/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests"
# the collectives and point-to-point calls of fsolver.F90, by marker
FSOLVER_CALLS = [("bcast_input", "Bcast"), ("bcast_mesh", "Bcast"), ("barrier_setup", "Barrier"),
                 ("sendrecv", "Sendrecv"), ("allreduce", "Allreduce"), ("gather", "Gather"),
                 ("reduce_final", "Reduce"), ("barrier_final", "Barrier")]
BINDINGS = re.compile(r"libmpi_mpifh|libmpi_usempi|libmpichfort|libmpifort|libmpi\.so|libmpich\.so")


class Fortran(DaemonTest):
    def run_step(self, step, cmd, timeout=300):
        r = self.d.pdimon("run", "--step", step, "--", *cmd, check=False, timeout=timeout)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = self.d.show(step)
        self.assertEqual(s["state"], "ended")
        self.assertEqual(sorted(t["rank"] for t in s["tasks"]), list(range(RANKS)))
        return s

    def assert_fsolver_sites(self, s, prog):
        names = {x["name"] for x in s["sites"]}
        for marker, fn in FSOLVER_CALLS:
            self.assertIn(f"MPI_{fn}@fsolver.F90:{marker_line('fsolver.F90', marker)}", names, prog)
        # Init and Finalize are in the program too (gfortran may give such calls the line of
        # the program statement: DWARF says so, not pdimon)
        for fn in ("Init", "Finalize"):
            self.assertTrue(any(n.startswith(f"MPI_{fn}@fsolver.F90:") for n in names), names)
        self.assertFalse([n for n in names if BINDINGS.search(n)], f"{prog}: sites inside MPI")

    def test_call_sites(self):
        # `use mpi` with Open MPI and MPICH, mpif.h with both: one daemon, four steps
        for impl in ("openmpi", "mpich"):
            for prog in ("fsolver", "fsolver_mpif"):
                s = self.run_step(f"{prog}-{impl}", mpirun(impl, RANKS, prog, 40, 100, 10))
                self.assert_fsolver_sites(s, f"{prog}.{impl}")
                for t in s["tasks"]:
                    self.assertFalse(t["incomplete"], f"{prog}.{impl} rank {t['rank']}")
                    self.assertEqual(t["call_sites"]["unresolved"], 0, f"{prog}.{impl}: {t['call_sites']}")

    def test_stripped_program(self):
        s = self.run_step("stripped", mpirun("openmpi", RANKS, "fsolver_stripped", 40, 100, 10))
        names = {x["name"] for x in s["sites"]}
        for fn in ("Sendrecv", "Allreduce", "Gather", "Bcast"):
            self.assertTrue(any(re.fullmatch(rf"MPI_{fn}@fsolver_stripped\.openmpi\+0x[0-9a-f]+", n) for n in names),
                            names)
        self.assertFalse([n for n in names if BINDINGS.search(n)], names)

    @unittest.skipUnless(os.path.exists(os.path.join(SCALAPACK_TESTS, "xdlu")), "scalapack-mpi-test is not installed")
    def test_scalapack_library_sites(self):
        # Debian's ScaLAPACK LU tester (Fortran, stripped) calls MPI through ScaLAPACK and BLACS
        s = self.run_step("lu", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS),
                                 "--wdir", SCALAPACK_TESTS, os.path.join(SCALAPACK_TESTS, "xdlu")])
        names = [x["name"] for x in s["sites"]]
        through = [n for n in names if re.fullmatch(r"MPI_\w+ in \w+ called from xdlu\+0x[0-9a-f]+", n)]
        self.assertTrue(any(" in pdgetrf_ called from " in n for n in through), names)
        self.assertFalse([n for n in names if "called from" not in n and not n.split("@")[1].startswith("xdlu+")],
                         "every site is in the program, directly or through a library")
        self.assertFalse([n for n in names if BINDINGS.search(n) or "libscalapack" in n.split(" called from ")[-1]])


if __name__ == "__main__":
    unittest.main()

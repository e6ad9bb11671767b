#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_fortran.py -- Fortran programs and library codes: call sites name the application's
code past the MPI Fortran bindings and libraries such as ScaLAPACK, automatic phases line up
across ranks, and a real library code fits the memory bound without an incomplete model.

Run one case as: test_fortran.py Fortran.test_call_sites
"""
import os
import re
import shutil
import tempfile
import unittest

from harness import DaemonTest, marker_line, mpirun

RANKS = 4
SCALAPACK_TESTS = "/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests"
# the collectives and point-to-point calls of fsolver.F90, by marker
FSOLVER_CALLS = [("bcast_input", "Bcast"), ("bcast_mesh", "Bcast"), ("barrier_setup", "Barrier"),
                 ("sendrecv", "Sendrecv"), ("allreduce", "Allreduce"), ("gather", "Gather"),
                 ("reduce_final", "Reduce"), ("barrier_final", "Barrier")]
BINDINGS = re.compile(r"libmpi_mpifh|libmpi_usempi|libmpichfort|libmpifort|libmpi\.so|libmpich\.so")
NWCHEM = "/usr/bin/nwchem.openmpi"
# a small NWChem job: SCF of water, its eigenproblems solved by ScaLAPACK
NWCHEM_INPUT = """start h2o
geometry units angstrom
  O  0.000  0.000  0.117
  H  0.000  0.757 -0.467
  H  0.000 -0.757 -0.467
end
basis
  * library sto-3g
end
task scf energy
"""


UNRESOLVED = " (call chain unresolved)"


def may_miss_collectives(s):
    """Did the overhead budget, or a loss, leave a task's probes blind to some calls (anything
    but entry-only probes, which see every call)?"""
    return any(u["level"] != "entry only" for t in s["tasks"] for u in t["unobserved"])


def assert_phases_line_up(test, s, at_least):
    """Every task has the same automatic phases: the same count, each starting at the same
    collective of the step (or in the same wall-clock slot), on the wall clock in order; at least
    AT_LEAST of them where no task may have missed a collective (one that may have turns the step
    to the wall clock: pdimond cuts on from 5 s into the step, so a short run may have few)."""
    starts = {t["rank"]: [p["first_collective"] for p in t["phases"]] for t in s["tasks"]}
    first = starts[0]
    if not may_miss_collectives(s):
        test.assertGreaterEqual(len(first), at_least, starts)
    for rank, st in starts.items():
        test.assertEqual(st, first, f"rank {rank}'s phases start elsewhere than rank 0's")
    for t in s["tasks"]:
        walls = [(p["wall_start_ns"], p["wall_end_ns"]) for p in t["phases"]]
        test.assertTrue(all(a <= b for a, b in walls), walls)
        test.assertTrue(all(b0 <= a1 for (_, b0), (a1, _) in zip(walls, walls[1:])), walls)
        test.assertGreater(walls[0][0], 1.5e18, "since the epoch")


class FortranSteps(DaemonTest):
    def run_step(self, step, cmd, timeout=300):
        r = self.d.pdimon("run", "--step", step, "--", *cmd, check=False, timeout=timeout)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = self.d.show(step)
        self.assertEqual(s["state"], "ended")
        self.assertEqual(sorted(t["rank"] for t in s["tasks"]), list(range(RANKS)))
        return s

    def run_xdlu(self):
        """Debian's ScaLAPACK LU tester (Fortran, stripped): MPI through ScaLAPACK and BLACS."""
        return self.run_step("lu", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS),
                                    "--wdir", SCALAPACK_TESTS, os.path.join(SCALAPACK_TESTS, "xdlu")])

    def run_nwchem(self):
        """Debian's NWChem (Fortran, stripped, MPI from Global Arrays, the Fortran bindings and
        ScaLAPACK) on a small SCF job: half a million calls."""
        wd = tempfile.mkdtemp(prefix="pdimon-nwchem-")
        self.addCleanup(shutil.rmtree, wd, True)
        with open(os.path.join(wd, "h2o.nw"), "w") as f:
            f.write(NWCHEM_INPUT)
        return self.run_step("nwchem", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS),
                                        "--wdir", wd, NWCHEM, os.path.join(wd, "h2o.nw")])


class Fortran(FortranSteps):
    """Every call seen: call sites and phases as the design names and cuts them.

    No overhead budget here: its probe moves close uprobe links on pdimond's loop, each waiting for
    the kernel (25-150 ms measured here), and a loop stalled that long lets the ring buffer fill on
    a loaded machine; calls lost there take their stacks and world collectives with them. What the
    models say then is FortranBudget's test."""
    settings = ("max_overhead_pct=off",)

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

    def test_phases_line_up(self):
        # 600 iterations of a world Allreduce, a gather every 10, load drifting differently per
        # rank: phases every 32 world collectives after the first 96, the same on every rank
        s = self.run_step("phases", mpirun("openmpi", RANKS, "fsolver", 600, 50, 10))
        assert_phases_line_up(self, s, 10)
        for t in s["tasks"]:
            self.assertFalse(t["incomplete"])
            self.assertEqual(t["phases_merged"], 0)

    def test_scalapack_library_sites(self):
        s = self.run_xdlu()
        names = [x["name"] for x in s["sites"]]
        through = [n for n in names if re.fullmatch(r"MPI_\w+ in \w+ called from xdlu\+0x[0-9a-f]+", n)]
        self.assertTrue(any(" in pdgetrf_ called from " in n for n in through), names)
        self.assertFalse([n for n in names if "called from" not in n and not n.split("@")[1].startswith("xdlu+")],
                         "every site is in the program, directly or through a library")
        self.assertFalse([n for n in names if BINDINGS.search(n) or "libscalapack" in n.split(" called from ")[-1]])
        # its collectives run on the process grids' communicators, which not every rank is in:
        # none cuts a phase, so none can put the ranks' phases out of line
        assert_phases_line_up(self, s, 1)
        for t in s["tasks"]:
            self.assertFalse(t["incomplete"], t["dropped"])
            self.assertEqual(t["call_sites"]["unresolved"], 0, t["call_sites"])

    def test_nwchem(self):
        # tens of phases, within the default memory bound
        s = self.run_nwchem()
        names = [x["name"] for x in s["sites"]]
        self.assertFalse([n for n in names if not re.search(r"(@| called from )nwchem\.openmpi\+0x[0-9a-f]+$", n)],
                         "every site is in the program")
        self.assertTrue([n for n in names if re.match(r"MPI_\w+ in pdsyev_ called from ", n)], names)
        assert_phases_line_up(self, s, 10)
        for t in s["tasks"]:
            self.assertFalse(t["incomplete"], t["dropped"])
            self.assertEqual(t["events_lost"], 0)
            self.assertGreater(t["calls"], 10000)


class FortranBudget(FortranSteps):
    """An overhead budget tight enough to act on any machine, however loaded (the default one
    acts only when the program runs fast): it thins and moves the probes of NWChem's one-sided
    calls and collectives and of ScaLAPACK's point-to-point calls, and stalls the loop while it
    moves them. Whatever it did, phases line up, and a call whose chain could not be followed to
    the program says so."""
    settings = ("max_overhead_pct=0.2",)

    def test_scalapack_sites_say_what_they_are(self):
        s = self.run_xdlu()
        names = [x["name"] for x in s["sites"]]
        unresolved = [n for n in names if n.endswith(UNRESOLVED)]
        resolved = [n for n in names if not n.endswith(UNRESOLVED)]
        self.assertTrue(any(re.fullmatch(r"MPI_\w+ in pdgetrf_ called from xdlu\+0x[0-9a-f]+", n) for n in resolved),
                        names)
        self.assertFalse([n for n in resolved if not re.search(r"(@| called from )xdlu\+0x[0-9a-f]+$", n)],
                         "a site not marked is in the program")
        if unresolved:
            self.assertGreater(sum(t["call_sites"]["unresolved"] for t in s["tasks"]), 0, unresolved)
        assert_phases_line_up(self, s, 1)

    def test_nwchem_phases_line_up(self):
        s = self.run_nwchem()
        assert_phases_line_up(self, s, 10)


class FortranSmallMemory(DaemonTest):
    """A memory bound that holds a few phases of the program only."""
    settings = ("max_task_memory=49152",)

    def test_memory_bound(self):
        r = self.d.pdimon("run", "--step", "small", "--", *mpirun("openmpi", RANKS, "fsolver", 1500, 20, 10),
                          check=False, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        s = self.d.show("small")
        # merged rather than dropped: nothing incomplete, the phases still in line
        assert_phases_line_up(self, s, 3)
        for t in s["tasks"]:
            self.assertFalse(t["incomplete"], t["dropped"])
            self.assertGreater(t["phases_merged"], 0)
            self.assertLessEqual(t["model_bytes"], 49152 + 65 * 104, "the bound, and the phase table")


if __name__ == "__main__":
    unittest.main()

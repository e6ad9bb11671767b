#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""attach_scale.py -- what one process's uprobe attach costs against how many processes map the
library (issue 10, 3e: does a step's start-up grow with the rank count squared?).

    python3 bench/attach_scale.py [--mapped 1,4,16,32,64] [--impl openmpi,mpich]
    python3 bench/attach_scale.py --order after-map,before-map [--detach alive,exited]
                                  [--close one,together] [--mapped ...]

For each count K: K processes (bench/startup.IMPL, waiting before MPI_Init) map a private copy of
the MPI library, so that nobody else's processes or probes are on it; then probe-floor attaches
pdimond's probes (the same offsets, one uprobe_multi link for the entries and one for the returns,
pid filter) to each of them in turn and prints what the two link-create syscalls took per process.
Every registration (one per offset and link) walks every address space that maps the library
under the global dup_mmap_sem (kernel/events/uprobes.c, register_for_each_vma), so a process's
attach should grow with K, and a step's K attaches with K squared. Printed per K: the median and
largest attach, and the median divided by the registrations (2 x probes) and by K (one address
space's visit). No daemon, no MPI job: only the kernel's side. Idle machine or not, run it under
`flock -x /work/locks/heavy.lock` beside nothing else.

With --order, each count K is measured in each order given, with the K processes stopped before
their exec (forked, not yet the MPI program) and released together:
  after-map   (pdimond's order at 64 ranks): released, each reaches main with the library mapped,
              then probe-floor attaches to each in turn (every registration walks the K);
  before-map  probe-floor attaches to each of the K first (--object: no process maps the library,
              so a registration walks nobody), then they are released and map it: the kernel
              installs each one's breakpoints at its mmap (uprobe_mmap), from the links' filters.
and for each, how the links are closed (--detach): "alive", with the K processes still mapping
the library (each unregistration walks them and asks every remaining link's filter in each), or
"exited", once they are gone; and (--close) one link after the other, or all at once, one thread
each (close_together.h: their RCU grace periods overlap). Printed: the K attaches' sum and largest, the time from the release
to each process's main (its exec, ld.so's mapping of the library, its constructors: median and
largest), and the close of the 2 x K links.
"""
import argparse
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["PDIMON_BENCH_PRIVATE_MPI"] = "1"  # a library nobody else maps or probes
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402


def maps_library(pid, lib):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any(line.rstrip().endswith(lib) and " r-xp " in line for line in f)
    except OSError:
        return False


def measure(impl, k, timeout):
    """The attach times (ms) of K processes, each with K processes mapping the library."""
    exe = os.path.join(bl.BUILD, f"bench/startup.{impl}")
    lib = os.path.join(bl.PRIVATE_MPI, "libmpi.so.40" if impl == "openmpi" else "libmpich.so.12")
    go = tempfile.mktemp(prefix="pdimon-attach-scale-")
    env = dict(os.environ, PDI_STARTUP_WAIT=go)
    holders = [bl.spawn([exe], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(k)]
    try:
        bl.wait_for(lambda: all(maps_library(p.pid, lib) for p in holders), timeout, f"{k} processes to map {lib}")
        pf = subprocess.run([bl.PROBE_FLOOR, "--max-seconds", "1", "--pid"] + [str(p.pid) for p in holders],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        times = [float(m.group(2)) for m in re.finditer(r"pid \d+: (\d+) probes in .*, attached in ([0-9.]+) ms",
                                                        pf.stderr)]
        probes = [int(m.group(1)) for m in re.finditer(r"pid \d+: (\d+) probes in", pf.stderr)]
        if pf.returncode != 0 or len(times) != k:
            raise bl.BenchError(f"probe-floor failed ({pf.returncode}): {pf.stderr[-400:]}")
        return times, probes[0]
    finally:
        for p in holders:
            bl.kill_tree(p)


def stopped_before_exec(exe, env, stamp_fd):
    """A child that stops itself before it executes EXE, its stderr on STAMP_FD; its pid once stopped."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.dup2(stamp_fd, 2)
            os.kill(os.getpid(), signal.SIGSTOP)
            os.execve(exe, [exe], env)
        finally:
            os._exit(127)
    _, status = os.waitpid(pid, os.WUNTRACED)
    if not os.WIFSTOPPED(status):
        raise bl.BenchError(f"child {pid} did not stop before its exec (status {status})")
    return pid


def read_stamps(fd, pids, timeout):
    """CLOCK_MONOTONIC ns at which each of PIDS reached main ("main PID NS" lines on FD)."""
    stamps, buf, deadline = {}, b"", time.monotonic() + timeout
    while len(stamps) < len(pids):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise bl.BenchError(f"only {len(stamps)} of {len(pids)} processes reached main in {timeout} s")
        buf += os.read(fd, 65536)
        *lines, buf = buf.split(b"\n")
        for line in lines:
            m = re.match(rb"main (\d+) (\d+)$", line)
            if m:
                stamps[int(m.group(1))] = int(m.group(2))
    return stamps


def floor_start(args, timeout):
    """probe-floor ARGS, once it has attached everything (its stdin ends it)."""
    pf = subprocess.Popen([bl.PROBE_FLOOR, "--max-seconds", str(timeout)] + args, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = pf.stdout.readline()
    if not line.startswith("attached"):
        pf.kill()
        raise bl.BenchError(f"probe-floor failed: {line.strip()} {pf.communicate(timeout=timeout)[1][-400:]}")
    return pf


def floor_end(pf, k, timeout):
    """Ends probe-floor: its K attach times (ms) and the close of its links (ms)."""
    err = pf.communicate(input="", timeout=timeout)[1]
    times = [float(m.group(1)) for m in re.finditer(r"pid \d+: \d+ probes in .*, attached in ([0-9.]+) ms", err)]
    closed = re.search(r"(\d+) links closed in ([0-9.]+) ms", err)
    if pf.returncode != 0 or len(times) != k or not closed:
        raise bl.BenchError(f"probe-floor failed ({pf.returncode}): {err[-400:]}")
    return times, float(closed.group(2))


def measure_order(impl, k, order, detach, close, timeout):
    """K processes stopped before their exec; probes attached before or after they map the library,
    closed while they live or after. Returns (attach times ms, ms from release to main, close ms)."""
    exe = os.path.join(bl.BUILD, f"bench/startup.{impl}")
    lib = os.path.join(bl.PRIVATE_MPI, "libmpi.so.40" if impl == "openmpi" else "libmpich.so.12")
    go = tempfile.mktemp(prefix="pdimon-attach-scale-")
    env = dict(os.environ, PDI_STARTUP_WAIT=go, PDI_STARTUP_STAMP="1")
    r, w = os.pipe()
    pids, pf = [], None
    close_args = ["--close-together"] if close == "together" else []
    try:
        for _ in range(k):
            pids.append(stopped_before_exec(exe, env, w))
        if order == "before-map":
            pf = floor_start(close_args + ["--object", lib, "--pid"] + [str(p) for p in pids], timeout)
        released = time.monotonic_ns()
        for p in pids:
            os.kill(p, signal.SIGCONT)
        stamps = read_stamps(r, pids, timeout)
        to_main = [(stamps[p] - released) / 1e6 for p in pids]
        if order == "after-map":
            pf = floor_start(close_args + ["--pid"] + [str(p) for p in pids], timeout)
        if detach == "exited":
            for p in pids:
                os.kill(p, signal.SIGKILL)
            for p in pids:
                os.waitpid(p, 0)
            pids = []
        times, closed = floor_end(pf, k, timeout)
        pf = None
        return times, to_main, closed
    finally:
        if pf:
            pf.kill()
            pf.wait()
        for p in pids:
            os.kill(p, signal.SIGKILL)
            os.waitpid(p, 0)
        os.close(r)
        os.close(w)


def main_order(a):
    print(f"{'impl':8s} {'K':>3s} {'order':>10s} {'detach':>6s} {'close':>8s} {'attach sum ms':>13s} {'max ms':>8s} "
          f"{'to main med ms':>14s} {'max ms':>8s} {'close ms':>9s}")
    for impl in a.impl.split(","):
        for k in (int(x) for x in a.mapped.split(",")):
            for order in a.order.split(","):
                for detach in a.detach.split(","):
                    for close in a.close.split(","):
                        times, to_main, closed = measure_order(impl, k, order, detach, close, a.timeout)
                        print(f"{impl:8s} {k:3d} {order:>10s} {detach:>6s} {close:>8s} {sum(times):13.1f} "
                              f"{max(times):8.2f} {statistics.median(to_main):14.1f} {max(to_main):8.1f} "
                              f"{closed:9.1f}", flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mapped", default="1,4,16,32,64")
    ap.add_argument("--impl", default="openmpi,mpich")
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--order", help="after-map,before-map: attach before or after the processes map the library")
    ap.add_argument("--detach", default="alive,exited", help="with --order: close the links while they live, or after")
    ap.add_argument("--close", default="one", help="with --order: one,together: one link after the other, or all at once")
    a = ap.parse_args()
    if a.order:
        return main_order(a)
    print(f"{'impl':8s} {'K':>3s} {'probes':>6s} {'attach med ms':>13s} {'max ms':>8s} {'us/registration':>15s} "
          f"{'us/visit':>8s} {'K attaches ms':>13s}")
    for impl in a.impl.split(","):
        for k in (int(x) for x in a.mapped.split(",")):
            times, n = measure(impl, k, a.timeout)
            med = statistics.median(times)
            print(f"{impl:8s} {k:3d} {n:6d} {med:13.2f} {max(times):8.2f} {med * 1e3 / (2 * n):15.2f} "
                  f"{med * 1e3 / (2 * n * k):8.3f} {sum(times):13.1f}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except bl.BenchError as e:
        print(f"attach_scale.py: {e}", file=sys.stderr)
        sys.exit(1)

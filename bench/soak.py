#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""soak.py -- thousands of steps through one pdimond: does it stay bounded? (issue 10 item 4)

Pushes STEPS steps through one private pdimond: every MPI_EVERY-th a short real MPI run
(`pdimon run -- mpirun -np 2 ring`), the others registrations of a real process through the
D-Bus API as slurmstepd makes them (RegisterTask, then EndStep: a step that ends, is
reported, stored and leaves memory). At each sample point, once the daemon is idle (no step
running, no job queued or running off the loop), it prints the daemon's resident memory,
open file descriptors, threads, steps in memory and database size (with its WAL).

  /usr/bin/python3 bench/soak.py                     # 2,000 steps: samples at 1, 500, 1000, 2000
  /usr/bin/python3 bench/soak.py --steps 300 --samples 100,300 --check 10    # what CI runs

--check PCT exits 1 when RSS grew more than PCT percent between the last two samples, when
fds other than the mapped objects' grew by more than a few between them, or the objects' fds,
threads or steps in memory went past their bounds (the object cache opens the libraries the
runs' call sites fall in as it meets them, up to object_cache_max). SOAK_FDS=1 lists the fds
by kind. The end says what kept the loop busiest. Needs python3-dbus (the registrations go
through it). Not a timing: run it under the shared heavy lock.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

from benchlib import BUILD, BenchError, Daemon, kill_tree, spawn, wait_for

RING = os.path.join(BUILD, "tests/mpi/ring.openmpi")
CACHE_STEPS = 32                # pdimond.conf's default cache_steps
FD_SLACK = 4
OBJECT_CACHE_MAX = 256          # pdimond.conf's default object_cache_max
MAX_THREADS = 8 + 1 + 1 + 2     # workers, the store's lane, the loop, and a stack walk's or a
                                # MUNGE call's thread of its own


def proc_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["Threads"])


def db_bytes(path):
    return sum(os.path.getsize(path + sfx) for sfx in ("", "-wal", "-shm") if os.path.exists(path + sfx))


def idle(d):
    st = d.status()
    w = st.get("workers", {})
    # an ended step leaves memory once stored, announced and its hang record saved (the judge's
    # next tick, within a second): wait for the cache to be back within its bound too
    return st if (st["steps_running"] == 0 and not w.get("busy") and not w.get("queued") and not w.get("store_queued")
                  and st["steps"] <= CACHE_STEPS) else None


def sample(d, n, db):
    st = wait_for(lambda: idle(d), 120, f"pdimond to be idle after step {n}")
    pid = d.proc.pid
    rss, threads = proc_status(pid)
    fds = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    if os.environ.get("SOAK_FDS"):
        kinds = {}
        for target in fds.values():
            kind = target.split(":[")[0] if target.startswith(("anon_inode", "socket", "pipe")) else target
            kinds[kind] = kinds.get(kind, 0) + 1
        print(f"step {n}: fds by kind {sorted(kinds.items(), key=lambda kv: -kv[1])}", file=sys.stderr)
    # the ELF objects the monitored processes map, open in the object cache (bounded by its
    # object_cache_max; which ones depends on where the runs' call sites fell): apart
    objects = sum(1 for t in fds.values() if t.startswith("/") and not t.startswith(("/dev/", d.dir)))
    return {"step": n, "rss": rss, "fds": len(fds), "object_fds": objects, "threads": threads,
            "steps_in_memory": st["steps"], "db": db_bytes(db), "loop_max_ms": st.get("loop_max_wakeup_ms", 0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--mpi-every", type=int, default=10, help="one real MPI run every N steps")
    ap.add_argument("--samples", default=None, help="comma-separated step numbers (default 1,N/4,N/2,N)")
    ap.add_argument("--check", type=float, default=None, help="fail on more RSS growth (percent) between the last two samples")
    ap.add_argument("--retention-mib", type=int, default=16)
    a = ap.parse_args()
    n = a.steps
    points = sorted({int(x) for x in a.samples.split(",")} if a.samples else {1, n // 4, n // 2, n})
    import dbus  # python3-dbus: /usr/bin/python3 has it on Debian

    d = Daemon(f"retention_mib={a.retention_mib}")
    sleeper = spawn(["sleep", "100000"])
    rows, t0, i = [], time.monotonic(), 0
    try:
        db = os.path.join(d.dir, "pdimon.db")
        bus = dbus.bus.BusConnection(d.env["DBUS_SYSTEM_BUS_ADDRESS"])
        m = dbus.Interface(bus.get_object("org.pdimon.Monitor1", "/org/pdimon/Monitor1"), "org.pdimon.Monitor1")
        job0 = 100000 + (os.getpid() % 1000) * 10000
        for i in range(1, n + 1):
            if i % a.mpi_every == 0:
                r = subprocess.run(d.pdimon_args("run", "--step", f"soak-{i}", "--", "mpirun.openmpi",
                                                 "--allow-run-as-root", "--oversubscribe", "-np", "2", RING, "20"),
                                   capture_output=True, text=True, timeout=300, env=d.env)
                if r.returncode != 0:
                    raise BenchError(f"step {i}: pdimon run failed: {r.stderr}")
            else:
                u = dbus.UInt32
                m.RegisterTask(u(job0 + i), u(0), u(0), u(sleeper.pid), u(0), "", timeout=60)
                m.EndStep(u(job0 + i), u(0), timeout=60)
            if i in points:
                rows.append(sample(d, i, db))
                r = rows[-1]
                print(f"step {i:5d}: RSS {r['rss'] / 2**20:7.1f} MiB  fds {r['fds']:3d} ({r['object_fds']:3d} objects)  "
                      f"threads {r['threads']:2d}  "
                      f"steps in memory {r['steps_in_memory']:3d}  database {r['db'] / 2**20:6.1f} MiB  "
                      f"({time.monotonic() - t0:.0f} s)", flush=True)
        bus.close()
    except BaseException:
        print(f"soak: failed at step {i}; pdimond's log ends:\n" + "\n".join(d.read_log().splitlines()[-40:]),
              file=sys.stderr)
        raise
    finally:
        kill_tree(sleeper)
        slow = [x for x in d.read_log().splitlines() if "The loop was busy for" in x]
        rc = d.stop()
    a_, b_ = rows[-2], rows[-1]
    growth = 100.0 * (b_["rss"] - a_["rss"]) / a_["rss"]
    print(f"soak: {n} steps ({n // a.mpi_every} MPI runs), RSS growth from step {a_['step']} to {b_['step']}: "
          f"{growth:+.1f}%; fds {a_['fds']} -> {b_['fds']} (other than objects {a_['fds'] - a_['object_fds']} -> "
          f"{b_['fds'] - b_['object_fds']}), threads {a_['threads']} -> {b_['threads']}, "
          f"steps in memory {a_['steps_in_memory']} -> {b_['steps_in_memory']}, database "
          f"{a_['db'] / 2**20:.1f} -> {b_['db'] / 2**20:.1f} MiB (retention_mib={a.retention_mib}); "
          f"longest loop wake-up {b_['loop_max_ms']:.1f} ms; pdimond exit {rc}")
    # what kept the loop busy (pdimond.c: a line per wake-up of 250 ms or more, rate-limited;
    # the limiter's summary line carries the format, not a figure)
    slow = [(int(m.group(1)), x) for x in slow for m in [re.search(r"busy for (\d+) ms", x)] if m]
    if slow:
        print(f"soak: {len(slow)} slow loop wake-up line(s), the longest: {max(slow)[1]}")
    print(json.dumps(rows))
    if a.check is not None:
        # workers are made as work comes, up to their bound: threads may grow to it, not past
        bad = [w for w, ok in ((f"RSS grew more than {a.check}%", growth <= a.check),
                               # SQLite keeps a closed connection's descriptor while the process holds a
                               # lock on the file, and reuses it: a few may come and go
                               (f"fds other than objects grew by more than {FD_SLACK}",
                                b_["fds"] - b_["object_fds"] <= a_["fds"] - a_["object_fds"] + FD_SLACK),
                               (f"object fds past the object cache's {OBJECT_CACHE_MAX}", b_["object_fds"] <= OBJECT_CACHE_MAX),
                               (f"threads past {MAX_THREADS}", b_["threads"] <= MAX_THREADS),
                               (f"steps in memory past the cache's {CACHE_STEPS}", b_["steps_in_memory"] <= CACHE_STEPS),
                               ("pdimond did not exit cleanly", rc == 0)) if not ok]
        if bad:
            print(f"soak: FAILED: {'; '.join(bad)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

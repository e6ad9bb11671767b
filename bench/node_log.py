# SPDX-License-Identifier: GPL-2.0-only
"""node_log.py -- the node's runnable tasks beside a job's ranks, sampled through a run (apps.py).

Why: when every rank of a step loses CPU alike, the step's own counts cannot tell a process in
the job's scheduling group that took the job's time (a hog of the job's session) from a node that
got busier for every session (issue 9, interf15). The node's count of runnable tasks can: a hog
adds one, a busier node adds as many as it got busier by. Measured here before pdimond reads it.

Every PERIOD_S: CLOCK_MONOTONIC, the node's runnable tasks (/proc/loadavg's fourth field, the
kernel's nr_running(); this reader is one of them), and each rank's main thread's time on a CPU
and waiting for one (/proc/PID/schedstat), one line per sample in FILE:
    t_ns nr_running rank:cpu_ns:wait_ns ...
The ranks are found by their marker once all are up (apps.rank_pids()).
"""
import os
import threading
import time

PERIOD_S = 0.05  # pdimond's usage timer's default period (usage_interval_ms)


def nr_running():
    with open("/proc/loadavg") as f:
        return int(f.read().split()[3].split("/")[0])


def schedstat(pid):
    """(cpu_ns, wait_ns) of PID's main thread, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            run, wait = f.read().split()[:2]
        return int(run), int(wait)
    except (OSError, ValueError):
        return None


class NodeLog(threading.Thread):
    """Samples into PATH until stop(); FIND_RANKS() gives {rank: pid} or fewer while the job starts."""

    def __init__(self, path, find_ranks, nranks):
        super().__init__(daemon=True)
        self.path, self.find_ranks, self.nranks = path, find_ranks, nranks
        self.stop_flag = threading.Event()

    def run(self):
        pids = {}
        with open(self.path, "w") as out:
            while not pids and not self.stop_flag.wait(0.5):
                found = self.find_ranks()
                pids = found if len(found) == self.nranks else {}
            while not self.stop_flag.is_set():
                t = time.monotonic_ns()
                n = nr_running()
                ranks = {r: schedstat(p) for r, p in sorted(pids.items())}
                out.write(f"{t} {n} " + " ".join(f"{r}:{s[0]}:{s[1]}" for r, s in ranks.items() if s) + "\n")
                if not any(ranks.values()):
                    return
                self.stop_flag.wait(PERIOD_S)

    def stop(self):
        self.stop_flag.set()
        self.join(timeout=10)


def read(path):
    """[(t_ns, nr_running, {rank: (cpu_ns, wait_ns)})] from a node log, oldest first; [] if none."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) < 2:
                    continue
                ranks = {int(r): (int(c), int(x)) for r, c, x in (s.split(":") for s in w[2:])}
                out.append((int(w[0]), int(w[1]), ranks))
    except (OSError, ValueError):
        return []
    return out


def window(samples, a_ns, b_ns):
    """Over [A_NS, B_NS): (the job's CPU, in CPUs; the tasks runnable beside the job's ranks, on
    average), or None with fewer than two samples there. Beside: the node's runnable tasks less
    the ranks' runnable time (cpu + wait over the window) less this reader itself."""
    s = [x for x in samples if a_ns <= x[0] < b_ns]
    if len(s) < 2:
        return None
    first, last = s[0], s[-1]
    span = last[0] - first[0]
    ranks = set(first[2]) & set(last[2])
    if span <= 0 or not ranks:
        return None
    cpu = sum(last[2][r][0] - first[2][r][0] for r in ranks) / span
    ready = sum(last[2][r][0] + last[2][r][1] - first[2][r][0] - first[2][r][1] for r in ranks) / span
    running = sum(x[1] for x in s) / len(s)
    return cpu, running - ready - 1

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# test_gather.py -- the tree gather across gather nodes on loopback, with a private munged.
#
# Usage: test_gather.py PATH/TO/gather-node
#
# Each node is a gather-node process (the real daemon/cluster/peer.c and daemon/cluster/gather.c) on its
# own 127.0.X.N address, all on one port; node names are the addresses. Checks: a full
# gather; a node killed mid-gather; a node that accepts and never answers; a slow node;
# garbage, a truncated frame, a bad version, a huge length and a slow sender to a node;
# a flood of connections from one address; a credential of a non-service uid; a caller
# who may not read the step. Every wait is bounded; every process started is killed.
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))
import harness  # noqa: E402

NODE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
LEVEL_MS = 1000
TASKS = 64
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


class Cluster:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="pdimon-gather-")
        os.chmod(self.dir, 0o755)  # the non-service-uid case talks to munged as nobody
        self.port = random.randint(20000, 40000)
        self.net = "127.0.%d." % random.randint(10, 250)
        self.procs = {}   # address -> Popen
        self.munged = None
        self.sock = None

    def addr(self, i):
        return self.net + str(i + 1)

    def start_munge(self):
        self.munged = harness.Munged(self.dir)
        self.sock = self.munged.socket

    def log(self, i):
        return os.path.join(self.dir, "node%d.log" % i)

    def start(self, i, *extra):
        a = self.addr(i)
        p = subprocess.Popen([NODE, "serve", "--name", a, "--port", str(self.port), "--munge", self.sock,
                              "--rank0", str(i * TASKS), "--tasks", str(TASKS), "--timeout", str(LEVEL_MS)]
                             + list(extra), stdout=subprocess.PIPE, stderr=open(self.log(i), "ab"))
        ready, _, _ = select.select([p.stdout], [], [], 10)
        if not ready or not p.stdout.read(1) == b"\0":
            p.kill()
            raise RuntimeError("node %s did not start: %s" % (a, open(self.log(i)).read()[-500:]))
        self.procs[a] = p
        return p

    def stop(self, i):
        p = self.procs.pop(self.addr(i), None)
        if p:
            p.kill()
            p.wait(timeout=10)

    def root(self, nodes, *extra, timeout=30):
        """Run one gather from node 0 (this process's child); its parsed output."""
        cmd = [NODE, "root", "--name", self.addr(0), "--port", str(self.port), "--munge", self.sock,
               "--timeout", str(LEVEL_MS), "--nodes", ",".join(nodes)] + list(extra)
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return parse(r.stdout, time.monotonic() - t0, r.stderr)

    def close(self):
        """SIGTERM the nodes (a clean exit, so that sanitizers report), SIGKILL what lingers."""
        for p in self.procs.values():
            p.terminate()
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
            check(p.returncode == 0, "node exited cleanly (%s)" % p.returncode)
        if self.munged:
            self.munged.stop()
        self.procs = {}
        logs = "".join(open(os.path.join(self.dir, f), errors="replace").read()
                       for f in os.listdir(self.dir) if f.startswith("node"))
        check(not re.search(r"(AddressSanitizer|LeakSanitizer|runtime error:)", logs), "no sanitizer report")
        shutil.rmtree(self.dir, ignore_errors=True)


def parse(out, wall, err=""):
    res = {"wall": wall, "miss": {}, "raw": out + err}
    for line in out.splitlines():
        if line.startswith("result "):
            for kv in line.split()[1:]:
                k, v = kv.split("=")
                res[k] = float(v) if k == "ms" else int(v)
        elif line.startswith("missing "):
            name, why = line[len("missing "):].split(": ", 1)
            res["miss"][name] = why
        elif line.startswith("error: "):
            res["error"] = line[len("error: "):]
    return res


def full(c, nodes, res, what):
    ok = res.get("answered") == len(nodes) and res.get("miss") == {} and \
        res.get("ranks") == len(nodes) * TASKS and res.get("dup") == 0 and res.get("bad_model") == 0
    check(ok, "%s: %d nodes answered, %d ranks, no duplicate (%s ms)" %
          (what, res.get("answered", -1), res.get("ranks", -1), res.get("ms")))
    if not ok:
        print(res["raw"])


def closed_by_peer(s, within):
    """Whether the node closes S within WITHIN seconds."""
    s.settimeout(within)
    try:
        while True:
            if s.recv(4096) == b"":
                return True
    except ConnectionResetError:
        return True
    except (socket.timeout, OSError):
        return False


def send_bad(c, i, data, hold=False, to=None):
    s = socket.create_connection(to or (c.addr(i), c.port), timeout=5)
    s.sendall(data)
    if not hold:
        s.shutdown(socket.SHUT_WR)
    ok = closed_by_peer(s, 3 * LEVEL_MS / 1000)
    s.close()
    return ok


def header(version=1, type_=1, cred_len=0, body_len=0):
    return struct.pack("<IBBHII", 0x4d494450, version, type_, 0, cred_len, body_len)


def pdimond_case(c, nodes):
    """The real pdimond as one node of the tree (PDIMON_BUILD/daemon/pdimond, on a private
    bus): it answers, survives garbage, and says so in its log."""
    build = os.environ.get("PDIMON_BUILD")
    if not build or not os.path.exists(os.path.join(build, "daemon/pdimond")) or not shutil.which("dbus-daemon"):
        print("skip pdimond as a node: no PDIMON_BUILD/daemon/pdimond or dbus-daemon")
        return
    me = c.addr(60)
    d = harness.Daemon("peer_port=%d" % c.port, "peer_address=" + me, "node_name=" + me,
                       "munge_socket=" + c.sock, "gather_timeout_ms=%d" % LEVEL_MS)
    try:
        check(send_bad(None, None, b"\0" * 64, to=(me, c.port)), "pdimond closes a garbage connection")
        res = c.root(nodes + [me])
        miss = res["miss"]
        # until the analysis plugs its payload in (gather_step.c), pdimond answers "not here"
        ok = res.get("answered", 0) + len(miss) == len(nodes) + 1 and set(miss) <= {me} and \
            all("deadline" not in w and "connection" not in w for w in miss.values())
        check(ok, "pdimond answered its part of the gather: %s" % (miss or "contributed"))
        log = d.read_log()
        check("Listening for peers on " + me in log, "pdimond listens on its peer port")
        check("garbage or a malformed frame" in log, "pdimond logged the garbage")
    finally:
        d.stop()


def main():
    if not NODE or not os.access(NODE, os.X_OK):
        print("usage: test_gather.py PATH/TO/gather-node")
        return 2
    for tool in ("munged", "mungekey", "munge", "unmunge"):
        if not shutil.which(tool):
            print("SKIP: %s not installed" % tool)
            return 77
    c = Cluster()
    try:
        c.start_munge()
        for i in range(1, 8):
            c.start(i)
        nodes = [c.addr(i) for i in range(8)]

        full(c, nodes, c.root(nodes), "full gather, fan-out 32")
        full(c, nodes, c.root(nodes, "--fanout", "2"), "full gather, fan-out 2 (3 levels)")

        # a node killed mid-gather: with fan-out 2, node 2 has children 5 and 6
        c.stop(2)
        c.start(2, "--delay-ms", "5000")
        root = subprocess.Popen([NODE, "root", "--name", c.addr(0), "--port", str(c.port), "--munge", c.sock,
                                 "--timeout", str(LEVEL_MS), "--fanout", "2", "--nodes", ",".join(nodes)],
                                stdout=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        time.sleep(0.5)
        c.stop(2)
        out, _ = root.communicate(timeout=30)
        res = parse(out, time.monotonic() - t0)
        miss = res["miss"]
        check(res.get("answered") == 5 and set(miss) == {c.addr(2), c.addr(5), c.addr(6)},
              "killed node: 5 answered, missing %s" % sorted(miss))
        check("closed" in miss.get(c.addr(2), "") or "reset" in miss.get(c.addr(2), ""),
              "killed node: reason '%s'" % miss.get(c.addr(2)))
        check("not reached" in miss.get(c.addr(5), ""), "its children: '%s'" % miss.get(c.addr(5)))
        check(res["wall"] < 3 * LEVEL_MS / 1000, "killed node: the gather returned in %.2f s (deadline %.1f s)"
              % (res["wall"], 3 * LEVEL_MS / 1000))
        c.start(2)

        # a node that accepts and never answers, and a slow one: both missing, in time
        mute = socket.socket()
        mute.bind((c.addr(8), c.port))
        mute.listen(16)
        c.start(9, "--delay-ms", str(3 * LEVEL_MS))
        res = c.root(nodes + [c.addr(8), c.addr(9)])
        miss = res["miss"]
        check(res.get("answered") == 8 and set(miss) == {c.addr(8), c.addr(9)},
              "mute and slow nodes missing: %s" % miss)
        check(res["ms"] <= LEVEL_MS * 1.2, "mute and slow nodes: returned in %.0f ms (deadline %d)"
              % (res["ms"], LEVEL_MS))
        mute.close()
        c.stop(9)

        # munged stopped for longer than a MUNGE call's bound (1 s) while the root signs its
        # requests: the root gives munged the time its gather has left, so that a munged slowed
        # by a busy node costs time, not the gather (a call that timed out at the bound would mark
        # munged down and fail every child at once)
        c.munged.proc.send_signal(signal.SIGSTOP)
        try:
            root = subprocess.Popen([NODE, "root", "--name", c.addr(0), "--port", str(c.port), "--munge", c.sock,
                                     "--timeout", str(8 * LEVEL_MS), "--nodes", ",".join(nodes)],
                                    stdout=subprocess.PIPE, text=True)
            t0 = time.monotonic()
            time.sleep(1.5 * LEVEL_MS / 1000)  # the fault: munged not answering for 1.5 s
        finally:
            c.munged.proc.send_signal(signal.SIGCONT)
        out, _ = root.communicate(timeout=30)
        res = parse(out, time.monotonic() - t0)
        check(res.get("answered") == 8, "munged stopped 1.5 s during the signing: %s answered, missing %s"
              % (res.get("answered"), res.get("miss")))

        # bad input to node 3: closed with a log line each, then it serves the next gather
        bad = {"garbage": b"GET / HTTP/1.0\r\n\r\n" * 8,
               "truncated": header(cred_len=10, body_len=100) + b"x" * 20,
               "version": header(version=9, cred_len=4, body_len=4) + b"abcdefgh",
               "huge": header(cred_len=10, body_len=0xffffffff) + b"x" * 10}
        for name, data in bad.items():
            check(send_bad(c, 3, data), "bad input '%s': connection closed" % name)
        check(send_bad(c, 3, header(cred_len=10, body_len=100), hold=True),
              "slow sender: closed after the frame deadline")
        log = open(c.log(3)).read()
        for reason in ("garbage or a malformed frame", "truncated frame", "unknown protocol version",
                       "frame longer than the limit", "no complete request within"):
            check(reason in log, "node 3 logged '%s'" % reason)
        full(c, nodes, c.root(nodes), "after bad input")

        # a flood of connections from one address to node 1
        flood = []
        for _ in range(200):
            s = socket.socket()
            s.bind((c.addr(200), 0))
            s.setblocking(False)
            s.connect_ex((c.addr(1), c.port))
            flood.append(s)
        time.sleep(0.5)
        refused = 0
        for s in flood:
            try:
                refused += s.recv(1) == b""
            except BlockingIOError:
                pass
            except ConnectionResetError:
                refused += 1
        check(refused >= 190, "flood: %d of 200 connections from one address refused" % refused)
        full(c, nodes, c.root(nodes), "during the flood")
        for s in flood:
            s.close()
        check("too many connections from this address" in open(c.log(1)).read(), "node 1 logged the flood")

        # a credential of a non-service uid: refused by every child, which signs no answer
        # for it (its job, step and nonce would make a genuine answer to someone else)
        res = c.root(nodes, "--as-uid", "65534", "--service-uid", "0")
        miss = res["miss"]
        check(res.get("answered") == 1 and len(miss) == 7 and
              all("closed before it answered" in w for w in miss.values()),
              "non-service uid refused by all 7, unanswered: %s" % list(miss.values())[:1])
        check("credential of uid 65534, not of the service uid 0" in open(c.log(1)).read(),
              "node 1 logged the refusal")
        full(c, nodes, c.root(nodes), "after the refusals")

        pdimond_case(c, nodes)

        # a caller who may not read the step: refused at the root, nobody else bothered
        res = c.root(nodes, "--uid", "1234")
        check(res.get("error") == "Permission denied", "uid 1234 may not read the step: %s" % res.get("error"))
        res = c.root(nodes, "--uid", "1000")
        check(res.get("answered") == 8, "its owner may")
        res = c.root(nodes + [c.addr(3)])
        check(res.get("error") == "Invalid argument", "a node listed twice is refused: %s" % res.get("error"))
    finally:
        c.close()
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

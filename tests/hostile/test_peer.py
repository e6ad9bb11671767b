#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_peer.py -- hostile users and peers against a real pdimond's peer port (issue 14,
finding 9), with a real munged: an unprivileged user's genuine credentials (valid an hour,
many of them, for a job, step and nonce of their choosing), forged ones, huge frames
announced before anything is authenticated, a flood of bad frames, and munged stopped.
After each attack a gather made by the service (root, as the other pdimonds) must still be
answered. Root only. Run one case as: test_peer.py Peer.test_signing_oracle
"""
import hashlib
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
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))
from harness import BUILD, Daemon, Munged, wait_for  # noqa: E402

GATHER_NODE = os.path.join(BUILD, "tests/gather/gather-node")
NOBODY = 65534
LEVEL_MS = 3000     # a peer connection's deadline too: the buffering attack fits in it
MUNGE_MS = 500      # pdimond's bound on one MUNGE call
REPLAY = 64         # pdimond's replay cache: small, so that filling it is quick to try
MAGIC = 0x4d494450


def put_str(s):
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def claim(op, job, step, nonce, sender, body):
    """A credential payload as peer_auth.c writes it."""
    return (bytes([1]) + put_str(op) + struct.pack("<IIQ", job, step, nonce) + put_str(sender)
            + struct.pack("<I", 32) + hashlib.sha256(body).digest())


def request(job, step, nodes, nonce):
    """A GATHER request body as gather.c writes it."""
    return (struct.pack("<II", job, step) + put_str(f"{job}.{step}")
            + struct.pack("<IQIIII", 0, nonce, 32, 1000, LEVEL_MS, len(nodes))
            + b"".join(put_str(n) for n in nodes))


def frame(cred, body, type_=1):
    return struct.pack("<IBBHII", MAGIC, 1, type_, 0, len(cred), len(body)) + cred + body


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


class Peer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="pdimon-hostile-peer-")
        os.chmod(cls.dir, 0o755)  # nobody makes credentials through munged's socket here
        cls.munged = Munged(cls.dir)
        net = "127.0.%d." % random.randint(10, 250)
        cls.root_addr, cls.pd_addr, cls.evil = net + "1", net + "2", net + "200"
        cls.port = random.randint(20000, 40000)
        cls.d = Daemon("peer_port=%d" % cls.port, "peer_address=" + cls.pd_addr, "node_name=" + cls.pd_addr,
                       "munge_socket=" + cls.munged.socket, "gather_timeout_ms=%d" % LEVEL_MS,
                       "peer_replay_entries=%d" % REPLAY, "munge_timeout_ms=%d" % MUNGE_MS)
        wait_for(lambda: "Listening for peers on " + cls.pd_addr in cls.d.read_log(), 30, "the peer port")

    @classmethod
    def tearDownClass(cls):
        try:
            cls.d.stop()
        finally:
            cls.munged.stop()
            shutil.rmtree(cls.dir, ignore_errors=True)

    # ---- tools ----

    def munge(self, payload, ttl, uid=None):
        """A genuine credential for PAYLOAD, made by UID (None: root) through our munged."""
        cmd = ["munge", "-S", self.munged.socket, "-t", str(ttl)]
        if uid is not None:
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]
        return subprocess.run(cmd, input=payload, capture_output=True, timeout=20, check=True).stdout.strip()

    def attack_frame(self, uid=NOBODY, ttl=3600, job=4242, step=7, nonce=None):
        body = request(job, step, [self.pd_addr], 1)
        nonce = random.getrandbits(64) if nonce is None else nonce
        return frame(self.munge(claim("gather", job, step, nonce, "evil", body), ttl, uid), body)

    def send(self, data, src=None, wait=10.0):
        """DATA to pdimond's peer port on a fresh connection; what came back before it closed."""
        s = socket.create_connection((self.pd_addr, self.port), timeout=5, source_address=(src or self.evil, 0))
        got = b""
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                s.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = s.recv(65536)
                if not chunk:
                    return got
                got += chunk
            raise AssertionError(f"pdimond kept the connection open for {wait} s")
        except ConnectionResetError:
            return got
        finally:
            s.close()

    def gather(self):
        """The service's own gather over [root, pdimond]: pdimond's missing reason, or None."""
        r = subprocess.run([GATHER_NODE, "root", "--name", self.root_addr, "--port", str(self.port),
                            "--munge", self.munged.socket, "--timeout", str(LEVEL_MS),
                            "--nodes", f"{self.root_addr},{self.pd_addr}"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("result ", r.stdout, r.stdout + r.stderr)
        m = re.search(r"^missing %s: (.*)$" % re.escape(self.pd_addr), r.stdout, re.M)
        return m.group(1) if m else None

    def assert_served(self, what):
        """pdimond answers the service's gather (it has no such step: that is its answer)."""
        why = self.gather()
        self.assertIn(why, (None, "no such step on this node"), f"after {what}, pdimond did not serve: {why}")
        self.d.pdimon("status")

    # ---- the attacks ----

    def test_foreign_credentials_do_not_fill_the_replay_cache(self):
        """Any user's `munge -t 3600` credentials must not fill the replay cache."""
        for _ in range(REPLAY + 16):
            self.send(self.attack_frame())
        self.assert_served(f"{REPLAY + 16} of nobody's credentials")
        log = self.d.read_log()
        self.assertIn("credential of uid 65534, not of the service uid 0", log)
        self.assertNotIn("replay cache full", log)
        # and the service uid's own, valid an hour: refused on its TTL, not kept for an hour
        # (from another address: this one's refusals are past their rate limit by now)
        other = self.evil.rsplit(".", 1)[0] + ".201"
        self.assertEqual(self.send(self.attack_frame(uid=None), src=other), b"")
        wait_for(lambda: "over the cap of" in self.d.read_log(), 10, "the TTL refusal in the log")

    def test_signing_oracle(self):
        """Nothing an unauthenticated peer chose comes back signed by the service."""
        chosen = 0x1122334455667788
        replies = {
            "nobody's genuine credential": self.send(self.attack_frame(ttl=60, nonce=chosen)),
            "a forged credential": self.send(frame(b"MUNGE:bm90IGEgY3JlZGVudGlhbA==:", request(4242, 7, [], chosen))),
            "a RESULT frame": self.send(frame(self.munge(claim("result", 4242, 7, chosen, "evil", b""), 60, NOBODY),
                                              b"", type_=2)),
        }
        for what, reply in replies.items():
            signed = ""
            if len(reply) >= 16:
                cred_len = struct.unpack_from("<I", reply, 8)[0]
                r = subprocess.run(["unmunge", "-S", self.munged.socket], input=reply[16:16 + cred_len],
                                   capture_output=True, timeout=20)
                signed = r.stdout.decode(errors="replace") if r.returncode == 0 else ""
            self.assertEqual(reply, b"", f"{what}: pdimond answered {len(reply)} bytes; signed: {signed[:200]!r}")
        self.assert_served("unauthenticated requests")

    def test_preauth_buffers_are_bounded(self):
        """8 connections from one address announcing 64 MiB each must not cost 512 MB."""
        base = rss_kib(self.d.proc.pid)
        conns, sent = self.hold(8, (64 << 20) - 1, self.evil)
        peak = rss_kib(self.d.proc.pid)
        for s in conns:
            s.close()
        print(f"8 connections announcing 64 MiB, {sent >> 20} MiB sent: pdimond RSS {base >> 10} -> "
              f"{peak >> 10} MiB", flush=True)
        self.assertLess(peak - base, 40 << 10, "pre-authentication buffers grew pdimond by %d MiB"
                        % ((peak - base) >> 10))
        # requests within the size limit: two per address, and a cap over all addresses
        conns, _ = self.hold(8, 3 << 20, self.evil)
        open_from_one = sum(self.still_open(s) for s in conns)
        for s in conns:
            s.close()
        self.assertLessEqual(open_from_one, 2, "one address holds %d announced 3 MiB requests" % open_from_one)
        net = self.evil.rsplit(".", 1)[0]
        conns = []
        for i in range(6):
            conns += self.hold(2, 3 << 20, f"{net}.{210 + i}")[0]
        open_all = sum(self.still_open(s) for s in conns)
        for s in conns:
            s.close()
        self.assertLessEqual(open_all * 3, 32, "all addresses hold %d announced 3 MiB requests" % open_all)
        wait_for(lambda: "unauthenticated bytes" in self.d.read_log(), 10, "the refusals in the log")
        self.assert_served("the buffering attack")

    def hold(self, n, body_len, src):
        """N connections from SRC, each announcing BODY_LEN and sending all of it but a byte
        (bounded: a refused connection is left as it is). The sockets, and the bytes sent."""
        conns = []
        for _ in range(n):
            s = socket.create_connection((self.pd_addr, self.port), timeout=5, source_address=(src, 0))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
            s.setblocking(False)
            conns.append([s, struct.pack("<IBBHII", MAGIC, 1, 1, 0, 16, body_len) + b"C" * 16, 16 + body_len - 1])
        chunk, sent = b"B" * (1 << 20), 0
        deadline = time.monotonic() + LEVEL_MS / 1000 * 0.6
        while time.monotonic() < deadline and any(c[2] > 0 for c in conns):
            live = [c for c in conns if c[2] > 0]
            _, writable, _ = select.select([], [c[0] for c in live], [], 0.2)
            for c in live:
                if c[0] not in writable:
                    continue
                data = c[1] or chunk[:min(len(chunk), c[2])]
                try:
                    k = c[0].send(data)
                except (BrokenPipeError, ConnectionResetError, BlockingIOError):
                    c[2] = 0  # refused: nothing more goes there
                    continue
                c[1] = c[1][k:] if c[1] else b""
                c[2] -= k
                sent += k
        return [c[0] for c in conns], sent

    @staticmethod
    def still_open(s):
        """Whether pdimond still holds S open (it closes refused connections at once)."""
        try:
            return s.recv(1) != b""
        except BlockingIOError:
            return True
        except (ConnectionResetError, OSError):
            return False

    def test_refusals_are_rate_limited(self):
        """300 bad frames from one address: a few log lines, not 300."""
        before = self.d.read_log().count("refused")
        bad = frame(b"MUNGE:bm90IGEgY3JlZGVudGlhbA==:", request(4242, 7, [], 1))
        for _ in range(300):
            self.send(bad)
        lines = self.d.read_log().count("refused") - before
        print(f"300 refused frames from one address: {lines} log lines", flush=True)
        self.assertLessEqual(lines, 10, "refusals logged without a rate limit")
        self.assert_served("a flood of bad frames")

    def test_stopped_munged(self):
        """munged stopped: each frame costs pdimond at most its MUNGE bound, not seconds."""
        frames = [self.attack_frame(ttl=60) for _ in range(5)]
        costs = []
        self.munged.proc.send_signal(signal.SIGSTOP)
        try:
            for f in frames:
                t0 = time.monotonic()
                self.send(f, wait=60)
                costs.append(time.monotonic() - t0)
        finally:
            self.munged.proc.send_signal(signal.SIGCONT)
        print("munged stopped: 5 frames took " + ", ".join("%.2f s" % c for c in costs), flush=True)
        self.assertLess(max(costs), MUNGE_MS / 1000 + 1.5, "one frame held pdimond %.1f s" % max(costs))
        self.assertLess(sum(costs), 4.0, "5 frames held pdimond %.1f s" % sum(costs))
        wait_for(lambda: self.gather() in (None, "no such step on this node"), 20,
                 "pdimond to serve gathers again once munged runs")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("SKIP: root only (munged, setpriv, pdimond)")
        sys.exit(77)
    for tool in ("munged", "mungekey", "munge", "unmunge", "setpriv"):
        if not shutil.which(tool):
            print(f"SKIP: {tool} not installed")
            sys.exit(77)
    unittest.main(verbosity=2)

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""test_bus.py -- what an unprivileged user can hear of other users' steps on pdimond's bus
(issue 14, finding 11): a real subscriber of another uid on the private system bus must not
learn the name of root's step from the StepEnded signal, while it hears its own steps, and
root (an admin) hears both. Root only. Run one case as: test_bus.py Bus.test_step_ended_is_not_broadcast
"""
import os
import shutil
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../integration"))
from harness import BUILD, DaemonTest, wait_for  # noqa: E402

LISTEN = os.path.join(BUILD, "tests/hostile/bus-listen")
NOBODY = 65534


class Listener:
    """bus-listen as UID (None: root), its output collected by a thread as it comes."""

    def __init__(self, env, uid=None):
        cmd = [LISTEN, "120"]
        if uid is not None:
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd]
        self.lines = []
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, env=env)
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.p.stdout), daemon=True)
        self.reader.start()
        wait_for(lambda: "ready" in self.read() or self.p.poll() is not None, 30, "the listener to be ready")
        if "ready" not in self.read():
            raise AssertionError(f"bus-listen exited: {self.read()}")

    def read(self):
        return "".join(list(self.lines))

    @property
    def out(self):
        return self.read()

    def stop(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)
        self.reader.join(timeout=30)


class Bus(DaemonTest):
    def busctl(self, *args):
        r = subprocess.run(["busctl", "--system", "call", "org.pdimon.Monitor1", "/org/pdimon/Monitor1",
                            "org.pdimon.Monitor1", *map(str, args)], capture_output=True, text=True,
                           env=self.d.env, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)

    def nobodys_step(self, job):
        """A step of uid 65534, as slurmstepd registers one, ended as srun's end would."""
        p = subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sleep", "60"])
        try:
            self.busctl("RegisterTask", "uuuuus", job, 0, 0, p.pid, NOBODY, "")
            self.busctl("EndStep", "uu", job, 0)
        finally:
            p.kill()
            p.wait()
        return f"{job}.0"

    def test_step_ended_is_not_broadcast(self):
        nobody = Listener(self.d.env, NOBODY)
        root = Listener(self.d.env)
        try:
            r = self.d.pdimon("run", "--step", "secret-root-step", "--", "true", check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            mine = self.nobodys_step(777)
            # pdimond sends in order: once nobody heard of its own step, root's is past
            wait_for(lambda: f"StepEnded {mine} " in nobody.read(), 30, "nobody to hear of its own step")
            wait_for(lambda: f"StepEnded {mine} " in root.read() and "secret-root-step" in root.read(), 30,
                     "root to hear of both steps")
        finally:
            nobody.stop()
            root.stop()
        print("nobody heard: " + " | ".join(nobody.out.splitlines()), flush=True)
        self.assertNotIn("secret-root-step", nobody.out, "an unprivileged subscriber heard of root's step")

    def test_subscriptions_are_bounded(self):
        many = [Listener(self.d.env, NOBODY) for _ in range(9)]
        try:
            said = [x.out.splitlines()[0] for x in many]
        finally:
            for x in many:
                x.stop()
        self.assertEqual(said[:8], ["subscribed"] * 8)
        self.assertIn("Too many subscriptions", said[8])
        # the ones that left are forgotten as pdimond sees them leave the bus: room again

        def room():
            x = Listener(self.d.env, NOBODY)
            x.stop()
            return x.out.splitlines()[0] == "subscribed"
        wait_for(room, 30, "pdimond to forget the subscribers that left")


if __name__ == "__main__":
    if os.geteuid() != 0 or not shutil.which("dbus-daemon"):
        print("SKIP: root and dbus-daemon only")
        sys.exit(77)
    unittest.main(verbosity=2)

# SPDX-License-Identifier: GPL-2.0-only
"""harness.py -- runs a real pdimond and real MPI jobs for the integration tests.

Every wait is on a condition with a deadline, never a bare sleep. Each test gets its own
daemon on its own private system bus, and the daemon must exit cleanly (status 0, no sanitizer
report) when the test ends.
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BUILD = os.environ.get("PDIMON_BUILD", os.path.join(os.path.dirname(__file__), "../../build"))
SRC = os.environ.get("PDIMON_SRC", os.path.join(os.path.dirname(__file__), "../.."))
PDIMOND = os.path.join(BUILD, "daemon/pdimond")
PDIMON = os.path.join(BUILD, "client/pdimon")
MPI_DIR = os.path.join(BUILD, "tests/mpi")
HANG_MS = 300


def wait_for(cond, timeout, what, longest_pause=0.2):
    """Poll COND until it returns something true; fail the test after TIMEOUT seconds. The
    pauses between looks double up to LONGEST_PAUSE seconds: a cheap COND (a file read, not
    a process started) may look more often, so that the test goes on soon after it holds."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, longest_pause)


def marker_line(source, marker):
    """The line of tests/mpi/SOURCE that carries the comment /* @MARKER */ (C) or ! @MARKER (Fortran)."""
    with open(os.path.join(SRC, "tests/mpi", source)) as f:
        for n, line in enumerate(f, 1):
            if f"/* @{marker} */" in line or re.search(rf"! @{marker}\b", line):
                return n
    raise KeyError(marker)


def _ancestors(pid):
    seen = []
    while pid > 1 and len(seen) < 64:
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        seen.append(pid)
    return seen


def find_ranks(prog, n, root, timeout=60):
    """The pids of the N descendants of ROOT running tests/mpi/PROG (e.g. "ring.mpich")."""
    def scan():
        pids = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.path.basename(os.readlink(f"/proc/{d}/exe")) == prog and root in _ancestors(int(d)):
                        pids.append(int(d))
                except OSError:
                    pass
        return sorted(pids) if len(pids) == n else None
    return wait_for(scan, timeout, f"{n} processes of {prog}")


def mpirun(impl, nprocs, prog, *args):
    exe = os.path.join(MPI_DIR, f"{prog}.{impl}")
    if impl == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(nprocs), exe, *map(str, args)]
    return ["mpirun.mpich", "-np", str(nprocs), exe, *map(str, args)]


def kill_tree(p):
    """Kill a job started in its own session, with everything it started."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def cgroup2_mount():
    """Where this node mounts cgroup v2, or None."""
    with open("/proc/self/mounts") as f:
        mounts = [line.split()[1] for line in f if line.split()[2] == "cgroup2"]
    return mounts[0] if mounts else None


class Cgroup:
    """A cgroup v2 of our own, NAME under the node's cgroup v2 mount (cgroup2_mount() must be
    there): command(ARGS) runs ARGS in it, remove() kills whatever is left in it, waits for it to
    empty (bounded) and removes it (OSError, AssertionError when it cannot)."""

    def __init__(self, name):
        self.path = os.path.join(cgroup2_mount(), name)
        os.mkdir(self.path)
        self.procs = os.path.join(self.path, "cgroup.procs")

    def command(self, args):
        # the shell moves itself into the cgroup, then execs ARGS
        return ["sh", "-c", 'echo $$ > "$1" && shift && exec "$@"', "sh", self.procs, *args]

    def members(self):
        try:
            with open(self.procs) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def remove(self):
        try:
            with open(os.path.join(self.path, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:  # before Linux 5.14
            for pid in self.members():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        wait_for(lambda: not self.members(), 30, f"{self.path} to empty")
        os.rmdir(self.path)


class StatusProbe:
    """Calls Status on a pdimond every 20 ms from its own thread and times every answer: the
    loop's responsiveness as a D-Bus client sees it (no process start in the measurement).
    SOCKET_PATH: the daemon's bus socket. Needs python3-dbus."""

    def __init__(self, socket_path):
        self.address = "unix:path=" + socket_path
        self.latencies = []
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import dbus  # python3-dbus (scripts/install-deps.sh)
        bus = dbus.bus.BusConnection(self.address)
        monitor = bus.get_object("org.pdimon.Monitor1", "/org/pdimon/Monitor1")
        status = monitor.get_dbus_method("Status", "org.pdimon.Monitor1")
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                status(True, timeout=60)
                self.latencies.append(time.monotonic() - t)
            except Exception as e:     # noqa: BLE001 -- reported by check()
                self.errors.append(str(e))
            self._stop.wait(0.02)
        bus.close()

    def __enter__(self):
        self._thread.start()
        wait_for(lambda: self.latencies or self.errors, 30, "a first Status answer")
        return self

    def __exit__(self, exc_type, *exc):
        # work that ended within a few answers (a fast analysis; a client thread the busy machine
        # ran late) still gets five: answers right after it show a loop it left stalled as well
        if exc_type is None:
            wait_for(lambda: len(self.latencies) + len(self.errors) >= 5, 30, "five Status answers")
        self._stop.set()
        self._thread.join(90)
        return False

    def check(self, test, what):
        """Every call answered; the median within 100 ms, none near the slow work's length
        (a noisy 2-core machine may delay one answer, never by a whole gather)."""
        ms = sorted(x * 1000 for x in self.latencies) or [float("inf")]
        figures = f"{what}: {len(self.latencies)} Status calls, median {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms"
        print(figures, file=sys.stderr)
        test.assertEqual(self.errors, [], what)
        test.assertGreaterEqual(len(self.latencies), 5, figures)
        test.assertLess(statistics.median(ms), 100, figures)
        test.assertLess(ms[-1], 1000, figures)


class SystemBus:
    """A private dbus-daemon configured like a system bus, with pdimon's policy."""

    def __init__(self, directory):
        self.socket = os.path.join(directory, "system_bus_socket")
        conf = os.path.join(directory, "system-bus.conf")
        with open(os.path.join(SRC, "tests/dbus/system-bus.conf.in")) as f:
            text = f.read()
        with open(conf, "w") as f:
            f.write(text.replace("@SOCKET@", self.socket).replace(
                "@POLICY@", os.path.join(SRC, "packaging/org.pdimon.Monitor1.conf")))
        self.address = f"unix:path={self.socket}"
        self.proc = subprocess.Popen(["dbus-daemon", "--nofork", "--nopidfile", f"--config-file={conf}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for(lambda: os.path.exists(self.socket) or self.proc.poll() is not None, 30, "dbus-daemon",
                 longest_pause=0.02)
        if self.proc.poll() is not None:
            raise AssertionError(f"dbus-daemon failed: {self.proc.stderr.read().decode()}")
        # the socket is the bus's own door: every user of the machine may knock
        os.chmod(directory, 0o755)
        os.chmod(self.socket, 0o777)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


class Munged:
    """A private munged with a fresh key on a socket of its own (munge(1) -S SOCKET)."""

    def __init__(self, directory, threads=4):
        self.dir = directory
        self.socket = os.path.join(directory, "munge.socket")
        key = os.path.join(directory, "munge.key")
        subprocess.run(["mungekey", "-c", "-k", key], check=True, capture_output=True, timeout=20)
        self.proc = subprocess.Popen(
            ["munged", "--foreground", "--force", "--socket=" + self.socket, "--key-file=" + key,
             "--pid-file=" + os.path.join(directory, "munged.pid"),
             "--log-file=" + os.path.join(directory, "munged.log"),
             "--seed-file=" + os.path.join(directory, "munged.seed"), "--num-threads=%d" % threads],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self.answers, 20, "munged to answer")

    def answers(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"munged exited with {self.proc.returncode}")
        r = subprocess.run(f"munge -n -S {self.socket} | unmunge -S {self.socket}", shell=True,
                           capture_output=True, timeout=10)
        return r.returncode == 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a test may have stopped it
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Daemon:
    def __init__(self, *settings, bus=None, database=None, config="/dev/null"):
        self.dir = tempfile.mkdtemp(prefix="pdimon-test-")
        os.chmod(self.dir, 0o755)
        self.own_bus = bus is None
        self.bus = bus or SystemBus(self.dir)
        self.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.bus.address)
        self.log_path = os.path.join(self.dir, "pdimond.log")
        self.database = database or os.path.join(self.dir, "pdimon.db")
        # the records of trapped processes beside the database, so that a pdimond restarted on
        # the same database finds them, and no other test's pdimond (another suite may run at
        # once) continues what this one left stopped
        self.runtime_dir = os.path.join(os.path.dirname(os.path.abspath(self.database)), "run")
        # a short hang timeout: tests wait for blocked tasks, not for the site default
        # no peer port: a one-node daemon of a test serves no gather, and binds nothing
        args = [PDIMOND, "--foreground", "--config", config, "--set", f"database={self.database}",
                "--set", f"runtime_dir={self.runtime_dir}", "--set", f"hang_timeout_ms={HANG_MS}",
                "--set", "peer_port=0"]
        for s in settings:
            args += ["--set", s]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
        try:
            wait_for(lambda: self._ready(), 30, "pdimond to own its bus name", longest_pause=0.02)
        except AssertionError:
            # setUp fails and nobody would stop it: a daemon ready late stayed running, bus and all
            self.proc.kill()
            self.proc.wait()
            self.log.close()
            if self.own_bus:
                self.bus.stop()
            raise

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"pdimond exited with {self.proc.returncode}:\n{self.read_log()}")
        return "ready as" in self.read_log()

    def bpf_links(self):
        """How many BPF links pdimond holds (its own, and every task's probes)."""
        fds = f"/proc/{self.proc.pid}/fd"
        n = 0
        for f in os.listdir(fds):
            try:
                n += os.readlink(os.path.join(fds, f)) == "anon_inode:bpf_link"
            except OSError:
                pass
        return n

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def pdimon(self, *args, check=True, timeout=120, user=None):
        cmd = [PDIMON, *map(str, args)]
        if user:
            cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.env)
        if check and r.returncode != 0:
            raise AssertionError(f"pdimon {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}")
        return r

    def show(self, step):
        return json.loads(self.pdimon("show", step, "--json").stdout)

    def status(self):
        return json.loads(self.pdimon("status", "--json").stdout)

    def stop(self):
        """SIGTERM, then the daemon must exit 0 with nothing reported by the sanitizers."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("pdimond did not exit within 60 s of SIGTERM")
        self.log.close()
        log = self.read_log()
        if re.search(r"(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:)", log):
            raise AssertionError(f"sanitizer report from pdimond:\n{log}")
        if self.own_bus:
            self.bus.stop()
        if self.proc.returncode != 0:
            raise AssertionError(f"pdimond exited with {self.proc.returncode}:\n{log}")
        return log


class DaemonTest(unittest.TestCase):
    settings = ()

    def setUp(self):
        self.d = Daemon(*self.settings)
        self.children = []

    def tearDown(self):
        for p in self.children:
            kill_tree(p)
        self.d.stop()

    def spawn(self, args, **kw):
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, env=self.d.env, **kw)
        self.children.append(p)
        return p

    def assert_refused(self, args, says):
        """pdimon ARGS fails with exit status 1 and a message containing SAYS."""
        r = self.d.pdimon(*args, check=False)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn(says, r.stderr)

    @staticmethod
    def transitions(phase):
        """{(from, to): transition} of one phase."""
        return {(t["from"], t["to"]): t for t in phase["transitions"]}

# SPDX-License-Identifier: GPL-2.0-only
"""benchlib.py -- what the benchmark scripts share: a private pdimond, MPI jobs, bounded waits.

Every wait is a condition with a deadline; every process started here is killed (its whole
session) or waited for before the script exits.
"""
import atexit
import json
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("PDIMON_BUILD", os.path.join(HERE, "../build")))
PDIMOND = os.path.join(BUILD, "daemon/pdimond")
PDIMON = os.path.join(BUILD, "client/pdimon")
PROBE_FLOOR = os.path.join(BUILD, "bench/probe-floor")
PINGPONG = os.path.join(BUILD, "bench/pingpong")
BENCH_INGEST = os.path.join(BUILD, "bench/bench-ingest")
MPIRUN = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe"]
# The MPI libraries a private copy of which PDIMON_BENCH_PRIVATE_MPI=1 has the jobs map
MPI_LIBS = ("/usr/lib/x86_64-linux-gnu/libmpi.so.40", "/usr/lib/x86_64-linux-gnu/libmpich.so.12")


def use_private_mpi():
    """With PDIMON_BENCH_PRIVATE_MPI=1, the jobs this process starts map copies of the MPI
    libraries of their own (LD_LIBRARY_PATH): uprobes belong to a library's inode, and every hit
    visits every process's links on it, so on a machine where other pdimonds probe the system's
    copy (a shared development VM) each of their tasks adds to our hits. Returns the directory."""
    if os.environ.get("PDIMON_BENCH_PRIVATE_MPI") != "1":
        return None
    d = tempfile.mkdtemp(prefix="pdimon-bench-mpi-")
    for lib in MPI_LIBS:
        if os.path.exists(lib):
            shutil.copy(os.path.realpath(lib), os.path.join(d, os.path.basename(lib)))
    os.environ["LD_LIBRARY_PATH"] = d + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH")
                                         else "")
    atexit.register(shutil.rmtree, d, True)
    print(f"(PDIMON_BENCH_PRIVATE_MPI=1: the jobs map private copies of the MPI libraries, in {d})", flush=True)
    return d


PRIVATE_MPI = use_private_mpi()


class BenchError(Exception):
    pass


def wait_for(cond, timeout, what):
    """Poll COND until it returns something true; raise after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def median(v):
    return statistics.median(v) if v else float("nan")


def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _descends(pid, root):
    for _ in range(64):
        if pid == root:
            return True
        if pid <= 1:
            return False
        pid = _parent(pid)
    return False


def find_procs(exe_name, n, root, timeout=60):
    """The pids of the N descendants of ROOT whose executable is called EXE_NAME."""
    def scan():
        pids = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if os.path.basename(os.readlink(f"/proc/{d}/exe")) == exe_name and _descends(int(d), root):
                    pids.append(int(d))
            except OSError:
                pass
        return sorted(pids) if len(pids) == n else None
    return wait_for(scan, timeout, f"{n} processes of {exe_name} under pid {root}")


def read_line(p, timeout, what):
    """One line of P's stdout, within TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    buf = b""
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or p.poll() is not None and not select.select([p.stdout], [], [], 0)[0]:
            raise BenchError(f"no line from {what} (exit status {p.poll()})")
        if select.select([p.stdout], [], [], min(left, 1.0))[0]:
            c = os.read(p.stdout.fileno(), 1)
            if not c:
                raise BenchError(f"{what} closed its output (exit status {p.poll()})")
            buf += c
    return buf.decode()


def bpf_stats_enabled():
    """Does the kernel account BPF program run time (sysctl kernel.bpf_stats_enabled)?"""
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


def bpf_prog_stats(pid):
    """{program name: (run_time_ns, run_cnt)} of the BPF programs process PID holds open."""
    ids = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    for line in f:
                        if line.startswith("prog_id:"):
                            ids.add(int(line.split()[1]))
            except OSError:
                pass
    except OSError:
        return {}
    stats = {}
    for i in sorted(ids):
        r = subprocess.run(["bpftool", "prog", "show", "id", str(i), "-j"], capture_output=True, text=True,
                           timeout=30)
        if r.returncode == 0:
            p = json.loads(r.stdout)
            stats[p.get("name", str(i))] = (p.get("run_time_ns", 0), p.get("run_cnt", 0))
    return stats


def _stat_cpu_seconds(text):
    """User + system CPU seconds of a /proc .../stat line."""
    v = text.rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU time process PID used so far."""
    with open(f"/proc/{pid}/stat") as f:
        return _stat_cpu_seconds(f.read())


def threads_cpu(pid):
    """{tid: (thread name, CPU seconds)} of the live threads of PID ({} when it is gone)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                s = f.read()
        except OSError:
            continue  # a thread that ended meanwhile
        out[int(tid)] = (s[s.index("(") + 1:s.rindex(")")], _stat_cpu_seconds(s))
    return out


def _autogroup_nice():
    """The nice value of this process's autogroup (Linux gives each session one, and shares the
    CPU between them before nice values count inside), or None."""
    try:
        with open("/proc/self/autogroup") as f:
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


AUTOGROUP_NICE = _autogroup_nice()


def spawn(args, **kw):
    """Start ARGS in a session of its own, so that kill_tree() reaches all it starts. The session
    gets the benchmark's own autogroup nice: a benchmark run with its session's autogroup at
    -20 (`echo -20 > /proc/self/autogroup` in its shell) takes a loaded machine's CPU for its jobs
    too, which plain `nice` does not (it only orders processes within a session)."""
    p = subprocess.Popen(args, start_new_session=True, **kw)
    if AUTOGROUP_NICE:
        try:
            with open(f"/proc/{p.pid}/autogroup", "w") as f:
                f.write(str(AUTOGROUP_NICE))
        except OSError:
            pass
    return p


def kill_tree(p):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    # the session may outlive its leader: mpirun's orted and ranks
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def wait_exit(p, timeout, what):
    """Wait for P to exit within TIMEOUT seconds; kill its session and raise otherwise."""
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(p)
        raise BenchError(f"{what} did not finish within {timeout}s")


def close_floor(floor, check=False):
    """Detach a probe-floor (its stdin ends, it detaches and exits) and wait for it; with CHECK, a
    non-zero exit raises, with what it said."""
    floor.stdin.close()
    rc = wait_exit(floor, 60, "probe-floor")
    err = floor.stderr.read() if check and rc != 0 else ""
    floor.stdout.close()
    floor.stderr.close()
    if rc != 0 and check:
        raise BenchError(f"probe-floor exited with {rc}: {err}")


def end_run(floor, job, tmp, check_floor=False):
    """The end of one measured run, whatever happened: the floor detached, the job's whole session
    killed, its temporary directory removed."""
    try:
        if floor:
            close_floor(floor, check_floor)
    finally:
        if job:
            kill_tree(job)
        shutil.rmtree(tmp, ignore_errors=True)


def _daemon_has_socket(pdimond=PDIMOND):
    """Does this pdimond take --socket (a control socket), or talk on the system D-Bus?"""
    r = subprocess.run([pdimond, "--help"], capture_output=True, text=True, timeout=30)
    return "--socket" in r.stdout + r.stderr


# The private bus when pdimond talks D-Bus: the stock system bus's defaults plus pdimon's
# policy (tests/dbus/system-bus.conf.in says the same).
_BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=@SOCKET@</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <include>@POLICY@</include>
</busconfig>
"""


class Daemon:
    """A pdimond of our own with no configuration file, reached privately: on a socket of its
    own (--socket PRIVATE) or, for a pdimond that talks D-Bus, on a private system bus
    (a dbus-daemon of ours, named to pdimond and pdimon by DBUS_SYSTEM_BUS_ADDRESS) with a
    database of its own. Run pdimon through pdimon_args() with env=ENV."""

    def __init__(self, *settings, build=BUILD):
        self.pdimond = os.path.join(build, "daemon/pdimond")
        self.client = os.path.join(build, "client/pdimon")
        self.dir = tempfile.mkdtemp(prefix="pdimon-bench-")
        self.log_path = os.path.join(self.dir, "pdimond.log")
        self.env = dict(os.environ)
        self.sock = None
        self.bus = None
        self.proc = None
        self.log = None
        args = [self.pdimond, "--foreground", "--config", "/dev/null"]
        try:
            if _daemon_has_socket(self.pdimond):
                self.sock = os.path.join(self.dir, "pdimond.sock")
                args += ["--socket", self.sock]
            else:
                # pdimond of the D-Bus era keeps its steps in a database: ours is private too
                self._start_bus()
                args += ["--set", f"database={os.path.join(self.dir, 'pdimon.db')}"]
                args += ["--set", "peer_port=0"]  # one node: no gather, nothing to bind
            if PRIVATE_MPI:
                # pdimond traps MPI_Init in the libraries it is told of: ours too
                args += ["--set", "mpi_libraries=" + " ".join(os.path.join(PRIVATE_MPI, os.path.basename(lib))
                                                              for lib in MPI_LIBS)]
            for s in settings:
                args += ["--set", s]
            self.log = open(self.log_path, "w")
            self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
            wait_for(self._ready, 30, "pdimond to answer")
        except BaseException:
            self.stop()
            raise

    def _start_bus(self):
        sock = os.path.join(self.dir, "system_bus_socket")
        conf = os.path.join(self.dir, "system-bus.conf")
        policy = os.path.join(HERE, "../packaging/org.pdimon.Monitor1.conf")
        with open(conf, "w") as f:
            f.write(_BUS_CONF.replace("@SOCKET@", sock).replace("@POLICY@", os.path.abspath(policy)))
        self.bus = subprocess.Popen(["dbus-daemon", "--nofork", "--nopidfile", f"--config-file={conf}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for(lambda: os.path.exists(sock) or self.bus.poll() is not None, 30, "dbus-daemon")
        if self.bus.poll() is not None:
            raise BenchError(f"dbus-daemon failed: {self.bus.stderr.read().decode()}")
        self.env["DBUS_SYSTEM_BUS_ADDRESS"] = f"unix:path={sock}"

    def _ready(self):
        if self.proc.poll() is not None:
            raise BenchError(f"pdimond exited with {self.proc.returncode}:\n{self.read_log()}")
        r = subprocess.run(self.pdimon_args("status"), capture_output=True, timeout=30, env=self.env)
        return r.returncode == 0

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def calibration(self):
        """The per-call costs pdimond measured at start-up, as its log says them."""
        m = re.search(r"A probed call costs [^\n]*", self.read_log())
        return m.group(0) if m else "(no calibration line in the log)"

    def budget_changes(self):
        """How often the budget moved each function to each level: {"MPI_Test -> sampled 1/4": n}."""
        n = {}
        for fn, to in re.findall(r": (MPI_\w+) [a-z0-9/ ]+ -> ([a-z0-9/ ]+): [0-9]+ calls/s", self.read_log()):
            n[f"{fn} -> {to}"] = n.get(f"{fn} -> {to}", 0) + 1
        return n

    def pdimon_args(self, *args):
        return [self.client] + (["--socket", self.sock] if self.sock else []) + list(map(str, args))

    def pdimon(self, *args, timeout=120):
        r = subprocess.run(self.pdimon_args(*args), capture_output=True, text=True, timeout=timeout,
                           env=self.env)
        if r.returncode != 0:
            raise BenchError(f"pdimon {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}")
        return r.stdout

    def status(self):
        return json.loads(self.pdimon("status", "--json"))

    def probes_per_task(self):
        """The probe counts pdimond logged, one per task it monitors."""
        return [int(n) for n in re.findall(r"Monitoring pid \d+ .*\((\d+) probes in", self.read_log())]

    def stop(self):
        """SIGTERM, at most 60 s for a clean exit, SIGKILL past that. Returns the exit status."""
        rc = None
        if self.proc:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            rc = self.proc.returncode
        if self.log:
            self.log.close()
        if self.bus:
            self.bus.terminate()
            try:
                self.bus.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.bus.kill()
                self.bus.wait()
            self.bus.stderr.close()
        if rc in (0, None):
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print(f"pdimond exited with {rc}; its log: {self.log_path}", file=sys.stderr)
        return rc

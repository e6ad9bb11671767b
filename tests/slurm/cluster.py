# SPDX-License-Identifier: GPL-2.0-only
"""cluster.py -- a real, private, single-node Slurm cluster for tests and the demo.

    with SlurmCluster(plugstack="optional /usr/lib/.../pdimon_spank.so\\n") as c:
        c.ensure_user("pdimontest")
        r = c.run(["srun", "-n", "4", "--mpi=pmix", "./ring.openmpi", "10"])

start() writes everything into a fresh directory /var/tmp/pdimon-slurm-XXXXXXXX (not /tmp:
PMIx and Open MPI keep per-step state under /tmp and the demo gives nodes private /tmps):
a MUNGE key and our own munged on a private socket, slurm.conf (free ports, random
FirstJobId, private state/spool/log/pid paths, PlugStackConfig = the caller's text), then
slurmctld and slurmd in the foreground as our children. It waits, on conditions and with
deadlines, until the node is idle. stop() cancels every job, stops the daemons, kills any
process still carrying this cluster's marker in its environment (slurmstepd, tasks) and
removes the directory. Python 3 standard library only; run as root; no systemd needed.

What Open MPI needs under srun here (Debian 12, Slurm 22.05.8, Open MPI 4.1.4, PMIx 4.2.2):
only `--mpi=pmix` (Slurm's mpi/pmix_v4 and Open MPI use the same libpmix2). No OMPI_MCA_*
variable is required. With --mpi=none (MpiDefault) or pmi2 its MPI_Init aborts ("not built
with SLURM's PMI support"). Debian's MPICH is the other way round: --mpi=pmi2 works, under
pmix it starts N singletons. See README.md for the other gotchas.
"""

import atexit
import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

SBIN = "/usr/sbin"
MARKER = "PDIMON_SLURM_CLUSTER"   # set in the environment of everything the cluster starts


class SlurmError(RuntimeError):
    """A daemon did not come up, or a wait ran out; the message ends with the logs' tails."""


def _free_port(avoid=()):
    """A TCP port, outside the ephemeral range, that nothing listens on right now."""
    for _ in range(200):
        port = random.randrange(17000, 29000)
        if port in avoid:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port
    raise SlurmError("no free TCP port found")


def _tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return "(%s)" % e
    return "\n".join(text.splitlines()[-lines:])


def _starttime(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _marked(d):
    """Live pids whose environment holds MARKER=d."""
    needle = ("\0%s=%s\0" % (MARKER, d)).encode()
    me, pids = os.getpid(), []
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) == me:
            continue
        try:
            with open("/proc/%s/environ" % e, "rb") as f:
                if needle in b"\0" + f.read() + b"\0":
                    pids.append(int(e))
        except OSError:
            continue
    return [p for p in pids if _pid_alive(p)]


def reap_stale(base="/var/tmp"):
    """Tear down clusters whose owning process died without stop() (SIGKILL, crash): kill
    every process marked with their directory and remove it. Clusters whose owner lives,
    e.g. a concurrent test run, are left alone. Returns the directories reaped."""
    reaped = []
    for name in sorted(os.listdir(base)):
        d = os.path.join(base, name)
        if not name.startswith("pdimon-slurm-"):
            continue
        try:
            with open(os.path.join(d, "owner")) as f:
                pid, start = f.read().split()
        except (OSError, ValueError):
            continue            # still being created, or not ours
        if _pid_alive(int(pid)) and _starttime(int(pid)) == start:
            continue
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in _marked(d):
                try:
                    os.kill(p, sig)
                except OSError:
                    pass
            deadline = time.monotonic() + 5
            while _marked(d) and time.monotonic() < deadline:
                time.sleep(0.1)
        shutil.rmtree(d, ignore_errors=True)
        reaped.append(d)
    return reaped


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not running; treat it as gone.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def ensure_user(name="pdimontest"):
    """Create a real local user (useradd -m) if missing; idempotent; returns (uid, gid)."""
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        r = subprocess.run(["useradd", "-m", "-s", "/bin/sh", name],
                           capture_output=True, text=True)
        # 9: another process created it meanwhile.
        if r.returncode not in (0, 9):
            raise SlurmError("useradd %s: %s" % (name, r.stderr.strip()))
        pw = pwd.getpwnam(name)
    if not os.path.isdir(pw.pw_dir):
        os.makedirs(pw.pw_dir, mode=0o755)
        os.chown(pw.pw_dir, pw.pw_uid, pw.pw_gid)
    return pw.pw_uid, pw.pw_gid


class SlurmCluster:
    """One slurmctld + one slurmd (NodeName = short hostname, CPUs=8) + a private munged."""

    def __init__(self, plugstack="", cpus=8, partition="debug", base="/var/tmp",
                 start_timeout=60.0, debug=None):
        self.plugstack_text = plugstack
        self.cpus = cpus
        self.partition = partition
        self.base = base
        self.start_timeout = start_timeout
        # Daemon log level (SlurmctldDebug/SlurmdDebug): info, verbose, debug, debug2...
        self.debug = debug or os.environ.get("PDIMON_SLURM_DEBUG", "info")
        self.node = socket.gethostname().split(".")[0]
        self.dir = None
        self.conf = None
        self.plugstack = None
        self.munge_socket = None
        self.tmpdir = None
        self.ctld_port = self.slurmd_port = None
        self._daemons = {}        # name -> Popen (munged, slurmctld, slurmd)
        self._children = []       # Popen from popen()
        self._atexit = False

    # -- context manager ------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- paths ----------------------------------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def logs(self, lines=40):
        """The tails of every daemon log, as one string (for failure messages)."""
        out = []
        for name in ("munged.log", "munged.out", "slurmctld.log", "slurmctld.out",
                     "slurmd.log", "slurmd.out"):
            p = self.path(name)
            if os.path.exists(p) and os.path.getsize(p) > 0:
                out.append("--- %s ---\n%s" % (p, _tail(p, lines)))
        return "\n".join(out)

    def _fail(self, what):
        raise SlurmError("%s\n%s" % (what, self.logs()))

    # -- environment ----------------------------------------------------------------------
    def env(self, user=None, extra=None):
        """The environment for Slurm clients (and, through srun, for tasks)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM_", "SRUN_", "SALLOC_", "SBATCH_", "PMIX_", "OMPI_"))}
        env["SLURM_CONF"] = self.conf
        env["TMPDIR"] = self.tmpdir
        env[MARKER] = self.dir
        if user is not None:
            pw = pwd.getpwnam(user)
            env.update(HOME=pw.pw_dir, USER=pw.pw_name, LOGNAME=pw.pw_name,
                       SHELL=pw.pw_shell or "/bin/sh")
        if extra:
            env.update(extra)
        return env

    def _cmd(self, args, user):
        args = [str(a) for a in args]
        if user is None:
            return args
        return ["setpriv", "--reuid=%s" % user, "--regid=%s" % pwd.getpwnam(user).pw_gid,
                "--init-groups", "--"] + args

    def _cwd(self, user, cwd):
        if cwd is not None:
            return cwd
        if user is not None:
            return pwd.getpwnam(user).pw_dir
        return self.dir

    # -- clients --------------------------------------------------------------------------
    def popen(self, args, user=None, env=None, cwd=None, **kw):
        """Start a Slurm client command in the background, in its own session; arguments as
        run(), and Popen keywords (stdout/stderr default to pipes, text mode). stop() ends it."""
        # srun forwards its stdin to task 0: never let it read the caller's.
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("text", True)
        p = subprocess.Popen(self._cmd(args, user), env=self.env(user, env),
                             cwd=self._cwd(user, cwd), start_new_session=True, **kw)
        self._children.append(p)
        return p

    def run(self, args, user=None, timeout=60, env=None, cwd=None, check=False, input=None):
        """Run a Slurm client command (srun, sinfo, squeue, scontrol, scancel...) to its end,
        with SLURM_CONF set; as user (name) through setpriv, from their home by default;
        env: extra environment variables (srun passes them to the tasks).

        Returns subprocess.CompletedProcess (text). On timeout its whole session is killed
        and subprocess.TimeoutExpired is raised."""
        p = self.popen(args, user=user, env=env, cwd=cwd,
                       stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL)
        try:
            out, err = p.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill_session(p)
            out, err = p.communicate()
            raise subprocess.TimeoutExpired(p.args, timeout, out, err)
        finally:
            if p.poll() is not None and p in self._children:
                self._children.remove(p)
        r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        if check and r.returncode != 0:
            raise SlurmError("%s: exit %d\nstdout: %s\nstderr: %s"
                             % (" ".join(p.args), r.returncode, out, err))
        return r

    def node_state(self):
        r = self.run(["sinfo", "-h", "-N", "-n", self.node, "-o", "%T"], timeout=20)
        return r.stdout.strip() if r.returncode == 0 else ""

    def jobs(self):
        """Ids of the jobs slurmctld knows that have not ended."""
        r = self.run(["squeue", "-h", "-o", "%i"], timeout=20)
        return [j for j in r.stdout.split()] if r.returncode == 0 else []

    def wait_for(self, cond, timeout, what, interval=0.2):
        """Poll cond() until it returns something true; SlurmError with the logs if not."""
        deadline = time.monotonic() + timeout
        while True:
            v = cond()
            if v:
                return v
            for name, p in self._daemons.items():
                if p.poll() is not None:
                    self._fail("%s exited with status %s while waiting for %s"
                               % (name, p.returncode, what))
            if time.monotonic() > deadline:
                self._fail("timed out after %.0fs waiting for %s" % (timeout, what))
            time.sleep(interval)

    # -- users and files ------------------------------------------------------------------
    ensure_user = staticmethod(ensure_user)

    def share(self, path):
        """Copy a file into the cluster's world-readable share/ directory; returns the copy."""
        dst = self.path("share", os.path.basename(path))
        shutil.copy2(path, dst)
        os.chmod(dst, 0o755)
        return dst

    # -- start ----------------------------------------------------------------------------
    def _write(self, name, text, mode=0o644):
        p = self.path(name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)
        return p

    def _slurm_conf(self):
        d = self.dir
        lines = [
            "# written by pdimon tests/slurm/cluster.py",
            "ClusterName=pdimon%s" % os.path.basename(d).rsplit("-", 1)[-1].lower(),
            "SlurmctldHost=%s(127.0.0.1)" % self.node,
            "SlurmctldPort=%d" % self.ctld_port,
            "SlurmdPort=%d" % self.slurmd_port,
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "AuthInfo=socket=%s" % self.munge_socket,
            "CredType=cred/munge",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SlurmdParameters=config_overrides",
            "SchedulerType=sched/builtin",
            "MpiDefault=none",
            "ReturnToService=2",
            "FirstJobId=%d" % random.randrange(10000, 60000000),
            "StateSaveLocation=%s/state" % d,
            "SlurmdSpoolDir=%s/spool" % d,
            "TmpFS=%s" % self.tmpdir,
            "SlurmctldPidFile=%s/slurmctld.pid" % d,
            "SlurmdPidFile=%s/slurmd.pid" % d,
            "SlurmctldLogFile=%s/slurmctld.log" % d,
            "SlurmdLogFile=%s/slurmd.log" % d,
            "SlurmctldDebug=%s" % self.debug,
            "SlurmdDebug=%s" % self.debug,
            "PlugStackConfig=%s" % self.plugstack,
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "InactiveLimit=0",
            "KillWait=3",
            "MinJobAge=2",
            "MessageTimeout=10",
            "SlurmdTimeout=300",
            "NodeName=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN" % (self.node, self.cpus),
            "PartitionName=%s Nodes=%s Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE"
            % (self.partition, self.node),
        ]
        return "\n".join(lines) + "\n"

    def _spawn(self, name, args):
        out = open(self.path(name + ".out"), "wb")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MUNGE"))}
        env.update(SLURM_CONF=self.conf, TMPDIR=self.tmpdir)
        env[MARKER] = self.dir
        try:
            p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                 env=env, cwd=self.dir, start_new_session=True)
        finally:
            out.close()
        self._daemons[name] = p
        return p

    def _munge_ok(self):
        r = subprocess.run("munge -n --socket=%s | unmunge --socket=%s"
                           % (self.munge_socket, self.munge_socket),
                           shell=True, capture_output=True)
        return r.returncode == 0

    def start(self):
        if self.dir is not None:
            raise SlurmError("cluster already started")
        if not self._atexit:
            atexit.register(self.stop)
            self._atexit = True
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self):
        reap_stale(self.base)
        self.dir = tempfile.mkdtemp(prefix="pdimon-slurm-", dir=self.base)
        self._write("owner", "%d %s\n" % (os.getpid(), _starttime(os.getpid())))
        # Traversable by everyone: slurmstepd, PMIx and the tasks of a non-root user use
        # spool/ and tmp/; the MUNGE key stays 0600 root.
        os.chmod(self.dir, 0o755)
        for sub in ("state", "spool", "share", "munge"):
            os.mkdir(self.path(sub), 0o755)
        self.tmpdir = self.path("tmp")
        os.mkdir(self.tmpdir)
        os.chmod(self.tmpdir, 0o1777)
        self.munge_socket = self.path("munge", "munge.socket")
        self.conf = self.path("slurm.conf")
        self.plugstack = self._write("plugstack.conf", self.plugstack_text)
        self.ctld_port = _free_port()
        self.slurmd_port = _free_port(avoid=(self.ctld_port,))

        # MUNGE: our own key and daemon, on our own socket (AuthInfo=socket=...).
        key = self.path("munge", "munge.key")
        r = subprocess.run(["mungekey", "-c", "-k", key], capture_output=True, text=True)
        if r.returncode != 0:
            self._fail("mungekey -c -k %s: %s" % (key, r.stderr.strip()))
        os.chmod(key, 0o600)
        self._spawn("munged", [SBIN + "/munged", "--foreground", "--force",
                               "--socket=%s" % self.munge_socket, "--key-file=%s" % key,
                               "--pid-file=%s" % self.path("munge", "munged.pid"),
                               "--log-file=%s" % self.path("munged.log"),
                               "--seed-file=%s" % self.path("munge", "munged.seed")])
        self.wait_for(self._munge_ok, 20, "munged to answer on %s" % self.munge_socket)

        self._write("slurm.conf", self._slurm_conf())
        # slurmd reads cgroup.conf from beside slurm.conf when a plugin asks for it; with
        # proctrack/linuxproc and task/none none does, but keep it harmless and private.
        self._write("cgroup.conf", "CgroupPlugin=autodetect\nIgnoreSystemd=yes\n")

        self._spawn("slurmctld", [SBIN + "/slurmctld", "-D", "-i", "-f", self.conf])
        self.wait_for(lambda: "UP" in self.run(["scontrol", "ping"], timeout=20).stdout,
                      self.start_timeout, "slurmctld to answer scontrol ping")
        args = [SBIN + "/slurmd", "-D", "-f", self.conf]
        if self.node != socket.gethostname():
            args += ["-N", self.node]
        self._spawn("slurmd", args)

        self.wait_idle(self.start_timeout)

    def wait_idle(self, timeout=30):
        """Wait until the node is idle; a responding node that is drain/drained/inval/down
        (e.g. slurmctld saw it with other CPUs) is put back with scontrol update."""
        def idle():
            st = self.node_state()
            if st.startswith(("drain", "inval", "down")) and not st.endswith("*"):
                self.run(["scontrol", "update", "nodename=%s" % self.node, "state=idle"],
                         timeout=20)
                if self.node_state().startswith(("drain", "inval", "down")):
                    self.run(["scontrol", "update", "nodename=%s" % self.node,
                              "state=resume"], timeout=20)
            return st == "idle"
        self.wait_for(idle, timeout, "node %s to be idle" % self.node)

    # -- stop -----------------------------------------------------------------------------
    def pids(self, match=None):
        """Live processes this cluster started -- daemons, clients, slurmstepd, tasks: their
        environment holds PDIMON_SLURM_CLUSTER=<our dir>. With match, only those whose
        argv[0] is match, or whose argv[0]'s base name is match when it has no "/" (e.g.
        "ring.openmpi" or its full path for a step's tasks; not srun, whose arguments name
        the program too)."""
        if self.dir is None:
            return []
        pids = _marked(self.dir)
        if match is None:
            return pids
        out = []
        for p in pids:
            try:
                with open("/proc/%d/cmdline" % p, "rb") as f:
                    argv0 = f.read().split(b"\0", 1)[0].decode("utf-8", "replace")
            except OSError:
                continue
            if argv0 == match or ("/" not in match and os.path.basename(argv0) == match):
                out.append(p)
        return out

    def stepds(self):
        """{pid: job id} of this cluster's live slurmstepd processes."""
        out = {}
        for p in self.pids():
            try:
                with open("/proc/%d/cmdline" % p, "rb") as f:
                    argv0 = f.read().split(b"\0", 1)[0].decode("utf-8", "replace")
            except OSError:
                continue
            if argv0.startswith("slurmstepd: ["):           # "slurmstepd: [JOB.STEP]"
                out[p] = argv0[len("slurmstepd: ["):].split(".", 1)[0].rstrip("]")
        return out

    def kill_stuck_stepds(self, grace=3.0):
        """SIGKILL every slurmstepd whose job slurmctld no longer lists, once it has had
        grace seconds to exit by itself; returns their pids. Slurm 22.05's slurmstepd
        deadlocks for good in PMIx_server_finalize (mpi/pmix fini) when its step is cancelled
        while the tasks are still in MPI_Init's PMIx wire-up; it ignores SIGTERM."""
        deadline = time.monotonic() + grace
        while True:
            steps = self.stepds()
            jobs = set(self.jobs()) if steps else set()
            stuck = [p for p, j in steps.items() if j not in jobs]
            if not stuck:
                return []
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for p in stuck:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        end = time.monotonic() + 5
        while any(_pid_alive(p) for p in stuck) and time.monotonic() < end:
            time.sleep(0.05)
        return stuck

    @staticmethod
    def _kill_session(p, sig=signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    @staticmethod
    def _terminate(p, timeout=10):
        if p.poll() is not None:
            return
        try:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)

    def stop(self):
        """Cancel all jobs, stop slurmd, slurmctld and munged, kill leftovers, remove the dir."""
        if self.dir is None:
            return
        ctld = self._daemons.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            try:
                jobs = self.jobs()
                if jobs:
                    self.run(["scancel"] + jobs, timeout=20)
                    deadline = time.monotonic() + 20
                    while self.jobs() and time.monotonic() < deadline:
                        time.sleep(0.2)
                # A job leaves squeue just before its slurmstepd has finished: let it finish
                # while slurmd is there to hear from it; SIGKILL the deadlocked ones.
                self.kill_stuck_stepds()
            except (subprocess.TimeoutExpired, OSError):
                pass
        for p in self._children:
            if p.poll() is None:
                self._kill_session(p, signal.SIGTERM)
        for name in ("slurmd", "slurmctld", "munged"):
            p = self._daemons.get(name)
            if p is not None:
                self._terminate(p)
        # Anything left behind (not our children: slurmstepd, tasks): SIGTERM, then KILL
        # (slurmstepd ignores SIGTERM).
        t0 = time.monotonic()
        deadline, sig = t0 + 10, signal.SIGTERM
        while True:
            pids = self.pids()
            if not pids:
                break
            if time.monotonic() > t0 + 1:
                sig = signal.SIGKILL
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        for p in self._children:
            if p.poll() is None:
                self._kill_session(p)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
            for f in (p.stdout, p.stderr, p.stdin):
                if f is not None:
                    try:
                        f.close()
                    except OSError:
                        pass
        self._children = []
        self._daemons = {}
        if not os.environ.get("PDIMON_SLURM_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None


def main(argv):
    """python3 cluster.py up     -- start a cluster, print its SLURM_CONF, stop on Ctrl-C
       python3 cluster.py reap   -- tear down clusters whose owner died"""
    if argv[1:] == ["reap"]:
        for d in reap_stale():
            print("reaped", d)
        return 0
    if argv[1:] == ["up"]:
        with SlurmCluster() as c:
            print("export SLURM_CONF=%s" % c.conf, flush=True)
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
        return 0
    print(main.__doc__)
    return 2


if __name__ == "__main__":
    import sys
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    sys.exit(main(sys.argv))

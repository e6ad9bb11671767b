# SPDX-License-Identifier: GPL-2.0-only
"""cluster.py -- a real, private Slurm cluster for tests and the demo: one node, or several
"nodes" on this one machine (network namespaces), each with its own slurmd and pdimond.

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

Several nodes (nodes=N, N >= 2; DESIGN.md "Several nodes on one machine"):

    with SlurmCluster(nodes=4, pdimond=PDIMOND, plugstack="required spank_pdimon.so bus="
                      + NODE_BUS + "\n") as c:
        c.run(["srun", "-N", "4", "-n", "8", "--mpi=pmix", ring, "10"], node="n1")
        steps = c.pdimon_json("n3", "steps", "--json")

A bridge on a free private /24 (10.201.X.0/24 unless subnet= says), one network namespace
per node with a veth on the bridge (address .10+K, default route via the bridge at .1), the
node names in /etc/hosts (the lines are removed again, the file restored exactly), one
slurmctld on the bridge address and one munged (its socket is outside /tmp, so every node
sees it: one key for all). Each node nK is a "holder" process (nsenter --net into the netns,
unshare --mount --uts, /tmp bind-mounted from the node's own directory, hostname nK) whose
namespaces its slurmd, its private system bus (dbus-daemon, socket in the node's /tmp, so the
one plugstack address NODE_BUS means each node's own bus) and its pdimond enter with
nsenter --target HOLDER. Only one multi-node cluster runs at a time on a machine (the node
names in /etc/hosts are global): start() waits for a lock. What a crashed owner left behind
(processes, namespaces, links, /etc/hosts lines) is reaped by the next start().
"""

import atexit
import fcntl
import ipaddress
import json
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
SRC = os.environ.get("PDIMON_SRC", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
HOSTS = "/etc/hosts"
# Node names in /etc/hosts are global to the machine: one multi-node cluster at a time.
NODES_LOCK = "/var/tmp/pdimon-slurm-nodes.lock"
# Each node's private system bus, as seen inside that node (its own /tmp): one plugstack
# line (bus=NODE_BUS) reaches every node's own pdimond.
NODE_BUS_SOCKET = "/tmp/pdimon_system_bus_socket"
NODE_BUS = "unix:path=" + NODE_BUS_SOCKET


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


# -- the network of a multi-node cluster ------------------------------------------------------
def _ip(*args, check=True):
    r = subprocess.run(["ip"] + [str(a) for a in args], capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise SlurmError("ip %s: %s" % (" ".join(map(str, args)), r.stderr.strip()))
    return r


def _networks_in_use():
    """The IPv4 networks this machine has addresses or routes in (any table)."""
    nets = []
    for cmd in (["-4", "-o", "addr", "show"], ["-4", "route", "show", "table", "all"]):
        for line in _ip(*cmd, check=False).stdout.splitlines():
            for word in line.split():
                try:
                    nets.append(ipaddress.ip_network(word, strict=False))
                except ValueError:
                    continue
    return [n for n in nets if n.prefixlen > 0]      # "default" does not count


def pick_subnet(candidates=("10.201.%d.0/24" % i for i in range(256))):
    """The first candidate /24 that overlaps no address or route of this machine."""
    used = _networks_in_use()
    for c in candidates:
        net = ipaddress.ip_network(c)
        if not any(net.overlaps(u) for u in used):
            return net
    raise SlurmError("no free private subnet for the nodes' bridge")


def _hosts_remove(marker, original=None):
    """Take our lines (ending with MARKER) out of /etc/hosts. When the file is exactly what
    we made of ORIGINAL, ORIGINAL is written back byte for byte; lines someone else added
    meanwhile are kept. The file is rewritten in place: it may be a bind mount."""
    try:
        with open(HOSTS) as f:
            text = f.read()
    except OSError:
        return
    lines = text.splitlines(keepends=True)
    kept = [ln for ln in lines if not ln.rstrip("\n").endswith(marker)]
    if len(kept) == len(lines):
        return
    new = "".join(kept)
    if original is not None and new.rstrip("\n") == original.rstrip("\n"):
        new = original
    with open(HOSTS, "w") as f:
        f.write(new)


def net_teardown(d):
    """Undo the network of the cluster in directory D as recorded in D/net.json (written
    before anything was made): node namespaces (their veths go with them), the bridge and
    the /etc/hosts lines. Every step is tried; what is already gone is fine."""
    try:
        with open(os.path.join(d, "net.json")) as f:
            net = json.load(f)
    except (OSError, ValueError):
        return
    for ns in net.get("netns", []):
        if os.path.exists("/var/run/netns/" + ns):
            _ip("netns", "del", ns, check=False)
    for link in net.get("veths", []) + [net.get("bridge")]:
        if link and os.path.exists("/sys/class/net/" + link):
            _ip("link", "del", link, check=False)
    original = None
    try:
        with open(os.path.join(d, "hosts.orig")) as f:
            original = f.read()
    except OSError:
        pass
    if net.get("hosts_marker"):
        _hosts_remove(net["hosts_marker"], original)


def reap_stale(base="/var/tmp"):
    """Tear down clusters whose owning process died without stop() (SIGKILL, crash): kill
    every process marked with their directory, undo their network (net_teardown) and remove
    the directory. Clusters whose owner lives,
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
        net_teardown(d)
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
    """One slurmctld + one slurmd (NodeName = short hostname, CPUs=8) + a private munged.

    nodes=N (N >= 2): N nodes n1..nN (node_prefix) in network namespaces, each with its own
    slurmd, private system bus and, given pdimond= (the path of pdimond), its own pdimond
    started with --set database=<node dir>/pdimon.db, node_name=nK and munge_socket=<ours>
    (when the daemon knows them), hang_timeout_ms=300 and pdimond_settings, in which {node}, {addr},
    {munge} and {dir} (the node's directory) are replaced; cpus is per node."""

    def __init__(self, plugstack="", cpus=8, partition="debug", base="/var/tmp",
                 start_timeout=60.0, debug=None, nodes=0, node_prefix="n", subnet=None,
                 pdimond=None, pdimon=None, pdimond_settings=(), lock_timeout=300.0):
        self.plugstack_text = plugstack
        self.cpus = cpus
        self.nnodes = nodes if nodes and nodes >= 2 else 0   # 0: the single-node mode
        self.node_names = ["%s%d" % (node_prefix, k) for k in range(1, self.nnodes + 1)]
        self.subnet = ipaddress.ip_network(subnet) if subnet else None
        self.pdimond_path = pdimond
        self.pdimon_path = pdimon or (pdimond and os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(pdimond))), "client", "pdimon"))
        self.pdimond_settings = tuple(pdimond_settings)
        self.lock_timeout = lock_timeout
        self.bridge_addr = None
        self.addrs = {}           # node name -> its address on the bridge
        self.pdimond_exit = {}    # node name -> pdimond's exit status once stopped
        # Settings of issue 5's gather that a pdimond from before does not know: given while
        # it takes them, dropped once it says "unknown setting".
        self._gather_settings = {"node_name": True, "munge_socket": True}
        self._lock = None
        self._netns = {}          # node name -> its network namespace
        self.partition = partition
        self.base = base
        self.start_timeout = start_timeout
        # Daemon log level (SlurmctldDebug/SlurmdDebug): info, verbose, debug, debug2...
        self.debug = debug or os.environ.get("PDIMON_SLURM_DEBUG", "info")
        self.node = self.node_names[0] if self.nnodes else socket.gethostname().split(".")[0]
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

    def node_dir(self, node, *parts):
        """A node's own directory (multi-node): its tmp/ is the node's /tmp."""
        return self.path("nodes", node, *parts)

    def logs(self, lines=40):
        """The tails of every daemon log, as one string (for failure messages)."""
        out = []
        names = ["munged.log", "munged.out", "slurmctld.log", "slurmctld.out",
                 "slurmd.log", "slurmd.out"]
        for n in self.node_names:
            names += [os.path.join("nodes", n, f) for f in
                      ("holder.out", "dbus.out", "slurmd.log", "slurmd.out", "pdimond.log")]
        for name in names:
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
    def in_node(self, node, args):
        """ARGS run inside NODE's namespaces (network, mount: its /tmp, UTS: its hostname)."""
        if node is None:
            return list(args)
        if node not in self.node_names:
            raise SlurmError("no node %r in this cluster (%s)" % (node, " ".join(self.node_names)))
        holder = self._daemons.get("holder-" + node)
        if holder is None:
            raise SlurmError("node %s is not up" % node)
        return ["nsenter", "--target", str(holder.pid), "--net", "--mount", "--uts", "--"] + list(args)

    def popen(self, args, user=None, env=None, cwd=None, node=None, **kw):
        """Start a Slurm client command in the background, in its own session; arguments as
        run(), and Popen keywords (stdout/stderr default to pipes, text mode). stop() ends it."""
        # srun forwards its stdin to task 0: never let it read the caller's.
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("text", True)
        p = subprocess.Popen(self.in_node(node, self._cmd(args, user)), env=self.env(user, env),
                             cwd=self._cwd(user, cwd), start_new_session=True, **kw)
        self._children.append(p)
        return p

    def run(self, args, user=None, timeout=60, env=None, cwd=None, check=False, input=None,
            node=None):
        """Run a Slurm client command (srun, sinfo, squeue, scontrol, scancel...) to its end,
        with SLURM_CONF set; as user (name) through setpriv, from their home by default;
        env: extra environment variables (srun passes them to the tasks); node (multi-node):
        inside that node's namespaces, as on a login shell there (srun's plugin then reaches
        that node's pdimond), else on the host.

        Returns subprocess.CompletedProcess (text). On timeout its whole session is killed
        and subprocess.TimeoutExpired is raised."""
        p = self.popen(args, user=user, env=env, cwd=cwd, node=node,
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

    def node_state(self, node=None):
        r = self.run(["sinfo", "-h", "-N", "-n", node or self.node, "-o", "%T"], timeout=20)
        return r.stdout.strip() if r.returncode == 0 else ""

    def node_states(self):
        """{node: state} of every node sinfo lists."""
        r = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=20)
        return dict(ln.split(None, 1) for ln in r.stdout.splitlines() if ln.strip()) \
            if r.returncode == 0 else {}

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
            "SlurmctldHost=%s(%s)" % (socket.gethostname().split(".")[0], self.bridge_addr)
            if self.nnodes else "SlurmctldHost=%s(127.0.0.1)" % self.node,
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
            # Several nodes: each slurmd its own spool, pid and log (%n = its node name),
            # TmpFS its private /tmp.
            "SlurmdSpoolDir=%s/%sspool" % (d, "nodes/%n/" if self.nnodes else ""),
            "TmpFS=%s" % self.tmpdir,
            "SlurmctldPidFile=%s/slurmctld.pid" % d,
            "SlurmdPidFile=%s/%sslurmd.pid" % (d, "nodes/%n/" if self.nnodes else ""),
            "SlurmctldLogFile=%s/slurmctld.log" % d,
            "SlurmdLogFile=%s/%sslurmd.log" % (d, "nodes/%n/" if self.nnodes else ""),
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
        ]
        if self.nnodes:
            lines += ["NodeName=%s NodeAddr=%s CPUs=%d State=UNKNOWN" % (n, self.addrs[n], self.cpus)
                      for n in self.node_names]
        else:
            lines.append("NodeName=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN" % (self.node, self.cpus))
        lines.append("PartitionName=%s Nodes=%s Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE"
                     % (self.partition, ",".join(self.node_names) or self.node))
        return "\n".join(lines) + "\n"

    def _spawn(self, name, args, node=None, out=None, env=None):
        """Start daemon NAME (in NODE's namespaces if given), its output in OUT (default
        NAME.out in the cluster's directory); env: extra variables."""
        out = open(out or self.path(name + ".out"), "ab")   # a restarted daemon appends
        e = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MUNGE"))}
        e.update(SLURM_CONF=self.conf, TMPDIR=self.tmpdir)
        e.update(env or {})
        e[MARKER] = self.dir
        try:
            p = subprocess.Popen(self.in_node(node, args), stdin=subprocess.DEVNULL, stdout=out,
                                 stderr=out, env=e, cwd=self.dir, start_new_session=True)
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
        if self.nnodes:
            self._take_lock()
            reap_stale(self.base)         # the lock's last holder may have died meanwhile
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
        if self.nnodes:
            # TmpFS and the tasks' TMPDIR: inside a node, /tmp is that node's own (PMIx and
            # Open MPI per-step directories would collide in a shared one).
            self.tmpdir = "/tmp"
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

        if self.nnodes:
            self._net_up()
        self._write("slurm.conf", self._slurm_conf())
        # slurmd reads cgroup.conf from beside slurm.conf when a plugin asks for it; with
        # proctrack/linuxproc and task/none none does, but keep it harmless and private.
        self._write("cgroup.conf", "CgroupPlugin=autodetect\nIgnoreSystemd=yes\n")

        self._spawn("slurmctld", [SBIN + "/slurmctld", "-D", "-i", "-f", self.conf])
        self.wait_for(lambda: "UP" in self.run(["scontrol", "ping"], timeout=20).stdout,
                      self.start_timeout, "slurmctld to answer scontrol ping")
        if self.nnodes:
            for node in self.node_names:
                self._node_up(node)
            self.wait_idle(self.start_timeout)
            return
        args = [SBIN + "/slurmd", "-D", "-f", self.conf]
        if self.node != socket.gethostname():
            args += ["-N", self.node]
        self._spawn("slurmd", args)

        self.wait_idle(self.start_timeout)

    # -- several nodes ----------------------------------------------------------------------
    def _take_lock(self):
        fd = os.open(NODES_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise SlurmError("another multi-node cluster has held %s for %.0f s"
                                     % (NODES_LOCK, self.lock_timeout))
                time.sleep(0.5)
        self._lock = fd

    def _net_up(self):
        """The bridge, a namespace and veth per node, the node names in /etc/hosts. What is
        about to be made is written to net.json first, so that stop() and reap_stale() can
        undo a half-made network too."""
        tag = os.path.basename(self.dir).rsplit("-", 1)[-1][:6].lower()
        net = self.subnet or pick_subnet()
        if self.subnet and any(net.overlaps(u) for u in _networks_in_use()):
            self._fail("subnet %s is in use on this machine" % net)
        hosts = list(net.hosts())
        if len(hosts) < 10 + self.nnodes:
            self._fail("subnet %s is too small for %d nodes" % (net, self.nnodes))
        self.bridge_addr = str(hosts[0])                       # .1
        self.addrs = {n: str(hosts[9 + k]) for k, n in enumerate(self.node_names, 1)}  # .10+K
        bridge = "pb" + tag
        ns = {n: "pdimon-%s-%s" % (tag, n) for n in self.node_names}
        veth = {n: "pv%s%d" % (tag, k) for k, n in enumerate(self.node_names, 1)}
        marker = "# pdimon-slurm " + self.dir
        self._netns = ns
        self._write("net.json", json.dumps({
            "subnet": str(net), "bridge": bridge, "netns": list(ns.values()),
            "veths": list(veth.values()), "hosts_marker": marker}) + "\n")

        with open(HOSTS) as f:
            original = f.read()
        for line in original.splitlines():
            words = line.split("#", 1)[0].split()
            clash = set(words[1:]) & set(self.node_names)
            if clash:
                self._fail("%s names %s already (%r): a real host, or a cluster not ours"
                           % (HOSTS, ",".join(sorted(clash)), line))
        self._write("hosts.orig", original)
        add = "".join("%s\t%s\t%s\n" % (self.addrs[n], n, marker) for n in self.node_names)
        with open(HOSTS, "a") as f:
            f.write(("\n" if original and not original.endswith("\n") else "") + add)

        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", "%s/%d" % (self.bridge_addr, net.prefixlen), "dev", bridge)
        _ip("link", "set", bridge, "up")
        for n in self.node_names:
            _ip("netns", "add", ns[n])
            _ip("link", "add", veth[n], "type", "veth", "peer", "name", "eth0", "netns", ns[n])
            _ip("link", "set", veth[n], "master", bridge, "up")
            _ip("-n", ns[n], "addr", "add", "%s/%d" % (self.addrs[n], net.prefixlen), "dev", "eth0")
            _ip("-n", ns[n], "link", "set", "lo", "up")
            _ip("-n", ns[n], "link", "set", "eth0", "up")
            _ip("-n", ns[n], "route", "add", "default", "via", self.bridge_addr)

    def _node_up(self, node):
        """Node NODE: its holder (namespaces), system bus, pdimond, then slurmd."""
        nd = self.node_dir(node)
        os.makedirs(self.node_dir(node, "spool"), 0o755)
        os.mkdir(self.node_dir(node, "tmp"))
        os.chmod(self.node_dir(node, "tmp"), 0o1777)
        os.chmod(self.node_dir(node), 0o755)
        os.chmod(self.path("nodes"), 0o755)
        # nsenter --net, not ip netns exec: that remounts /sys and hides the cgroup mounts
        # slurmd needs. unshare --mount makes the bind mount private to the node.
        # a checkout or build under /tmp (a CI clone may be there) would vanish behind the
        # node's own /tmp: bind it into the node's /tmp at the same path first
        under_tmp = sorted({"/tmp/" + os.path.relpath(p, "/tmp").split("/")[0]
                            for p in map(os.path.realpath, [SRC] + [x for x in (self.pdimond_path, self.pdimon_path) if x])
                            if p.startswith("/tmp/")})
        h = self._spawn("holder-" + node, [
            "nsenter", "--net=/var/run/netns/" + self._netns[node], "unshare", "--mount", "--uts",
            "sh", "-c", 'tmp=$1 name=$2; shift 2; for d; do mkdir -p "$tmp/${d#/tmp/}" && '
            'mount --bind "$d" "$tmp/${d#/tmp/}" || exit 1; done; '
            'mount --rbind "$tmp" /tmp && hostname "$name" && exec sleep infinity', "sh",
            self.node_dir(node, "tmp"), node, *under_tmp], out=self.node_dir(node, "holder.out"))

        def held():
            try:
                return os.path.basename(os.readlink("/proc/%d/exe" % h.pid)) == "sleep"
            except OSError:
                return False
        self.wait_for(held, 20, "node %s's namespaces" % node, interval=0.05)

        with open(os.path.join(SRC, "tests/dbus/system-bus.conf.in")) as f:
            conf = f.read().replace("@SOCKET@", NODE_BUS_SOCKET).replace(
                "@POLICY@", os.path.join(SRC, "packaging/org.pdimon.Monitor1.conf"))
        self._write(os.path.join("nodes", node, "system-bus.conf"), conf)
        self._spawn("dbus-" + node, ["dbus-daemon", "--nofork", "--nopidfile",
                                     "--config-file=" + self.node_dir(node, "system-bus.conf")],
                    node=node, out=self.node_dir(node, "dbus.out"))
        sock = self.node_dir(node, "tmp", os.path.basename(NODE_BUS_SOCKET))
        self.wait_for(lambda: os.path.exists(sock), 20, "node %s's system bus" % node, interval=0.05)
        os.chmod(sock, 0o777)     # the bus's own door: every user of the node may knock

        if self.pdimond_path:
            self.start_pdimond(node)
        self._spawn("slurmd-" + node, [SBIN + "/slurmd", "-D", "-f", self.conf, "-N", node],
                    node=node, out=self.node_dir(node, "slurmd.out"))

    def start_pdimond(self, node):
        """Start node NODE's pdimond (again) and wait until it owns its bus name."""
        log = self.node_dir(node, "pdimond.log")
        fmt = dict(node=node, addr=self.addrs[node], munge=self.munge_socket, dir=self.node_dir(node))
        while True:
            settings = ["database=" + self.node_dir(node, "pdimon.db"), "runtime_dir=" + self.node_dir(node, "run"),
                        "hang_timeout_ms=300"]
            if self._gather_settings["node_name"]:
                settings.append("node_name=" + node)
            if self._gather_settings["munge_socket"]:
                settings.append("munge_socket=" + self.munge_socket)   # no /run/munge here
            settings += [x.format(**fmt) for x in self.pdimond_settings]
            args = [self.pdimond_path, "--foreground", "--config", "/dev/null"]
            for x in settings:
                args += ["--set", x]
            start = os.path.getsize(log) if os.path.exists(log) else 0
            p = self._spawn("pdimond-" + node, args, node=node, out=log,
                            env={"DBUS_SYSTEM_BUS_ADDRESS": NODE_BUS})

            def ready():
                with open(log, errors="replace") as f:
                    f.seek(start)
                    text = f.read()
                if "ready as" in text:
                    return True
                if p.poll() is not None:
                    return text
                return False
            deadline = time.monotonic() + 30
            while not ready() and time.monotonic() < deadline:
                time.sleep(0.05)
            text = ready()
            if text is True:
                return p
            del self._daemons["pdimond-" + node]
            unknown = [k for k, on in self._gather_settings.items()
                       if on and isinstance(text, str) and "--set %s: unknown setting" % k in text]
            if unknown:
                self._gather_settings[unknown[0]] = False    # a pdimond from before issue 5
                continue
            if p.poll() is None:
                p.kill()
                p.wait()
            self._fail("pdimond on %s did not become ready: %s" % (node, text or "(timed out)"))

    def stop_pdimond(self, node, sig=signal.SIGTERM, timeout=60):
        """Stop node NODE's pdimond with SIG; its exit status (also in pdimond_exit[node])."""
        p = self._daemons.pop("pdimond-" + node, None)
        if p is None:
            return self.pdimond_exit.get(node)
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self.pdimond_exit[node] = p.returncode
        return p.returncode

    def node_log(self, node):
        """Everything node NODE's pdimond has logged (all its runs)."""
        try:
            with open(self.node_dir(node, "pdimond.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def pdimon(self, node, *args, user=None, check=True, timeout=60):
        """Run the pdimon CLI inside NODE against that node's pdimond; CompletedProcess."""
        r = self.run([self.pdimon_path] + [str(a) for a in args], user=user, timeout=timeout,
                     node=node, env={"DBUS_SYSTEM_BUS_ADDRESS": NODE_BUS})
        if check and r.returncode != 0:
            raise SlurmError("pdimon %s on %s: exit %d: %s"
                             % (" ".join(map(str, args)), node, r.returncode, r.stderr.strip()))
        return r

    def pdimon_json(self, node, *args, **kw):
        """pdimon ARGS (which should include --json) on NODE, parsed."""
        return json.loads(self.pdimon(node, *args, **kw).stdout)

    def wait_idle(self, timeout=30):
        """Wait until the node (every node) is idle; a responding node that is drain/drained/
        inval/down (e.g. slurmctld saw it with other CPUs) is put back with scontrol update."""
        nodes = self.node_names or [self.node]

        def idle():
            states = self.node_states() if self.nnodes else {self.node: self.node_state()}
            for node in nodes:
                st = states.get(node, "")
                if st.startswith(("drain", "inval", "down")) and not st.endswith("*"):
                    self.run(["scontrol", "update", "nodename=%s" % node, "state=idle"],
                             timeout=20)
                    if self.node_state(node).startswith(("drain", "inval", "down")):
                        self.run(["scontrol", "update", "nodename=%s" % node,
                                  "state=resume"], timeout=20)
            return all(states.get(node) == "idle" for node in nodes)
        self.wait_for(idle, timeout, "node%s %s to be idle"
                      % ("s" if len(nodes) > 1 else "", ",".join(nodes)))

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
        """Cancel all jobs, stop slurmd, slurmctld and munged, kill leftovers, remove the dir.
        Several nodes: also every node's pdimond (exit status in pdimond_exit), bus and
        namespaces, the bridge and our /etc/hosts lines."""
        if self.dir is None:
            self._unlock()
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
        for node in self.node_names:
            p = self._daemons.get("slurmd-" + node)
            if p is not None:
                self._terminate(p)
        for node in self.node_names:
            self.stop_pdimond(node)
        for node in self.node_names:
            for name in ("dbus-" + node, "holder-" + node):
                p = self._daemons.get(name)
                if p is not None:
                    self._terminate(p)
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
        net_teardown(self.dir)
        if not os.environ.get("PDIMON_SLURM_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None
        self._unlock()

    def _unlock(self):
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def main(argv):
    """python3 cluster.py up [N [PDIMOND]]  -- start a cluster (N >= 2: N nodes, each with
                                              PDIMOND if given), print its SLURM_CONF, stop
                                              on Ctrl-C
       python3 cluster.py reap              -- tear down clusters whose owner died"""
    if argv[1:] == ["reap"]:
        for d in reap_stale():
            print("reaped", d)
        return 0
    if argv[1:2] == ["up"] and len(argv) <= 4:
        n = int(argv[2]) if len(argv) > 2 else 0
        pdimond = os.path.abspath(argv[3]) if len(argv) > 3 else None
        plugstack = ""
        if pdimond:
            plugin = os.path.join(os.path.dirname(os.path.dirname(pdimond)), "slurm/spank_pdimon.so")
            plugstack = "optional %s bus=%s\n" % (plugin, NODE_BUS)
        with SlurmCluster(nodes=n, pdimond=pdimond, plugstack=plugstack) as c:
            print("export SLURM_CONF=%s" % c.conf, flush=True)
            for node in c.node_names:
                print("# %s %s: nsenter --target %d --net --mount --uts   (bus %s)"
                      % (node, c.addrs[node], c._daemons["holder-" + node].pid, NODE_BUS), flush=True)
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

# SPDX-License-Identifier: GPL-2.0-only
"""pgserver.py -- a real PostgreSQL server (Debian's postgresql package) for the site store tests.

It runs as the postgres user, listens on no TCP port at all: only on a Unix socket in a private
directory, and asks for a password (SCRAM). Every wait has a deadline.
"""
import glob
import os
import pwd
import shutil
import subprocess

from harness import wait_for

PASSWORD = "s3cret-site-store"
USER = "pdimon"


def _bindir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if not found:
        raise AssertionError("PostgreSQL is not installed (apt-get install postgresql)")
    return os.path.dirname(found[-1])


class PostgresServer:
    def __init__(self, directory):
        self.bin = _bindir()
        pw = pwd.getpwnam("postgres")
        self.root = os.path.join(directory, "pg")
        self.data = os.path.join(self.root, "data")
        self.sockets = os.path.join(self.root, "run")
        os.makedirs(self.sockets)
        pwfile = os.path.join(self.root, "pwfile")
        with open(pwfile, "w") as f:
            f.write(PASSWORD + "\n")
        for p in (self.root, self.sockets, pwfile):
            os.chown(p, pw.pw_uid, pw.pw_gid)
        os.chmod(self.root, 0o700)
        self._as_postgres([os.path.join(self.bin, "initdb"), "-D", self.data, "-U", USER, f"--pwfile={pwfile}",
                           "--auth=scram-sha-256", "--no-sync", "-E", "UTF8", "--locale=C"])
        self.proc = None
        self.start()

    @staticmethod
    def _as_postgres(cmd, **kw):
        r = subprocess.run(["runuser", "-u", "postgres", "--", *cmd], capture_output=True, text=True, timeout=120, **kw)
        if r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed: {r.stderr}")
        return r

    @property
    def uri(self):
        return f"postgresql://{USER}@/postgres?host={self.sockets}"

    def start(self):
        self.proc = subprocess.Popen(
            ["runuser", "-u", "postgres", "--", os.path.join(self.bin, "postgres"), "-D", self.data,
             "-c", "listen_addresses=", "-c", f"unix_socket_directories={self.sockets}", "-c", "fsync=off",
             "-c", "max_connections=20", "-c", "shared_buffers=16MB"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: self._ready(), 60, "PostgreSQL to accept connections")

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"postgres exited: {self.proc.stderr.read()}")
        return subprocess.run([os.path.join(self.bin, "pg_isready"), "-q", "-h", self.sockets],
                              timeout=30).returncode == 0

    def stop(self):
        """Fast shutdown: what is committed stays, connections are cut. Returns once the postmaster
        itself has ended and given up postmaster.pid (pg_ctl -w waits for that): runuser, which
        started it, may return before it, and a start would then find the lock file still held."""
        if self.proc and self.proc.poll() is None:
            r = subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(self.bin, "pg_ctl"), "stop", "-D",
                                self.data, "-m", "fast", "-w", "-t", "60"], capture_output=True, text=True, timeout=90)
            if r.returncode != 0:  # it was not running after all: runuser goes the same way
                self.proc.terminate()
            self.proc.wait(timeout=60)
        self.proc = None

    def psql(self, sql):
        env = dict(os.environ, PGPASSWORD=PASSWORD)
        r = subprocess.run(["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.sockets, "-U", USER,
                            "-d", "postgres", "-c", sql], capture_output=True, text=True, timeout=60, env=env)
        if r.returncode != 0:
            raise AssertionError(f"psql {sql}: {r.stderr}")
        return r.stdout.strip()

    def remove(self):
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

"""A throwaway PostgreSQL server for the tests and the push benchmark.

``PgServer.start()`` runs the Debian ``postgresql`` package's ``initdb`` and ``pg_ctl`` (found
under /usr/lib/postgresql/*/bin, or on PATH) in a fresh temporary folder, on a free loopback
port, with trust authentication on 127.0.0.1 only; as root it runs them as the ``postgres``
user (initdb refuses root). ``missing()`` says why a server cannot be started, or ''.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def missing() -> str:
    """Why no server can be started here ('' when one can)."""
    if _bindir() is None:
        return "PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run initdb as"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed: pip install 'sesh-archive[postgres]'"
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """``fsync=False`` (tests): the server skips fsync, as nothing must survive a power cut;
    the benchmark keeps the default (fsync on), as a real server does."""

    def __init__(self, fsync: bool = False) -> None:
        self.fsync = fsync
        self.bindir = _bindir()
        self.dir: Path | None = None
        self.port = 0
        self._n = 0

    def _run(self, *args: str) -> None:
        assert self.bindir is not None
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(self.dir)}
        subprocess.run(cmd, check=True, env=env, cwd=str(self.dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> PgServer:
        self.dir = Path(tempfile.mkdtemp(prefix="sesh-pg-"))
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        data = self.dir / "data"
        self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale")
        self.port = _free_port()
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=40"
        if not self.fsync:
            opts += " -F"
        self._run("pg_ctl", "-D", str(data), "-o", opts, "-l", str(self.dir / "log"), "-w", "start")
        return self

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def new_database(self) -> str:
        """A fresh empty database's URL."""
        import psycopg

        self._n += 1
        name = f"t{os.getpid()}_{self._n}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.dir is None:
            return
        try:
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

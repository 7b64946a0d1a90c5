"""A throwaway PostgreSQL cluster on 127.0.0.1 for tests and benches (Debian's ``postgresql`` binaries).

Runs ``initdb``/``pg_ctl`` as the ``postgres`` user when we are root (PostgreSQL refuses to run as
root), in a fresh temporary directory, with ``trust`` authentication on a free port.
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


def find_bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<v>/bin`` holding initdb and pg_ctl (or those on PATH)."""
    def version(p: str) -> tuple:
        v = Path(p).parent.name
        return tuple(int(x) for x in v.split(".") if x.isdigit())

    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        if os.access(Path(cand) / "initdb", os.X_OK) and os.access(Path(cand) / "pg_ctl", os.X_OK):
            return Path(cand)
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgCluster:
    """``start()`` a cluster, ``url(db)`` for SQLAlchemy, ``create_database``/``drop_database``, ``stop()``."""

    def __init__(self, bindir: Path, *, fsync: bool = True) -> None:
        self.bindir = bindir
        self.fsync = fsync
        self.root = Path(tempfile.mkdtemp(prefix="makeway-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 0
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        proc = subprocess.run([*self.as_user, *args], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()}\n{log}")

    def start(self) -> "PgCluster":
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--locale=C", "--no-sync")
        for attempt in range(5):
            self.port = _free_port()
            opts = f"-h 127.0.0.1 -p {self.port} -k {self.root} -c max_connections=200"
            if not self.fsync:
                opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            try:
                self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                          "-o", opts, "-w", "-t", "60", "start")
                return self
            except RuntimeError:
                if attempt == 4:
                    raise
        return self

    def url(self, db: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{db}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(sql)

    def create_database(self, name: str) -> str:
        self._admin(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        try:
            if self.port:
                self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

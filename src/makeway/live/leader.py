"""Who may write: the leader lock of ``makeway serve``.

PostgreSQL: a session advisory lock taken on a connection of its own, held for the life of the
process. The first ``serve`` on a database takes it and leads; a second one stands by, polling
``pg_try_advisory_lock``, and leads once the first one's session ends (the process died, or its
connection did). No consensus of our own: the database already decides who holds the lock, and
the epoch check on every pass (``store.StaleLeader``) fences a leader that lost it but has not
noticed yet. A leader whose lock connection fails, or whose lock is gone, is told through
``on_lost`` and must stop writing.

SQLite: one machine, one writer. A second ``serve`` on the same file is refused (``LockBusy``):
a standby on the same host would only protect against a crash, which a process supervisor's
restart already covers, and SQLite cannot be shared across hosts. The file lock (``flock`` on
``<db>.serve.lock``; never the database file itself, whose POSIX locks SQLite owns) is released by
the kernel when the process dies, so a restart after kill -9 is never refused.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path
from typing import Callable, Optional

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from makeway.errors import MakewayError

log = logging.getLogger("makeway.serve")

LEADER_LOCK = 0x6D6B_7700_0003
"""The session advisory lock key of the leader (store.py holds the transaction-scoped ones)."""

POLL = 0.5
"""Seconds between a standby's tries for the lock, and between a leader's checks that it holds it."""

# A lock connection that hangs (network partition) must fail within seconds, not TCP's minutes.
_PG_CONNECT_ARGS = {"connect_timeout": 5, "keepalives": 1, "keepalives_idle": 2, "keepalives_interval": 1,
                    "keepalives_count": 3, "tcp_user_timeout": 5000, "application_name": "makeway-leader-lock"}


class LockBusy(MakewayError):
    """Another ``serve`` owns this database and the database cannot have a standby (SQLite)."""


class LeaderLost(RuntimeError):
    """The leader lock is no longer held: another ``serve`` may lead now."""


class LeaderLock:
    """No lock at all (an in-memory database): always the leader."""

    standby_possible = False

    def try_acquire(self) -> bool:
        return True

    def wait(self, stop: threading.Event) -> bool:
        return not stop.is_set()

    def watch(self, on_lost: Callable[[BaseException], None]) -> None:
        pass

    def close(self) -> None:
        pass


class FileLock(LeaderLock):
    """``flock`` on a file beside a SQLite database; ``try_acquire`` raises ``LockBusy`` when held."""

    def __init__(self, path: Path, db: str) -> None:
        self.path, self.db = path, db
        self._fd: Optional[int] = None

    def try_acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise LockBusy(f"db: {self.db} is in use by another makeway serve "
                           f"(pid {holder}); SQLite has one writer: stop that one first, or use PostgreSQL "
                           "to run a standby") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


class PgAdvisoryLock(LeaderLock):
    """The leader lock on PostgreSQL (see the module docstring)."""

    standby_possible = True

    def __init__(self, url: sa.URL, key: int = LEADER_LOCK, poll: float = POLL) -> None:
        self.engine = sa.create_engine(url, poolclass=NullPool, connect_args=_PG_CONNECT_ARGS)
        self.key, self.poll = key, poll
        self._conn: Optional[sa.Connection] = None
        self._held = False
        self.error: Optional[str] = None
        self._closed = threading.Event()
        self._guard = threading.Lock()

    def _connection(self) -> sa.Connection:
        if self._conn is None:
            self._conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.invalidate()
                self._conn.close()
            except Exception:  # noqa: BLE001 - the connection is being thrown away
                pass
            self._conn = None

    def try_acquire(self) -> bool:
        """One try; a connection that fails is dropped and the next try opens a new one."""
        with self._guard:
            if self._held:
                return True
            try:
                got = bool(self._connection().execute(sa.text("SELECT pg_try_advisory_lock(:k)"),
                                                      {"k": self.key}).scalar_one())
            except sa.exc.DBAPIError as exc:
                self.error = str(exc.orig or exc).strip().splitlines()[0]
                self._drop()
                return False
            self.error = None
            self._held = got
            return got

    def wait(self, stop: threading.Event) -> bool:
        """Try every ``poll`` seconds until the lock is ours (True) or ``stop`` is set (False)."""
        told = None
        while not stop.is_set() and not self._closed.is_set():
            if self.try_acquire():
                return True
            if self.error != told:
                told = self.error
                if told:
                    log.warning("leader lock: %s; trying again", told)
            stop.wait(self.poll)
        return False

    def holds(self) -> bool:
        """Ask the server whether this session still holds the lock (raises if the connection failed)."""
        with self._guard:
            if not self._held or self._conn is None:
                return False
            return bool(self._conn.execute(sa.text(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND pid = pg_backend_pid() AND objsubid = 1"
                " AND ((classid::bigint << 32) | objid::bigint) = :k)"), {"k": self.key}).scalar_one())

    def watch(self, on_lost: Callable[[BaseException], None]) -> None:
        """Check the lock every ``poll`` seconds on a thread; call ``on_lost`` once when it is gone."""
        def run() -> None:
            while not self._closed.wait(self.poll):
                try:
                    if self.holds():
                        continue
                    exc: BaseException = LeaderLost("the leader lock is no longer held by this server")
                except Exception as err:  # noqa: BLE001 - any failure of the lock connection ends the lead
                    exc = LeaderLost(f"the leader lock's database connection failed: "
                                     f"{str(getattr(err, 'orig', None) or err).strip().splitlines()[0]}")
                if self._closed.is_set():
                    return
                with self._guard:
                    self._held = False
                    self._drop()
                on_lost(exc)
                return

        threading.Thread(target=run, name="makeway-leader-lock", daemon=True).start()

    def close(self) -> None:
        """Give the lock up (closing its session releases it) and stop watching."""
        self._closed.set()
        with self._guard:
            self._held = False
            if self._conn is not None:
                try:
                    self._conn.close()
                except Exception:  # noqa: BLE001 - a dead connection has released the lock anyway
                    pass
                self._conn = None
        self.engine.dispose()


def lock_for(url: str) -> LeaderLock:
    """The leader lock that fits the database at ``url``."""
    from makeway.live.store import make_engine

    engine = make_engine(url)
    try:
        parsed, backend = engine.url, engine.dialect.name
    finally:
        engine.dispose()
    if backend == "postgresql":
        return PgAdvisoryLock(parsed)
    if parsed.database in (None, "", ":memory:"):
        return LeaderLock()
    db = os.path.abspath(parsed.database)
    return FileLock(Path(db + ".serve.lock"), db)


__all__ = ["FileLock", "LEADER_LOCK", "LeaderLock", "LeaderLost", "LockBusy", "PgAdvisoryLock", "lock_for"]

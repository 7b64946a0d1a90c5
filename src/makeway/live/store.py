"""Durable state of the live service: the input journal, one transaction per pass, query tables.

The service acknowledges an input only once it is a committed row of ``events``; a scheduling pass
commits its decisions, the query rows it changed and its ``passes`` row together, so a crash leaves
either the whole pass or none of it. SQLAlchemy Core only: the one in-memory model is the core's
state, the tables are its journal and a read-side view for the API.

Two properties the scheduler loop relies on, and how each backend keeps them:

* The loop reads ``events_after(applied_seq)`` and moves ``applied_seq`` forward, so an event must
  never become visible after one with a higher ``seq``. SQLite has one writer at a time (the writer
  takes the lock at ``BEGIN IMMEDIATE``); PostgreSQL hands out sequence values before commit, so
  appends hold a transaction-scoped advisory lock (``JOURNAL_LOCK``) and commit in ``seq`` order.
* A stale leader must not commit a pass (``expect_epoch``), nor journal a node silent or lost
  (``append_event_as``): the transaction first updates the ``epoch``
  row under its expected value; if another process bumped it, 0 rows match and ``StaleLeader`` is
  raised before anything is written. On PostgreSQL that row lock also orders the pass against a
  concurrent ``bump_epoch``.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import threading
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, IntegrityError
from sqlalchemy.pool import StaticPool

from makeway.errors import MakewayError
from makeway.live.schema import (meta_t, events_t, passes_t, decisions_t, snapshots_t, jobs_t, attempts_t, nodes_t, job_ids_t, tokens_t, audit_t, AUDIT_COLUMNS, _QUERY_TABLES, _DECISION_COLUMNS)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"

# PostgreSQL advisory lock keys (bigint). Callers taking their own advisory locks (leader election)
# must pick other keys.
JOURNAL_LOCK = 0x6D6B_7700_0001
MIGRATE_LOCK = 0x6D6B_7700_0002

KEEP_SNAPSHOTS = 3
_ADVISORY_XACT_LOCK = sa.text("SELECT pg_advisory_xact_lock(:k)")


class StoreError(MakewayError):
    """A database URL or an argument of the store is invalid; the message names which."""


class IdTaken(StoreError):
    """A submit names a job id the journal already holds (the API's 409 naming ``id``)."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        super().__init__(f"id: job {job_id!r} already exists")


class StaleLeader(RuntimeError):
    """A pass was committed under an epoch that is no longer current: another leader took over."""


class EventRow(NamedTuple):
    seq: int
    at: float
    kind: str
    tenant: str
    payload: dict
    idem_key: str | None = None


class Appended(NamedTuple):
    seq: int
    created: bool


class PassRow(NamedTuple):
    pass_no: int
    applied_seq: int
    now: float
    digest: str


# ---------------------------------------------------------------------------------------------- engine

def make_engine(url: str) -> Engine:
    """An engine for ``url`` with the store's per-connection settings (see the module docstring).

    SQLite: WAL and ``synchronous=NORMAL`` on every connection (a commit survives a process crash;
    WAL keeps readers off the writer's lock), the driver's own BEGIN disabled so that SQLAlchemy's
    ``begin`` issues ``BEGIN IMMEDIATE`` for writers and a deferred ``BEGIN`` for read-only work.
    A bare ``postgresql://`` URL gets psycopg 3, the one PostgreSQL driver the project installs.
    """
    try:
        parsed = sa.engine.make_url(url)
    except ArgumentError as exc:
        raise StoreError(f"db: cannot parse database URL {url!r} ({exc})") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        memory = parsed.database in (None, "", ":memory:")
        kw: dict[str, Any] = {"connect_args": {"timeout": 60, "check_same_thread": False}}
        if memory:
            kw["poolclass"] = StaticPool
        engine = sa.create_engine(parsed, json_serializer=_to_json, **kw)
        event.listen(engine, "connect", _sqlite_on_connect)
        event.listen(engine, "begin", _sqlite_on_begin)
        return engine
    if backend == "postgresql":
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        return sa.create_engine(parsed, pool_size=10, max_overflow=20, pool_pre_ping=True, json_serializer=_to_json)
    raise StoreError(f"db: unsupported database {backend!r} in {url!r}; "
                     "use sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DB")


def _sqlite_on_connect(dbapi_conn, _record) -> None:
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def _sqlite_on_begin(conn: Connection) -> None:
    conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("makeway_read") else "BEGIN IMMEDIATE")


# ---------------------------------------------------------------------------------------------- store

class Store:
    """The service's database: open (and migrate) with ``Store(url)``, close with ``close()``.

    Every public method is its own transaction and is safe to call from several threads.
    """

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.dialect = self.engine.dialect.name
        self._writer = threading.Lock() if self.dialect == "sqlite" else None
        self._writer_fd: int | None = None
        db_file = self.engine.url.database if self.dialect == "sqlite" else None
        if db_file not in (None, "", ":memory:"):
            try:
                self._writer_fd = os.open(os.path.abspath(db_file) + ".write.lock", os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                pass  # no directory to write in: opening the database says so, naming the URL
        ins = self._insert()(events_t)
        self._ins_event = events_t.insert().returning(events_t.c.seq)
        self._ins_events = events_t.insert().returning(events_t.c.seq, sort_by_parameter_order=True)
        self._ins_keyed_event = ins.on_conflict_do_nothing(index_elements=["tenant", "idem_key"]).returning(
            events_t.c.seq)
        self._seq_of_key = sa.select(events_t.c.seq).where(events_t.c.tenant == sa.bindparam("t"),
                                                           events_t.c.idem_key == sa.bindparam("k"))
        claim = self._insert()(job_ids_t).on_conflict_do_nothing(index_elements=["id"])
        self._claim_id = claim.values(id=sa.bindparam("id")).returning(job_ids_t.c.id)
        self._claim_ids = claim.returning(job_ids_t.c.id)
        if migrate:
            try:
                self.migrate()
            except sa.exc.OperationalError as exc:
                self.close()
                safe = self.engine.url.render_as_string(hide_password=True)
                raise StoreError(f"db: cannot open {safe}: {str(exc.orig).strip().splitlines()[0]}") from None
            self.meta_setdefault("epoch", "0")

    def close(self) -> None:
        self.engine.dispose()
        if self._writer_fd is not None:
            os.close(self._writer_fd)
            self._writer_fd = None

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------------

    @contextmanager
    def _write(self, *, lock: int | None = None) -> Iterator[Connection]:
        # SQLite has one writer: writers queue on a lock instead of meeting in SQLite's busy handler,
        # which sleeps in steps of milliseconds and serialises badly. Threads of this process queue
        # on a mutex; processes on the same file (serve --api-workers) on an flock beside it, which
        # wakes the next writer as soon as it is released.
        with self._writer if self._writer is not None else nullcontext():
            if self._writer_fd is not None:
                fcntl.flock(self._writer_fd, fcntl.LOCK_EX)
            try:
                with self.engine.begin() as conn:
                    if lock is not None and self.dialect == "postgresql":
                        conn.execute(_ADVISORY_XACT_LOCK, {"k": lock})
                    yield conn
            finally:
                if self._writer_fd is not None:
                    fcntl.flock(self._writer_fd, fcntl.LOCK_UN)

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            conn.execution_options(makeway_read=True)
            with conn.begin():
                yield conn

    def _insert(self):
        return postgresql.insert if self.dialect == "postgresql" else sqlite.insert

    # -- schema ---------------------------------------------------------------------------------

    def migrate(self) -> None:
        """Bring the schema to the newest revision of the packaged Alembic tree; a no-op when it is.

        Runs in one transaction on the store's own engine, so concurrent starters serialize (SQLite's
        write lock, an advisory lock on PostgreSQL) and a failed upgrade leaves the old schema.
        """
        from alembic import command
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
        with self._write(lock=MIGRATE_LOCK) as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def revision(self) -> str | None:
        """The schema revision recorded in the database (None before the first migration)."""
        from alembic.runtime.migration import MigrationContext

        with self._read() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    # -- journal --------------------------------------------------------------------------------

    def append_event(self, kind: str, payload: dict, *, tenant: str = "default",
                     idem_key: str | None = None, at: float) -> Appended:
        """Commit one input; with a ``(tenant, idem_key)`` seen before, return that row's seq instead."""
        return self.append_events([{"kind": kind, "payload": payload, "tenant": tenant,
                                    "idem_key": idem_key, "at": at}])[0]

    def append_event_as(self, epoch: int, kind: str, payload: dict, *, at: float) -> Appended:
        """Commit one input the scheduler itself decided (a node gone silent or lost) only while
        ``epoch`` is current: a stale leader's view of the agents is stale too (``StaleLeader``)."""
        row = _event_row(0, {"kind": kind, "payload": payload, "at": at})
        with self._write(lock=JOURNAL_LOCK) as conn:
            self._check_epoch(conn, epoch, f"{kind} event")
            return self._append(conn, [row])[0]

    def append_events(self, items: Iterable[dict]) -> list[Appended]:
        """Commit a batch of inputs in one transaction, in order; one ``Appended`` per item.

        Each item has ``kind``, ``payload``, ``at`` and optional ``tenant`` and ``idem_key``. A key
        repeated inside the batch maps to the first occurrence.
        """
        return self._append_rows([_event_row(i, item) for i, item in enumerate(items)])

    def _append_rows(self, rows: list[dict], *, per_row: bool = False) -> list[Any]:
        """Commit ``rows`` in one transaction. A submit whose job id is taken raises ``IdTaken``
        (nothing is written), or with ``per_row`` stands in the answer list as that exception
        while the other rows commit (the group committer's batches are unrelated requests)."""
        if not rows:
            return []
        for attempt in range(3):
            try:
                with self._write(lock=JOURNAL_LOCK) as conn:
                    return self._append(conn, rows, per_row)
            except IntegrityError:
                # Another writer committed one of our keys between the look-up and the insert (only
                # possible without the journal lock, e.g. an older process): look again.
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _append(self, conn: Connection, rows: list[dict], per_row: bool = False) -> list[Any]:
        """Idempotency keys first (a retry answers with its first row, even when that row's job id is
        now taken: by itself), then the job ids of the new submits, then one insert of what is new."""
        out: list[Any] = [None] * len(rows)
        keyed = {(r["tenant"], r["idem_key"]) for r in rows if r["idem_key"] is not None}
        known = self._known_keys(conn, keyed) if keyed else {}
        first_of_key: dict[tuple[str, str], int] = {}
        dup_of: dict[int, int] = {}
        fresh: list[int] = []
        for i, r in enumerate(rows):
            if r["idem_key"] is not None:
                key = (r["tenant"], r["idem_key"])
                if key in known:
                    out[i] = Appended(known[key], False)
                    continue
                if key in first_of_key:
                    dup_of[i] = first_of_key[key]
                    continue
                first_of_key[key] = i
            fresh.append(i)
        ids = {i: jid for i in fresh if rows[i]["kind"] == "submit" and (jid := _job_id(rows[i])) is not None}
        if ids:
            wanted = list(dict.fromkeys(ids.values()))
            if len(wanted) == 1:
                claimed = set(conn.execute(self._claim_id, {"id": wanted[0]}).scalars())
            else:
                claimed = set(conn.execute(self._claim_ids, [{"id": j} for j in wanted]).scalars())
            keep = []
            for i in fresh:
                jid = ids.get(i)
                if jid is not None:
                    if jid not in claimed:
                        if not per_row:
                            raise IdTaken(jid)
                        out[i] = IdTaken(jid)
                        continue
                    claimed.discard(jid)  # a second row with the same id in this batch is taken
                keep.append(i)
            fresh = keep
        if len(fresh) == 1:
            out[fresh[0]] = Appended(conn.execute(self._ins_event, rows[fresh[0]]).scalar_one(), True)
        elif fresh:
            seqs = conn.execute(self._ins_events, [rows[i] for i in fresh]).scalars().all()
            for i, seq in zip(fresh, seqs):
                out[i] = Appended(seq, True)
        for i, j in dup_of.items():
            out[i] = out[j] if isinstance(out[j], IdTaken) else Appended(out[j].seq, False)
        return out

    def _known_keys(self, conn: Connection, keyed: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
        if len(keyed) == 1:
            (t, k), = keyed
            seq = conn.execute(self._seq_of_key, {"t": t, "k": k}).scalar_one_or_none()
            return {} if seq is None else {(t, k): seq}
        found = conn.execute(sa.select(events_t.c.seq, events_t.c.tenant, events_t.c.idem_key)
                             .where(events_t.c.idem_key.in_(sorted({k for _, k in keyed}))))
        return {(t, k): s for s, t, k in found if (t, k) in keyed}

    def append_audited(self, kind: str, payload: dict, audit: dict, *, tenant: str = "default",
                       idem_key: str | None = None, at: float) -> Appended:
        """Commit one input and its audit row (``seq`` filled in) together; a retried key writes no
        second audit row. For the rare inputs someone must answer for: quotas, cancels, preemptions."""
        row = _event_row(0, {"kind": kind, "payload": payload, "tenant": tenant, "idem_key": idem_key, "at": at})
        arow = _audit_row(audit)
        with self._write(lock=JOURNAL_LOCK) as conn:
            got = self._append(conn, [row])[0]
            if got.created:
                conn.execute(sa.insert(audit_t), {**arow, "seq": got.seq})
        return got

    def events_after(self, seq: int, limit: int | None = None) -> list[EventRow]:
        """Events with a seq above ``seq``, in seq order (at most ``limit``)."""
        q = sa.select(events_t).where(events_t.c.seq > seq).order_by(events_t.c.seq)
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            return [_event(r) for r in conn.execute(q)]

    def event(self, seq: int) -> EventRow | None:
        with self._read() as conn:
            r = conn.execute(sa.select(events_t).where(events_t.c.seq == seq)).first()
        return None if r is None else _event(r)

    def max_seq(self) -> int:
        """The highest committed seq, 0 for an empty journal."""
        with self._read() as conn:
            return int(conn.execute(sa.select(sa.func.coalesce(sa.func.max(events_t.c.seq), 0))).scalar_one())

    # -- passes ---------------------------------------------------------------------------------

    def record_pass(self, pass_no: int, applied_seq: int, now: float, digest: str,
                    decisions: list[dict] = (), jobs: list[dict] = (), attempts: list[dict] = (),
                    nodes: list[dict] = (), snapshot: bytes | None = None, *,
                    expect_epoch: int | None = None) -> None:
        """Commit one scheduling pass: its query-table upserts, its decisions, its snapshot, and the
        ``passes`` row last, all or nothing.

        Row dicts carry column names of their table (a job row needs ``id``, etc.); an upsert
        overwrites the columns a row gives and leaves the others, and a row lacking a column a new
        row needs only updates an existing one (``StoreError`` if there is none). Raises
        ``StaleLeader`` (and writes nothing) when ``expect_epoch`` is given and ``meta.epoch`` differs.
        A repeated ``pass_no`` is an ``IntegrityError``: the pass is not written twice.
        """
        dec_rows = []
        for i, d in enumerate(decisions):
            extra = set(d) - set(_DECISION_COLUMNS)
            if extra:
                raise StoreError(f"decisions[{i}]: unknown column(s) {sorted(extra)}")
            dec_rows.append({"pass_no": pass_no, **{c: d.get(c) for c in _DECISION_COLUMNS}})
        with self._write() as conn:
            if expect_epoch is not None:
                self._check_epoch(conn, expect_epoch, f"pass {pass_no}")
            for name, rows in (("jobs", jobs), ("attempts", attempts), ("nodes", nodes)):
                self._upsert(conn, name, rows)
            if dec_rows:
                conn.execute(sa.insert(decisions_t), dec_rows)
            if snapshot is not None:
                ins = self._insert()(snapshots_t).values(pass_no=pass_no, blob=bytes(snapshot))
                conn.execute(ins.on_conflict_do_update(index_elements=["pass_no"],
                                                       set_={"blob": ins.excluded.blob}))
                keep = sa.select(snapshots_t.c.pass_no).order_by(snapshots_t.c.pass_no.desc()).limit(KEEP_SNAPSHOTS)
                conn.execute(sa.delete(snapshots_t).where(snapshots_t.c.pass_no.not_in(keep.scalar_subquery())))
            conn.execute(sa.insert(passes_t).values(pass_no=pass_no, applied_seq=applied_seq, now=now,
                                                  digest=digest))

    @staticmethod
    def _check_epoch(conn: Connection, epoch: int, what: str) -> None:
        """Touch the ``epoch`` row under its expected value, or raise ``StaleLeader``; the row lock this
        takes on PostgreSQL orders the transaction against a concurrent ``bump_epoch``."""
        hit = conn.execute(
            sa.update(meta_t).where(meta_t.c.key == "epoch", meta_t.c.value == str(int(epoch)))
            .values(value=meta_t.c.value)
        ).rowcount
        if hit != 1:
            raise StaleLeader(f"{what}: epoch {epoch} is no longer current (another server leads now)")

    def _upsert(self, conn: Connection, name: str, rows: Iterable[dict]) -> None:
        table, pk = _QUERY_TABLES[name]
        columns = set(table.c.keys())
        last: dict[Any, dict] = {}
        for i, r in enumerate(rows):
            if pk not in r:
                raise StoreError(f"{name}[{i}]: missing {pk!r}")
            extra = set(r) - columns
            if extra:
                raise StoreError(f"{name}[{i}]: unknown column(s) {sorted(extra)}")
            last[r[pk]] = r
        required = {c.name for c in table.c if not c.nullable and c.name != pk}
        groups: dict[tuple[str, ...], list[dict]] = {}
        for r in last.values():
            groups.setdefault(tuple(sorted(r)), []).append(r)
        for cols, group in groups.items():
            if required <= set(cols):
                ins = self._insert()(table)
                changed = {c: ins.excluded[c] for c in cols if c != pk}
                stmt = (ins.on_conflict_do_update(index_elements=[pk], set_=changed) if changed
                        else ins.on_conflict_do_nothing(index_elements=[pk]))
                conn.execute(stmt, group)
            else:
                self._update_existing(conn, name, table, pk, cols, group)

    def _update_existing(self, conn: Connection, name: str, table: sa.Table, pk: str,
                         cols: tuple[str, ...], group: list[dict]) -> None:
        """A row without every required column changes an existing row; a missing one is an error."""
        if len(cols) == 1:
            found = set(conn.execute(sa.select(table.c[pk]).where(table.c[pk].in_([r[pk] for r in group])))
                        .scalars())
            missing = [r[pk] for r in group if r[pk] not in found]
        else:
            missing = [r[pk] for r in group
                       if conn.execute(sa.update(table).where(table.c[pk] == r[pk])
                                       .values({c: r[c] for c in cols if c != pk})).rowcount != 1]
        if missing:
            raise StoreError(f"{name}: no row {missing[0]!r} to update, and the row given lacks the "
                             f"columns a new one needs ({', '.join(sorted(set(table.c.keys()) - set(cols)))})")

    def passes_after(self, pass_no: int, limit: int | None = None) -> list[PassRow]:
        q = sa.select(passes_t).where(passes_t.c.pass_no > pass_no).order_by(passes_t.c.pass_no)
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            return [PassRow(*r) for r in conn.execute(q)]

    def last_pass(self) -> PassRow | None:
        with self._read() as conn:
            r = conn.execute(sa.select(passes_t).order_by(passes_t.c.pass_no.desc()).limit(1)).first()
        return None if r is None else PassRow(*r)

    def latest_snapshot(self) -> tuple[int, bytes] | None:
        with self._read() as conn:
            r = conn.execute(sa.select(snapshots_t).order_by(snapshots_t.c.pass_no.desc()).limit(1)).first()
        return None if r is None else (int(r.pass_no), bytes(r.blob))

    # -- meta -----------------------------------------------------------------------------------

    def meta_get(self, key: str, default: str | None = None) -> str | None:
        with self._read() as conn:
            v = conn.execute(sa.select(meta_t.c.value).where(meta_t.c.key == key)).scalar_one_or_none()
        return default if v is None else v

    def meta_set(self, key: str, value: str) -> None:
        _need_str("meta value", value)
        with self._write() as conn:
            ins = self._insert()(meta_t).values(key=key, value=value)
            conn.execute(ins.on_conflict_do_update(index_elements=["key"], set_={"value": ins.excluded.value}))

    def meta_setdefault(self, key: str, value: str) -> str:
        """Set ``key`` only if absent; return the value that is stored (race-safe first writer wins)."""
        _need_str("meta value", value)
        with self._write() as conn:
            conn.execute(self._insert()(meta_t).values(key=key, value=value)
                         .on_conflict_do_nothing(index_elements=["key"]))
            return conn.execute(sa.select(meta_t.c.value).where(meta_t.c.key == key)).scalar_one()

    def bump_epoch(self) -> int:
        """Make a new epoch current and return it; passes committed under an older one fail."""
        with self._write() as conn:
            q = sa.select(meta_t.c.value).where(meta_t.c.key == "epoch")
            if self.dialect == "postgresql":
                q = q.with_for_update()
            new = int(conn.execute(q).scalar_one_or_none() or 0) + 1
            ins = self._insert()(meta_t).values(key="epoch", value=str(new))
            conn.execute(ins.on_conflict_do_update(index_elements=["key"], set_={"value": ins.excluded.value}))
        return new

    def epoch(self) -> int:
        return int(self.meta_get("epoch", "0"))

    # -- queries for the API --------------------------------------------------------------------

    def job(self, job_id: str) -> dict | None:
        with self._read() as conn:
            r = conn.execute(sa.select(jobs_t).where(jobs_t.c.id == job_id)).first()
        return None if r is None else r._asdict()

    def jobs(self, state: str | None = None, queue: str | None = None, tenant: str | None = None,
             limit: int | None = 1000) -> list[dict]:
        """Jobs in submission order (ties by id), filtered by the arguments that are given."""
        q = sa.select(jobs_t)
        for col, v in ((jobs_t.c.state, state), (jobs_t.c.queue, queue), (jobs_t.c.tenant, tenant)):
            if v is not None:
                q = q.where(col == v)
        q = q.order_by(jobs_t.c.submitted, jobs_t.c.id)
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            return [r._asdict() for r in conn.execute(q)]

    def attempts_of(self, job_id: str) -> list[dict]:
        q = sa.select(attempts_t).where(attempts_t.c.job == job_id).order_by(attempts_t.c.task, attempts_t.c.attempt_no)
        with self._read() as conn:
            return [r._asdict() for r in conn.execute(q)]

    def attempts_on(self, node: str, states: Iterable[str] | None = None) -> list[dict]:
        q = sa.select(attempts_t).where(attempts_t.c.node == node)
        if states is not None:
            q = q.where(attempts_t.c.state.in_(list(states)))
        with self._read() as conn:
            return [r._asdict() for r in conn.execute(q.order_by(attempts_t.c.attempt))]

    def decisions(self, kind: str | None = "preempt", after_id: int = 0, limit: int | None = 100,
                  workload: str | None = None) -> list[dict]:
        """Decisions in commit order after ``after_id``; ``kind=None`` for every kind (the feed pages on id)."""
        q = sa.select(decisions_t).where(decisions_t.c.id > after_id)
        if kind is not None:
            q = q.where(decisions_t.c.kind == kind)
        if workload is not None:
            q = q.where(decisions_t.c.workload == workload)
        q = q.order_by(decisions_t.c.id)
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            return [r._asdict() for r in conn.execute(q)]

    def nodes(self) -> list[dict]:
        with self._read() as conn:
            return [r._asdict() for r in conn.execute(sa.select(nodes_t).order_by(nodes_t.c.name))]


    # -- tokens and audit -------------------------------------------------------------------------

    def add_token(self, token_id: str, hash_: str, name: str, role: str, tenant: str | None, created: float) -> None:
        """Store a token's lookup id and hash (never the token); ``StoreError`` naming ``name`` or ``id``
        when either is taken."""
        with self._write() as conn:
            taken = conn.execute(sa.select(tokens_t.c.id, tokens_t.c.name).where(
                sa.or_(tokens_t.c.id == token_id, tokens_t.c.name == name))).first()
            if taken is not None:
                field = "name" if taken.name == name else "id"
                raise StoreError(f"{field}: a token named {name!r} exists" if field == "name"
                                 else f"id: token id {token_id!r} is taken")
            conn.execute(sa.insert(tokens_t).values(id=token_id, hash=hash_, name=name, role=role, tenant=tenant,
                                                    created=created, revoked=None))

    def token(self, token_id: str) -> dict | None:
        with self._read() as conn:
            r = conn.execute(sa.select(tokens_t).where(tokens_t.c.id == token_id)).first()
        return None if r is None else r._asdict()

    def tokens(self) -> list[dict]:
        """Every token, revoked ones too, oldest first (hash left out)."""
        cols = [c for c in tokens_t.c if c.name != "hash"]
        with self._read() as conn:
            return [r._asdict() for r in conn.execute(sa.select(*cols).order_by(tokens_t.c.created, tokens_t.c.id))]

    def has_tokens(self) -> bool:
        """Whether any token was ever created: revoking the last one does not open the server up."""
        with self._read() as conn:
            return conn.execute(sa.select(tokens_t.c.id).limit(1)).first() is not None

    def revoke_token(self, id_or_name: str, at: float) -> dict | None:
        """Revoke the token with this id or name; its row (None when there is none). Idempotent."""
        with self._write() as conn:
            r = conn.execute(sa.select(tokens_t).where(
                sa.or_(tokens_t.c.id == id_or_name, tokens_t.c.name == id_or_name))).first()
            if r is None:
                return None
            if r.revoked is None:
                conn.execute(sa.update(tokens_t).where(tokens_t.c.id == r.id).values(revoked=at))
            row = r._asdict()
            row.pop("hash")
            row["revoked"] = row["revoked"] if row["revoked"] is not None else at
            return row

    def add_audit(self, row: dict) -> int:
        """Append one audit row (columns of ``AUDIT_COLUMNS``); its id."""
        arow = _audit_row(row)
        with self._write() as conn:
            return int(conn.execute(sa.insert(audit_t).values(**arow).returning(audit_t.c.id)).scalar_one())

    def audit(self, tenant: str | None = None, after_id: int = 0, limit: int | None = 1000) -> list[dict]:
        """Audit rows in order after ``after_id``; with ``tenant``, the rows its principals made or
        whose target is in its subtree."""
        q = sa.select(audit_t).where(audit_t.c.id > after_id)
        if tenant is not None:
            q = q.where(sa.or_(audit_t.c.tenant == tenant, audit_t.c.target_tenant == tenant))
        q = q.order_by(audit_t.c.id)
        if limit is not None:
            q = q.limit(limit)
        with self._read() as conn:
            return [r._asdict() for r in conn.execute(q)]


def migrate(url: str) -> None:
    """Bring the database at ``url`` to the newest schema (what opening a ``Store`` does first)."""
    Store(url).close()


# ---------------------------------------------------------------------------------------------- group commit

# ---------------------------------------------------------------------------------------------- rows

def _need_str(field: str, v: Any) -> None:
    if not isinstance(v, str):
        raise StoreError(f"{field}: expected a string, got {type(v).__name__}")


def _event_row(i: int, item: dict) -> dict:
    where = f"events[{i}]"
    kind, payload, at = item.get("kind"), item.get("payload"), item.get("at")
    tenant, idem_key = item.get("tenant", "default"), item.get("idem_key")
    if not isinstance(kind, str) or not kind:
        raise StoreError(f"{where}.kind: expected a non-empty string, got {kind!r}")
    if not isinstance(payload, dict):
        raise StoreError(f"{where}.payload: expected an object, got {type(payload).__name__}")
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
        raise StoreError(f"{where}.at: expected a finite number, got {at!r}")
    _need_str(f"{where}.tenant", tenant)
    if idem_key is not None:
        _need_str(f"{where}.idem_key", idem_key)
    try:
        text = json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{where}.payload: not JSON ({exc})") from None
    return {"kind": kind, "payload": _Encoded(payload, text), "at": float(at), "tenant": tenant, "idem_key": idem_key}


class _Encoded(dict):
    """A payload with the JSON text the check above made, so the insert does not encode it again
    (a submit's spec is a real share of its CPU at thousands a second)."""

    __slots__ = ("text",)

    def __init__(self, payload: dict, text: str) -> None:
        super().__init__(payload)
        self.text = text


def _to_json(value: Any) -> str:
    """The engines' JSON encoder: the text already made for an ``_Encoded`` payload, else ``json.dumps``."""
    return value.text if type(value) is _Encoded else json.dumps(value)


def _job_id(row: dict) -> str | None:
    """The job id a submit row claims (None for a payload without one: the store's own tests)."""
    job = row["payload"].get("job")
    jid = job.get("id") if isinstance(job, dict) else None
    return jid if isinstance(jid, str) else None


def _audit_row(row: dict) -> dict:
    extra = set(row) - set(AUDIT_COLUMNS)
    if extra:
        raise StoreError(f"audit: unknown column(s) {sorted(extra)}")
    for col in ("who", "role", "action", "target", "outcome"):
        if not isinstance(row.get(col), str) or not row[col]:
            raise StoreError(f"audit.{col}: expected a non-empty string, got {row.get(col)!r}")
    at = row.get("at")
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
        raise StoreError(f"audit.at: expected a finite number, got {at!r}")
    out = {c: row.get(c) for c in AUDIT_COLUMNS}
    out["at"] = float(at)
    out["status"] = int(row.get("status") or 0)
    return out


def _event(r) -> EventRow:
    return EventRow(int(r.seq), float(r.at), r.kind, r.tenant, r.payload, r.idem_key)

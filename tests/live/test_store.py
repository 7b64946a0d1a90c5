"""The live store on SQLite and PostgreSQL: migrations, the idempotent journal under concurrency,
all-or-nothing passes, the epoch guard, snapshots, and SQLite's WAL / BEGIN IMMEDIATE settings."""

from __future__ import annotations

import sqlite3
import threading

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.exc import IntegrityError

from makeway.errors import MakewayError
from makeway.live.group_commit import GroupCommit
from makeway.live.schema import metadata
from makeway.live.store import KEEP_SNAPSHOTS, StaleLeader, Store, StoreError, migrate

TABLES = {"meta", "events", "passes", "decisions", "snapshots", "jobs", "attempts", "nodes", "tokens", "audit"}


def _head() -> str:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from makeway.live.store import MIGRATIONS

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(cfg).get_current_head()


HEAD = _head()


@pytest.fixture
def store(db_url):
    s = Store(db_url)
    yield s
    s.close()


def job_row(job_id, state="pending", queue="q", submitted=1.0, tenant="default", **kw):
    return {"id": job_id, "queue": queue, "state": state, "tenant": tenant, "spec": {"id": job_id},
            "submitted": submitted, **kw}


def count(store, table):
    with store.engine.connect() as conn:
        return conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one()


# -- migrations -------------------------------------------------------------------------------------

def test_migration_creates_the_tables_and_a_second_run_changes_nothing(db_url):
    migrate(db_url)  # on the empty database
    with Store(db_url) as s:
        assert TABLES | {"alembic_version"} <= set(sa.inspect(s.engine).get_table_names())
        assert s.revision() == HEAD
        seq = s.append_event("submit", {"job": {"id": "a"}}, at=0.5).seq
        statements: list[str] = []
        sa.event.listen(s.engine, "before_cursor_execute",
                        lambda conn, cur, stmt, *a: statements.append(stmt.lstrip().upper()))
        s.migrate()
        ddl = [st for st in statements if st.startswith(("CREATE", "ALTER", "DROP"))]
        assert statements and not ddl
        assert s.revision() == HEAD
        assert [e.seq for e in s.events_after(0)] == [seq]
    with Store(db_url) as again:  # reopening migrates again: still one row, same epoch
        assert again.max_seq() == seq and again.epoch() == 0


def test_migrated_schema_equals_the_store_metadata(store):
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)
    assert diff == []


# -- journal ----------------------------------------------------------------------------------------

def test_append_with_a_repeated_key_returns_the_first_seq_and_writes_once(store):
    first = store.append_event("submit", {"job": {"id": "a"}}, idem_key="k", at=1.0)
    again = store.append_event("submit", {"job": {"id": "other"}}, idem_key="k", at=2.0)
    other_tenant = store.append_event("submit", {"job": {"id": "b"}}, tenant="t2", idem_key="k", at=2.0)
    keyless = [store.append_event("cancel", {"job": "a"}, at=3.0) for _ in range(2)]
    assert first.created and not again.created and again.seq == first.seq
    assert other_tenant.created and other_tenant.seq > first.seq
    assert all(k.created for k in keyless) and keyless[0].seq < keyless[1].seq
    rows = store.events_after(0)
    assert [r.seq for r in rows] == [first.seq, other_tenant.seq, keyless[0].seq, keyless[1].seq]
    assert rows[0].payload == {"job": {"id": "a"}} and rows[0].at == 1.0 and rows[1].tenant == "t2"
    assert store.event(first.seq) == rows[0] and store.max_seq() == keyless[1].seq
    assert store.events_after(first.seq, limit=2) == rows[1:3]


@pytest.mark.parametrize("pad", [0, 30], ids=["small", "large"])  # both insert paths on both databases
def test_batch_append_is_one_answer_per_item_in_order(store, pad):
    old = store.append_event("submit", {"n": 0}, idem_key="old", at=0.0)
    got = store.append_events([
        {"kind": "submit", "payload": {"n": 1}, "idem_key": "x", "at": 1.0},
        {"kind": "submit", "payload": {"n": 2}, "idem_key": "old", "at": 1.0},
        {"kind": "submit", "payload": {"n": 3}, "at": 1.0},
        {"kind": "submit", "payload": {"n": 4}, "idem_key": "x", "at": 1.0},
        *({"kind": "submit", "payload": {"n": 5 + i}, "idem_key": f"p{i}", "at": 1.0} for i in range(pad)),
    ])
    assert [g.created for g in got] == [True, False, True, False] + [True] * pad
    assert got[1].seq == old.seq and got[3].seq == got[0].seq and got[0].seq < got[2].seq
    assert [g.seq for g in got[4:]] == sorted({g.seq for g in got[4:]}) and store.max_seq() == max(g.seq for g in got)
    assert [e.payload["n"] for e in store.events_after(old.seq)] == [1, 3] + [5 + i for i in range(pad)]


def test_concurrent_appends_keep_one_row_per_key_in_seq_order_and_lose_nothing(store):
    threads_n, per_thread = 8, 30
    answers: dict[int, list] = {}
    seen: list[int] = []
    done = threading.Event()
    errors: list[BaseException] = []

    def writer(t):
        out = []
        try:
            for i in range(per_thread):
                key = f"shared-{i % 10}" if i % 3 == 0 else (None if i % 3 == 1 else f"own-{t}-{i}")
                out.append((key, store.append_event("submit", {"t": t, "i": i}, idem_key=key, at=float(i))))
        except BaseException as exc:
            errors.append(exc)
        answers[t] = out

    def tail():
        # the scheduler loop's pattern: read after the highest seq seen; an event that became
        # visible below that cursor would be lost
        cursor = 0
        while True:
            last = done.is_set()
            for e in store.events_after(cursor):
                seen.append(e.seq)
                cursor = e.seq
            if last:
                return

    reader = threading.Thread(target=tail)
    reader.start()
    workers = [threading.Thread(target=writer, args=(t,)) for t in range(threads_n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    done.set()
    reader.join()
    assert not errors

    rows = store.events_after(0)
    seqs = [r.seq for r in rows]
    assert seqs == sorted(set(seqs))
    by_key: dict[str, set[int]] = {}
    created = []
    for t, out in answers.items():
        mine = [a.seq for _, a in out if a.created]
        assert mine == sorted(mine), "a thread's own appends commit in order"
        for key, a in out:
            if key is not None:
                by_key.setdefault(key, set()).add(a.seq)
            if a.created:
                created.append(a.seq)
    assert all(len(s) == 1 for s in by_key.values()), "a repeated key maps to one seq"
    keyed_rows = [r for r in rows if r.idem_key is not None]
    assert len(keyed_rows) == len(by_key) == 10 + threads_n * 10
    assert sorted(created) == seqs, "every created answer is a row, every row was answered"
    assert seen == seqs, "a reader following the journal sees every event, in order"


def test_group_commit_answers_each_caller_after_its_batch_commits(store):
    answers: dict[tuple[int, int], object] = {}

    def caller(t):
        for i in range(25):
            key = f"k{i % 5}" if i % 2 == 0 else None
            answers[t, i] = (key, committer.append("submit", {"t": t, "i": i}, idem_key=key, at=1.0))

    with GroupCommit(store, max_batch=16) as committer:
        threads = [threading.Thread(target=caller, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        with pytest.raises(StoreError, match=r"events\[0\]\.payload"):
            committer.submit("submit", "not an object", at=1.0)  # fails alone, in the caller's thread
        last = committer.append("cancel", {"job": "x"}, at=2.0)
    with pytest.raises(RuntimeError, match="closed"):
        committer.submit("submit", {}, at=3.0)
    rows = store.events_after(0)
    assert [r.seq for r in rows][-1] == last.seq and len(rows) == 5 + 8 * 12 + 1
    by_key: dict[str, set[int]] = {}
    for key, a in answers.values():
        if key is not None:
            by_key.setdefault(key, set()).add(a.seq)
    assert sorted(by_key) == ["k0", "k1", "k2", "k3", "k4"] and all(len(v) == 1 for v in by_key.values())
    created = sorted(a.seq for _, a in answers.values() if a.created)
    assert created + [last.seq] == [r.seq for r in rows]


def test_bad_events_are_refused_naming_the_field(store):
    with pytest.raises(StoreError, match=r"events\[0\]\.at"):
        store.append_event("submit", {}, at=float("nan"))
    with pytest.raises(StoreError, match=r"events\[1\]\.payload"):
        store.append_events([{"kind": "x", "payload": {}, "at": 0}, {"kind": "x", "payload": [], "at": 0}])
    with pytest.raises(StoreError, match=r"events\[0\]\.payload: not JSON"):
        store.append_event("submit", {"x": object()}, at=0.0)
    with pytest.raises(StoreError, match=r"events\[0\]\.kind"):
        store.append_event("", {}, at=0.0)
    assert store.max_seq() == 0


def test_an_unusable_url_is_a_makeway_error():
    with pytest.raises(MakewayError, match="db: unsupported database 'mysql'"):
        Store("mysql://u@h/db")
    with pytest.raises(StoreError, match="db: cannot parse"):
        Store("not a url")


def test_a_database_that_cannot_be_opened_is_a_makeway_error(tmp_path):
    with pytest.raises(StoreError, match=r"db: cannot open sqlite:///.*/missing/s\.db: unable to open"):
        Store(f"sqlite:///{tmp_path / 'missing' / 's.db'}")
    with pytest.raises(StoreError, match=r"db: cannot open postgresql\+psycopg://u:\*\*\*@127\.0\.0\.1:1/x: "):
        Store("postgresql://u:secret@127.0.0.1:1/x")


# -- passes -----------------------------------------------------------------------------------------

def test_a_pass_writes_decisions_query_rows_and_pass_together(store):
    now = 0.1 + 0.2
    store.record_pass(
        1, 0, now, "d1",
        decisions=[{"idx": 0, "kind": "start", "task": "a/0/0", "node": "n1", "workload": "a"},
                   {"idx": 1, "kind": "preempt", "task": "b/0/0", "node": "n1", "workload": "b",
                    "reason": {"model": "kueue", "rule": "r", "preemptor": "a", "values": {"x": 1.5}}}],
        jobs=[job_row("b", "running", submitted=0.0), job_row("a", "pending", submitted=0.0)],
        attempts=[{"attempt": "a/0/0#1", "job": "a", "task": "a/0/0", "attempt_no": 1, "node": "n1",
                   "state": "assigned"}],
        nodes=[{"name": "n2", "capacity": {"cpu": 4}, "labels": {}, "state": "ready"},
               {"name": "n1", "capacity": {"cpu": 8}, "labels": {"z": "a"}, "state": "ready", "last_seen": 0.2}],
    )
    # partial rows change only the columns they carry
    store.record_pass(2, 0, 1.0, "d2", jobs=[{"id": "b", "state": "preempting", "reason": {"rule": "r"}}])
    assert store.passes_after(0) == [(1, 0, now, "d1"), (2, 0, 1.0, "d2")]
    assert store.last_pass().pass_no == 2 and store.passes_after(1, limit=5)[0].digest == "d2"
    assert [j["id"] for j in store.jobs()] == ["a", "b"]  # submitted ties broken by id
    b = store.job("b")
    assert (b["state"], b["queue"], b["reason"], b["pending"]) == ("preempting", "q", {"rule": "r"}, None)
    assert [j["id"] for j in store.jobs(state="pending")] == ["a"] and store.jobs(queue="none") == []
    assert store.attempts_of("a")[0]["state"] == "assigned" and store.attempts_on("n1")[0]["job"] == "a"
    pre = store.decisions()
    assert [(d["kind"], d["workload"], d["pass_no"]) for d in pre] == [("preempt", "b", 1)]
    assert pre[0]["reason"]["values"] == {"x": 1.5}
    everything = store.decisions(kind=None)
    assert [d["idx"] for d in everything] == [0, 1]
    assert store.decisions(kind=None, after_id=everything[0]["id"]) == pre
    assert [n["name"] for n in store.nodes()] == ["n1", "n2"]
    with pytest.raises(StoreError, match=r"jobs: no row 'zz' to update"):
        store.record_pass(3, 0, 2.0, "d3", jobs=[{"id": "zz", "state": "running"}])
    with pytest.raises(IntegrityError):  # a pass number is written once
        store.record_pass(2, 0, 2.0, "again", jobs=[job_row("c")])
    assert store.last_pass() == (2, 0, 1.0, "d2") and store.job("c") is None


@pytest.mark.parametrize("bad", ["attempt", "decision"])
def test_a_pass_that_fails_midway_leaves_nothing(store, bad):
    store.record_pass(1, 0, 0.0, "d1", jobs=[job_row("a")])
    attempts = [{"attempt": "a/0/0#1", "job": "a", "task": "a/0/0", "attempt_no": 1, "node": "n1",
                 "state": None if bad == "attempt" else "assigned"}]
    decisions = [{"idx": 0, "kind": "start", "task": "a/0/0", "workload": "a"},
                 {"idx": 1, "kind": None if bad == "decision" else "start", "task": "a/0/1"}]
    with pytest.raises(IntegrityError):
        store.record_pass(2, 5, 1.0, "d2", decisions=decisions,
                          jobs=[job_row("a", "running"), job_row("b")], attempts=attempts,
                          nodes=[{"name": "n1", "capacity": {}, "labels": {}, "state": "ready"}],
                          snapshot=b"state")
    assert store.last_pass().pass_no == 1
    assert store.job("a")["state"] == "pending" and store.job("b") is None
    assert count(store, "decisions") == 0 and count(store, "attempts") == 0 and store.nodes() == []
    assert store.latest_snapshot() is None


def test_a_stale_epoch_commits_nothing(store):
    assert store.epoch() == 0
    store.record_pass(1, 0, 0.0, "d1", jobs=[job_row("a")], expect_epoch=0)
    assert store.bump_epoch() == 1 and store.bump_epoch() == 2 and store.epoch() == 2
    with pytest.raises(StaleLeader):
        store.record_pass(2, 0, 1.0, "d2", decisions=[{"idx": 0, "kind": "start", "task": "a/0/0"}],
                          jobs=[job_row("a", "running")], snapshot=b"x", expect_epoch=1)
    assert store.last_pass().pass_no == 1 and store.job("a")["state"] == "pending"
    assert count(store, "decisions") == 0 and store.latest_snapshot() is None
    store.record_pass(2, 0, 1.0, "d2", jobs=[job_row("a", "running")], expect_epoch=2)
    assert store.job("a")["state"] == "running"


def test_snapshot_round_trip_keeps_the_latest_few(store):
    blob = bytes(range(256)) * 4096  # 1 MiB, every byte value
    for n in range(1, KEEP_SNAPSHOTS + 3):
        store.record_pass(n, n, float(n), f"d{n}", snapshot=blob + n.to_bytes(2, "big"))
    store.record_pass(KEEP_SNAPSHOTS + 3, 0, 9.0, "no snapshot")
    last = KEEP_SNAPSHOTS + 2
    assert store.latest_snapshot() == (last, blob + last.to_bytes(2, "big"))
    assert count(store, "snapshots") == KEEP_SNAPSHOTS


def test_meta_values_and_first_writer_wins(store):
    assert store.meta_get("clock_origin") is None and store.meta_get("clock_origin", "x") == "x"
    assert store.meta_setdefault("clock_origin", "100.5") == "100.5"
    assert store.meta_setdefault("clock_origin", "200") == "100.5"
    store.meta_set("clock_origin", "7")
    assert store.meta_get("clock_origin") == "7"
    with pytest.raises(StoreError, match="meta value"):
        store.meta_set("k", 3)


# -- SQLite settings --------------------------------------------------------------------------------

def test_sqlite_runs_in_wal_mode_and_writers_take_the_lock_at_begin(tmp_path):
    path = tmp_path / "w.db"
    with Store(f"sqlite:///{path}") as s:
        with s.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persistent in the file
            with s._write():  # nothing written yet, but BEGIN IMMEDIATE already holds the write lock
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    other.execute("BEGIN IMMEDIATE")
                with s._read() as reader:  # readers are not blocked by the writer (WAL)
                    assert reader.exec_driver_sql("SELECT count(*) FROM events").scalar() == 0
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
        finally:
            other.close()

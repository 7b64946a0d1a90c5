"""``makeway serve --api-workers N``: acceptor processes journal submits beside the scheduler's process.

Real processes on 127.0.0.1. Which acceptor takes a connection is the kernel's choice, so the tests
learn it: a submit's answer names its process (``x-makeway-worker``; 0 is the scheduler's, which
stops taking connections once acceptors serve), and a keep-alive connection stays with the process
that accepted it.
"""

from __future__ import annotations

import os
import signal
import ssl
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml

from makeway.live.group_commit import GroupCommit
from makeway.live.schema import events_t, job_ids_t
from makeway.live.store import IdTaken, Store
from tests.live.harness import Served, kill_leftovers, wait_for


def config(tmp: Path) -> Path:
    queues = {"root": {}, **{q: {"parent": "root", "guaranteed": {"cpu": 500}} for q in "ab"}}
    path = tmp / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "acceptors", "resources": ["cpu"], "queues": queues,
                                    "nodes": [{"name": "n", "count": 1, "capacity": {"cpu": 1000}}],
                                    "preemption": {"model": "kueue"}}))
    return path


def job(jid: str, queue: str = "a") -> dict:
    return {"id": jid, "queue": queue, "tasks": [{"count": 1, "resources": {"cpu": 1}}], "command": ["true"]}


def acceptors_of(pid: int) -> list[int]:
    """The acceptor processes serve started (its children running makeway.live.acceptor)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (d / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"makeway.live.acceptor" in cmd:
            out.append(int(d.name))
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


_TLS = ssl.create_default_context()  # made once: a client makes one per instance otherwise (slow)


def client(url: str, **kw) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=20, verify=_TLS, **kw)


def connections_by_worker(url: str, want: set[str], prefix: str, tries: int = 80) -> dict[str, httpx.Client]:
    """Keep-alive connections, one per process in ``want`` that answered, until each is seen."""
    found: dict[str, httpx.Client] = {}
    for i in range(tries):
        c = client(url, limits=httpx.Limits(max_connections=1))
        r = c.post("/v1/jobs", json=job(f"{prefix}-{i}"))
        assert r.status_code == 201, r.text
        w = r.headers["x-makeway-worker"]
        if w in found or w not in want:
            c.close()
        else:
            found[w] = c
        if set(found) == want:
            break
    return found


def every_worker(url: str, want: set[str]) -> dict[str, httpx.Client] | None:
    found = connections_by_worker(url, want, f"probe{time.monotonic_ns()}", tries=30)
    if set(found) == want:
        return found
    for c in found.values():
        c.close()
    return None


def race(url: str, body: dict, n: int, headers: dict | None = None) -> list[httpx.Response]:
    """``n`` fresh connections post ``body`` at the same moment."""
    clients = [client(url) for _ in range(n)]
    for c in clients:
        c.get("/healthz")  # connect first, so the posts start together
    go = threading.Barrier(n)
    out: list = [None] * n

    def post(i: int) -> None:
        go.wait()
        out[i] = clients[i].post("/v1/jobs", json=body, headers=headers or {})

    ts = [threading.Thread(target=post, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    for c in clients:
        c.close()
    return out


@pytest.fixture
def served(tmp_path):
    started: list[Served] = []

    def start(db: str, workers: int = 3, ready: bool = True) -> Served:
        s = Served(config(tmp_path), db, tmp_path, recovery_grace=0, local_agent=False,
                   extra=["--api-workers", str(workers), "--lease", "0"]).start()
        if ready:
            s.ready()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop(signal.SIGKILL)
    kill_leftovers(str(tmp_path))


def test_submits_through_several_processes(served, tmp_path):
    s = served(f"sqlite:///{tmp_path / 'store.db'}")
    # serve answers before it has started its acceptors: on a loaded machine they come a moment later
    pids = wait_for(lambda: len(acceptors_of(s.proc.pid)) == 2 and acceptors_of(s.proc.pid), 30, "two acceptors")
    assert len(pids) == 2
    conns = wait_for(lambda: every_worker(s.url, {"1", "2"}), 30, "the acceptors to serve")  # after the leader
    for c in conns.values():
        c.close()
    s.post("/v1/agent/register", {"node": "n-0", "capacity": {"cpu": 1000}, "attempts": []}).raise_for_status()

    # 200 single submits over 8 keep-alive connections: every one a 201, from more than one process
    workers: dict[str, int] = {}
    ok: list[str] = []
    lock = threading.Lock()

    def post_jobs(c: int) -> None:
        with client(s.url) as h:
            for i in range(25):
                r = h.post("/v1/jobs", json=job(f"j{c}-{i}", "ab"[i % 2]))
                with lock:
                    assert r.status_code == 201, r.text
                    ok.append(r.json()["id"])
                    workers[r.headers["x-makeway-worker"]] = workers.get(r.headers["x-makeway-worker"], 0) + 1

    ts = [threading.Thread(target=post_jobs, args=(c,)) for c in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert len(ok) == 200 and len(set(workers) - {"0"}) > 1, workers

    # read-your-write: every 201 is found at once, whichever process answered it; then it is scheduled
    listed = {j["id"] for j in s.get("/v1/jobs?limit=100000")["jobs"]}
    assert set(ok) <= listed

    def scheduled() -> bool:
        jobs = {j["id"]: j for j in s.get("/v1/jobs?limit=100000")["jobs"]}
        return all(jobs[j]["node"] == "n-0" for j in ok)

    wait_for(scheduled, 30, "every accepted job to be placed")

    conns = wait_for(lambda: every_worker(s.url, {"1", "2"}), 30, "connections to every acceptor")
    # an idempotency key answers the same from every process
    answers = [c.post("/v1/jobs", json=job("keyed"), headers={"Idempotency-Key": "k1"}) for c in conns.values()]
    answers += [c.post("/v1/jobs", json=job("keyed"), headers={"Idempotency-Key": "k1"}) for c in conns.values()]
    assert [a.status_code for a in answers] == [201] * len(answers)
    bodies = [a.json() for a in answers]
    assert bodies[0]["created"] and not any(b["created"] for b in bodies[1:])
    assert {(b["id"], b["seq"]) for b in bodies} == {("keyed", bodies[0]["seq"])}
    assert len({a.headers["x-makeway-worker"] for a in answers}) >= 2
    for c in conns.values():
        c.close()

    # streams work through an acceptor: an agent's long-poll and the events feed (last: the
    # connection is closed when the stream is left unread)
    conns = wait_for(lambda: every_worker(s.url, {"1", "2"}), 30, "connections to every acceptor")
    acceptor = conns["1"]
    got = acceptor.get("/v1/agent/desired", params={"node": "n-0", "version": -1, "wait": 0.5})
    assert got.status_code == 200 and len(got.json()["attempts"]) >= 200
    assert got.headers["x-makeway-via"] != "0"  # passed on by an acceptor

    with acceptor.stream("GET", "/v1/events") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["x-makeway-via"] != "0"
        assert any(line.startswith("event:") for _, line in zip(range(20), r.iter_lines()))

    # a duplicate id racing from many connections: one 201, the rest 409 naming the id
    for k in range(3):
        codes = sorted(r.status_code for r in race(s.url, job(f"dup{k}"), 12))
        assert codes == [201] + [409] * 11
    for c in conns.values():
        c.close()
    conns = wait_for(lambda: every_worker(s.url, {"1", "2"}), 30, "connections to every acceptor")
    taken = [c.post("/v1/jobs", json=job("j0-0")) for c in conns.values()]
    assert all(r.status_code == 409 and r.json()["detail"]["field"] == "id" for r in taken)
    assert len({r.headers["x-makeway-worker"] for r in taken}) >= 2

    # /metrics counts every accepted job, whichever process took it
    metrics = httpx.get(s.url + "/metrics").text
    line = next(x for x in metrics.splitlines() if x.startswith("makeway_jobs_submitted_total"))
    probes = sum(1 for j in listed | {j["id"] for j in s.get("/v1/jobs?limit=100000")["jobs"]}
                 if j.startswith("probe"))
    assert float(line.split()[-1]) == 200 + probes + 1 + 3  # the jobs, the probes, keyed, dup0-2

    for c in conns.values():
        c.close()
    # an acceptor that dies is started again
    os.kill(pids[0], signal.SIGKILL)
    wait_for(lambda: len(acceptors_of(s.proc.pid)) == 2 and pids[0] not in acceptors_of(s.proc.pid), 30,
             "the acceptor to be started again")
    assert s.post("/v1/jobs", job("after-restart")).status_code == 201
    pids = acceptors_of(s.proc.pid)
    # SIGTERM of serve stops its acceptors too
    assert s.stop(signal.SIGTERM) is not None
    wait_for(lambda: not any(alive(p) for p in pids), 10, "the acceptors to exit")


def test_uniqueness_race_on_postgresql_and_acceptors_follow_the_lead(served, pg_database):
    s = served(pg_database, workers=3)
    pids = wait_for(lambda: len(acceptors_of(s.proc.pid)) == 2 and acceptors_of(s.proc.pid), 30, "two acceptors")
    assert len(pids) == 2
    box: list[Served] = []  # the standby starts while the leader is raced
    starting = threading.Thread(target=lambda: box.append(served(pg_database, workers=2, ready=False)))
    starting.start()
    for c in wait_for(lambda: every_worker(s.url, {"1", "2"}), 30, "the acceptors to serve").values():
        c.close()
    for k in range(3):
        answers = race(s.url, job(f"dup{k}"), 10)
        assert sorted(r.status_code for r in answers) == [201] + [409] * 9
        assert all(r.json()["detail"]["field"] == "id" for r in answers if r.status_code == 409)
    starting.join(60)
    standby = box[0]
    assert acceptors_of(standby.proc.pid) == []  # a standby starts none
    # kill -9 of the leader: its acceptors go with it; the standby leads and starts its own
    s.proc.kill()
    s.proc.wait(10)
    # they drain for up to 2 s (uvicorn's graceful shutdown) and exit; 20 s leaves room for a loaded machine
    wait_for(lambda: not any(alive(p) for p in pids), 20, "the acceptors to exit after serve was killed")
    standby.ready()
    wait_for(lambda: len(acceptors_of(standby.proc.pid)) == 1, 30, "the new leader's acceptor")
    conns = wait_for(lambda: every_worker(standby.url, {"1"}), 30, "the new leader's acceptor to serve")
    assert conns["1"].post("/v1/jobs", json=job("dup0")).status_code == 409  # ids outlive the leader
    conns["1"].close()


def test_api_workers_below_one_is_refused(tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "makeway", "serve", str(config(tmp_path)), "--api-workers", "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "error: --api-workers: expected a whole number >= 1, got 0"]


def test_a_batch_with_a_taken_id_commits_the_other_rows(tmp_path):
    with Store(f"sqlite:///{tmp_path / 's.db'}") as store:
        store.append_event("submit", {"job": {"id": "a"}}, at=0.0)
        rows = [{"kind": "submit", "payload": {"job": {"id": j}}, "at": 1.0, "tenant": "default", "idem_key": None}
                for j in ("b", "a", "c", "b")]
        got = store._append_rows(rows, per_row=True)
        assert [type(g).__name__ for g in got] == ["Appended", "IdTaken", "Appended", "IdTaken"]
        assert got[1].job_id == "a"
        with pytest.raises(IdTaken):  # a job array is all or nothing
            store.append_events([{**r, "payload": {"job": {"id": j}}} for r, j in zip(rows, ("d", "c"))])
        assert [e.payload["job"]["id"] for e in store.events_after(0)] == ["a", "b", "c"]
        with GroupCommit(store) as gc:
            with pytest.raises(IdTaken):
                gc.append("submit", {"job": {"id": "c"}}, at=2.0)
            assert gc.append("submit", {"job": {"id": "d"}}, at=2.0).created


def test_the_migration_fills_job_ids_from_the_journal(tmp_path):
    from alembic import command
    from alembic.config import Config

    from makeway.live.store import MIGRATIONS

    import sqlalchemy as sa

    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = Store(url, migrate=False)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002")
        conn.execute(sa.insert(events_t), [
            {"at": 0.0, "kind": "submit", "tenant": "default", "payload": {"job": {"id": "x"}}},
            {"at": 0.0, "kind": "cancel", "tenant": "default", "payload": {"job": "x"}},
            {"at": 0.0, "kind": "submit", "tenant": "default", "payload": {"job": {"id": "y"}}},
            {"at": 0.0, "kind": "submit", "tenant": "default", "payload": {"job": {"id": "x"}}}])
    store.close()
    with Store(url) as store:
        with store.engine.connect() as conn:
            assert sorted(conn.execute(sa.select(job_ids_t.c.id)).scalars()) == ["x", "y"]
        with pytest.raises(IdTaken):
            store.append_event("submit", {"job": {"id": "y"}}, at=1.0)

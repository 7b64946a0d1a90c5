"""Active/standby on one PostgreSQL database, and the fences under it.

The end-to-end run uses real processes on 127.0.0.1: two `makeway serve` (no local agent) and one
`makeway agent --server A,B`. Work is submitted with idempotency keys (the test logs every
acknowledged id), the leader is killed with SIGKILL while tasks run, and the standby must take over
under a new epoch with no acknowledged job lost and no task run twice: the running tasks keep their
attempt and pid (the tasks' own start/end marker lines are the oracle). Then the new leader's lock
session is cut, and it must stop rather than write. The rest are in-process checks of the pieces:
the stale-leader fence on the loop, the SQLite refusal, the lock, the client's and the agent's
failover.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from makeway.config import parse_config
from makeway.errors import MakewayError
from makeway.live.loop import SchedulerLoop
from makeway.live.store import StaleLeader, Store
from tests.live.harness import Served, kill_leftovers, markers, overlapping_runs, wait_for

CFG = {
    "name": "ha", "resources": ["cpu"], "nodes": [{"name": "n1", "capacity": {"cpu": 4}}],
    "queues": {"root": {}, "batch": {"parent": "root", "guaranteed": {"cpu": 4}}},
    "preemption": {"model": "kueue"},
}


@pytest.fixture
def tmp(tmp_path):
    yield tmp_path
    kill_leftovers(str(tmp_path))


def demo_job(jid: str, tmp, seconds: float) -> dict:
    return {"id": jid, "queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}], "grace": 2,
            "command": [sys.executable, "-m", "makeway.live.demo_task", "--seconds", str(seconds),
                        "--checkpoint", str(tmp / "ck")]}


def _pg_admin(pg_url: str, sql: str, **params) -> list:
    import sqlalchemy as sa

    engine = sa.create_engine(pg_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            return list(conn.execute(sa.text(sql), params))
    finally:
        engine.dispose()


def _cut_lock_sessions(db_url: str) -> int:
    """Terminate the session holding the leader lock on the database (what a lost connection does)."""
    from makeway.live.leader import LEADER_LOCK

    dbname = db_url.rsplit("/", 1)[1]
    admin = db_url.rsplit("/", 1)[0] + "/postgres"
    rows = _pg_admin(admin, "SELECT pg_terminate_backend(l.pid) FROM pg_locks l "
                            "JOIN pg_database d ON d.oid = l.database WHERE d.datname = :d "
                            "AND l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
                            "AND ((l.classid::bigint << 32) | l.objid::bigint) = :k", d=dbname, k=LEADER_LOCK)
    return len(rows)


# -- end to end --------------------------------------------------------------------------------------

def test_kill_the_leader_the_standby_takes_over(tmp, pg_database):
    import yaml

    from makeway.live.client import Client

    config = tmp / "cluster.yaml"
    config.write_text(yaml.safe_dump(CFG))
    servers = []
    for name in ("s1", "s2"):
        (tmp / name).mkdir()
        servers.append(Served(config, pg_database, tmp / name, recovery_grace=5.0, local_agent=False))
    agent = None
    try:
        starting = [threading.Thread(target=s.start) for s in servers]  # both at once: one leads, one waits
        for t in starting:
            t.start()
        for t in starting:
            t.join(90)
        roles = [s.get("/healthz").get("role") for s in servers]
        assert roles.count("standby") == 1, roles
        a, b = sorted(servers, key=lambda s: roles[servers.index(s)] == "standby")
        a.ready()
        assert b.get("/healthz")["role"] == "standby"
        r = httpx.get(b.url + "/readyz", timeout=5)
        assert r.status_code == 503 and r.json()["role"] == "standby"
        assert r.json()["leader"]["url"] == a.url
        epoch = a.get("/readyz")["epoch"]
        assert r.json()["leader"]["epoch"] == epoch
        # a standby journals nothing: writes and agent calls alike get 503
        assert b.post("/v1/jobs", demo_job("x", tmp, 1)).status_code == 503
        assert b.post("/v1/agent/register", {"node": "n1", "capacity": {"cpu": 4}}).status_code == 503

        with (tmp / "agent.log").open("a") as out:
            agent = subprocess.Popen(
                [sys.executable, "-m", "makeway", "agent", "--server", f"{a.url},{b.url}", "--node", "n1",
                 "--capacity", "cpu=4", "--workdir", str(tmp / "agent")],
                stdout=out, stderr=subprocess.STDOUT, cwd=tmp, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        client = Client(f"{a.url},{b.url}", timeout=10)
        acked: list[str] = []

        def submit(jid: str, seconds: float, within: float) -> None:
            """Retry one job under one key until a server acknowledges it (bounded)."""
            deadline = time.monotonic() + within
            while True:
                try:
                    acked.append(client.submit(demo_job(jid, tmp, seconds), key=f"key-{jid}")["id"])
                    return
                except MakewayError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)

        t0 = time.monotonic()
        for i in range(6):  # 4 run at once (through the kill), 2 wait
            submit(f"j{i}", 5.0 if i < 4 else 1.0, 5)
        starts = lambda: {m[1]: m for m in markers(tmp) if m[0] == "start"}  # noqa: E731
        running = wait_for(lambda: len(starts()) == 4 and starts(), 30, "four tasks to start")

        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(10)
        killed, killed_at = time.monotonic(), time.time()
        submit("late", 1.0, 20)  # a connection error from a, 503 from b until it leads, then b
        b.ready(timeout=20)
        takeover = time.monotonic() - killed
        ready = b.get("/readyz")
        assert ready["epoch"] == epoch + 1
        assert b.get("/healthz").get("role") != "standby"  # the leader's own API answers now
        def all_finished() -> bool:
            return all(b.job(j)["state"] == "finished" for j in acked)

        wait_for(all_finished, 40, "every acknowledged job to finish", every=0.25)
        assert sorted(acked) == sorted([f"j{i}" for i in range(6)] + ["late"])
        assert overlapping_runs(tmp) == []
        m = markers(tmp)
        for task, start in running.items():  # ran through the kill: one start (same attempt, same pid), one end
            assert [x for x in m if x[0] == "start" and x[1] == task] == [start], f"{task} was restarted"
            ends = [x for x in m if x[0] == "end" and x[1] == task]
            assert [(x[2], x[4]) for x in ends] == [(start[2], "finished")] and float(ends[0][3]) > killed_at
        assert sorted(x[1] for x in m if x[0] == "start") == sorted(f"{j}/0/0" for j in acked)
        print(f"takeover {takeover:.2f} s; jobs acknowledged {len(acked)}; "
              f"from first submit to all finished {time.monotonic() - t0:.1f} s")

        # the new leader loses its lock session: it stops (non-zero, with the reason) rather than write
        assert _cut_lock_sessions(pg_database) == 1
        wait_for(lambda: b.proc.poll() is not None, 10, "the leader without its lock to stop")
        assert b.proc.returncode == 2
        assert "error: the scheduler stopped: the leader lock" in b.log.read_text()
    finally:
        if agent is not None:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(10)
            except subprocess.TimeoutExpired:
                agent.kill()
        for s in servers:
            s.stop()

    with Store(pg_database) as store:  # every acknowledged job is in the database, finished
        assert {j: store.job(j)["state"] for j in acked} == {j: "finished" for j in acked}
        loop = SchedulerLoop(parse_config(CFG), store)
        loop.recover()  # replays every pass; a different decision digest raises RecoveryError
        assert loop.epoch == epoch + 2
        assert loop.core.state.check_invariants() == []


# -- the fences ----------------------------------------------------------------------------------------

def test_a_superseded_loop_stops_on_its_next_pass_and_writes_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'stale.db'}"
    old = SchedulerLoop(parse_config(CFG), Store(url), recovery_grace=0, idle_poll=0.05, lease=0)
    old.recover()
    old.store.append_event("node", {"node": "n1", "capacity": {"cpu": 4}}, at=0.0)
    stopped = threading.Event()
    old.on_fatal = lambda exc: stopped.set()
    old.start()
    wait_for(lambda: old.store.last_pass() is not None, 10, "the first pass")
    new = SchedulerLoop(parse_config(CFG), Store(url), recovery_grace=0)
    new.recover()
    assert new.epoch == old.epoch + 1 == new.store.epoch()
    passes = len(new.store.passes_after(0))
    new.store.append_event("submit", {"job": {**demo_job("a", tmp_path, 1), "grace": 0.0, "priority": 0,
                                              "preemptible": True, "requested_duration": None, "user": None,
                                              "labels": {}, "settings": {}, "env": {}, "stop_signal": "SIGTERM",
                                              "cwd": None}}, at=1.0)
    old.wake()
    assert stopped.wait(10), "the stale loop did not stop"
    assert isinstance(old.failed, StaleLeader)
    old._thread.join(5)
    assert not old._thread.is_alive()
    assert len(new.store.passes_after(0)) == passes
    # nor may it journal what it believes about the agents (its view is as stale as its epoch)
    seq = new.store.max_seq()
    old.lease, old.suspect_after, old.last_seen["n1"] = 1.0, 0.5, time.time() - 10
    with pytest.raises(StaleLeader):
        old.check_leases()
    assert new.store.max_seq() == seq
    assert new.step()
    old.store.close()
    new.store.close()


def test_a_second_serve_on_one_sqlite_file_is_refused(tmp_path):
    from makeway.live.serve import Server

    db = f"sqlite:///{tmp_path / 'one.db'}"
    config = tmp_path / "cluster.yaml"
    config.write_text(json.dumps(CFG))
    first = Server(parse_config(CFG), db, port=0)
    try:
        p = subprocess.run([sys.executable, "-m", "makeway", "serve", str(config), "--db", db, "--port", "0"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, p.stderr
        assert p.stderr.startswith("error: db: ") and "in use by another makeway serve" in p.stderr
        assert f"pid {os.getpid()}" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    finally:
        first.close()
    again = Server(parse_config(CFG), db, port=0)  # the lock went with the first server
    assert again.leading
    again.close()


def test_the_leader_lock_goes_to_one_server_at_a_time(pg_database):
    from makeway.live.leader import lock_for

    one, two = lock_for(pg_database), lock_for(pg_database)
    lost = threading.Event()
    try:
        assert one.try_acquire() and not two.try_acquire()
        assert one.holds() and not two.holds()
        one.watch(lambda exc: lost.set())
        assert _cut_lock_sessions(pg_database) == 1
        assert lost.wait(5), "the leader did not notice that its lock session ended"
        got = threading.Event()
        threading.Thread(target=lambda: two.wait(threading.Event()) and got.set(), daemon=True).start()
        assert got.wait(5) and two.holds()
        assert not one.try_acquire()
    finally:
        one.close()
        two.close()


# -- client and agent failover -------------------------------------------------------------------------

def test_the_client_tries_the_next_server_only_when_that_is_safe():
    from makeway.live.client import Client, ServerError

    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.host, request.method))
        if request.url.host == "a":
            raise httpx.ConnectError("refused", request=request)
        if request.url.host == "b":
            return httpx.Response(503, json={"detail": {"field": "server", "error": "standby"}})
        if request.url.host == "c" and request.method == "DELETE":
            raise httpx.ReadError("connection reset", request=request)
        return httpx.Response(201, json={"id": "j1", "seq": 1, "created": True})

    client = Client("http://a,http://b,http://c", transport=httpx.MockTransport(handler))
    assert client.submit({"id": "j1"}, key="k")["id"] == "j1"
    assert seen == [("a", "POST"), ("b", "POST"), ("c", "POST")]
    seen.clear()
    assert client.get("/v1/jobs")["id"] == "j1"
    assert seen == [("c", "GET")]  # the server that answered last is asked first
    seen.clear()
    with pytest.raises(ServerError, match="may or may not have been applied"):
        client.cancel("j1")  # broke after sending, no key: not repeated elsewhere
    assert seen == [("c", "DELETE")]
    with pytest.raises(ServerError, match="not an http"):
        Client("http://a,ftp://b")


def test_the_agent_moves_on_from_a_standby_and_ignores_an_older_epoch(tmp_path):
    from makeway.live.agent import Agent, Unavailable

    epochs = {"a": 5, "b": 4}

    def handler(request: httpx.Request) -> httpx.Response:
        host = request.url.host
        if host == "c":
            return httpx.Response(503, json={"detail": {"error": "standby"}})
        if request.url.path.endswith("/register"):
            return httpx.Response(200, json={"epoch": epochs[host], "heartbeat_interval": 1, "lease": None})
        return httpx.Response(200, json={"epoch": epochs[host], "version": 1, "attempts": []})

    agent = Agent("http://a,http://b,http://c", "n1", {"cpu": 1}, workdir=tmp_path)
    agent.http = httpx.Client(transport=httpx.MockTransport(handler))
    agent.register()
    assert (agent.epoch, agent.newest_epoch) == (5, 5) and agent.poll_desired() == []
    assert agent._next_server(RuntimeError("gone")) is False and agent.server == "http://b"
    with pytest.raises(Unavailable, match="stale leader"):
        agent.register()  # b answers for epoch 4 < 5: an old leader that has not stopped yet
    assert agent.epoch == 5 and not agent._registered.is_set()
    agent.epoch = 4  # even registered there, its desired sets are not acted on
    with pytest.raises(Unavailable, match="stale leader"):
        agent.poll_desired()
    assert agent._next_server(RuntimeError("stale")) is False and agent.server == "http://c"
    with pytest.raises(Unavailable, match="503"):
        agent.register()
    assert agent._next_server(RuntimeError("standby")) is True  # every server tried: back off
    assert agent.server == "http://a"

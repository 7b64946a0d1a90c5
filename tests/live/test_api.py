"""The REST API in process (FastAPI's TestClient, a SQLite store, the loop stepped by hand):
errors name the field, inputs are journaled before the answer, idempotency keys hold, cancel,
quota changes, cordon/drain, nodes joining at runtime, pending reasons and positions."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from makeway.config import parse_config
from makeway.live.api import create_app
from makeway.live.loop import SchedulerLoop
from makeway.live.store import Store

CFG = {
    "name": "api", "resources": ["cpu"], "nodes": [{"name": "n1", "capacity": {"cpu": 2}}],
    "queues": {"root": {}, "prod": {"parent": "root", "guaranteed": {"cpu": 1},
                                     "settings": {"preemption": {"reclaimWithinCohort": "Any"}}},
               "batch": {"parent": "root", "guaranteed": {"cpu": 1}, "max": {"cpu": 2},
                         "settings": {"preemption": {"reclaimWithinCohort": "Any"}}}},
    "preemption": {"model": "kueue"},
}


@pytest.fixture
def svc(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'api.db'}")
    loop = SchedulerLoop(parse_config(CFG), store, recovery_grace=0)
    loop.recover()
    app = create_app(loop, loop.cfg, store)
    with TestClient(app.state.asgi) as client:  # as served: behind the submit fast path
        client.app_routes = TestClient(app)
        yield client, loop, store
    app.state.committer.close()
    store.close()


def job(jid, queue="batch", count=1, **kw):
    return {"id": jid, "queue": queue, "tasks": [{"count": count, "resources": {"cpu": 1}}], "command": ["true"], **kw}


def register(client, node="n1", cpu=2):
    r = client.post("/v1/agent/register", json={"node": node, "capacity": {"cpu": cpu}, "attempts": []})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("body, field", [
    ({"queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}]}, "command"),
    (job("a", queue="nope"), "queue"),
    (job("a", count=0), "tasks.0.count"),
    ({**job("a"), "tasks": [{"count": 1, "resources": {"gpu": 1}}]}, "tasks.0.resources.gpu"),
    ({**job("a"), "priority": "high"}, "priority"),
    ({**job("a"), "colour": "red"}, "colour"),
])
def test_bad_submissions_are_422_naming_the_field_and_journal_nothing(svc, body, field):
    client, loop, store = svc
    r = client.post("/v1/jobs", json=body)
    assert r.status_code == 422
    assert r.json()["detail"]["field"] == field, r.json()
    assert store.max_seq() == 0


def test_submit_is_journaled_before_the_answer_and_ids_are_unique(svc):
    client, loop, store = svc
    r = client.post("/v1/jobs", json=job("a"))
    assert r.status_code == 201 and r.json()["id"] == "a"
    assert [e.kind for e in store.events_after(0)] == ["submit"]
    assert client.get("/v1/jobs/a").json()["state"] == "pending"  # accepted, before any pass
    assert client.post("/v1/jobs", json=job("a")).status_code == 409
    r = client.post("/v1/jobs", json={k: v for k, v in job("x").items() if k != "id"})
    assert r.status_code == 201 and r.json()["id"].startswith("j-")
    assert client.get("/v1/jobs/nope").status_code == 404


def test_idempotency_key_returns_the_first_answer(svc):
    client, loop, store = svc
    body = {k: v for k, v in job("x").items() if k != "id"}
    first = client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "k1"}).json()
    again = client.post("/v1/jobs", json=body, headers={"Idempotency-Key": "k1"}).json()
    assert again["id"] == first["id"] and again["seq"] == first["seq"] and again["created"] is False
    assert store.max_seq() == 1


def test_cancel_running_and_pending_jobs(svc):
    client, loop, store = svc
    register(client)
    client.post("/v1/jobs", json=job("run", count=2, grace=3))
    client.post("/v1/jobs", json=job("wait", count=1))
    loop.step()
    assert client.get("/v1/jobs/run").json()["state"] == "running"
    assert client.delete("/v1/jobs/wait").status_code == 202
    assert client.delete("/v1/jobs/run").status_code == 202
    loop.step()
    assert client.get("/v1/jobs/wait").json()["state"] == "cancelled"
    assert client.get("/v1/jobs/run").json()["state"] == "cancelled"
    desired = client.get("/v1/agent/desired", params={"node": "n1"}).json()["attempts"]
    assert {a["action"] for a in desired} == {"stop"} and all(a["notice"]["kind"] == "cancelled" for a in desired)
    reports = [{"seq": i + 1, "attempt": a["attempt"], "event": "exited", "signal": 15} for i, a in enumerate(desired)]
    assert client.post("/v1/agent/heartbeat", json={"node": "n1", "reports": reports}).json()["acked"] == len(reports)
    loop.step()
    assert client.get("/v1/nodes").json()["nodes"][0]["used"] in ({}, {"cpu": 0})
    assert loop.core.state.check_invariants() == []


def test_heartbeat_reports_are_journaled_once(svc):
    client, loop, store = svc
    register(client)
    client.post("/v1/jobs", json=job("a"))
    loop.step()
    att = client.get("/v1/agent/desired", params={"node": "n1"}).json()["attempts"][0]["attempt"]
    rep = {"node": "n1", "reports": [{"seq": 1, "attempt": att, "event": "started"}]}
    before = store.max_seq()
    client.post("/v1/agent/heartbeat", json=rep)
    client.post("/v1/agent/heartbeat", json=rep)  # resent: the server already has seq 1
    assert store.max_seq() == before + 1


def test_queue_patch_checked_and_applied(svc):
    client, loop, store = svc
    r = client.patch("/v1/queues/batch", json={"max": {"cpu": 0.5}})
    assert r.status_code == 422 and "guaranteed" in r.json()["detail"]["error"]
    assert client.patch("/v1/queues/nope", json={"max": {"cpu": 1}}).status_code == 404
    assert client.patch("/v1/queues/batch", json={"max": {"cpu": 1}}).status_code == 200
    loop.step()
    q = {q["name"]: q for q in client.get("/v1/queues").json()["queues"]}
    assert q["batch"]["max"] == {"cpu": 1}


def test_nodes_join_at_runtime_and_drain(svc):
    client, loop, store = svc
    client.post("/v1/jobs", json=job("big", queue="batch", count=1))
    loop.step()
    assert client.get("/v1/jobs/big").json()["state"] == "pending"
    register(client, "n2", 2)  # a node the config does not name
    loop.step()
    v = client.get("/v1/jobs/big").json()
    assert v["state"] == "running" and v["node"] in ("n2",)
    assert client.post("/v1/nodes/n2/drain").status_code == 200
    loop.step()
    d = client.get("/v1/agent/desired", params={"node": "n2"}).json()["attempts"]
    assert d and d[0]["action"] == "stop" and d[0]["notice"]["reason"]["rule"] == "node-drain"
    assert client.post("/v1/nodes/nope/cordon").status_code == 404


def test_pending_reason_and_position(svc):
    client, loop, store = svc
    register(client)
    client.post("/v1/jobs", json=job("fill", count=2))
    for i in range(3):
        client.post("/v1/jobs", json=job(f"w{i}"))
    client.post("/v1/jobs", json={**job("huge"), "tasks": [{"count": 1, "resources": {"cpu": 64}}]})
    loop.step()
    pend = client.get("/v1/queues/batch/pending").json()["pending"]
    assert [p["job"] for p in pend if p["job"].startswith("w")] == ["w0", "w1", "w2"]
    assert [p["position"] for p in pend if p["job"].startswith("w")] == sorted(
        p["position"] for p in pend if p["job"].startswith("w"))
    assert client.get("/v1/jobs/huge").json()["pending"]["code"] == "fits-nowhere"
    codes = {j["id"]: j["reason_code"] for j in client.get("/v1/jobs").json()["jobs"]}
    assert codes["huge"] == "fits-nowhere" and codes["w0"] and codes["fill"] is None


def test_recovery_starts_from_the_latest_snapshot_and_reproduces_the_digest(tmp_path):
    url = f"sqlite:///{tmp_path / 'snap.db'}"
    store = Store(url)
    loop = SchedulerLoop(parse_config(CFG), store, recovery_grace=0, snapshot_every=2)
    loop.recover()
    app = create_app(loop, loop.cfg, store)
    with TestClient(app) as client:
        register(client)
        for i in range(5):
            client.post("/v1/jobs", json=job(f"j{i}"))
            loop.step(force=True)
        desired = client.get("/v1/agent/desired", params={"node": "n1"}).json()["attempts"]
        client.post("/v1/agent/heartbeat", json={"node": "n1", "reports": [
            {"seq": 1, "attempt": desired[0]["attempt"], "event": "exited", "exit_code": 0}]})
        loop.step()
    app.state.committer.close()
    passes, digest = loop.core.pass_no, loop.core.digest
    assert store.latest_snapshot()[0] == 6

    again = SchedulerLoop(parse_config(CFG), Store(url), recovery_grace=0)
    again.recover()
    assert again.snapshot_pass == 6 and again.replayed_passes == passes - 6
    assert again.core.digest == digest and again.report_seq == {"n1": 1}

    with store._write() as conn:  # a snapshot that cannot be read: replay from the start instead
        import sqlalchemy as sa
        from makeway.live.schema import snapshots_t
        conn.execute(sa.update(snapshots_t).values(blob=b"not a pickle"))
    full = SchedulerLoop(parse_config(CFG), Store(url), recovery_grace=0)
    full.recover()
    assert full.snapshot_pass == 0 and full.replayed_passes == passes and full.core.digest == digest
    store.close()


def test_a_list_of_jobs_is_one_request_all_or_nothing(svc):
    client, loop, store = svc
    r = client.post("/v1/jobs", json=[job("a"), job("b", queue="nope")])
    assert r.status_code == 422 and r.json()["detail"]["field"] == "jobs.1.queue"
    assert store.max_seq() == 0
    assert client.post("/v1/jobs", json=[job("a"), job("a")]).status_code == 409
    r = client.post("/v1/jobs", json={"jobs": [job("a"), job("b")]}, headers={"Idempotency-Key": "arr"})
    assert r.status_code == 201 and [j["id"] for j in r.json()["jobs"]] == ["a", "b"]
    again = client.post("/v1/jobs", json={"jobs": [job("a"), job("b")]}, headers={"Idempotency-Key": "arr"})
    assert [j["created"] for j in again.json()["jobs"]] == [False, False] and store.max_seq() == 2
    assert client.post("/v1/jobs", json=[job("b")]).status_code == 409
    loop.step()
    assert {j["id"] for j in client.get("/v1/jobs").json()["jobs"]} == {"a", "b"}


def test_silent_node_gets_no_starts_then_is_lost_and_its_work_requeued(tmp_path):
    clock = [1000.0]
    store = Store(f"sqlite:///{tmp_path / 'lease.db'}")
    loop = SchedulerLoop(parse_config(CFG), store, recovery_grace=0, clock=lambda: clock[0], lease=10.0,
                         suspect_after=4.0, kill_margin=3.0)
    loop.recover()
    app = create_app(loop, loop.cfg, store)
    with TestClient(app) as client:
        assert register(client)["lease"] == 10.0
        client.post("/v1/jobs", json=job("a"))
        loop.step()
        assert client.get("/v1/jobs/a").json()["state"] == "running"
        clock[0] += 5.0  # quiet past suspect_after: no new starts
        assert [k for k, _ in loop.check_leases()] == ["silent"]
        client.post("/v1/jobs", json=job("b"))
        loop.step()
        assert client.get("/v1/jobs/b").json()["state"] == "pending"
        assert client.get("/v1/nodes").json()["nodes"][0]["silent"] is True
        clock[0] += 5.0  # 10 s: inside lease + kill margin, nothing lost yet
        assert loop.check_leases() == []
        clock[0] += 3.5
        assert [k for k, _ in loop.check_leases()] == ["lost"]
        loop.step()
        a = client.get("/v1/jobs/a").json()
        assert a["state"] == "pending" and a["reason"]["rule"] == "node-lost"
        assert a["attempts"][0]["state"] == "exited"
        assert loop.core.desired("n1", 0.0)[1] == []
        # the agent comes back: its heartbeat and long-poll are refused until it registers again
        assert client.get("/v1/agent/desired", params={"node": "n1"}).status_code == 409
        assert client.post("/v1/agent/heartbeat", json={"node": "n1", "reports": []}).status_code == 409
        register(client)
        loop.step()
        a = client.get("/v1/jobs/a").json()
        assert a["state"] == "running" and a["attempts"][-1]["attempt_no"] == 2
        assert loop.core.state.check_invariants() == []
    app.state.committer.close()
    store.close()


def test_a_stale_leader_cannot_commit_a_pass(tmp_path):
    """A second server on the same database bumps the epoch; the first one's next pass writes
    nothing and stops it (fail-stop), so two schedulers never both decide."""
    from makeway.live.store import StaleLeader

    url = f"sqlite:///{tmp_path / 'epoch.db'}"
    old = SchedulerLoop(parse_config(CFG), Store(url), recovery_grace=0)
    old.recover()
    old.store.append_event("node", {"node": "n1", "capacity": {"cpu": 2}}, at=0.0)
    assert old.step()
    new = SchedulerLoop(parse_config(CFG), Store(url), recovery_grace=0)
    new.recover()
    assert new.epoch == old.epoch + 1
    old.store.append_event("submit", {"job": {**job("a"), "grace": 0.0, "priority": 0, "preemptible": True,
                                                "requested_duration": None, "user": None, "labels": {},
                                                "settings": {}, "env": {}, "stop_signal": "SIGTERM",
                                                "cwd": None}}, at=1.0)
    passes = len(old.store.passes_after(0))
    with pytest.raises(StaleLeader):
        old.step()
    assert len(new.store.passes_after(0)) == passes
    assert new.step()


def test_an_idle_loop_with_a_backlog_sleeps_instead_of_spinning(tmp_path):
    """Nothing due, a backlog that cannot run, and the wall clock far past the last pass: the loop
    waits (leases are checked twice a second), it does not poll the journal in a tight loop."""
    clock = [1000.0]
    store = Store(f"sqlite:///{tmp_path / 'idle.db'}")
    loop = SchedulerLoop(parse_config(CFG), store, recovery_grace=0, clock=lambda: clock[0], lease=10.0)
    loop.recover()
    store.append_event("submit", {"job": {**job("big", count=5), "tasks": [{"count": 5, "resources": {"cpu": 1}}]}},
                       at=0.0)
    assert loop.step()
    for _ in range(3):
        clock[0] += 60.0
        assert not loop.step()
        assert 0.4 <= loop._timeout() <= loop.idle_poll
    store.close()


def test_the_submit_fast_path_answers_as_the_documented_route(svc):
    """The same bodies through the fast path (what serve runs) and through FastAPI's route: the same
    status, the same body (ids aside), and both journal alike."""
    client, loop, store = svc
    routed = client.app_routes
    cases = [
        (job("f1"), {}), (job("f1"), {}),                                 # 201, then 409
        ({**job("f2"), "priority": "high"}, {}),                          # 422 naming the field
        ({k: v for k, v in job("x").items() if k != "id"}, {"Idempotency-Key": "same"}),
        ({k: v for k, v in job("x").items() if k != "id"}, {"Idempotency-Key": "same"}),
        ([job("arr-1"), job("arr-2")], {}),                               # a job array
    ]
    for i, (body, headers) in enumerate(cases):
        a = client.post("/v1/jobs", json=body, headers=headers)
        b_body = body
        if isinstance(body, dict) and body.get("id"):
            b_body = {**body, "id": body["id"] + "-r"}
        elif isinstance(body, list):
            b_body = [{**j, "id": j["id"] + "-r"} for j in body]
        b = routed.post("/v1/jobs", json=b_body, headers={k: v + "-r" for k, v in headers.items()})
        assert a.status_code == b.status_code, (i, a.text, b.text)
        ja, jb = a.json(), b.json()
        if a.status_code >= 400:
            assert ja["detail"]["field"] == jb["detail"]["field"], (i, ja, jb)
        else:
            assert set(ja) == set(jb) and ja.get("created") == jb.get("created"), (i, ja, jb)
    bad = client.post("/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400 and bad.json()["detail"]["field"] == "body"
    kinds = [e.payload["job"]["id"] for e in store.events_after(0)]
    assert "f1" in kinds and "f1-r" in kinds and "arr-2-r" in kinds

"""``PATCH /v1/jobs/{id}``: a waiting job's new priority reorders what starts next, is journaled and
audited, replays to the same decisions, and is refused where it cannot mean anything: while the job
runs, after it ended, under YuniKorn (a pod's priority is fixed), or when a user would raise its own
job (as Slurm lets a user only lower). In process, as tests/live/test_tenants.py runs the API."""

from __future__ import annotations

import pytest

from makeway.config import parse_config
from makeway.live.loop import SchedulerLoop

from .test_tenants import CFG, Svc, job

KUEUE = {**CFG, "nodes": [{"name": "n1", "capacity": {"cpu": 2}}], "preemption": {"model": "kueue"},
         "queues": {"root": {}, "a": {"parent": "root", "guaranteed": {"cpu": 2}},
                    "a-dev": {"parent": "a", "guaranteed": {"cpu": 2}},
                    "b": {"parent": "root", "guaranteed": {"cpu": 0}},
                    "b-dev": {"parent": "b", "guaranteed": {"cpu": 0}}}}


@pytest.fixture
def svc(tmp_path):
    s = Svc(f"sqlite:///{tmp_path / 'reprio.db'}", cfg=KUEUE)
    s.req("agent", "POST", "/v1/agent/register", json={"node": "n1", "capacity": {"cpu": 2}, "attempts": []})
    yield s
    s.close()


def running(s: Svc) -> dict[str, str]:
    return {j["id"]: j["state"] for j in s.req("admin", "GET", "/v1/jobs").json()["jobs"]}


def finish_all(s: Svc) -> None:
    """The agent reports every attempt it was given as started and exited 0."""
    desired = s.req("agent", "GET", "/v1/agent/desired", params={"node": "n1", "wait": 0}).json()["attempts"]
    seq, reports = s.loop.report_seq.get("n1", 0), []
    for a in desired:
        reports += [{"seq": seq + 1, "attempt": a["attempt"], "event": "started"},
                    {"seq": seq + 2, "attempt": a["attempt"], "event": "exited", "exit_code": 0}]
        seq += 2
    assert s.req("agent", "POST", "/v1/agent/heartbeat", json={"node": "n1", "reports": reports}).status_code == 200


def test_a_raised_priority_starts_first_and_replays(svc):
    s = svc
    for jid in ("r", "p1", "p2"):  # one pass each: submit times in this order
        assert s.req("alice", "POST", "/v1/jobs", json=job(jid, "a-dev", count=2)).status_code == 201
        s.step()
    assert running(s) == {"r": "running", "p1": "pending", "p2": "pending"}
    # the user may not raise its own job; its tenant's admin may (both audited)
    r = s.req("alice", "PATCH", "/v1/jobs/p2", json={"priority": 5})
    assert r.status_code == 403 and r.json()["detail"]["field"] == "priority"
    r = s.req("a-admin", "PATCH", "/v1/jobs/p2", json={"priority": 5})
    assert r.status_code == 202 and r.json()["previous"] == 0 and r.json()["priority"] == 5
    s.step()
    assert s.req("alice", "GET", "/v1/jobs/p2").json()["spec"]["priority"] == 5
    assert s.req("alice", "GET", "/v1/jobs/p2").json()["changes"] == [
        {"time": s.loop.core.now, "change": "priority", "from": 0, "to": 5, "by": "a-admin", "applied": True}]
    assert [e for e in s.req("alice", "GET", "/v1/jobs/p2/events").json()["events"] if e["event"] == "reprioritised"] \
        == [{"time": s.loop.core.now, "event": "reprioritised", "from": 0, "to": 5, "by": "a-admin"}]
    assert any("priority 0 -> 5 by a-admin" in line for line in s.req("alice", "GET", "/v1/jobs/p2/explain").json()["story"])
    finish_all(s)
    s.step()
    assert running(s) == {"r": "finished", "p1": "pending", "p2": "running"}  # p1 was first in line before
    # lowering one's own waiting job is the user's to do
    assert s.req("alice", "PATCH", "/v1/jobs/p1", json={"priority": -3}).status_code == 202
    s.step()
    assert s.req("alice", "GET", "/v1/jobs/p1").json()["spec"]["priority"] == -3
    assert [a[1:] for a in s.audit() if a[1] == "job.reprioritise"] == [
        ("job.reprioritise", "job:p2", "forbidden"), ("job.reprioritise", "job:p2", "ok"),
        ("job.reprioritise", "job:p1", "ok")]
    notes = s.store.decisions(kind="note")
    assert [(d["workload"], d["reason"]["values"]["to"]) for d in notes] == [("p2", 5), ("p1", -3)]
    digest = s.loop.core.digest
    again = SchedulerLoop(parse_config(KUEUE), s.store, recovery_grace=0, clock=s.clock)
    again.recover()  # replays every pass and checks each digest
    assert again.core.digest == digest
    assert again.core.state.workloads["p2"].priority == 5


@pytest.mark.parametrize("body,field", [
    ({"priority": "high"}, "priority"), ({"priority": True}, "priority"), ({"priority": 2**31}, "priority"),
    ({"priority": 1.5}, "priority"), ({}, "priority"), ({"queue": "b-dev"}, "queue"),
    ({"priority": 1, "tasks": []}, "tasks"), ([1], "body")])
def test_a_bad_change_names_the_field(svc, body, field):
    assert svc.req("alice", "POST", "/v1/jobs", json=job("w", "a-dev")).status_code == 201
    r = svc.req("admin", "PATCH", "/v1/jobs/w", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"]["field"] == field


def test_a_running_or_ended_job_keeps_its_priority(svc):
    s = svc
    assert s.req("alice", "POST", "/v1/jobs", json=job("r", "a-dev", count=2)).status_code == 201
    s.step()
    r = s.req("admin", "PATCH", "/v1/jobs/r", json={"priority": 3})
    assert r.status_code == 409 and r.json()["detail"]["field"] == "job" and "running" in r.json()["detail"]["error"]
    finish_all(s)
    s.step()
    r = s.req("admin", "PATCH", "/v1/jobs/r", json={"priority": 3})
    assert r.status_code == 409 and "ended" in r.json()["detail"]["error"]
    assert s.req("admin", "GET", "/v1/jobs/r").json()["spec"]["priority"] == 0


def test_a_change_that_a_start_overtook_is_kept_as_not_applied(svc):
    """Accepted while the job waited, applied after it started in the same pass's earlier events: the
    change is on the job with why it did not apply, and nothing else moved."""
    s = svc
    assert s.req("alice", "POST", "/v1/jobs", json=job("w", "a-dev", count=2)).status_code == 201
    assert s.req("a-admin", "PATCH", "/v1/jobs/w", json={"priority": 4}).status_code == 202
    s.step()  # the submit and the change in one pass: the change applies before the job starts
    assert s.req("admin", "GET", "/v1/jobs/w").json()["changes"][0]["applied"] is True
    s.loop.store.append_event("priority", {"job": "w", "priority": 1, "by": "admin"}, at=s.clock())
    s.step()
    change = s.req("admin", "GET", "/v1/jobs/w").json()["changes"][-1]
    assert change["applied"] is False and "started" in change["why"]
    assert s.loop.core.state.workloads["w"].priority == 4


def test_yunikorn_refuses_a_change_naming_why(tmp_path):
    s = Svc(f"sqlite:///{tmp_path / 'yk.db'}")  # the tenants config runs YuniKorn
    try:
        assert s.req("alice", "POST", "/v1/jobs", json=job("w", "a-dev")).status_code == 201
        r = s.req("admin", "PATCH", "/v1/jobs/w", json={"priority": 2})
        assert r.status_code == 409 and r.json()["detail"]["field"] == "priority"
        assert "Kubernetes" in r.json()["detail"]["error"]
    finally:
        s.close()

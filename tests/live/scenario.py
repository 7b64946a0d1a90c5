"""An in-process service on a fake clock with one Kueue preemption, for the UI and metrics tests.

Node n1 (2 cpu); ``b1`` (queue batch, user ann, 2 tasks) starts at t=1 borrowing prod's idle quota;
``p1`` (queue prod, user bob) arrives at t=5 and Kueue reclaims: both b1 tasks are preempted, their
exits are reported at t=7 (so each held 1 cpu for 6 s: 12 cpu x s of work lost), p1 starts, b1
waits again. ``late`` is journaled but not yet applied by a pass (shown as ``accepted``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from fastapi.testclient import TestClient

from makeway.config import parse_config
from makeway.live.api import create_app
from makeway.live.loop import SchedulerLoop
from makeway.live.store import Store

CFG = {
    "name": "ui", "resources": ["cpu"], "nodes": [{"name": "n1", "capacity": {"cpu": 2}}],
    "queues": {"root": {}, "prod": {"parent": "root", "guaranteed": {"cpu": 1},
                                     "settings": {"preemption": {"reclaimWithinCohort": "Any"}}},
               "batch": {"parent": "root", "guaranteed": {"cpu": 1}, "max": {"cpu": 2},
                         "settings": {"preemption": {"reclaimWithinCohort": "Any"}}}},
    "preemption": {"model": "kueue"},
}
ORIGIN = 1_000_000.0


class Clock:
    def __init__(self) -> None:
        self.t = ORIGIN

    def __call__(self) -> float:
        return self.t

    def at(self, service_t: float) -> None:
        self.t = ORIGIN + service_t


def job(jid: str, queue: str, count: int, user: str, **kw) -> dict:
    return {"id": jid, "queue": queue, "user": user, "tasks": [{"count": count, "resources": {"cpu": 1}}],
            "command": ["true"], **kw}


@contextmanager
def service(tmp_path) -> Iterator[tuple[TestClient, SchedulerLoop, Store, Clock]]:
    clock = Clock()
    store = Store(f"sqlite:///{tmp_path / 'ui.db'}")
    loop = SchedulerLoop(parse_config(CFG), store, clock=clock, recovery_grace=0, lease=0)
    loop.recover()
    app = create_app(loop, loop.cfg, store)
    try:
        with TestClient(app) as client:
            yield client, loop, store, clock
    finally:
        app.state.committer.close()
        store.close()


def run_preemption(client: TestClient, loop: SchedulerLoop, clock: Clock) -> None:
    start_batch(client, loop, clock)
    reclaim(client, loop, clock)


def start_batch(client: TestClient, loop: SchedulerLoop, clock: Clock) -> None:
    """Up to t=1: b1 runs both tasks (batch uses 2 cpu, borrowing 1 of prod's idle guarantee)."""
    clock.at(0.5)
    assert client.post("/v1/agent/register", json={"node": "n1", "capacity": {"cpu": 2}}).status_code == 200
    loop.step()
    clock.at(1)
    assert client.post("/v1/jobs", json=job("b1", "batch", 2, "ann", grace=30)).status_code == 201
    loop.step()
    desired = client.get("/v1/agent/desired", params={"node": "n1"}).json()["attempts"]
    assert len(desired) == 2
    reports = [{"seq": i + 1, "attempt": a["attempt"], "event": "started"} for i, a in enumerate(desired)]
    client.post("/v1/agent/heartbeat", json={"node": "n1", "reports": reports})
    loop.step()


def reclaim(client: TestClient, loop: SchedulerLoop, clock: Clock) -> None:
    """From t=5: p1 arrives, Kueue preempts b1 (exits confirmed at t=7), p1 runs, ``late`` is accepted."""
    clock.at(5)
    assert client.post("/v1/jobs", json=job("p1", "prod", 1, "bob", priority=5)).status_code == 201
    loop.step()
    stops = [a for a in client.get("/v1/agent/desired", params={"node": "n1"}).json()["attempts"]
             if a["action"] == "stop"]
    assert len(stops) == 2, stops
    clock.at(7)
    reports = [{"seq": 3 + i, "attempt": a["attempt"], "event": "exited", "signal": 15} for i, a in enumerate(stops)]
    client.post("/v1/agent/heartbeat", json={"node": "n1", "reports": reports})
    loop.step()
    loop.step(force=True)
    assert client.get("/v1/jobs/p1").json()["state"] == "running"
    assert client.get("/v1/jobs/b1").json()["state"] == "pending"
    assert client.post("/v1/jobs", json=job("late", "batch", 1, "cy")).status_code == 201

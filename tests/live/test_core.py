"""LiveCore without processes or a database: events and passes in, decisions and job states out.

The oracle for replay is a second core fed the same (events, now) passes: its digest must match.
"""

from __future__ import annotations

import pytest

from makeway.config import parse_config
from makeway.live.core import Event, LiveCore
from makeway.live.spec import SpecError, parse_job
from tests.live.harness import two_queue_kueue

CFG = two_queue_kueue("live-kueue", {"n1": 4})


def job(jid, queue, count, grace=5.0, priority=0):
    return {"id": jid, "queue": queue, "priority": priority, "grace": grace,
            "tasks": [{"count": count, "resources": {"cpu": 1}}], "command": ["true"]}


class Driver:
    """Feeds a core and keeps the (events, now) passes so they can be replayed."""

    def __init__(self, cfg):
        self.cfg = parse_config(cfg)
        self.core = LiveCore(self.cfg)
        self.seq = 0
        self.passes = []
        self.decisions = []

    def ev(self, kind, payload, at):
        self.seq += 1
        return Event(self.seq, kind, payload, at)

    def run(self, now, *events):
        evs = [self.ev(k, p, now) for k, p in events]
        self.passes.append((evs, now))
        out = self.core.run_pass(evs, now)
        self.decisions.extend(out)
        return out

    def submit(self, spec):
        return ("submit", {"job": parse_job(spec, self.cfg)})


def started(core, node):
    return [("started", {"attempt": a["attempt"], "node": node}) for a in core.desired(node, 0.0)[1]
            if a["action"] == "run"]


def test_kueue_reclaim_live_flow_and_replay():
    d = Driver(CFG)
    assert d.run(0.1, ("node", {"node": "n1", "capacity": {"cpu": 4}})) == []
    out = d.run(1.0, d.submit(job("batch-1", "batch", 4)))
    assert [r["kind"] for r in out] == ["start"] * 4
    assert d.core.jobs["batch-1"].state == "running"
    d.run(1.5, *started(d.core, "n1"))
    out = d.run(2.0, d.submit(job("prod-1", "prod", 2, priority=10)))
    pre = [r for r in out if r["kind"] == "preempt"]
    assert pre and all(r["workload"] == "batch-1" for r in pre)
    assert pre[0]["reason"]["model"] == "kueue" and pre[0]["reason"]["preemptor"] == "prod-1"
    assert d.core.jobs["batch-1"].state == "preempting"
    version, desired = d.core.desired("n1", 100.0)
    stops = [a for a in desired if a["action"] == "stop"]
    assert len(stops) == len(pre)
    assert stops[0]["deadline"] == pytest.approx(100.0 + 2.0 + 5.0)
    assert stops[0]["notice"]["preemptor"] == "prod-1" and stops[0]["signal"] == "SIGTERM"
    # victims hold their cpus until their exits are confirmed: prod waits
    assert not [r for r in out if r["kind"] == "start"]
    exits = [("exited", {"attempt": a["attempt"], "node": "n1", "exit_code": None, "signal": 15}) for a in stops]
    out = d.run(3.0, *exits)
    assert {r["workload"] for r in out if r["kind"] == "start"} >= {"prod-1"}
    assert d.core.jobs["prod-1"].state == "running"
    assert d.core.jobs["batch-1"].state in ("pending", "running")
    assert d.core.jobs["batch-1"].preemptions[0]["rule"]
    d.run(3.5, *started(d.core, "n1"))
    prod = [a for a in d.core.desired("n1", 0.0)[1] if a["job"] == "prod-1"]
    out = d.run(4.0, *[("exited", {"attempt": a["attempt"], "node": "n1", "exit_code": 0, "signal": None})
                       for a in prod])
    assert d.core.jobs["prod-1"].state == "finished"
    restarted = [r for r in d.decisions if r["kind"] == "start" and r["workload"] == "batch-1" and r["time"] > 2.0]
    assert restarted and all(r["attempt"].endswith("#2") for r in restarted)
    assert d.core.state.check_invariants() == []

    replay = LiveCore(d.cfg)
    for evs, now in d.passes:
        replay.run_pass(evs, now)
    assert replay.digest == d.core.digest
    assert replay.decision_count == d.core.decision_count


def test_new_attempt_waits_for_the_old_one_to_exit():
    """A model that frees a victim at notice (grace 0 in the state) may restart its task at once;
    the new attempt is not handed to an agent until the old one has exited."""
    d = Driver(CFG)
    d.run(0.1, ("node", {"node": "n1", "capacity": {"cpu": 4}}))
    d.run(1.0, d.submit(job("b", "batch", 4, grace=0.0)))
    d.run(1.5, *started(d.core, "n1"))
    d.run(2.0, d.submit(job("p", "prod", 2, priority=10)))
    _, desired = d.core.desired("n1", 0.0)
    stops = {a["task"] for a in desired if a["action"] == "stop"}
    runs = {a["task"] for a in desired if a["action"] == "run"}
    assert stops and not (stops & runs)
    assert all(a["job"] == "p" for a in desired if a["action"] == "run")


def test_failed_exit_fails_the_job_and_stops_its_other_tasks():
    d = Driver(CFG)
    d.run(0.1, ("node", {"node": "n1", "capacity": {"cpu": 4}}))
    d.run(1.0, d.submit(job("b", "batch", 2)))
    d.run(1.5, *started(d.core, "n1"))
    first = d.core.desired("n1", 0.0)[1][0]
    d.run(2.0, ("exited", {"attempt": first["attempt"], "node": "n1", "exit_code": 3, "signal": None}))
    assert d.core.jobs["b"].state == "failed"
    assert "exit code 3" in d.core.jobs["b"].message
    left = d.core.desired("n1", 0.0)[1]
    assert len(left) == 1 and left[0]["action"] == "stop" and left[0]["notice"]["kind"] == "failed"


def test_unregistered_config_nodes_get_no_work():
    d = Driver(CFG)
    out = d.run(1.0, d.submit(job("b", "batch", 1)))
    assert out == [] and d.core.jobs["b"].state == "pending"
    out = d.run(2.0, ("node", {"node": "n1", "capacity": {"cpu": 4}}))
    assert [r["kind"] for r in out] == ["start"]


@pytest.mark.parametrize("spec, field", [
    ({"queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}], "command": ["x"]}, "id"),
    ({"id": "a/b", "queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}], "command": ["x"]}, "id"),
    ({"id": "a", "queue": "nope", "tasks": [{"count": 1, "resources": {"cpu": 1}}], "command": ["x"]}, "queue"),
    ({"id": "a", "queue": "root", "tasks": [{"count": 1, "resources": {"cpu": 1}}], "command": ["x"]}, "queue"),
    ({"id": "a", "queue": "batch", "tasks": [{"count": 1, "resources": {"gpu": 1}}], "command": ["x"]},
     "tasks.0.resources.gpu"),
    ({"id": "a", "queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}], "command": []}, "command"),
    ({"id": "a", "queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}], "command": ["x"],
      "stop_signal": "SIGFOO"}, "stop_signal"),
    ({"id": "a", "queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}], "command": ["x"],
      "duration": 5}, "duration"),
    ({"id": "a", "queue": "batch", "tasks": [{"count": 1, "resources": {"cpu": 1}}], "command": ["x"],
      "grace": -1}, "grace"),
])
def test_bad_job_specs_name_the_field(spec, field):
    with pytest.raises(SpecError) as exc:
        parse_job(spec, parse_config(CFG))
    assert str(exc.value).startswith(field)


def test_queue_shares_kueue_fair_sharing_and_ytsaurus():
    fair = {**CFG, "preemption": {"model": "kueue", "settings": {"fairSharing": {}}}}
    d = Driver(fair)
    d.run(0.1, ("node", {"node": "n1", "capacity": {"cpu": 4}}))
    d.run(1.0, d.submit(job("b", "batch", 4)))
    shares = d.core.model.queue_shares(d.core.state, d.core.now)
    assert shares["batch"]["drs"] > 0 and shares["batch"]["borrowing"] is True
    assert shares["prod"]["drs"] == 0
    assert Driver(CFG).core.model.queue_shares(Driver(CFG).core.state, 0.0) == {}  # classic: no share

    yt = {"name": "yt", "resources": ["cpu"], "nodes": [{"name": "n1", "capacity": {"cpu": 4}}],
          "queues": {"root": {}, "a": {"parent": "root"}, "b": {"parent": "root"}},
          "preemption": {"model": "ytsaurus", "settings": {"fair_share_update_period": 0.5, "heartbeat_period": 0.5}}}
    d = Driver(yt)
    d.run(0.1, ("node", {"node": "n1", "capacity": {"cpu": 4}}))
    d.run(1.0, d.submit(job("x", "a", 4)))
    for t in (1.2, 1.8, 2.4, 3.0):  # a heartbeat starts the tasks, the next fair share update sees them
        d.run(t)
    assert d.core.jobs["x"].state == "running"
    shares = d.core.model.queue_shares(d.core.state, d.core.now)
    assert shares["a"]["fair_share"] == pytest.approx(1.0) and shares["a"]["usage_share"] == pytest.approx(1.0)

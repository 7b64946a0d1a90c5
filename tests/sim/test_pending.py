"""Every unfinished workload in the results says why it had not finished (makeway.sim.pending)."""

import json

import pytest

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.first_fit.model import PriorityFirstFit
from makeway.reports.explain import explain
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import ConfigChange


def _state():
    queues = [Queue("root", max={"cpu": 12}), Queue("a", "root", max={"cpu": 6}), Queue("b", "root")]
    return ClusterState(["cpu", "mem"], queues, [Node("n0", {"cpu": 4, "mem": 8}), Node("n1", {"cpu": 8, "mem": 2})])


def _wl(id, queue="a", count=1, submit=0.0, duration=10.0, **res):
    return Workload(id, queue, submit, duration, (TaskGroup(count, res or {"cpu": 1}),))


@pytest.mark.parametrize("name, workloads, changes, horizon, expect", [
    ("finished", [_wl("w")], [], None, {"w": None}),
    # 6 cpu + 8 mem on one task: within each resource's largest node, but no single node has both
    ("no node holds the task", [_wl("w", cpu=6, mem=8)], [], None, {"w": "unplaceable"}),
    ("a gang above its queue's max", [_wl("w", count=7)], [], None, {"w": "queue-max"}),
    ("above an ancestor's max", [_wl("w", "b", count=13)], [], None, {"w": "queue-max"}),
    ("max lowered before it started", [_wl("hog", count=6, duration=50), _wl("w", count=4, submit=1)],
     [ConfigChange(2.0, "a", {"max": {"cpu": 3}})], None, {"hog": None, "w": "queue-max"}),
    ("cut by the horizon", [_wl("hog", "b", count=12, duration=50), _wl("w", "b", submit=1)], [], 20.0,
     {"hog": "horizon", "w": "horizon"}),
    ("unplaceable wins over the horizon", [_wl("w", cpu=9)], [], 20.0, {"w": "unplaceable"}),
])
def test_pending_reason_table(name, workloads, changes, horizon, expect):
    rec = simulate(_state(), PriorityFirstFit(), workloads, changes, SimOptions(horizon=horizon))
    rows = {r["id"]: r for r in json.loads(json.dumps(rec.results()))["workloads"]}
    assert {w: r["pending_reason"] for w, r in rows.items()} == expect, name
    counts = {}
    for code in expect.values():
        if code is not None:
            counts[code] = counts.get(code, 0) + 1
    assert rec.summary()["pending_reasons"] == counts, name


def test_a_run_that_is_not_cut_leaves_waiting_work_waiting():
    """Without a horizon the only way to end with work pending is that it cannot start; a waiting
    workload then means the model stranded it, which the no-starvation tests look for."""
    rec = simulate(_state(), PriorityFirstFit(), [_wl("w", count=2)], options=SimOptions())
    rec.stopped_reason = None
    rec.finish_t.clear()  # pretend it never finished: its demand is gone, nothing blocks it
    assert rec.pending_reasons() == {"w": "waiting"}


def test_explain_says_why_a_workload_is_still_pending():
    rec = simulate(_state(), PriorityFirstFit(), [_wl("big", count=7), _wl("ok")])
    res = json.loads(json.dumps(rec.results()))
    text = explain(res, "big")
    assert "never started" in text and "pending at the end: queue-max" in text
    assert "pending at the end" not in explain(res, "ok")

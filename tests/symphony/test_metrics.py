"""session_metrics: Symphony's per-session interruption counters over simulator events."""

from __future__ import annotations

from makeway.policies.symphony.model import session_metrics

from .helpers import run_example


def _ev(time, wl, start, rule="rank-preemption", model="symphony", kind="preempt", preemptor="p"):
    return {"time": time, "kind": kind, "allocation": f"{wl}/0/{int(start)}", "workload": wl, "queue": "q",
            "start": start, "resources": {"slots": 1},
            "reason": {"model": model, "rule": rule, "preemptor": preemptor, "values": {}}}


def test_counts_tasks_and_runtime_per_session():
    events = [_ev(100, "a", 40), _ev(100, "a", 90), _ev(200, "b", 150, preemptor="q2"),
              _ev(300, "a", 250, rule="quota-decrease", model="yunikorn"),
              {"time": 100, "kind": "evicted", "allocation": "a/0/1", "workload": "a"}]
    m = session_metrics(events)
    assert list(m) == ["a", "b"]
    assert m["a"]["tasks_interrupted_by_preemption"] == 2
    assert m["a"]["interrupted_runtime_by_preemption"] == 70.0
    assert m["a"]["interrupted_runtime_by_preemption_ms"] == 70000
    assert m["a"]["tasks_interrupted_by_reclaim"] == 1
    assert m["a"]["interrupted_runtime_by_reclaim"] == 50.0
    assert m["a"]["preempted_by"] == {"p": 3}
    assert m["b"]["preempted_by"] == {"q2": 1}
    assert session_metrics([]) == {}


def test_example_metrics():
    rec = run_example("cluster.yaml")
    m = session_metrics(rec.events)
    assert set(m) == {"batch-a", "batch-b"}
    assert m["batch-a"]["tasks_interrupted_by_preemption"] == 2
    assert m["batch-a"]["interrupted_runtime_by_preemption"] == 100.0 + 200.0
    assert m["batch-a"]["preempted_by"] == {"peer": 1, "urgent": 1}

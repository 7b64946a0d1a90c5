"""A waiting workload's new priority reaches every model that lets priorities change: after
``ClusterState.set_priority`` and the model's ``on_priority_change``, the raised workload starts
before one that was ahead of it, even where the model had already filed both as blocked."""

from __future__ import annotations

import pytest

from makeway.config import build_state, parse_config
from makeway.core.decisions import Start
from makeway.core.objects import TaskGroup, Workload
from makeway.registry import load_model
from makeway.core.state import StateError

CFG = {"name": "prio", "resources": ["cpu"], "nodes": [{"name": "n1", "capacity": {"cpu": 2}}],
       "queues": {"root": {}, "a": {"parent": "root", "guaranteed": {"cpu": 2}}}}


def wl(jid: str, t: float) -> Workload:
    return Workload(jid, "a", t, 10.0, (TaskGroup(2, {"cpu": 1}),))


def start_all(state, decisions, now) -> set[str]:
    """Apply the model's starts; the workloads they belong to."""
    out = set()
    for d in decisions:
        if isinstance(d, Start):
            out.add(state.start(d.task, d.node, now).workload)
    return out


@pytest.mark.parametrize("model_name", ["none", "kueue", "symphony"])
def test_a_raised_waiting_workload_starts_first(model_name):
    cfg = parse_config({**CFG, "preemption": {"model": model_name}})
    state = build_state(cfg)
    model = load_model(model_name, cfg.preemption.settings)
    model.bind(state)
    state.submit(wl("r", 0.0))
    assert start_all(state, model.schedule(state, 0.0), 0.0) == {"r"}
    state.submit(wl("p1", 1.0))
    state.submit(wl("p2", 2.0))
    assert start_all(state, model.schedule(state, 2.0), 2.0) == set()  # both filed as blocked
    old = state.set_priority("p2", 5)
    assert old.priority == 0 and state.workloads["p2"].priority == 5
    model.on_priority_change(state, "p2", old.priority, 3.0)
    for tid in [t for t, a in state.allocations.items() if a.workload == "r"]:
        state.finish(tid)
    assert start_all(state, model.schedule(state, 4.0), 4.0) == {"p2"}


def test_only_a_waiting_workload_changes_priority():
    cfg = parse_config({**CFG, "preemption": {"model": "none"}})
    state = build_state(cfg)
    state.submit(wl("r", 0.0))
    state.start(state.workloads["r"].task_ids()[0], "n1", 0.0)
    with pytest.raises(StateError, match="running"):
        state.set_priority("r", 3)
    with pytest.raises(StateError, match="unknown"):
        state.set_priority("nope", 3)
    state.submit(wl("w", 1.0))
    state.withdraw("w")
    with pytest.raises(StateError, match="withdrawn"):
        state.set_priority("w", 3)


def test_models_that_order_by_no_priority_say_why():
    assert "Kubernetes" in load_model("yunikorn").fixed_priority
    assert "fair share" in load_model("ytsaurus").fixed_priority
    assert all("submit order" in load_model(m).fixed_priority for m in ("fifo-strict", "easy-backfill"))
    assert all(load_model(m).fixed_priority is None for m in ("none", "kueue", "symphony"))

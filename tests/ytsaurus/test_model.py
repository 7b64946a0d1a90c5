"""The simulator model end to end: the example, and a limit decrease forcing preemption."""

from pathlib import Path

from makeway.config import build_state, load_config
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.registry import load_model
from makeway.core.state import ClusterState
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import ConfigChange

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ytsaurus" / "cluster.yaml"


def _events(rec, kind):
    return [e for e in rec.events if e["kind"] == kind]


def test_example_starving_operation_gets_its_share():
    cfg = load_config(EXAMPLE)
    state = build_state(cfg)
    model = load_model("ytsaurus", cfg.preemption.settings)
    wls = [Workload("research-batch", "research", 0, 3600, (TaskGroup(16, {"cpu": 1, "memory": 2 * 2**30}),)),
           Workload("prod-report", "prod", 60, 300, (TaskGroup(8, {"cpu": 1, "memory": 2 * 2**30}),))]
    rec = simulate(state, model, wls, options=SimOptions(horizon=400, check_invariants=True))
    notes = [e for e in _events(rec, "note") if e["subject"] == "prod-report"]
    assert [n["values"]["starving"] for n in notes] == [True, False]
    assert notes[0]["time"] > 60 + 10  # only after the starvation timeout
    pre = _events(rec, "preempt")
    assert len(pre) == 8
    assert {p["reason"]["rule"] for p in pre} == {"preemptive-stage"}
    assert {p["reason"]["preemptor"] for p in pre} == {"prod-report"}
    assert all(p["allocation"].startswith("research-batch/") for p in pre)
    times = [p["time"] for p in pre]
    assert len(set(times)) == len(times)  # at most one allocation by preemption per heartbeat
    assert rec.starvation_seconds() > 0


def test_limit_decrease_preempts_over_limit_pool():
    state = ClusterState(["cpu"], [Queue("root"), Queue("a", "root", max={"cpu": 8}), Queue("b", "root")],
                         [Node("n0", {"cpu": 8})])
    model = load_model("ytsaurus", {"fair_share_update_period": 1.0})
    wl = Workload("w", "a", 0, 1000, (TaskGroup(8, {"cpu": 1}),))
    rec = simulate(state, model, [wl], [ConfigChange(50, "a", {"max": {"cpu": 5}})],
                   options=SimOptions(horizon=80, check_invariants=True))
    pre = _events(rec, "preempt")
    assert len(pre) == 3
    assert {p["reason"]["rule"] for p in pre} == {"resource-limits-overcommit"}
    assert len(state.running["w"]) == 5

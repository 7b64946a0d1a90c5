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
    # below its fair share (half the cluster) from its submission, with nothing running then
    assert notes[0]["message"] == "operation prod-report starts starving"
    assert notes[0]["values"] == {"starving": True, "status": "starving", "fair_share": 0.5, "usage_share": 0.0,
                                  "below_fair_share_since": 60}
    assert notes[1]["message"] == "operation prod-report stops starving"
    assert notes[1]["values"]["usage_share"] == 0.5 and notes[1]["values"]["below_fair_share_since"] is None
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


def _pool_starves_scenario(scope: str | None):
    """The example's cluster with ``prod`` a fair-share pool that tolerates nothing below its fair
    share (tolerance 1.0) and an operation in it that tolerates everything (0.0: it is never below
    its own share, so it never starves on its own account)."""
    cfg = load_config(EXAMPLE)
    data = cfg.model_dump()
    data["queues"]["prod"]["settings"] = {"mode": "fair_share", "fair_share_starvation_tolerance": 1.0}
    if scope is not None:
        data["preemption"]["settings"]["scheduling_preemption_priority_scope"] = scope
    from makeway.config import parse_config

    cfg = parse_config(data)
    state = build_state(cfg)
    model = load_model("ytsaurus", cfg.preemption.settings)
    cpu = lambda n: (TaskGroup(n, {"cpu": 1, "memory": 2 * 2**30}),)  # noqa: E731
    wls = [Workload("prod-a", "prod", 0, 3600, cpu(4)),
           Workload("research-batch", "research", 0, 3600, cpu(12)),
           Workload("prod-b", "prod", 30, 600, cpu(6), settings={"fair_share_starvation_tolerance": 0.0})]
    return simulate(state, model, wls, options=SimOptions(horizon=200, check_invariants=True))


def test_a_starving_pool_lets_its_non_starving_operation_preempt():
    """SEMANTICS 4.3: with the default scope (operation_and_ancestors) an operation takes the preemption
    priority of its lowest starving ancestor. ``prod`` (usage 4 of a fair share of 8) starves while
    ``prod-b`` itself never does; prod-b preempts research's allocations on the pool's behalf. With
    scope operation_only only the operation's own status counts, and nothing is preempted."""
    rec = _pool_starves_scenario(None)
    pre = _events(rec, "preempt")
    assert pre and {p["reason"]["preemptor"] for p in pre} == {"prod-b"}
    assert all(p["allocation"].startswith("research-batch/") for p in pre)
    assert all(p["time"] > 30 + 10 for p in pre)  # after the pool's starvation timeout
    assert not [n for n in _events(rec, "note") if n["subject"] == "prod-b" and n["values"].get("starving")]
    assert _events(_pool_starves_scenario("operation_only"), "preempt") == []

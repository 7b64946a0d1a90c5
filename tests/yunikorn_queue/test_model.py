"""The YuniKorn simulator model: delay, opt-outs, guarantee floor (property), determinism, conformance."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.decisions import Preempt, Start
from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.yunikorn.model import YuniKornModel
from makeway.sim.engine import simulate

SHARED = Path(__file__).resolve().parents[1] / "conformance" / "yunikorn" / "cases"  # the repository copy of shared/


def two_queues(props_a=None, props_b=None, g=4):
    qs = [Queue("root"),
          Queue("a", "root", guaranteed={"cpu": g}, settings={"properties": props_a or {}}),
          Queue("b", "root", guaranteed={"cpu": g}, settings={"properties": props_b or {}})]
    return ClusterState(["cpu"], qs, [Node(f"n{i}", {"cpu": 4}) for i in range(2)])


def jobs(hi_settings=None, lo_settings=None):
    return [Workload("lo", "b", 0, 1000, (TaskGroup(8, {"cpu": 1}),), settings=lo_settings or {}),
            Workload("hi", "a", 10, 100, (TaskGroup(4, {"cpu": 1}),), settings=hi_settings or {})]


def preempt_events(rec):
    return [(e["time"], e["allocation"], e["reason"]["preemptor"]) for e in rec.events if e["kind"] == "preempt"]


@pytest.mark.parametrize("name,props_a,props_b,hi,lo,first_time,count", [
    ("default delay 30s from submit", None, None, None, None, 40.0, 4),
    ("own delay", {"preemption.delay": "5s"}, None, None, None, 15.0, 4),
    ("ask may not preempt others", None, None, {"allowPreemptOther": False}, None, None, 0),
    ("victim queue disabled", None, {"preemption.policy": "disabled"}, None, None, None, 0),
    ("ask leaf fenced", {"preemption.policy": "fence"}, None, None, None, None, 0),
])
def test_model_table(name, props_a, props_b, hi, lo, first_time, count):
    rec = simulate(two_queues(props_a, props_b), YuniKornModel({}), jobs(hi, lo))
    ev = preempt_events(rec)
    assert len(ev) == count, name
    if count:
        assert ev[0][0] == first_time
        assert all(victim.startswith("lo/") and ask.startswith("hi/") for _, victim, ask in ev)
        reasons = [e["reason"] for e in rec.events if e["kind"] == "preempt"]
        assert {r["rule"] for r in reasons} == {"inter-queue-preemption"}
        assert all(r["model"] == "yunikorn" and r["values"]["victim_queue"] == "b" for r in reasons)


def test_preemption_disabled_model_wide():
    rec = simulate(two_queues(), YuniKornModel({"preemptionEnabled": False}), jobs())
    assert preempt_events(rec) == []


def test_required_node_preemption_in_simulator():
    # three nodes: the root queue (max = cluster size) keeps headroom, so the pinned ask reaches its node
    st_ = two_queues()
    st_ = ClusterState(["cpu"], list(st_.queues.values()), [Node(f"n{i}", {"cpu": 4}) for i in range(3)])
    wl = [Workload("lo", "b", 0, 1000, (TaskGroup(8, {"cpu": 1}),)),
          Workload("ds", "a", 5, 10, (TaskGroup(1, {"cpu": 2}),), settings={"requiredNode": "n1"})]
    rec = simulate(st_, YuniKornModel({}), wl)
    ev = [e for e in rec.events if e["kind"] == "preempt"]
    assert len(ev) == 2 and all(e["node"] == "n1" and e["time"] == 5 for e in ev)
    assert {e["reason"]["rule"] for e in ev} == {"required-node-preemption"}
    assert rec.finish_t["ds"] == 15


def test_determinism():
    a = simulate(two_queues(), YuniKornModel({}), jobs())
    b = simulate(two_queues(), YuniKornModel({}), jobs())
    assert a.events == b.events and a.finish_t == b.finish_t


@st.composite
def scenarios(draw):
    n_queues = draw(st.integers(2, 4))
    guarantees = [draw(st.integers(0, 6)) for _ in range(n_queues)]
    running = [draw(st.integers(0, 8)) for _ in range(n_queues)]
    pending = [draw(st.integers(0, 6)) for _ in range(n_queues)]
    prios = [draw(st.integers(0, 2)) for _ in range(n_queues)]
    return guarantees, running, pending, prios


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_preemption_never_takes_victim_queue_below_guarantee(sc):
    guarantees, running, pending, prios = sc
    names = [f"q{i}" for i in range(len(guarantees))]
    qs = [Queue("root")] + [Queue(n, "root", guaranteed={"cpu": g} if g else None)
                            for n, g in zip(names, guarantees)]
    state = ClusterState(["cpu"], qs, [Node(f"n{i}", {"cpu": 4}) for i in range(4)])
    model = YuniKornModel({})
    model.bind(state)
    node_iter = iter([f"n{i}" for i in range(4) for _ in range(4)])
    for i, (n, r) in enumerate(zip(names, running)):
        wl = Workload(f"run{i}", n, 0, 1e9, (TaskGroup(r, {"cpu": 1}),), prios[i]) if r else None
        if wl is None:
            continue
        state.submit(wl)
        for tid in wl.task_ids():
            node = next(node_iter, None)
            if node is None:
                break
            state.start(tid, node, 0)
    for i, (n, p) in enumerate(zip(names, pending)):
        if p:
            state.submit(Workload(f"ask{i}", n, 1, 10, (TaskGroup(p, {"cpu": 1}),), prios[i]))
    for now in (40.0, 55.0, 70.0):
        decisions = model.schedule(state, now)
        victims = [d.allocation for d in decisions if isinstance(d, Preempt)]
        assert len(victims) == len(set(victims))
        # usage the model saw when choosing a victim: running plus tasks it started earlier in the list
        usage = {q: state.queue_usage[q].get("cpu", 0) for q in names}
        for d in decisions:
            if isinstance(d, Start):
                usage[state.workloads[d.task.split("/")[0]].queue] += 1
            elif isinstance(d, Preempt):
                q = state.allocations[d.allocation].queue
                usage[q] -= 1
                g = (state.queues[q].guaranteed or {}).get("cpu", 0)
                assert usage[q] >= g, (q, usage[q], g)
        for d in decisions:
            if isinstance(d, Preempt):
                state.end(d.allocation)
                state.requeue(d.allocation)
            elif isinstance(d, Start):
                state.start(d.task, d.node, now)
        assert not state.check_invariants()


def _cases():
    if not SHARED.is_dir():
        return []
    out = []
    for f in sorted(SHARED.glob("*.json")):
        case = json.loads(f.read_text())
        if case.get("model") == "yunikorn-preemption":
            out.append(pytest.param(case, id=case["id"]))
    return out


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared conformance cases not present")
@pytest.mark.parametrize("case", _cases())
def test_conformance_case(case):
    from makeway.conformance.yunikorn_preemption import run_case
    res = run_case(case)
    assert res.ok, (res.expected, res.got)


def test_quota_preemption_is_composed_in():
    from makeway.sim.trace import ConfigChange
    props = {"properties": {"quota.preemption.delay": "10s"}}
    qs = [Queue("root"), Queue("b", "root", guaranteed={"cpu": 2}, max={"cpu": 8}, settings=props)]
    state = ClusterState(["cpu"], qs, [Node(f"n{i}", {"cpu": 4}) for i in range(2)])
    wl = [Workload("lo", "b", 0, 1000, (TaskGroup(8, {"cpu": 1}),))]
    rec = simulate(state, YuniKornModel({"quotaPreemptionEnabled": True}), wl,
                   [ConfigChange(100, "b", {"max": {"cpu": 4}})])
    ev = [e for e in rec.events if e["kind"] == "preempt"]
    assert len(ev) == 4 and {e["time"] for e in ev} == {110.0}
    assert len({e["allocation"] for e in ev}) == 4

"""The compiled YTsaurus loop with its preemptive stage (``fast.stages``, slice 4) decides as the
model does: the same calls as ``test_fast_loop`` (refreshes, notes, pool clocks, starts) plus each
victim, its preemptor and the reason's four values, compared exactly, row for row."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")
pytestmark = pytest.mark.xdist_group("ytsaurus-loop")

from makeway.core.objects import Node, Queue, TaskGroup, Workload  # noqa: E402
from makeway.core.state import ClusterState  # noqa: E402
from makeway.policies.ytsaurus.fast import layout as L  # noqa: E402
from makeway.policies.ytsaurus.fast.stages import alloc_status  # noqa: E402
from makeway.policies.ytsaurus import classify  # noqa: E402
from tests.ytsaurus_fast.test_fast_loop import _maker, cases, compiled, same  # noqa: E402


@st.composite
def contended(draw):
    """``test_fast_loop.cases`` with preemption on: the backoff, the thresholds, the priority scope
    and a pool that forbids normal preemption drawn too."""
    queues, nodes, jobs, s = draw(cases())
    s = dict(s, enable_preemption=True,
             preemptive_scheduling_backoff=draw(st.sampled_from([0.0, 0.5, 1.0, 5.0])),
             preemption_satisfaction_threshold=draw(st.sampled_from([1.0, 1.0, 0.8, 0.5])),
             aggressive_preemption_satisfaction_threshold=draw(st.sampled_from([0.2, 0.0, 0.5])))
    if draw(st.booleans()):
        s["scheduling_preemption_priority_scope"] = "operation_only"
    if draw(st.integers(0, 3)) == 0:
        q = draw(st.sampled_from(queues))
        q.settings = dict(q.settings, allow_normal_preemption=False)
    return queues, nodes, jobs, s


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended())
def test_compiled_stage_decides_as_the_model(case):
    queues, nodes, jobs, s = case
    fast, r = same(_maker(queues, nodes, jobs), s)
    preempts = [x for x in fast if x[0] == "preempt"]
    event("preemptions" if preempts else "no preemption")
    _, r2 = compiled(_maker(queues, nodes, jobs), s, False)
    event("quiet stretches" if r2.IS[L.I_QUIET] else "no quiet stretch")
    event("own allocation taken" if any(x[2] == x[5] for x in preempts) else "others' allocations")
    event("several victims at once" if len({(x[1], x[4]) for x in preempts}) < len(preempts) else "one victim a stage")


def test_alloc_status_is_classify_in_closed_form():
    """The per-allocation class equals ``classify.classify``'s prefix walk, over fair shares and
    demands around the bounds (an operation whose fair share equals its demand included)."""
    rnd = random.Random(3)
    for _ in range(3000):
        T = float(rnd.choice([8, 16, 24, 100]))
        req = rnd.choice([1, 2, 4, 8])
        n = rnd.randint(1, 8)
        d = (n + rnd.randint(0, 4)) * req / T
        f = rnd.choice([d, d / 2, rnd.random() * d, (n * req) / T, (rnd.randint(0, n) * req) / T, 0.0])
        aggr, thr = rnd.choice([0.2, 0.0, 0.5, 1.0]), rnd.choice([1.0, 0.8, 0.5])
        pub = classify.publish([f], [d])
        want = classify.classify([(str(k), [float(req)]) for k in range(n)], pub, [T], None, aggr, thr)
        code = {classify.NP: L.S_NP, classify.AP: L.S_AP, classify.P: L.S_P}
        got = [alloc_status(k * req, T, f, d, aggr, thr) for k in range(n)]
        assert got == [code[want[str(k)]] for k in range(n)], (T, req, n, f, d, aggr, thr)


def _pools_fight():
    """Two leaves under guarantees: ``b``'s long tasks fill the cluster, then ``a``'s burst
    starves and takes them back, youngest first, several per heartbeat when its tasks are large."""
    queues = [Queue("root", guaranteed={"gpu": 16}), Queue("a", "root", guaranteed={"gpu": 12}),
              Queue("b", "root", guaranteed={"gpu": 4})]
    jobs = [Workload(f"b{k}", "b", 0.25 * k, 200.0, (TaskGroup(2, {"gpu": 1}),)) for k in range(8)]
    jobs += [Workload(f"a{k}", "a", 5.0 + k, 20.0 + 5 * k, (TaskGroup(1 + k % 2, {"gpu": 2 + 2 * (k % 2)}),))
             for k in range(6)]
    return ClusterState(["gpu"], queues, [Node(f"n{k}", {"gpu": 4}) for k in range(4)]), jobs


def test_a_starving_pool_takes_its_guarantee_back():
    s = {"fair_share_update_period": 1.0, "heartbeat_period": 0.5, "fair_share_starvation_timeout": 2.0,
         "preemptive_scheduling_backoff": 1.0}
    fast, r = same(_pools_fight, s)
    preempts = [x for x in fast if x[0] == "preempt"]
    assert len(preempts) >= 4 and int(r.IS[L.I_PREEMPTS]) == len(preempts)
    assert {x[5] for x in preempts} <= set(range(8, 14)) and {x[2] for x in preempts} <= set(range(8))
    stages = {}
    for x in preempts:
        stages.setdefault((x[1], x[4]), []).append(x)
    assert any(len(v) > 1 for v in stages.values())  # a 4-unit task takes two 1-unit... or more


def test_a_victim_restarts_at_the_same_instant():
    """Splay 0: the evicted task is pending again for the next node's regular stage at the same
    instant, last in its operation's order, and its old finish is stale."""
    def make():
        queues = [Queue("root"), Queue("a", "root", weight=3.0), Queue("b", "root")]
        jobs = [Workload("long", "b", 0.0, 100.0, (TaskGroup(4, {"gpu": 2}),)),
                Workload("x", "a", 3.0, 10.0, (TaskGroup(2, {"gpu": 2}),))]
        return ClusterState(["gpu"], queues, [Node("n0", {"gpu": 4}), Node("n1", {"gpu": 6})]), jobs
    s = {"fair_share_update_period": 1.0, "heartbeat_period": 1.0, "heartbeat_splay": 0.0,
         "fair_share_starvation_timeout": 1.0, "preemptive_scheduling_backoff": 0.0}
    fast, _ = same(make, s)
    assert any(x[0] == "preempt" for x in fast)

"""The YTsaurus model's caches never change a decision (hypothesis).

The simulator model reuses work between calls: curves of unchanged subtrees, the whole fair share
update when no epoch moved, classifications until an operation's allocations or the snapshot
change, operations' usage sums, pool values across picks, tree orders, positions, total capacity,
and per-heartbeat usage views filled on first use. Each is valid only while what it read did not
change. On random small clusters (nested pools, weights, strong guarantees, limits, FIFO and
integral pools, graceful, limited and non-preemptible operations, config changes, short starvation
timeouts so that preemption happens, and a batching threshold low enough for batched levels) the
model and ``FullEvaluation``, which recomputes all of it on every call, must decide exactly the
same, at the same times, in the same order, with the same values.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import fairshare
from makeway.policies.ytsaurus.model import YTsaurusModel
from makeway.sim.engine import SimOptions, simulate
from makeway.sim.trace import ConfigChange
from tests.decision_log import RecordsSchedule, record

HORIZON = 80.0


class Recording(RecordsSchedule, YTsaurusModel):
    """The model as it is, with every decision of ``schedule`` and ``heartbeat`` logged."""

    def heartbeat(self, state, node, now):
        out = super().heartbeat(state, node, now)
        if out:
            self.log.append(f"{now!r} H {node}")
        record(self.log, out, now)
        return out


class FullEvaluation(Recording):
    """The model with ``caches: false``, everything recomputed on every call (the ground truth for
    the caches): no curve cache, every update computed, every status classified afresh, usage
    re-summed, picks made from scratch, positions, orders and total capacity recomputed, usage
    views converted up front."""

    def __init__(self, settings=None):
        super().__init__({**(settings or {}), "caches": False})


@st.composite
def clusters(draw):
    def one_in(k: int) -> bool:  # the simplest draw (shrinking's target) leaves a feature out
        return draw(st.integers(1, k)) == k

    queues, names = [], []
    for i in range(draw(st.integers(2, 6))):
        parent = draw(st.sampled_from([None, *names])) if names else None
        s: dict = {}
        if one_in(4):
            s["mode"] = "fifo"
            s["fifo_sort_parameters"] = draw(st.sampled_from([["weight", "start_time"],
                                                              ["pending_allocation_count", "start_time"]]))
        if one_in(5):
            s["allow_normal_preemption"] = False
        if one_in(5):
            s["fair_share_starvation_tolerance"] = draw(st.sampled_from([0.5, 1.0]))
        if one_in(10):
            s["integral_guarantees"] = {"guarantee_type": draw(st.sampled_from(["burst", "relaxed"])),
                                        "resource_flow": {"cpu": 1}, "burst_guarantee_resources": {"cpu": 4}}
        guaranteed = ({"cpu": draw(st.integers(1, 8)), **({"memory": draw(st.integers(2, 16))}
                                                             if draw(st.booleans()) else {})}
                      if one_in(3) else None)
        limit = ({draw(st.sampled_from(["cpu", "memory"])): draw(st.integers(2, 12))}
                 if one_in(4) else None)
        queues.append(Queue(f"p{i}", parent, guaranteed=guaranteed, max=limit,
                            weight=draw(st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.0])), settings=s))
        names.append(f"p{i}")
    nodes = [Node(f"n{i}", {"cpu": draw(st.integers(4, 10)), "memory": draw(st.integers(10, 30))})
             for i in range(draw(st.integers(2, 6)))]
    workloads, t = [], 0.0
    for j in range(draw(st.integers(10, 40))):
        t += draw(st.sampled_from([0.0, 0.0, 0.0, 0.5, 2.0, 8.0]))
        ws: dict = {}
        if one_in(4):
            ws["weight"] = draw(st.sampled_from([0.5, 2.0]))
        if one_in(8):
            ws["preemption_mode"] = "graceful"
        if one_in(8):
            ws["resource_limits"] = {"cpu": draw(st.integers(1, 6))}
        if one_in(8):
            ws["allocation_preemption_timeout"] = 1.5
        count = draw(st.sampled_from([1, 2, 3, 4, 4]))
        first = draw(st.integers(1, count))
        split = (first, count - first)  # one or two task shapes
        workloads.append(Workload(
            f"w{j}", draw(st.sampled_from(names)), t, draw(st.sampled_from([2.0, 10.0, 500.0, 500.0])),
            tuple(TaskGroup(k, {"cpu": draw(st.integers(1, 3)), "memory": draw(st.integers(1, 4))})
                  for k in split if k),
            preemptible=not one_in(8), settings=ws))
    changes = [ConfigChange(draw(st.sampled_from([10.0, 25.5, 40.0])), draw(st.sampled_from(names)),
                            draw(st.sampled_from([{"weight": 4.0}, {"max": {"cpu": 3}}, {"max": None},
                                                  {"guaranteed": {"cpu": 5}},
                                                  {"settings": {"mode": "fifo"}}])))
               for _ in range(draw(st.integers(0, 2)))]
    model_settings = {
        "fair_share_update_period": draw(st.sampled_from([0.5, 1.0, 3.0])),
        "heartbeat_period": draw(st.sampled_from([1.0, 2.0])),
        "heartbeat_splay": draw(st.sampled_from([0.0, 0.5])),
        "preemptive_scheduling_backoff": draw(st.sampled_from([0.5, 3.0])),
        "fair_share_starvation_timeout": draw(st.sampled_from([1.0, 4.0])),
        "fair_share_aggressive_starvation_timeout": draw(st.sampled_from([3.0, 10.0])),
        "enable_aggressive_starvation": draw(st.booleans()),
        "fair_share_starvation_tolerance": draw(st.sampled_from([0.8, 1.0])),
        "scheduling_preemption_priority_scope": draw(st.sampled_from(["operation_and_ancestors", "operation_only"])),
        "integral_guarantees": {"smooth_period": 5.0},
    }
    if one_in(4):
        model_settings["non_preemptible_resource_usage_threshold"] = {"cpu": draw(st.integers(1, 3))}
    # small trees reach the batched levels of the fair share update only with a lower threshold
    batch_min = draw(st.sampled_from([fairshare.BATCHING.min_pools, 1, 2]))
    return queues, nodes, workloads, changes, model_settings, batch_min


def run(cls, case) -> list[str]:
    queues, nodes, workloads, changes, model_settings, batch_min = case
    state = ClusterState(["cpu", "memory"], [Queue(q.name, q.parent, q.guaranteed, q.max, q.weight,
                                                   settings=dict(q.settings)) for q in queues],
                         [Node(n.name, dict(n.capacity)) for n in nodes])
    model = cls({**model_settings, "fair_share_batch_min_pools": batch_min})
    simulate(state, model, list(workloads), changes, options=SimOptions(horizon=HORIZON, check_invariants=True))
    return model.log


def full(case) -> list[str]:
    return run(FullEvaluation, case)


# Examples are random on every CI run, so coverage adds up across runs; each costs about 1 s of CPU
# (the reference re-evaluates every pick over the whole tree), so 20 and 10 keep the suite's budget.
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_caches_decide_as_full_evaluation(case):
    assert run(Recording, case) == full(case)


def ten_pools(seed: int):
    """Ten sibling pools: a level of the fair share update large enough to be batched as it is."""
    rng = random.Random(seed)
    queues = [Queue(f"p{i}", None, weight=rng.choice([1.0, 2.0, 3.0]),
                    settings={"mode": "fifo"} if rng.random() < 0.2 else {}) for i in range(10)]
    nodes = [Node(f"n{i}", {"cpu": rng.randint(4, 8), "memory": rng.randint(8, 24)}) for i in range(6)]
    workloads, t = [], 0.0
    for j in range(60):
        t += rng.choice([0.0, 0.0, 0.5, 2.0, 6.0])
        shape = {"cpu": rng.randint(1, 3), "memory": rng.randint(1, 6)}
        workloads.append(Workload(f"w{j}", f"p{rng.randrange(10)}", t, rng.choice([3.0, 10.0, 40.0, 500.0]),
                                  (TaskGroup(rng.randint(1, 4), shape),)))
    model_settings = {"fair_share_update_period": 1.0, "heartbeat_period": 1.0, "heartbeat_splay": 0.5,
                      "preemptive_scheduling_backoff": 1.0, "fair_share_starvation_timeout": 2.0}
    return queues, nodes, workloads, [], model_settings, fairshare.BATCHING.min_pools


def test_batched_level_with_warm_curve_cache_decides_as_full_evaluation():
    """Pools found in the curve cache once left their level, so the rest of a level of ten was
    computed on the generic path (and a level of only unchanged pools let the root take the
    point-only path), rounding differently from a fresh update: here the fair shares in the notes
    differed from 38 s on, and at 53 s n0 started a task of w24 instead of w14."""
    case = ten_pools(14)
    log = run(Recording, case)
    assert sum(" P " in line for line in log) > 0
    assert log == full(case)


@pytest.mark.xdist_group("numba-kernel")  # compiled on the worker that compiles it for test_kernel
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_caches_decide_as_full_evaluation_with_the_kernel(case):
    """The same with the compiled update, which large trees take (its result is arrays, read
    lazily, and the model's own caches must not care)."""
    pytest.importorskip("numba", reason="the kernel is the optional extra makeway[fast]")
    queues, nodes, workloads, changes, model_settings, batch_min = case
    kernel = (queues, nodes, workloads, changes, {**model_settings, "fair_share_kernel": True}, batch_min)
    assert run(Recording, kernel) == full(kernel)

"""The incremental pending-reason rounds write the same trails as re-classifying every pending
workload at every round (``ReasonLog.incremental = False``, the reference), under every model.

A small ``HEAD`` puts most of a small case's workloads behind the head of their queue, where the
incremental rounds skip those whose inputs did not move; config changes, queue maxes, grace
periods and workloads that never start are in the cases (``cases(..., invariants=True)``).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.pending import default_queue_order
from makeway.core.state import ClusterState
from makeway.sim.pending import ReasonLog
from tests.sim.model_cases import MODELS, cases, run


def _trails(case, incremental: bool, head: int):
    saved = ReasonLog.incremental, ReasonLog.HEAD
    ReasonLog.incremental, ReasonLog.HEAD = incremental, head
    try:
        rec, log = run(case, check=False)
    finally:
        ReasonLog.incremental, ReasonLog.HEAD = saved
    return rec.reasons.rows(), rec.pending_reasons(), log


@pytest.mark.parametrize("model", sorted(MODELS))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), head=st.sampled_from([1, 2]))
def test_incremental_rounds_write_the_reference_trails(model, data, head):
    case = data.draw(cases(model, invariants=True))
    ref = _trails(case, False, head)
    new = _trails(case, True, head)
    assert new[0] == ref[0]
    assert new[1:] == ref[1:]


# -- the log alone, on random sequences of state changes ---------------------------------------------

class _Model:
    """Reads only: the default queue order, and now and then a reason of its own for a head."""
    all_or_nothing = True

    def queue_order(self, state, queue, now):
        return default_queue_order(state, queue)

    def pending_reason(self, state, wl_id, now):
        if int(now) % 3 == 0 and len(wl_id) % 2:
            return ("quota", "the model says so", {"blocking": state.workloads[wl_id].queue})
        return None


def _cluster():
    queues = [Queue("root"), Queue("g", "root", max={"cpu": 8}), Queue("a", "g"),
              Queue("b", "g", max={"cpu": 5}), Queue("c", "root")]
    return ClusterState(["cpu"], queues, [Node("n0", {"cpu": 8}), Node("n1", {"cpu": 8})])


def _ops(rng):
    """A random sequence of state changes and observations (drawn from a seeded ``random.Random``:
    hypothesis' own draws favour short, small values, which rarely leave work behind a head)."""
    out = []
    for _ in range(rng.randint(40, 120)):
        kind = rng.choice(["submit"] * 4 + ["start", "end", "preempt", "preempt", "max", "withdraw", "observe",
                                            "observe"])
        if kind == "submit":
            out.append((kind, rng.choice("abcc"), rng.randint(1, 3), rng.randint(1, 9), rng.randint(0, 2)))
        elif kind == "max":
            out.append((kind, rng.choice(["root", "g", "b", "c"]), rng.choice([None, 2, 6, 9, 14])))
        elif kind == "observe":
            out.append((kind, rng.choice([0.0, 0.3, 1.0, 2.5])))
        else:
            out.append((kind, rng.randint(0, 99), rng.randint(0, 99), rng.random() < 0.5))
    return out


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), head=st.sampled_from([1, 2, 3]))
def test_the_log_alone_matches_the_reference_on_random_changes(seed, head):
    state, model = _cluster(), _Model()
    logs = [ReasonLog(state, model), ReasonLog(state, model)]
    logs[0].incremental = False
    for log in logs:
        log.HEAD = head
    now, n = 0.0, 0
    for o in _ops(random.Random(seed)):
        kind = o[0]
        if kind == "submit":
            _, q, count, cpu, prio = o
            wl = Workload(f"w{n}", q, now, 10.0, (TaskGroup(count, {"cpu": cpu}),), prio)
            n += 1
            state.submit(wl)
            for log in logs:
                log.submitted(wl)
        elif kind == "start" and state.pending:
            wl_id = sorted(state.pending)[o[1] % len(state.pending)]
            tid = next(iter(state.pending[wl_id]))
            state.start(tid, "n0" if o[1] % 2 else "n1", now)
            for log in logs:
                log.started(wl_id)
        elif kind == "end" and state.allocations:
            tid = sorted(state.allocations)[o[1] % len(state.allocations)]
            state.end(tid)
            if o[3] and state.workloads[tid.rsplit("/", 2)[0]].id not in state.withdrawn:
                state.requeue(tid)
        elif kind == "preempt" and state.allocations and state.pending:
            tid = sorted(state.allocations)[o[1] % len(state.allocations)]
            wl_id = sorted(state.pending)[o[2] % len(state.pending)]
            state.mark_preempting(tid)
            for log in logs:
                log.preempted_for(wl_id, tid, now)
        elif kind == "max":
            state.update_queue(o[1], max=None if o[2] is None else {"cpu": o[2]})
        elif kind == "withdraw" and state.workloads:
            state.withdraw(sorted(state.workloads)[o[1] % len(state.workloads)])
        elif kind == "observe":
            now += o[1]
            for log in logs:
                log.observe(now)
    assert logs[1].trail == logs[0].trail
    assert logs[1]._current == logs[0]._current

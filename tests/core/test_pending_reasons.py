"""Pending reason codes and queue positions (makeway.core.pending), one small real case per code
and model where the code applies: a state built, ``schedule`` (and heartbeats) called through the
executor-free driver of ``test_runtime_topology``, then ``explain_pending``. About 1 s in all.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from makeway.core.pending import CODES, explain_pending
from tests.core.test_runtime_topology import MODELS, Driver


def _set(d: Driver, queue: str, **changes: object) -> None:
    old = d.state.update_queue(queue, **changes)
    d.model.on_config_change(d.state, queue, old, d.now)


def fits_nowhere(m: str) -> tuple[Driver, str]:
    d = Driver(m, [4, 4])
    return d, d.submit("q0", 1, 9, 0)


def queue_max(m: str) -> tuple[Driver, str]:
    d = Driver(m, [4, 4])
    _set(d, "q1", max={"cpu": 2}, **({"guaranteed": {"cpu": 2}} if m in ("kueue", "yunikorn", "ytsaurus") else {}))
    return d, d.submit("q1", 2, 2, 0)


def quota(m: str) -> tuple[Driver, str]:
    """Its queue's own running work uses what its limit allows."""
    d = Driver(m, [8, 8])
    _set(d, "q1", max={"cpu": 4}, guaranteed={"cpu": 4} if m in ("kueue", "yunikorn", "ytsaurus") else None)
    d.submit("q1", 2, 2, 1, duration=100.0)
    d.step()
    wid = d.submit("q1", 1, 2, 0)
    d.step()
    return d, wid


def fair_share(m: str) -> tuple[Driver, str]:
    """Two equal workloads share one queue: each runs half and is at its YTsaurus fair share or
    Symphony deserved share (batch sessions do not preempt)."""
    d = Driver(m, [4, 4])
    first = d.submit("q0", 4, 2, 0, duration=100.0)
    d.submit("q0", 4, 2, 0, duration=100.0)
    for _ in range(3):
        d.step()
    assert len(d.state.running[first]) == 2
    return d, first


def preempting(m: str) -> tuple[Driver, str]:
    """Victims chosen for it keep running inside their grace period."""
    d = Driver(m, [4, 4], graceful=True)
    if m == "kueue":
        _set(d, "q0", guaranteed={"cpu": 4}, max={"cpu": 4})
        d.submit("q0", 2, 2, 0, duration=100.0)
        d.step()
        wid = d.submit("q0", 1, 2, 5)
    else:  # yunikorn: q1 above its guarantee on every node, q0 below its own
        d.submit("q1", 4, 2, 0, duration=100.0)
        d.step()
        wid = d.submit("q0", 1, 2, 0)
    for _ in range(3):
        d.step()
    return d, wid


def gang(m: str) -> tuple[Driver, str]:
    d = Driver(m, [4, 4])
    d.submit("q0", 2, 2, 0, duration=100.0)
    d.step()
    return d, d.submit("q1", 3, 2, 0)


def priority(m: str) -> tuple[Driver, str]:
    d = Driver(m, [4])
    d.submit("q0", 2, 2, 0, duration=100.0)
    d.step()
    d.submit("q0", 1, 2, 0)
    wid = d.submit("q0", 1, 2, 0)
    d.step()
    return d, wid


def resources(m: str) -> tuple[Driver, str]:
    d = Driver(m, [4])
    d.submit("q0", 2, 2, 0, duration=100.0)
    d.step()
    wid = d.submit("q1", 1, 2, 0)
    d.step()
    return d, wid


HPC = ("fifo-strict", "easy-backfill")
# (case, expected code, models where the code is that model's answer for the case)
TABLE: list[tuple[Callable, str, tuple[str, ...]]] = [
    (fits_nowhere, "fits-nowhere", tuple(MODELS)),
    (queue_max, "queue-max", tuple(MODELS)),
    (quota, "quota", ("none", *HPC, "kueue", "yunikorn", "ytsaurus")),
    (fair_share, "quota", ("ytsaurus", "symphony")),
    (preempting, "preempting", ("kueue", "yunikorn")),
    (gang, "gang", ("none", *HPC, "kueue")),
    (priority, "priority", ("none", *HPC, "kueue", "yunikorn", "symphony")),
    (resources, "resources", ("none", *HPC, "kueue", "yunikorn")),
]
CASES = [pytest.param(case, code, m, id=f"{code}-{case.__name__}-{m}") for case, code, ms in TABLE for m in ms]


@pytest.mark.parametrize("case, code, model", CASES)
def test_pending_code(case: Callable, code: str, model: str) -> None:
    d, wid = case(model)
    assert wid in d.state.pending
    before = (d.state.alloc_epoch, d.state.submit_epoch, d.state.freed_epoch, d.state.config_epoch)
    info = explain_pending(d.state, d.model, d.now)
    assert before == (d.state.alloc_epoch, d.state.submit_epoch, d.state.freed_epoch, d.state.config_epoch)
    got = info[wid]
    assert got.code == code, got
    assert got.code in CODES and got.message
    if code in ("queue-max",) or (code == "quota" and case is quota):
        assert got.blocking == "q1"
    # positions: 1..n, a permutation, within each leaf queue
    for q in {i.queue for i in info.values()}:
        assert sorted(i.position for i in info.values() if i.queue == q) == \
            list(range(1, sum(1 for i in info.values() if i.queue == q) + 1))


@pytest.mark.parametrize("model", MODELS)
def test_position_follows_the_models_queue_order(model: str) -> None:
    d = Driver(model, [2])
    d.submit("q0", 1, 2, 0, duration=100.0)
    d.step()
    low = d.submit("q0", 1, 2, 0)
    high = d.submit("q0", 1, 2, 2)
    d.step()
    info = explain_pending(d.state, d.model, d.now)
    if model in HPC:  # batch queues: submit order, priority ignored
        assert (info[low].position, info[high].position) == (1, 2)
    else:
        assert (info[high].position, info[low].position) == (1, 2)


def test_executor_record_of_victims_gives_preempting() -> None:
    d = Driver("none", [4])
    d.submit("q0", 2, 2, 0, duration=100.0)
    d.step()
    wid = d.submit("q1", 1, 4, 0)
    d.step()
    victims = list(d.state.allocations)
    for v in victims:
        d.state.mark_preempting(v)
    got = explain_pending(d.state, d.model, d.now, preempting_for={wid: victims})[wid]
    assert got.code == "preempting" and got.values["victims"] == sorted(victims)
    assert explain_pending(d.state, d.model, d.now)[wid].code == "resources"


@pytest.mark.parametrize("m", MODELS)
def test_queue_orders_are_each_queues_own_order(m: str):
    """One pass for every queue gives what ``queue_order`` gives queue by queue, in queue name order,
    whether the model keeps the default order or has its own (Kueue)."""
    from makeway.core.pending import queue_orders

    d = Driver(m, [4, 4])
    for i in range(12):
        d.submit(f"q{i % 2}", 1 + i % 3, 4, i % 2)
    d.step()
    orders = queue_orders(d.model, d.state, d.now)
    queues = sorted({d.state.workloads[w].queue for w in d.state.pending})
    assert list(orders) == queues and queues
    assert orders == {q: d.model.queue_order(d.state, q, d.now) for q in queues}
    assert sum(map(len, orders.values())) == len(d.state.pending)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["submit", "start", "end", "requeue", "withdraw", "read"]),
                          st.integers(0, 7), st.integers(0, 2)), max_size=80),
       st.sampled_from([2, 5, 1 << 16]))
@example([("read", 0, 0), ("submit", 0, 1), ("read", 0, 0), ("start", 0, 0), ("read", 0, 0)], 1 << 16)
def test_pending_counts_kept_from_the_journals_are_the_backlog_per_queue(ops, limit):
    """``PendingCounts`` reads only the workloads the journals name since its last read (a
    submission, requeue or withdrawal, and a start); whatever the order of operations, and with
    journals trimmed between reads, it gives the pending workloads per queue, and so do the
    orders ``queue_orders`` reads with it."""
    from makeway.core.objects import Node, Queue, TaskGroup, Workload
    from makeway.core.pending import PendingCounts, queue_orders
    from makeway.core.state import ClusterState

    from makeway.core.policy import PreemptionModel

    class NameOrder(PreemptionModel):
        """A model with its own queue order, which is when ``queue_orders`` reads the counts."""

        def queue_order(self, state, queue, now):
            return sorted(w for w in state.pending if state.workloads[w].queue == queue)

    state = ClusterState(["cpu"], [Queue("q0"), Queue("q1"), Queue("q2")], [Node("n0", {"cpu": 1000})])
    state.run_log.limit = state.pending_log.limit = limit
    counts = PendingCounts()
    for op, i, q in ops:
        wid = f"w{i}"
        if op == "submit" and wid not in state.workloads:
            state.submit(Workload(wid, f"q{q}", 0.0, 10.0, (TaskGroup(1 + i % 2, {"cpu": 1}),), 0))
        elif op == "start" and state.pending.get(wid):
            state.start(next(iter(state.pending[wid])), "n0", 0.0)
        elif op in ("end", "requeue") and state.running.get(wid):
            tid = next(iter(state.running[wid]))
            state.end(tid)
            if op == "requeue" and wid not in state.withdrawn:
                state.requeue(tid)
        elif op == "withdraw" and wid in state.workloads:
            state.withdraw(wid)
        elif op == "read":
            got = {k: n for k, n in counts.read(state).items() if n}
            assert got == Counter(state.workloads[w].queue for w in state.pending)
    got = {k: n for k, n in counts.read(state).items() if n}
    assert got == Counter(state.workloads[w].queue for w in state.pending)
    by_queue: dict[str, int] = {}
    orders = queue_orders(NameOrder(), state, 0.0, by_queue, counts)
    assert by_queue == got and list(orders) == sorted(got)
    assert orders == {q: NameOrder().queue_order(state, q, 0.0) for q in got}

"""The holding sessions' table (``symphony.holders``), kept in step with the state's run and pending
logs, always equals a table built afresh from the state: after random submissions, starts, ends,
preemptions with requeue, withdrawals and priority changes, with the logs long or trimmed. Each
session's figures, the per-consumer class counts and slots held, and the waiting sessions'
backlog are compared. A holder view builds its task views only when they are read, as the
eager build would have them. ``deserved_total`` is the sum of ``proportional_deserved``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.symphony.backlog import Backlog
from makeway.policies.symphony.holders import HolderView
from makeway.policies.symphony.model import _SlotCache, session_settings
from makeway.policies.symphony.rules import TaskView, class_deserved, proportional_deserved
from makeway.policies.symphony.sparse import class_counts, deserved_total

OPS = st.lists(st.tuples(st.sampled_from(["submit", "start", "finish", "preempt", "withdraw", "priority"]),
                         st.integers(0, 10_000)), max_size=60)


def _state() -> ClusterState:
    return ClusterState(["slots"], [Queue("root"), Queue("a", "root"), Queue("b", "root")],
                        [Node("h0", {"slots": 6}), Node("h1", {"slots": 4})])


def _apply(state: ClusterState, op: str, k: int, n: int) -> None:
    """One operation, chosen by ``k`` among those the state allows (none: nothing happens)."""
    pend = sorted(t for tasks in state.pending.values() for t in tasks)
    running = sorted(state.allocations)
    if op == "submit":
        groups = (TaskGroup(1 + k % 3, {"slots": 1 + k % 2}),) + ((TaskGroup(1, {"slots": 2}),) if k % 5 == 0 else ())
        state.submit(Workload(f"w{n}", "ab"[k % 2], float(n), 10.0, groups, priority=k % 3,
                              settings={"preemptionRank": k % 4}))
    elif op == "start" and pend:
        tid = pend[k % len(pend)]
        node = next((m for m in ("h0", "h1") if state.fits_node(state.task_resources(tid), m)), None)
        if node is not None:
            state.start(tid, node, float(n))
    elif op in ("finish", "preempt") and running:
        tid = running[k % len(running)]
        if op == "finish":
            state.finish(tid)
        else:
            state.end(tid)
            if tid.rsplit("/", 2)[0] not in state.withdrawn:
                state.requeue(tid)
    elif op == "withdraw" and state.pending:
        state.withdraw(sorted(state.pending)[k % len(state.pending)])
    elif op == "priority":
        idle = sorted(w for w in state.pending if not state.running.get(w) and w not in state.withdrawn)
        if idle:
            state.set_priority(idle[k % len(idle)], 1 + k % 4)


def _synced(state: ClusterState, backlog: Backlog) -> Backlog:
    slots_of = _SlotCache("slots")
    backlog.sync(state, "slots", lambda wl: session_settings(state, wl), slots_of)
    return backlog


def _picture(b: Backlog) -> tuple:
    t = b.table
    return (dict(sorted(t.held.items())),
            {q: (sorted(ch.held), {c: sorted(m) for c, m in ch.classes.items()}, sorted(ch.waiting), ch.allocated)
             for q, ch in t.of.items()},
            {q: sorted(cb.recs.items()) for q, cb in b.consumers.items() if cb.recs})


@pytest.mark.parametrize("limit", [1 << 16, 3])
@settings(max_examples=60, deadline=None)
@given(ops=OPS)
def test_table_kept_from_the_logs_equals_a_fresh_one(ops, limit):
    state = _state()
    state.run_log.limit = state.pending_log.limit = limit
    kept = Backlog()
    for n, (op, k) in enumerate(ops):
        _apply(state, op, k, n)
        if k % 3 == 0:  # the model is not called after every change
            continue
        assert _picture(_synced(state, kept)) == _picture(_synced(state, Backlog()))
    assert sum(ch.allocated for ch in _synced(state, kept).table.of.values()) == sum(
        _SlotCache("slots")(a.resources) for a in state.allocations.values())


def test_holder_view_builds_its_tasks_when_read():
    state = _state()
    state.submit(Workload("w1", "a", 0.0, 10.0, (TaskGroup(3, {"slots": 2}),)))
    state.start("w1/0/0", "h0", 1.0)
    state.start("w1/0/1", "h1", 2.0)
    state.mark_preempting("w1/0/1")
    b = _synced(state, Backlog())
    slots_of = _SlotCache("slots")
    for sharing, label in (("none", lambda n: None), ("host", lambda n: n)):
        view = HolderView(b.table.held["w1"], "w1", (state, 5.0, sharing, slots_of))
        assert isinstance(view, HolderView) and (view.allocated, view.demand) == (4, 6)
        assert view.tasks == [TaskView("w1/0/0", "w1", 1.0, 4.0, 2, label("h0"), True),
                              TaskView("w1/0/1", "w1", 2.0, 3.0, 2, label("h1"), False)]
        view.tasks = []  # a preemption's filtered list stays as set
        assert view.tasks == []
        with pytest.raises(AttributeError):
            view.no_such_field  # noqa: B018


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 40), st.lists(st.tuples(st.integers(1, 4), st.integers(0, 9)), max_size=30),
       st.integers(0, 30))
def test_deserved_total_sums_proportional_deserved(capacity, rows, split):
    sessions = [(f"s{i:02d}", p, d) for i, (p, d) in enumerate(rows)]
    held: dict[tuple[int, int], int] = {}
    for _, p, d in sessions[:split]:  # some hold tasks, the others wait: the counts add up
        held[(p, d)] = held.get((p, d), 0) + 1
    waiting: dict[tuple[int, int], int] = {}
    for _, p, d in sessions[split:]:
        waiting[(p, d)] = waiting.get((p, d), 0) + 1
    counts = class_counts(None, held)
    for c, n in waiting.items():
        counts[c] = counts.get(c, 0) + n
    assert deserved_total(class_deserved(capacity, counts), counts) == sum(
        proportional_deserved(capacity, sessions).values())

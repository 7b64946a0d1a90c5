"""``LiveOps`` yields, in ``state.workloads`` order and with their index there, every workload a
full walk of ``state.workloads`` would keep (something pending or running), whatever the sequence
of submissions, starts, finishes, requeues and withdrawals, and when the journal was trimmed."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus.live import LiveOps


def _reference(state: ClusterState) -> list[tuple[str, int]]:
    return [(w, i) for i, w in enumerate(state.workloads) if state.running.get(w) or state.pending.get(w)]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([4, 16, 1 << 16]), st.integers(20, 120))
def test_live_ops_match_a_full_walk(seed, limit, steps):
    rng = random.Random(seed)
    state = ClusterState(["cpu"], [Queue("q")], [Node("n", {"cpu": 1_000})])
    state.pending_log.limit = limit
    live, n = LiveOps(), 0
    for _ in range(steps):
        r = rng.random()
        running = [t for t in state.allocations]
        pending = [t for ts in state.pending.values() for t in ts]
        if r < 0.3:
            state.submit(Workload(f"w{n}", "q", 0.0, 1.0, (TaskGroup(rng.randint(1, 3), {"cpu": 1}),)))
            n += 1
        elif r < 0.55 and pending:
            state.start(rng.choice(pending), "n", 0.0)
        elif r < 0.8 and running:
            state.finish(rng.choice(running))
        elif r < 0.9 and running:
            tid = rng.choice(running)
            state.end(tid)
            if tid.split("/")[0] not in state.withdrawn:
                state.requeue(tid)
        elif r < 0.95 and state.workloads:
            state.withdraw(rng.choice(list(state.workloads)))
        if rng.random() < 0.5:
            got = [(w, i) for w, i in live.ops(state) if state.running.get(w) or state.pending.get(w)]
            assert got == _reference(state)
    assert [(w, i) for w, i in live.ops(state) if state.running.get(w) or state.pending.get(w)] == _reference(state)

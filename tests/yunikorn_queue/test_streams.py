"""Blocked asks released as streams decide as the full evaluation does (hypothesis, issue 20).

The fast pass keeps asks of one (queue, request) key blocked while that key cannot be placed, and
when room appears releases them one workload at a time in walk order, stopping at the first that
is not placed (``policies/yunikorn/blocks.py``); a reservation given up mid-walk re-opens only the
keys it helps. These runs are built to hit that: a backlog of a few request shapes on small
nodes, short jobs freeing room often, waves of arrivals (more asks due at once than a leaf has
attempts per call: parked asks), and pinned asks whose reservations go in the middle of a walk. Every decision and wake-up must equal the model's with ``caches: false``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.core.objects import TaskGroup, Workload
from makeway.policies.yunikorn.blocks import Blocks, walk_key
from tests.yunikorn_queue.test_cache_equivalence import FullEvaluation, Recording, run


@st.composite
def backlogs(draw: Any) -> dict:
    delay = {"preemption.delay": "1s"}
    leaves = [f"root.l{i}" for i in range(draw(st.integers(2, 3)))]
    queues: list[tuple] = [("root", None, None, None, {})]
    for name in leaves:
        g = {"cpu": draw(st.integers(1, 6))} if draw(st.booleans()) else None
        m = {"cpu": draw(st.integers(4, 10))} if draw(st.integers(0, 3)) == 0 else None
        queues.append((name, "root", g, m, delay))
    nodes = [(f"n{i}", {"cpu": draw(st.integers(2, 5))}) for i in range(draw(st.integers(2, 4)))]
    shapes = draw(st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=2, unique=True))
    # waves: more asks due at one instant than a leaf has attempts per call (parked asks)
    gaps = [0.0] * 14 + [20.0] if draw(st.booleans()) else [0.0, 0.0, 0.0, 0.5, 2.0, 16.0]
    jobs, t = [], 0.0
    for j in range(draw(st.integers(25, 60))):
        t += draw(st.sampled_from(gaps))
        s: dict = {}
        if draw(st.integers(0, 9)) == 0:
            s["requiredNode"] = draw(st.sampled_from(nodes))[0]
        jobs.append(Workload(f"w{j}", draw(st.sampled_from(leaves)), t, draw(st.sampled_from([1.0, 3.0, 8.0, 40.0])),
                             (TaskGroup(draw(st.sampled_from([1, 1, 2, 4])), {"cpu": draw(st.sampled_from(shapes))}),),
                             draw(st.sampled_from([0, 0, 3])), settings=s))
    return {"queues": queues, "nodes": nodes, "jobs": jobs, "changes": [],
            "settings": {"quotaPreemptionEnabled": False}}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(backlogs())
def test_streamed_backlog_decides_as_full_evaluation(case):
    assert run(Recording, case) == run(FullEvaluation, case)


class _State:
    """Just what ``Blocks`` reads: pending tasks by workload."""

    def __init__(self, pending: dict[str, list[str]]):
        self.pending = {w: dict.fromkeys(ts) for w, ts in pending.items()}


def test_stream_releases_one_workload_at_a_time_in_walk_order():
    wls = [Workload(f"w{i}", "root.a", float(s), 1.0, (TaskGroup(1, {"cpu": 1}),), p)
           for i, (s, p) in enumerate([(3, 0), (1, 0), (2, 5), (1, 0)])]
    state = _State({w.id: [f"{w.id}/0/0"] for w in wls})
    blocks = Blocks()
    key = ("root.a", (("cpu", 1),))
    for w in wls:
        blocks.block(f"{w.id}/0/0", w, None, False, key)
    order = sorted(wls, key=walk_key)  # priority first, then submit time, then id
    assert [w.id for w in order] == ["w2", "w1", "w3", "w0"]
    first = blocks.stream_next(state, key, None)
    assert first == "w2" and "w2/0/0" not in blocks.blocked and "w1/0/0" in blocks.blocked
    # after w1's walk key: the next is w3, and w1 stays blocked (it was passed)
    assert blocks.stream_next(state, key, walk_key(wls[1])) == "w3"
    assert "w1/0/0" in blocks.blocked and blocks.count == {"w0": 1, "w1": 1, "w2": 0, "w3": 0}

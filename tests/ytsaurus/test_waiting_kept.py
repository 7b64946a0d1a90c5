"""The backlog a heartbeat's stages and ``quiet`` read, kept across snapshots, is the one a walk of
every pending operation gives (hypothesis, on the cache tests' random clusters).

``waiting.Waiting`` moves only the operations logged since the last sync (or since the last tree
was built) and reads the operations with a preemption priority from the view's starving
elements. Here, at every new key, what it hands out is compared with the comprehensions the
reference path (``caches: false``) uses: the regular stage's operations, each stage's, and
``quiet``'s backlog (``quiet._backlog``).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.policies.ytsaurus import quiet, starvation, waiting
from makeway.policies.ytsaurus.model import YTsaurusModel
from tests.ytsaurus.test_cache_equivalence import clusters, run
from tests.ytsaurus.test_tree_ops import backlog


class CheckedWaiting(waiting.Waiting):
    checks = 0
    needy = 0
    aggressive = 0
    graceful = 0

    def _fresh(self, model, state, snap, scope):
        key = self._key
        super()._fresh(model, state, snap, scope)
        if self._key != key or CheckedWaiting.checks == 0:
            check(self, model, state, snap, scope)


def check(kept: waiting.Waiting, model, state, snap, scope) -> None:
    CheckedWaiting.checks += 1
    view, published = snap.view, snap.published
    pending = [w for w, p in state.pending.items() if p and w in published]
    regular = {w for w in pending if not (model._graceful(state, w) and view.status.get(w) == "normal")}
    got: set[str] = set()
    for shapes, ops in kept._regular.items():
        for w in ops:
            assert w not in got, w
            got.add(w)
            assert shapes == tuple(tuple(v) for v in model._groups(state, w)), w
    assert got == regular
    CheckedWaiting.graceful += len(set(pending) - regular)
    for target in ("aggressive", "normal", "none"):
        want = {w for w in pending if starvation.preemption_priority(view, w, scope) == target}
        if target != "none":
            CheckedWaiting.needy += len(want)
            if target == "aggressive":
                CheckedWaiting.aggressive += len(want)
            have = {w for ops in kept._by_priority.get(target, {}).values() for w in ops}
            assert have == want, target
        roomy = [1e9] * len(model.resources)
        assert kept.preemptive(model, state, snap, scope, target, roomy) == want, target
        none = [0.0] * len(model.resources)
        assert kept.preemptive(model, state, snap, scope, target, none) == set(), target
    walked = quiet._backlog(model, state, snap, scope)
    assert kept._backlog[0] == walked[0]
    if not walked[0]:  # with an operation missing from the snapshot, ``quiet`` reads nothing else
        assert kept._backlog == walked


class Checked(YTsaurusModel):
    def __init__(self, settings=None):
        super().__init__(settings)
        self.log: list[str] = []
        self._waiting = CheckedWaiting()


@st.composite
def with_pool_starvation(draw):
    queues, nodes, workloads, changes, model_settings, batch_min = draw(clusters())
    model_settings = {**model_settings, "enable_pool_starvation": draw(st.booleans())}
    return queues, nodes, workloads, changes, model_settings, batch_min


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(with_pool_starvation())
def test_the_kept_backlog_is_the_walks(case):
    CheckedWaiting.checks = 0
    run(Checked, case)


def test_a_backlog_of_equal_operations_with_starving_ones():
    """Backlogs whose operations start, end and starve: every key checked, and the checks see
    operations with a preemption priority and graceful ones left out of the regular stage."""
    CheckedWaiting.checks = CheckedWaiting.needy = CheckedWaiting.graceful = CheckedWaiting.aggressive = 0
    for seed in range(3):
        queues, nodes, workloads, changes, model_settings, batch = backlog(seed)
        workloads = [w if i % 9 else replace(w, settings={"preemption_mode": "graceful"})
                     for i, w in enumerate(workloads)]
        if seed:  # and aggressively starving ones
            model_settings = {**model_settings, "enable_aggressive_starvation": True,
                              "fair_share_aggressive_starvation_timeout": 4.0}
        run(Checked, (queues, nodes, workloads, changes, model_settings, batch))
    assert CheckedWaiting.checks > 100
    assert CheckedWaiting.needy > 10
    assert CheckedWaiting.aggressive > 10
    assert CheckedWaiting.graceful > 0

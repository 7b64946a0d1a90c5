"""Work the YTsaurus model leaves undone because nothing could read it, and the proofs it leans on:

* an update whose tree has no waiting operation (and no starving clock) defers its fair share
  (``views.DeferredResult``): the statuses are ``normal`` whatever the shares, so only a read needs
  them, and a read gets exactly what the update would have computed;
* ``classify.may_have_preemptible`` is false only where ``classify`` gives no ``P`` allocation, so
  ``quiet`` may skip classifying those operations;
* ``quiet``'s fit test drops requests above every room's most of some resource first, which
  changes no answer, and keeps each node's free vector while its allocations stay;
* the whole model still decides exactly as ``FullEvaluation`` (``caches: false``) with deferred
  updates actually taken.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from makeway.core.objects import Node, Queue, TaskGroup, Workload
from makeway.core.resources import EPS
from makeway.core.state import ClusterState
from makeway.policies.ytsaurus import classify, fairshare, quiet, views
from makeway.policies.ytsaurus.classify import P
from makeway.policies.ytsaurus.model import YTsaurusModel
from makeway.sim.engine import SimOptions, simulate
from tests.ytsaurus.test_cache_equivalence import FullEvaluation, Recording


class Counting(Recording):
    """Counts deferred updates and how many of them were read (and so computed) later."""

    def __init__(self, settings=None):
        super().__init__(settings)
        self.deferred: list[views.DeferredResult] = []

    def _idle_update(self, now, tree, compute, key):
        out = super()._idle_update(now, tree, compute, key)
        self.deferred.append(self.snap.result)
        return out


def light_case(seed: int):
    """Short jobs arriving slowly on a roomy cluster: most updates see nothing waiting."""
    rng = random.Random(seed)
    queues = [Queue("a", None, guaranteed={"cpu": 4}, weight=2.0), Queue("b", None, weight=1.0)]
    nodes = [Node(f"n{i}", {"cpu": 4, "memory": 16}) for i in range(3)]
    workloads, t = [], 0.0
    for j in range(30):
        t += rng.choice([0.5, 3.0, 7.0])
        workloads.append(Workload(f"w{j}", rng.choice("ab"), t, rng.choice([2.0, 6.0, 20.0]),
                                  (TaskGroup(rng.randint(1, 3), {"cpu": rng.choice([1, 2]), "memory": 2}),)))
    return queues, nodes, workloads


def run(cls, case, **extra):
    queues, nodes, workloads = case
    state = ClusterState(["cpu", "memory"], [Queue(q.name, q.parent, q.guaranteed, q.max, q.weight) for q in queues],
                         [Node(n.name, dict(n.capacity)) for n in nodes])
    model = cls({"fair_share_update_period": 0.5, "heartbeat_period": 1.0, "heartbeat_splay": 0.5,
                 "preemptive_scheduling_backoff": 1.0, "fair_share_starvation_timeout": 2.0, **extra})
    simulate(state, model, list(workloads), [], options=SimOptions(horizon=150.0, check_invariants=True))
    return model


def test_deferred_updates_decide_as_full_evaluation():
    for seed in range(4):
        case = light_case(seed)
        model = run(Counting, case)
        assert len(model.deferred) > 10  # the path under test was taken
        assert any(not r.attrs.computed for r in model.deferred)  # and some were never needed at all
        assert model.log == run(FullEvaluation, case).log


def test_a_deferred_result_is_what_the_update_would_have_computed():
    model = run(Counting, light_case(1))
    checked = 0
    for result in model.deferred:
        tree = result.attrs.tree
        want = fairshare.compute(tree)
        got = {name: (a.fair_share, a.demand_share, a.usage_share) for name, a in result.attrs.items()}
        assert got == {name: (a.fair_share, a.demand_share, a.usage_share) for name, a in want.attrs.items()}
        assert all(not el.pending_count for el in tree.elements.values() if el.is_op)
        checked += 1
    assert checked > 10


def test_membership_of_a_deferred_result_computes_nothing():
    model = run(Counting, light_case(2))
    result = model.deferred[-1]
    fresh = views.DeferredResult(result.attrs.tree, lambda: (_ for _ in ()).throw(AssertionError("computed")))
    names = list(result.attrs.tree.elements)
    assert all(n in fresh.attrs for n in names) and "no-such-operation" not in fresh.attrs
    assert len(fresh.attrs) == len(names) and not fresh.attrs.computed


def test_idle_view_is_what_update_statuses_gives_with_nothing_waiting():
    from makeway.policies.ytsaurus import starvation

    model = run(Counting, light_case(3))
    for result in model.deferred[:20]:
        tree = result.attrs.tree
        params = starvation.effective_params(tree, {})
        clocks = {n: starvation.Clock(1.0, starvation.NON) for n in tree.elements}  # running, not starving
        want = starvation.update_statuses(tree, fairshare.compute(tree), params, clocks, 50.0, {})
        got = views.idle_view(tree)
        assert (got.status, got.clocks, got.lowest_starving, got.lowest_aggressive) == \
            (want.status, want.clocks, want.lowest_starving, want.lowest_aggressive)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=8),
       st.tuples(st.floats(0, 1), st.floats(0, 1)), st.tuples(st.floats(0, 1), st.floats(0, 1)),
       st.sampled_from([0.5, 1.0]), st.sampled_from([None, [2.0, 1e18], [3.0, 3.0]]))
def test_may_have_preemptible_is_false_only_without_p(sizes, fair, demand, threshold, thr):
    total = [20.0, 20.0]
    allocs = [(f"a{i}", [float(c), float(m)]) for i, (c, m) in enumerate(sizes)]
    pub = classify.publish(list(fair), [max(f, d) for f, d in zip(fair, demand)])
    usage = [0.0, 0.0]
    for _, res in allocs:
        usage = [u + r for u, r in zip(usage, res)]
    before_newest = [0.0, 0.0]
    for _, res in allocs[:-1]:
        before_newest = [u + r for u, r in zip(before_newest, res)]
    out = classify.classify(allocs, pub, total, thr, 0.2, threshold)
    for bound in (usage, before_newest):
        if not classify.may_have_preemptible(pub, bound, total, thr, threshold):
            assert P not in out.values()


@settings(max_examples=200, deadline=None)
@given(st.sets(st.tuples(st.integers(0, 8), st.integers(0, 8)), max_size=5),
       st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.5, 4.0, 8.0, -1.0]), min_size=2, max_size=2), max_size=6))
def test_fit_test_with_pruning_answers_as_every_pair(shapes, rooms):
    shapes = {tuple(float(v) for v in s) for s in shapes}
    brute = any(all(r <= f + EPS for r, f in zip(s, room)) for s in shapes for room in rooms)
    pruned = quiet._below_most(shapes, rooms)
    assert pruned <= shapes
    assert any(quiet._fits(pruned, room) for room in rooms) == brute


def test_node_free_is_kept_only_while_the_node_allocations_stay():
    state = ClusterState(["cpu", "memory"], [Queue("a", None)], [Node("n0", {"cpu": 4, "memory": 16})])
    state.submit(Workload("w", "a", 0.0, 10.0, (TaskGroup(2, {"cpu": 1, "memory": 2}),
                                                 TaskGroup(1, {"cpu": 2, "memory": 1}))))
    model = YTsaurusModel()
    model.bind(state)
    seen = []
    for step in ("w/0/0", "w/0/1", "end w/0/0", "w/1/0", "end w/1/0"):
        if step.startswith("end"):
            state.end(step.split()[1])
        else:
            state.start(step, "n0", 0.0)
        free, over = quiet._node_free(model, state, "n0")
        want = [4.0 - state.node_used["n0"].get("cpu", 0), 16.0 - state.node_used["n0"].get("memory", 0)]
        assert (free, over) == (want, False)
        seen.append(free)
    assert seen[2] == seen[4] and seen[1] != seen[3]  # as many allocations as before, other usage

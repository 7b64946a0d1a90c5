"""Each update's tree, made from the operations that changed since the last one, is the tree a walk
of every operation makes, and its waiting groups are the ones grouping the whole tree gives
(hypothesis, on the cache tests' random clusters).

``build_tree`` re-makes only the operations with a start, end, submission, requeue, withdrawal or
priority change since the last tree (``treeops.TreeOps``) and keeps the others' elements; the
groups of equal waiting operations move only those (``grouping.KeptGroups``). Here every tree it
builds is checked against a full walk made right after it (the same elements, equal field by
field, in the same order), every set of groups against ``grouping.waiting_groups`` and every
set of starvation parameters (``starvation.KeptParams``) against ``effective_params``.
"""

from __future__ import annotations

import contextlib
import random

import pytest
from hypothesis import HealthCheck, given, settings

from makeway.core.objects import Node, Queue, TaskGroup, Workload

from makeway.policies.ytsaurus import grouping, starvation, treeops
from makeway.policies.ytsaurus.model import YTsaurusModel
from tests.ytsaurus.test_cache_equivalence import clusters, run


class Checked(YTsaurusModel):
    """The model, with every tree compared with one from a walk of every operation."""

    builds = 0
    incremental = 0
    moved = 0
    params_kept = 0

    def __init__(self, settings=None):
        super().__init__(settings)
        self.log: list[str] = []  # what ``run`` returns; nothing is logged here
        self._kept_groups = CheckedGroups()
        self._kept_params = CheckedParams()

    def build_tree(self, state):
        Checked.builds += 1
        kept = self._tree_ops
        if kept.todo(state) is not None:
            Checked.incremental += 1
        tree = super().build_tree(state)
        self._tree_ops = treeops.TreeOps()  # knows no last tree: walks every operation
        try:
            walked = super().build_tree(state)
        finally:
            self._tree_ops = kept
        assert list(tree.elements) == list(walked.elements)
        for name, el in walked.elements.items():
            assert tree.elements[name] == el, name
        return tree


def test_each_tree_is_the_full_walks():
    """Parameters are kept somewhere over the examples, not in each: a small run whose later
    trees are all made for deferred updates (``YTsaurusModel._deferrable``: no operation waits),
    or each right after one, has no parameters of the last tree to keep."""
    kept = 0

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(clusters())
    def each(case):
        nonlocal kept
        Checked.builds = Checked.incremental = Checked.moved = Checked.params_kept = 0
        run(Checked, case)
        assert Checked.builds <= 1 or Checked.incremental > 0
        kept += Checked.params_kept

    each()
    assert kept > 0


def backlog(seed: int):
    """Three pools, a small cluster and bursts of operations of two shapes: a backlog of equal
    waiting operations whose groups gain and lose members at every start and end (and, while one
    of the three operations of a fractional shape is in the tree, no groups at all)."""
    rng = random.Random(seed)
    queues = [Queue(f"p{i}", None, weight=rng.choice([1.0, 2.0])) for i in range(3)]
    nodes = [Node(f"n{i}", {"cpu": 8, "memory": 32}) for i in range(4)]
    workloads, t = [], 0.0
    for j in range(90):
        t += rng.choice([0.0, 0.0, 0.0, 1.0, 5.0])
        shape = rng.choice([{"cpu": 2, "memory": 4}, {"cpu": 4, "memory": 8}])
        if j % 30 == 7:
            shape = {"cpu": 1.5, "memory": 4}  # not whole units: no groups while it is in the tree
        workloads.append(Workload(f"w{j}", f"p{rng.randrange(3)}", t, rng.choice([3.0, 7.0, 20.0]),
                                  (TaskGroup(rng.choice([1, 1, 2]), shape),)))
    model_settings = {"fair_share_update_period": 1.0, "heartbeat_period": 1.0, "heartbeat_splay": 0.5,
                      "preemptive_scheduling_backoff": 1.0, "fair_share_starvation_timeout": 2.0}
    return queues, nodes, workloads, [], model_settings, 8


@pytest.mark.parametrize("seed", range(4))
def test_groups_move_as_operations_change(seed):
    """Trees of a backlog of equal operations: the kept groups are moved, not made again, and are
    never empty for long; every set of them is checked against grouping the whole tree."""
    Checked.moved = 0
    made = []
    with _counting(made):
        run(Checked, backlog(seed))
    assert Checked.moved > 10
    assert sum(1 for g in made if g) > 10


@contextlib.contextmanager
def _counting(made: list):
    orig = CheckedGroups.groups

    def counted(self, *args, **kwargs):
        out = orig(self, *args, **kwargs)
        made.append(out)
        return out

    CheckedGroups.groups = counted
    try:
        yield
    finally:
        CheckedGroups.groups = orig


class CheckedGroups(grouping.KeptGroups):
    def groups(self, tree, memo, changed, gen, index):
        if changed is not None and self._gen == gen - 1:
            Checked.moved += 1
        got = super().groups(tree, memo, changed, gen, index)
        assert got == grouping.waiting_groups(tree)
        return got


class CheckedParams(starvation.KeptParams):
    def params(self, tree, cfg, changed, gen):
        if changed is not None and self._gen == gen - 1:
            Checked.params_kept += 1
        got = super().params(tree, cfg, changed, gen)
        assert got == starvation.effective_params(tree, cfg)
        return got

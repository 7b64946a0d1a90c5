"""Each update's tree, made from the operations that changed since the last one, is the tree a walk
of every operation makes (hypothesis, on the cache tests' random clusters).

``build_tree`` re-makes only the operations with a start, end, submission, requeue, withdrawal or
priority change since the last tree (``treeops.TreeOps``) and keeps the others' elements. Here
every tree it builds is checked against a full walk made right after it: the same elements, equal
field by field, in the same order.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from makeway.policies.ytsaurus import treeops
from makeway.policies.ytsaurus.model import YTsaurusModel
from tests.ytsaurus.test_cache_equivalence import clusters, run


class Checked(YTsaurusModel):
    """The model, with every tree compared with one from a walk of every operation."""

    builds = 0
    incremental = 0

    def __init__(self, settings=None):
        super().__init__(settings)
        self.log: list[str] = []  # what ``run`` returns; nothing is logged here

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


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_each_tree_is_the_full_walks(case):
    Checked.builds = Checked.incremental = 0
    run(Checked, case)
    assert Checked.builds <= 1 or Checked.incremental > 0

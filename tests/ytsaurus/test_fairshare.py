"""Table-driven vector fair share checks (single and multi resource, guarantees, limits, FIFO)."""

import pytest

from makeway.policies.ytsaurus import fairshare
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree


def tree_of(total, pools, ops, res=("cpu",)):
    t = Tree(res, [float(x) for x in total])
    t.add(Element(ROOT, None))
    for name, parent, kw in pools:
        t.add(Element(name, parent, **kw))
    for name, pool, demand, usage, kw in ops:
        t.add(Element(name, pool, is_op=True, demand=list(map(float, demand)),
                      usage=list(map(float, usage or [0] * len(res))), **kw))
    return t


CASES = [
    ("guarantee-plus-weight",  # weight share is added on top of the guarantee
     tree_of([100], [("A", ROOT, {"guarantee": {"cpu": 30}}), ("B", ROOT, {"weight": 2.0}), ("C", ROOT, {})],
             [("a", "A", [80], None, {}), ("b", "B", [100], None, {}), ("c", "C", [100], None, {})]),
     {"A": 0.475, "B": 0.35, "C": 0.175}),
    ("limits-cap",
     tree_of([100], [("L", ROOT, {"limits": {"cpu": 25}}), ("M", ROOT, {})],
             [("l", "L", [100], None, {}), ("m", "M", [100], None, {})]),
     {"L": 0.25, "M": 0.75}),
    ("demand-cap-redistributes",
     tree_of([100], [("A", ROOT, {}), ("B", ROOT, {})],
             [("a", "A", [10], None, {}), ("b", "B", [100], None, {})]),
     {"A": 0.1, "B": 0.9}),
    ("fifo-first-is-filled-first",
     tree_of([100], [("F", ROOT, {"mode": "fifo"})],
             [("f1", "F", [60], None, {"start_time": 1}), ("f2", "F", [60], None, {"start_time": 2})]),
     {"f1": 0.6, "f2": 0.4}),
    ("overcommitted-guarantees-scale",
     tree_of([100], [("A", ROOT, {"guarantee": {"cpu": 30}}), ("B", ROOT, {"guarantee": {"cpu": 90}})],
             [("a", "A", [100], None, {}), ("b", "B", [100], None, {})]),
     {"A": 0.25, "B": 0.75}),
    ("drf-equal-dominant-shares",
     tree_of([100, 100, 1000], [("P", ROOT, {})],
             [("x", "P", [100, 100, 2000], None, {}), ("y", "P", [100, 200, 1000], None, {})],
             res=("user_slots", "cpu", "memory")),
     {"x": 2 / 3, "y": 2 / 3}),
]


def test_usage_first_path():
    """An operation re-covers its current usage shape before growing toward its demand.

    x runs (40% cpu, 10% mem): from there it moves linearly toward its demand, so when cpu is
    exhausted at 50% it holds only 25% memory (a plain DRF split would give it (50%, 50%)).
    """
    t = tree_of([100, 100], [("P", ROOT, {})],
                [("x", "P", [100, 100], [40, 10], {}), ("y", "P", [100, 100], None, {})], res=("cpu", "memory"))
    res = fairshare.compute(t)
    assert res.attrs["x"].fair_share == pytest.approx([0.5, 0.25])
    assert res.attrs["y"].fair_share == pytest.approx([0.5, 0.5])


@pytest.mark.parametrize("name,tree,expected", CASES, ids=[c[0] for c in CASES])
def test_fair_share(name, tree, expected):
    res = fairshare.compute(tree)
    for el, want in expected.items():
        assert max(res.attrs[el].fair_share) == pytest.approx(want, abs=1e-9), el


def test_implicit_guarantee_for_non_main_resource():
    t = tree_of([100, 1000], [("A", ROOT, {"guarantee": {"cpu": 30}})], [("a", "A", [100, 1000], None, {})],
                res=("cpu", "memory"))
    res = fairshare.compute(t)
    assert res.attrs["A"].strong_share == pytest.approx([0.3, 0.3])


@pytest.mark.parametrize("usage,fair,demand,want", [
    ([0.1], [0.2], [0.2], 0.5),
    ([0.5], [1 / 3], [0.6], 1.5),
    ([0.0], [0.0], [0.0], 1e9),
    ([0.2, 0.3], [0.5, 0.3], [1.0, 0.3], 0.4),
])
def test_local_satisfaction(usage, fair, demand, want):
    assert fairshare.local_satisfaction(usage, fair, demand) == pytest.approx(want)


@pytest.mark.parametrize("fair,demand,usage,tol,is_op,want", [
    ([0.4], [1.0], [0.31], 0.8, True, "below_fair_share"),
    ([0.4], [1.0], [0.33], 0.8, True, "normal"),
    ([0.2], [0.2], [0.19], 0.8, False, "normal"),
    ([0.2], [0.2], [0.19], 0.8, True, "below_fair_share"),
    ([0.5, 0.3], [1.0, 0.3], [0.2, 0.3], 0.8, True, "below_fair_share"),
])
def test_status(fair, demand, usage, tol, is_op, want):
    assert fairshare.element_status(fair, demand, usage, tol, is_op) == want

"""``PoolArrays.from_tree`` gives every element's row as the element itself says, in the tree's postorder.

The conversion reads attributes in insertion order and permutes them into postorder; a row that
lands at the wrong place would give one element another's demand, weight or children. The oracle
here reads each element by name from an untouched copy of the tree, linked the Python way.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba", reason="the conversion is part of the optional extra makeway[fast]")

from makeway.policies.ytsaurus import arrays, fairshare  # noqa: E402
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree  # noqa: E402

pytestmark = pytest.mark.xdist_group("numba-kernel")

RES = ("cpu", "memory")


def _random_tree(seed: int) -> Tree:
    """Pools and operations under random parents, inserted in shuffled order (a child may come
    before its parent), with every attribute the conversion reads varied."""
    rng = random.Random(seed)
    pools = [ROOT]
    made = []
    for i in range(rng.randint(0, 25)):
        name = f"p{i}"
        made.append(Element(name, rng.choice(pools), weight=rng.choice([1.0, 2.0, 0.5]),
                            mode=rng.choice(["fifo", "fair_share"]),
                            guarantee=rng.choice([None, {"cpu": 5.0}, {"memory": 40.0, "cpu": None}]),
                            limits=rng.choice([None, None, {"cpu": 50.0}]),
                            max_share_ratio=rng.choice([None, None, 0.4]),
                            truncate_fifo=rng.random() < 0.3,
                            settings={"_fixed_usage": True} if rng.random() < 0.15 else {},
                            usage=[float(rng.randint(0, 9)), 3.0] if rng.random() < 0.15 else []))
        pools.append(name)
    for o in range(rng.randint(0, 60)):
        d = [float(rng.randint(1, 9)), float(rng.randint(1, 30))]
        made.append(Element(f"o{o}", rng.choice(pools), is_op=True, demand=d,
                            usage=[round(x * rng.random(), 3) for x in d], start_time=float(rng.randint(0, 5)),
                            order=o, pending_count=rng.randint(0, 3), gang=rng.random() < 0.3,
                            weight=rng.choice([1.0, 3.0]), limits=rng.choice([None, None, {"memory": 8.0}])))
    rng.shuffle(made)
    tree = Tree(RES, [100.0, 400.0])
    tree.add(Element(ROOT, None))
    for el in made:
        tree.add(el)
    return tree


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_every_row_is_its_element(seed):
    tree = _random_tree(seed)
    ref = copy.deepcopy(tree)
    ref.link()
    pa = arrays.PoolArrays.from_tree(tree)

    assert pa.names == ref.postorder()
    assert pa.listing == list(ref.elements)
    row = {name: i for i, name in enumerate(pa.names)}
    assert pa.root == row[ROOT]
    limits = fairshare.limits_shares(ref)
    for i, name in enumerate(pa.names):
        el = ref.elements[name]
        assert bool(pa.is_op[i]) == el.is_op, name
        assert pa.weight[i] == el.weight, name
        assert bool(pa.fifo[i]) == (el.mode == "fifo" and not el.is_op), name
        assert bool(pa.fixed_usage[i]) == bool(el.settings.get("_fixed_usage")), name
        assert bool(pa.has_g[i]) == bool(el.guarantee), name
        want_g = [float(el.guarantee[r]) if el.guarantee and el.guarantee.get(r) is not None else np.nan
                  for r in RES]
        np.testing.assert_array_equal(pa.gabs[i], want_g)
        assert pa.limits[i].tolist() == limits[name], name
        if el.is_op or not el.children:
            assert pa.demand[i].tolist() == (el.demand or [0.0, 0.0]), name
            assert pa.usage[i].tolist() == (el.usage or [0.0, 0.0]), name
        kids_ins = pa.kid_ins[pa.kid_ptr[i]:pa.kid_ptr[i + 1]].tolist()
        assert [pa.names[k] for k in kids_ins] == el.children, name
        kids = [pa.names[k] for k in pa.kids[pa.kid_ptr[i]:pa.kid_ptr[i + 1]].tolist()]
        assert kids == (fairshare.fifo_order(ref, name) if pa.fifo[i] else el.children), name
    assert pa.truncate == [(row[p], [row[c] for c in ref.elements[p].children if ref.elements[c].gang])
                           for p in pa.names if ref.elements[p].truncate_fifo and ref.elements[p].mode == "fifo"
                           and not ref.elements[p].is_op]
    # the tree is left as ``Tree.link`` leaves it (but for vectors never given, which ``link`` fills
    # with zeros and the conversion leaves empty)
    assert tree.postorder() == ref.postorder()
    for name, el in ref.elements.items():
        mine = tree.elements[name]
        assert mine.children == el.children, name
        assert (mine.demand or [0.0, 0.0], mine.usage or [0.0, 0.0]) == (el.demand, el.usage), name

"""The batched leaf-pool path gives the generic path's fair shares (to 1e-9) on random trees."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from makeway.policies.ytsaurus import batched, fairshare, plf
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

RES = ("cpu", "memory", "gpu")
TOTAL = [400.0, 1600.0, 16.0]



# Amounts with fractional parts: with round numbers the total demand can equal the cluster exactly,
# and at such a tie a discontinuity is resolved by the last bit of rounding, which the two paths
# (different summation orders) may round differently; that is not a difference of semantics.
amount = st.one_of(st.just(0.0), st.floats(0.3, 40.0).map(lambda v: round(v, 3) + 0.0001))
op = st.tuples(st.integers(0, 11), amount, st.sampled_from([1.0, 2.0, 4.0, 8.0]), st.sampled_from([0.0, 1.0003, 2.5007]),
               st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.sampled_from([1.0, 1.0, 2.0, 0.5]))
pool = st.tuples(st.sampled_from(["fair_share", "fair_share", "fifo"]), st.sampled_from([1.0, 2.0, 3.0]),
                 st.sampled_from([None, 5.0, 20.0, 60.0]), st.sampled_from([None, 10.0, 40.0]))


def _tree(pools, ops) -> Tree:
    tree = Tree(RES, list(TOTAL))
    tree.add(Element(ROOT, None))
    tree.add(Element("d0", ROOT, weight=2.0, guarantee={"cpu": 120.0}))
    tree.add(Element("d1", ROOT, limits={"cpu": 200.0}))
    for p, (mode, weight, limit, guarantee) in enumerate(pools):
        tree.add(Element(f"p{p}", f"d{p % 2}", weight=weight, mode=mode,
                         limits={"cpu": limit} if limit else None,
                         guarantee={"cpu": guarantee} if guarantee else None))
    for i, (p, cpu, mem, gpu, run, weight) in enumerate(ops):
        demand = [cpu, cpu * mem, gpu]
        tree.add(Element(f"o{i}", f"p{p % len(pools)}", is_op=True, weight=weight, demand=demand,
                         usage=[d * run for d in demand], start_time=i % 3, order=i))
    return tree


def _both(make, batching=fairshare.BATCHING):
    return fairshare.compute(make(), batching=fairshare.Batching(enabled=False)), fairshare.compute(make(), batching=batching)


def _assert_same(old, new):
    for name, a in old.attrs.items():
        assert new.attrs[name].fair_share == pytest.approx(a.fair_share, abs=1e-9), name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(pool, min_size=8, max_size=12), st.lists(op, min_size=8, max_size=60))
def test_batched_equals_generic(pools, ops):
    _assert_same(*_both(lambda: _tree(pools, ops), fairshare.Batching(min_pools=1)))


def test_bench_tree_batched_equals_generic():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import bench_ytsaurus_fair_share as b
    _assert_same(*_both(lambda: b.build(200, 2000)))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(amount, st.sampled_from([1.0, 2.0, 4.0]), st.sampled_from([0.0, 1.0, 1.5]),
                          st.sampled_from([0.0, 0.3, 1.0])), min_size=1, max_size=8),
       st.sampled_from([0.0, 0.01, 0.05]), st.sampled_from([0.02, 0.1, 1.0]), st.booleans())
def test_leaf_pool_functions_match(ops, g, lim, fifo):
    """Curve, fit factor and fair share by suggestion agree with the generic construction as
    functions (evaluated on a grid and at every breakpoint), not only at the final suggestion."""
    us = np.array([[c * r / TOTAL[0], c * m * r / TOTAL[1], gp * r / TOTAL[2]] for c, m, gp, r in ops])
    ds = np.array([[c / TOTAL[0], c * m / TOTAL[1], gp / TOTAL[2]] for c, m, gp, _ in ops])
    kids = fairshare.op_fsbs_batch(us, ds)
    weights = [1.0 + (i % 2) for i in range(len(kids))]
    mode = "fifo" if fifo else "fair_share"
    gv, lv = [g, g / 2, 0.0], [lim, 1.0, lim]
    cx, cy = batched.pad_points(kids, 3)
    res = batched.leaf_pools(cx, cy, [list(range(len(kids)))], [fifo], [weights], np.array([gv]),
                             np.array([lv]))[0]
    curve0 = fairshare.pool_curve(mode, weights, kids, 3)
    ff0 = fairshare.fit_factor_fn(curve0, gv, lv)
    fsbs0 = plf.compose(curve0, *ff0)
    if res is None:
        return
    curve1, ff1, fsbs1 = res
    xs = np.unique(np.concatenate([np.linspace(0, curve0.end, 257), curve0.ax, curve1.ax]))
    for x in xs:
        assert curve1.left(x) == pytest.approx(curve0.left(x), abs=1e-9)
    ss = np.unique(np.concatenate([np.linspace(0, 1, 257), fsbs0.ax, fsbs1.ax]))
    for s in ss:
        below = ss[ss < s]
        if len(below) and s - below[-1] < 1e-12:
            continue  # a rounding sliver (1e-16 wide), which the batched path merges away (``_snap``)
        assert plf._eval1(ff1[0], ff1[1], s)[0] == pytest.approx(plf._eval1(ff0[0], ff0[1], s)[0], abs=1e-9), s
        assert fsbs1.left(s) == pytest.approx(fsbs0.left(s), abs=1e-9), s


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["fair_share", "fifo"]), st.lists(op, min_size=1, max_size=30))
def test_root_fit_factor_equals_generic(mode, ops):
    """Operations straight under the root (FIFO or fair share, over- or under-demanded): the root's
    fit factor found by bisection gives the generic path's shares."""
    def make():
        tree = Tree(RES, list(TOTAL))
        tree.add(Element(ROOT, None, mode=mode))
        for i, (_, cpu, mem, gpu, run, weight) in enumerate(ops):
            demand = [cpu, cpu * mem, gpu]
            tree.add(Element(f"o{i}", ROOT, is_op=True, weight=weight, demand=demand,
                             usage=[d * run for d in demand], start_time=i % 4, order=i))
        return tree
    _assert_same(*_both(make))

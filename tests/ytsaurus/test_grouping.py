"""Group elements of equal waiting operations (``ytsaurus/grouping.py``) against the per-operation
tree: the grouped pool sum must be the very floats of the expanded one, and the reference must give
every member of a group the same fair share (so one read-out per group is the reference's)."""

import numpy as np
from hypothesis import event, given, settings, strategies as st

from makeway.policies.ytsaurus import batched, fairshare, grouping
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

TOTALS = (320.0, 1000.0, 2490.0)


def rows_of(total, dim, specs):
    """Closed-form rows of one-resource operations: (resource, demand, usage) in units."""
    d = np.zeros((len(specs), dim))
    u = np.zeros((len(specs), dim))
    for i, (r, dem, use) in enumerate(specs):
        d[i, r] = dem / total
        u[i, r] = min(use, dem) / total
    return batched.compact_rows(*fairshare.op_fsbs_arrays(u, d))


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(TOTALS), st.integers(1, 3),
       st.lists(st.tuples(st.integers(0, 2), st.integers(1, 16), st.integers(1, 40), st.sampled_from([1.0, 2.0])),
                min_size=1, max_size=5),
       st.lists(st.tuples(st.integers(0, 2), st.integers(1, 16), st.integers(0, 16)), max_size=4),
       st.randoms(use_true_random=False))
def test_grouped_pool_sum_is_the_expanded_sum_bit_for_bit(total, dim, groups, running, rnd):
    groups = [(r % dim, d, k, w) for r, d, k, w in groups]
    running = [(r % dim, d, u) for r, d, u in running]
    specs = [(r, d, 0) for r, d, _, _ in groups] + running
    ax, ay = rows_of(total, dim, specs)
    weights = [w for *_, w in groups] + [1.0] * len(running)
    counts = [k for _, _, k, _ in groups] + [1] * len(running)
    grouped = grouping.grouped_pool_curve(weights, counts, ax, ay, list(range(len(specs))), dim)
    expanded = [i for i, k in enumerate(counts) for _ in range(k)]
    rnd.shuffle(expanded)  # members interleaved in tree order with the other children
    ew = [weights[i] for i in expanded]
    ref = fairshare.pool_curve_rows(ew, ax, ay, expanded, dim) if len(expanded) > 1 else None
    if ref is None:
        from makeway.policies.ytsaurus.plf import PLF
        ref = fairshare.pool_curve("fair_share", ew, [PLF(ax[i], ay[i]) for i in expanded], dim)
    if grouped is None:  # a row with a slope that is not an integer, or shapes differ: expand instead
        assert sum(counts) < 2 or not grouping.exact_rows(ax, ay).all()
        return
    event("compared bit for bit")
    assert np.array_equal(grouped.ax, ref.ax) and np.array_equal(grouped.ay, ref.ay)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(TOTALS),
       st.lists(st.tuples(st.integers(0, 1), st.integers(1, 8), st.integers(0, 3)), min_size=2, max_size=60),
       st.lists(st.tuples(st.integers(0, 1), st.integers(1, 8), st.integers(1, 8)), max_size=6))
def test_reference_gives_every_member_of_a_group_the_same_fair_share(total, waiting, running):
    """The design decision behind one read-out per group: equal waiting (or wholly running)
    operations of a pool get bit-identical fair shares from the per-operation tree, whatever else
    is in it."""
    t = Tree(("gpu",), [total])
    t.add(Element(ROOT, None))
    t.add(Element("a", ROOT))
    t.add(Element("b", ROOT, weight=2.0))
    pools = ("a", "b")
    for i, (p, d, c) in enumerate(running):
        t.add(Element(f"r{i}", pools[p], is_op=True, demand=[float(d)], usage=[float(min(c, d))], order=i))
    for i, (p, d, _) in enumerate(waiting):
        t.add(Element(f"w{i}", pools[p], is_op=True, demand=[float(d)], usage=[0.0], order=100 + i,
                      start_time=float(i)))
    groups = grouping.waiting_groups(t)
    res = fairshare.compute(t)
    seen = set()
    for members in groups:
        first = res.attrs[members[0]].fair_share
        for m in members:
            assert res.attrs[m].fair_share == first
            seen.add(m)
    keys = {}
    for i, (p, d, _) in enumerate(waiting):
        keys.setdefault((p, d, 0), []).append(f"w{i}")
    for i, (p, d, c) in enumerate(running):
        if c >= d:  # wholly running: grouped with its equals too
            keys.setdefault((p, d, d), []).append(f"r{i}")
    assert {m for ms in keys.values() if len(ms) > 1 for m in ms} == seen


BATCHINGS = (fairshare.BATCHING, fairshare.Batching(min_pools=1, min_children=1), fairshare.Batching(enabled=False))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(TOTALS), st.sampled_from(BATCHINGS),
       st.lists(st.tuples(st.sampled_from([1.0, 2.0, 3.0]), st.integers(0, 120)), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(0, 3), st.sampled_from([1, 2, 4, 8, 16, 3]), st.integers(1, 30)),
                min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(0, 3), st.integers(1, 16), st.integers(1, 16)), max_size=8),
       st.randoms(use_true_random=False))
def test_grouped_tree_gives_every_element_the_reference_fair_share(total, batching, pools, waiting, running, rnd):
    """A tree whose equal waiting operations are group elements gives every operation and pool the
    fair share, fit factor and demand share of the per-operation tree, bit for bit."""
    t = Tree(("gpu",), [total])
    t.add(Element(ROOT, None))
    names = [f"p{i}" for i in range(len(pools))]
    for name, (w, g) in zip(names, pools):
        t.add(Element(name, ROOT, weight=w, guarantee={"gpu": float(g)} if g else None))
    ops = [("r", p, d, min(u, d)) for p, d, u in running]
    ops += [("w", p, d, 0) for p, d, k in waiting for _ in range(k)]
    rnd.shuffle(ops)  # members of a group interleaved with the rest
    for i, (kind, p, d, u) in enumerate(ops):
        t.add(Element(f"{kind}{i}", names[p % len(names)], is_op=True, demand=[float(d)], usage=[float(u)],
                      order=i, start_time=float(i)))
    grouped = grouping.grouped_compute(t, batching=batching)
    linked = {n: (list(el.children), el.demand, el.usage) for n, el in t.elements.items()}
    ref = fairshare.compute(t, batching=batching)
    if grouped is None:
        event("not groupable")
        return
    assert linked == {n: (el.children, el.demand, el.usage) for n, el in t.elements.items()}
    event("compared bit for bit")
    for name in t.elements:
        a, b = grouped.attrs[name], ref.attrs[name]
        assert (a.fair_share, a.demand_share) == (b.fair_share, b.demand_share), name
        if not t.elements[name].is_op:
            assert a.fit_factor == b.fit_factor, name


def test_a_fractional_demand_anywhere_keeps_the_tree_per_operation():
    """Pool sums of whole numbers are the same in any order; with a fraction they are not."""
    t = Tree(("gpu",), [320.0])
    t.add(Element(ROOT, None))
    t.add(Element("p", ROOT))
    for i in range(3):
        t.add(Element(f"w{i}", "p", is_op=True, demand=[1.0], usage=[0.0]))
    assert len(grouping.waiting_groups(t)) == 1
    t.add(Element("x", "p", is_op=True, demand=[0.1], usage=[0.0]))
    assert grouping.waiting_groups(t) == []

"""The one-resource closed form (``ytsaurus/onedim.py``) against the curves (``fairshare.compute``,
the Python construction): every attribute the model reads, within 1e-9 of a share, on random
one-resource trees (nested pools, weights, guarantees over-committed or partly used, operations
waiting, running or partly running, demands whole or not, operation limits, backlogs of equal
operations); the class it refuses; and the fixed order of its float operations."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import event, given, settings, strategies as st

from makeway.policies.ytsaurus import fairshare, integral, onedim
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

FIELDS = ("fair_share", "demand_share", "usage_share", "strong_share", "limits_share", "integral_share")
FIVE = ("user_slots", "cpu", "gpu", "memory", "network")  # the conformance cases' resources


def integral_config():
    return integral.IntegralConfig(60.0, 86400.0, 3.0)


@st.composite
def trees(draw):
    wide = draw(st.booleans())  # five resources, all but one with a total of 0
    res = FIVE if wide else ("gpu",)
    r = res.index("gpu")
    total = draw(st.sampled_from([8.0, 10.0, 64.0, 704.0, 7.5, 1000.0]))

    def vec(x: float) -> list[float]:
        v = [0.0] * len(res)
        v[r] = float(x)
        return v

    t = Tree(res, vec(total), main_resource=draw(st.sampled_from(["gpu", "cpu"])))
    t.add(Element(ROOT, None))
    pools = [ROOT]
    for i in range(draw(st.integers(0, 6))):
        g = draw(st.one_of(st.none(), st.just({}),
                           st.integers(0, int(1.5 * total)).map(lambda v: {"gpu": v}),
                           st.sampled_from([{"gpu": 3.5}, {"gpu": total}, {"cpu": 4}])))
        t.add(Element(f"p{i}", draw(st.sampled_from(pools)), weight=draw(st.sampled_from([1.0, 1.0, 2.0, 0.5, 3.0])),
                      guarantee=g, order=i))
        pools.append(f"p{i}")
    n = 0
    for _ in range(draw(st.integers(0, 10))):
        parent = draw(st.sampled_from(pools))
        d = draw(st.one_of(st.integers(0, 16).map(float), st.sampled_from([0.5, 3.3, 2.25, total, 2 * total])))
        kind = draw(st.sampled_from(["waiting", "running", "partly", "half"]))
        u = {"waiting": 0.0, "running": d, "partly": float(min(d, draw(st.integers(0, 16)))), "half": d / 2}[kind]
        lim = draw(st.one_of(st.none(), st.none(), st.integers(0, 12).map(lambda v: {"gpu": v})))
        w = draw(st.sampled_from([1.0, 1.0, 2.0, 0.5, 1.5]))
        for _ in range(draw(st.sampled_from([1, 1, 2, 30]))):  # equal operations of a backlog
            t.add(Element(f"o{n}", parent, is_op=True, weight=w, demand=vec(d), usage=vec(u), limits=lim, order=n,
                          pending_count=int(d > u)))
            n += 1
    return t


def assert_close(ref, got, tol=1e-9):
    assert set(ref.attrs) == set(got.attrs)
    for name, a in ref.attrs.items():
        b = got.attrs[name]
        for f in FIELDS:
            x, y = getattr(a, f), getattr(b, f)
            assert len(x) == len(y) and all(abs(p - q) <= tol for p, q in zip(x, y)), (name, f, x, y)


def both(tree: Tree, ig=None):
    ref = fairshare.compute(copy.deepcopy(tree), None, ig)
    got = onedim.compute(copy.deepcopy(tree), None, ig)
    return ref, got


@settings(max_examples=400, deadline=None)
@given(trees(), st.booleans())
def test_closed_form_equals_the_curves(tree, with_integral):
    ref, got = both(tree, integral_config() if with_integral else None)
    assert got is not None
    assert_close(ref, got)
    g = {c: tree.elements[c].guarantee for c in tree.elements}
    if any(g.values()):
        event("guarantees")


@settings(max_examples=150, deadline=None)
@given(trees())
def test_a_cluster_that_fits_every_demand_gives_each_its_demand_share_exactly(tree):
    """Full items get ``hi`` itself, not ``g + λ·k``: where the cluster holds every demand, each
    operation's fair share is its demand share to the bit (so ``blocked`` and ``publish`` see
    equality, not a rounding), and no operation ever gets more than its demand."""
    tree = copy.deepcopy(tree)
    got = onedim.compute(tree, None, integral_config())
    r = tree.resources.index("gpu")
    fits = tree.elements[ROOT].demand[r] <= tree.total[r]
    for name, a in got.attrs.items():
        if tree.elements[name].is_op and not tree.elements[name].limits:
            assert a.fair_share[r] <= a.demand_share[r]
            if fits:
                assert a.fair_share == a.demand_share, name


@pytest.mark.parametrize("case,why", [
    ("fifo", "mode fifo"), ("pool_limits", "pool limits"), ("max_share_ratio", "max_share_ratio"),
    ("integral", "integral"), ("promised", "promised"), ("op_guarantee", "with a guarantee"),
    ("two_resources", "one resource"), ("no_total", "one resource"), ("infinite_total", "one resource"),
    ("node_caps", "best_allocation_share"), ("zero_weight", "weight"), ("usage_over_demand", "usage"),
    ("groups", "group elements"),
])
def test_refuses_what_it_does_not_handle(case, why):
    t = Tree(("gpu", "cpu") if case == "two_resources" else ("gpu",),
             [0.0 if case == "no_total" else math.inf if case == "infinite_total" else 10.0]
             + ([4.0] if case == "two_resources" else []))
    t.add(Element(ROOT, None))
    pool = t.add(Element("p", ROOT))
    op = t.add(Element("o", "p", is_op=True, demand=[4.0] * len(t.total), usage=[0.0] * len(t.total)))
    caps = None
    if case == "fifo":
        pool.mode = "fifo"
    elif case == "pool_limits":
        pool.limits = {"gpu": 5.0}
    elif case == "max_share_ratio":
        pool.max_share_ratio = 0.5
    elif case == "integral":
        pool.integral = {"type": "burst", "flow": [1.0], "burst": [2.0]}
    elif case == "promised":
        pool.settings["compute_promised_guarantee_fair_share"] = True
    elif case == "op_guarantee":
        op.guarantee = {"gpu": 1.0}
    elif case == "node_caps":
        caps = [[10.0]]
    elif case == "zero_weight":
        op.weight = 0.0
    elif case == "usage_over_demand":
        op.usage = [5.0]
    elif case == "groups":
        t.members = {"o": 3}
    assert onedim.compute(t, caps) is None
    assert why in onedim.why_not(t, caps)


def two_level(total=10.0):
    t = Tree(("gpu",), [total])
    t.add(Element(ROOT, None))
    return t


@pytest.mark.parametrize("pools,ops,expected", [
    # (name, parent, weight, guarantee) ; (name, pool, weight, demand, usage) ; fair shares x total
    ([("a", ROOT, 1.0, None), ("b", ROOT, 3.0, None)], [("x", "a", 1, 10, 0), ("y", "b", 1, 10, 0)],
     {"a": 2.5, "b": 7.5, "x": 2.5, "y": 7.5}),
    ([("a", ROOT, 1.0, None), ("b", ROOT, 1.0, None)], [("x", "a", 1, 2, 2), ("y", "b", 1, 10, 0)],
     {"a": 2.0, "b": 8.0}),
    ([("a", ROOT, 1.0, 6), ("b", ROOT, 1.0, None)], [("x", "a", 1, 10, 0), ("y", "b", 1, 10, 0)],
     {"a": 8.0, "b": 2.0}),
    ([("a", ROOT, 1.0, 8), ("b", ROOT, 1.0, 8)], [("x", "a", 1, 10, 0), ("y", "b", 1, 10, 0)],
     {"a": 5.0, "b": 5.0}),  # over-committed: both scaled to 5
    ([("a", ROOT, 1.0, 8), ("b", ROOT, 1.0, None)], [("x", "a", 1, 3, 3), ("y", "b", 1, 10, 0)],
     {"a": 3.0, "b": 7.0}),  # a guarantee above the demand: only the demand
    ([("a", ROOT, 1.0, None)], [("x", "a", 2, 4, 0), ("y", "a", 1, 4, 0), ("z", "a", 1, 4, 0)],
     {"x": 4.0, "y": 3.0, "z": 3.0}),  # a tie at the breakpoint of y and z
    ([], [], {ROOT: 0.0}),
])
def test_known_answers(pools, ops, expected):
    t = two_level()
    for name, parent, w, g in pools:
        t.add(Element(name, parent, weight=w, guarantee={"gpu": g} if g is not None else None))
    for name, pool, w, d, u in ops:
        t.add(Element(name, pool, is_op=True, weight=float(w), demand=[float(d)], usage=[float(u)]))
    ref, got = both(t, integral_config())
    assert_close(ref, got)
    for name, v in expected.items():
        assert got.attrs[name].fair_share == pytest.approx([v / 10.0], abs=1e-12)


def test_equal_operations_of_a_pool_share_one_attrs_object():
    t = two_level(704.0)
    t.add(Element("p", ROOT))
    for i in range(300):
        t.add(Element(f"o{i}", "p", is_op=True, demand=[8.0], usage=[0.0], order=i))
    t.add(Element("big", "p", is_op=True, demand=[128.0], usage=[64.0], order=300))
    got = onedim.compute(t)
    assert len({id(got.attrs[f"o{i}"]) for i in range(300)}) == 1
    assert got.attrs["big"] is not got.attrs["o0"]
    ref = fairshare.compute(t)
    assert_close(ref, got)


# -- the fixed order ---------------------------------------------------------------------------

def spec_level(his, gs, ws, counts, V):
    """Water-filling as §3.3 of the plan states it, written out separately (the level and every
    item's value): what a compiled twin must reproduce bit for bit."""
    wmin = min(ws)
    ks = [w / wmin for w in ws]
    values = list(his)  # full items get their top itself
    full = 0.0
    live = []
    for i in range(len(his)):
        if his[i] - gs[i] <= 0.0:
            full += counts[i] * his[i]
        else:
            live.append(((his[i] - gs[i]) / ks[i], i))
    if not live:
        return 0.0, values
    live.sort()
    top = 0.0
    for i in range(len(his)):
        top += counts[i] * his[i]
    if V >= top:
        return max(live[-1][0], 0.0), values
    lam, cut = live[-1][0], len(live)
    for j, (b, _) in enumerate(live):
        rest_g = rest_k = 0.0
        for _, i in reversed(live[j:]):
            rest_g += counts[i] * gs[i]
            rest_k += counts[i] * ks[i]
        cand = (V - full - rest_g) / rest_k
        if cand <= b:
            lam, cut = cand, j
            break
        full += counts[live[j][1]] * his[live[j][1]]
    lam = max(lam, 0.0)
    for _, i in live[cut:]:
        values[i] = min(his[i], gs[i] + lam * ks[i])
    return lam, values


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1.0, 2.0, 3.0, 8.0, 0.5, 3.3]), st.sampled_from([0.0, 0.0, 1.0, 2.5]),
                          st.sampled_from([1.0, 1.5, 2.0, 0.7, 3.0]), st.integers(1, 40)), min_size=1, max_size=8),
       st.one_of(st.floats(0.0, 1.0), st.integers(0, 7)))
def test_water_fill_is_the_documented_order_bit_for_bit(spec, at):
    items = []
    for hi, g, w, m in spec:
        it = onedim._Item(None, w, hi, min(g, hi))
        it.count = m
        items.append(it)
    lo = sum(it.count * it.g for it in items)
    top = sum(it.count * it.hi for it in items)
    if isinstance(at, int):  # V where one item just fills up: ties and boundaries
        wmin = min(it.weight for it in items)
        b = [(it.hi - it.g) / (it.weight / wmin) for it in items][at % len(items)]
        V = sum(it.count * min(it.hi, it.g + max(b, 0.0) * it.weight / wmin) for it in items)
    else:
        V = lo + at * (top - lo)
    lam = onedim.water_fill(items, V)
    assert (lam, [it.value for it in items]) == spec_level(
        [it.hi for it in items], [it.g for it in items], [it.weight for it in items], [it.count for it in items], V)
    total = sum(it.count * it.value for it in items)
    assert math.isclose(total, V, rel_tol=1e-12, abs_tol=1e-9)

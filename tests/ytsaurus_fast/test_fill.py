"""``fast.fill`` (the compiled water-filling) against ``onedim`` (the model's closed form), bit for
bit: every pool's and operation's fair share and every pool's fit factor, compared as the bytes of
their float64s, never within a tolerance. Random one-resource trees (nested pools, weights,
guarantees over-committed or not, operations waiting, running or partly running, operation weights
and limits, backlogs of equal operations, demands drawn from a few values so breakpoints tie), and
the Philly study's tree as ``fast.pack.Packed`` lays it out from a cluster."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("numba")

from makeway.core.objects import Node, Queue, TaskGroup, Workload  # noqa: E402
from makeway.core.state import ClusterState  # noqa: E402
from makeway.policies.ytsaurus import integral, onedim  # noqa: E402
from makeway.policies.ytsaurus.fast import pack  # noqa: E402
from makeway.policies.ytsaurus.fast.fill import fill  # noqa: E402
from makeway.policies.ytsaurus.model import YTsaurusModel  # noqa: E402
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree  # noqa: E402

IG_CONFIG = integral.IntegralConfig(60.0, 86400.0, 3.0)


def tree_rows(tree: Tree, scale_root: bool):
    """``fill``'s layout of a linked one-resource tree, written from ``onedim._fill``'s order
    (a separate statement of it: a different order here fails the comparison)."""
    T = tree.total[0]
    pools = tree.pool_postorder()
    pix = {p: i for i, p in enumerate(pools)}
    gu = onedim.unit_guarantees(tree, 0, scale_root)
    IOFF, IPOOL, IW, IHI, ICNT, opitem = [0], [], [], [], [], {}
    for p in pools:
        classes = {}
        for c in tree.elements[p].children:
            el = tree.elements[c]
            if not el.is_op:
                IPOOL.append(pix[c]), IW.append(el.weight), IHI.append(0.0), ICNT.append(1)
                continue
            lim = (el.limits or {}).get("gpu")
            top = min(el.demand[0], math.inf if lim is None else float(lim), T)
            k = classes.get((el.weight, top))
            if k is None:
                k = classes[(el.weight, top)] = len(IPOOL)
                IPOOL.append(-1), IW.append(el.weight), IHI.append(top), ICNT.append(0)
            ICNT[k] += 1
            opitem[c] = k
        IOFF.append(len(IPOOL))
    arr = lambda xs, t: np.array(xs, t)  # noqa: E731
    return (pools, np.array([gu[p] for p in pools]), arr(IOFF, np.int64), arr(IPOOL, np.int64),
            arr(IW, np.float64), arr(IHI, np.float64), arr(ICNT, np.int64), opitem)


def run_fill(T, GU, IOFF, IPOOL, IW, IHI, ICNT):
    P, n = len(GU), len(IPOOL)
    IHI = IHI.copy()
    IG, IVAL = np.zeros(n), np.zeros(n)
    HI, GEFF, VAL, LAM = np.zeros(P), np.zeros(P), np.zeros(P), np.zeros(P)
    fill(T, GU, IOFF, IPOOL, IW, IHI, ICNT, IG, IVAL, HI, GEFF, VAL, LAM)
    return VAL, LAM, IVAL


def assert_bits(names, ref, got):
    a, b = np.array(ref, np.float64), np.array(got, np.float64)
    if a.tobytes() != b.tobytes():
        bad = [(n, x, y) for n, x, y in zip(names, a, b) if np.float64(x).tobytes() != np.float64(y).tobytes()]
        raise AssertionError(f"not bit for bit: {bad[:5]}")


def compare(tree: Tree, scale_root: bool = True):
    """Every pool's fair share and fit factor and every operation's fair share, both ways."""
    tree = copy.deepcopy(tree)
    ref = onedim.compute(tree, None, IG_CONFIG if scale_root else None)
    assert ref is not None
    T = tree.total[0]
    pools, GU, IOFF, IPOOL, IW, IHI, ICNT, opitem = tree_rows(tree, scale_root)
    VAL, LAM, IVAL = run_fill(T, GU, IOFF, IPOOL, IW, IHI, ICNT)
    names, want, have = [], [], []
    for i, p in enumerate(pools):
        if p == ROOT:  # the root's is the sum of its children's shares (``onedim._fill``'s last step)
            s = 0.0
            for c in tree.elements[ROOT].children:
                s += (IVAL[opitem[c]] if c in opitem else VAL[pools.index(c)]) / T
            names += [p, p + ".ff"]
            want += [ref.attrs[p].fair_share[0], ref.attrs[p].fit_factor]
            have += [s, LAM[i] / T]
            continue
        names += [p, p + ".ff"]
        want += [ref.attrs[p].fair_share[0], ref.attrs[p].fit_factor]
        have += [VAL[i] / T, LAM[i] / T]
    for op, k in opitem.items():
        names.append(op)
        want.append(ref.attrs[op].fair_share[0])
        have.append(IVAL[k] / T)
    assert_bits(names, want, have)
    return ref


@st.composite
def trees(draw):
    total = draw(st.sampled_from([8.0, 10.0, 64.0, 704.0, 7.5, 1000.0, 3.0]))
    t = Tree(("gpu",), [total])
    t.add(Element(ROOT, None))
    pools = [ROOT]
    for i in range(draw(st.integers(0, 7))):
        g = draw(st.one_of(st.none(), st.integers(0, int(1.5 * total)).map(lambda v: {"gpu": v}),
                           st.sampled_from([{"gpu": 3.5}, {"gpu": total}, {"gpu": 2}, {"gpu": 4}])))
        t.add(Element(f"p{i}", draw(st.sampled_from(pools)), weight=draw(st.sampled_from([1.0, 1.0, 2.0, 0.5, 3.0, 0.7])),
                      guarantee=g, order=i))
        pools.append(f"p{i}")
    n = 0
    for _ in range(draw(st.integers(0, 12))):
        parent = draw(st.sampled_from(pools))
        d = draw(st.one_of(st.sampled_from([1.0, 2.0, 4.0, 8.0, 16.0]), st.integers(0, 16).map(float),
                           st.sampled_from([0.5, 3.3, 0.1, 0.2, 0.3, 0.7, total, 2 * total])))
        kind = draw(st.sampled_from(["waiting", "running", "partly"]))
        u = {"waiting": 0.0, "running": d, "partly": float(min(d, draw(st.integers(0, 16))))}[kind]
        lim = draw(st.one_of(st.none(), st.none(), st.none(), st.integers(0, 12).map(lambda v: {"gpu": v})))
        w = draw(st.sampled_from([1.0, 1.0, 1.0, 2.0, 0.5, 1.5]))
        for _ in range(draw(st.sampled_from([1, 1, 2, 3, 40]))):  # equal operations of a backlog
            t.add(Element(f"o{n}", parent, is_op=True, weight=w, demand=[d], usage=[u], limits=lim, order=n,
                          pending_count=int(d > u)))
            n += 1
    return t


@settings(max_examples=500, deadline=None)
@given(trees(), st.booleans())
def test_fill_is_onedim_bit_for_bit(tree, scale_root):
    compare(tree, scale_root)


@pytest.mark.parametrize("weights,demands,total", [
    ([1.0, 1.0, 1.0], [4.0, 4.0, 4.0], 10.0),        # three items tie at one breakpoint
    ([2.0, 1.0, 1.0], [4.0, 2.0, 2.0], 6.0),         # ties across weights, V at the breakpoint
    ([0.7, 1.0, 3.0], [7.0, 10.0, 30.0], 20.0),      # breakpoints (hi/k) tie at 10 with weights 0.7, 1 and 3
    ([1.0, 1.0], [5.0, 5.0], 10.0),                  # the cluster holds exactly every demand
])
def test_ties_at_breakpoints(weights, demands, total):
    t = Tree(("gpu",), [total])
    t.add(Element(ROOT, None))
    for i, (w, d) in enumerate(zip(weights, demands)):
        t.add(Element(f"p{i}", ROOT, weight=w, order=i))
        t.add(Element(f"o{i}", f"p{i}", is_op=True, demand=[d], usage=[0.0], order=i))
    compare(t)


def test_a_pool_sums_its_items_in_item_order():
    """(0.1 + 0.2) + 0.3 is not 0.1 + (0.2 + 0.3): a pool's top is its items' sum in child order."""
    t = Tree(("gpu",), [10.0])
    t.add(Element(ROOT, None))
    t.add(Element("p", ROOT))
    t.add(Element("q", ROOT))
    for i, d in enumerate([0.1, 0.2, 0.3]):
        t.add(Element(f"o{i}", "p", is_op=True, demand=[d], usage=[0.0], order=i))
    t.add(Element("big", "q", is_op=True, demand=[20.0], usage=[0.0], order=3))
    ref = compare(t)
    assert ref.attrs["p"].fair_share == [((0.1 + 0.2) + 0.3) / 10.0]


# -- the Philly study's tree, packed from a cluster -------------------------------------------------

SIZES = [1, 2, 4, 8, 16, 32, 64, 128]


def philly_state(root_guarantee):
    queues = [Queue("root", None, {"gpu": root_guarantee} if root_guarantee else None),
              Queue("prod", "root", {"gpu": 160}, None, 2.0), Queue("research", "root", {"gpu": 96}, None, 1.0),
              Queue("batch", "root", {"gpu": 64}, None, 1.0)]
    return ClusterState(["gpu"], queues, [Node(f"n{i}", {"gpu": 8}) for i in range(88)])


def philly_workload(i, queue, gpus):
    req, count = (8, gpus // 8) if gpus >= 16 else (gpus, 1)
    if gpus == 12:
        req, count = 1, 12
    return Workload(f"w{i}", queue, float(i), 100.0, (TaskGroup(count, {"gpu": req}),))


@st.composite
def philly_backlogs(draw):
    jobs = draw(st.lists(st.tuples(st.sampled_from(["prod", "research", "batch"]), st.sampled_from(SIZES + [12])),
                         min_size=1, max_size=60))
    wls = [philly_workload(i, q, g) for i, (q, g) in enumerate(jobs)]
    live = []  # per operation: (pending, running) tasks
    for wl in wls:
        n = wl.groups[0].count
        run = draw(st.integers(0, n))
        pend = draw(st.sampled_from([n - run, 0, n - run]))
        live.append((pend, run))
    return wls, live


@settings(max_examples=150, deadline=None)
@given(philly_backlogs(), st.sampled_from([None, 704, 320, 400]))
def test_philly_tree_packed_from_the_cluster(backlog, root_guarantee):
    """``Packed`` + ``fill`` against ``onedim`` on the tree the model builds (``<Root>``, the
    queues in config order, operations in trace order, demand and usage in units): the pool
    order, the scaled guarantees (all 0 when ``root`` has none) and the classes."""
    wls, live = backlog
    state = philly_state(root_guarantee)
    model = YTsaurusModel({"fair_share_closed_form": True})
    assert pack.unsupported(state, model, wls) is None
    pk = pack.Packed(state, model, wls)
    tree = Tree(("gpu",), [pk.T])
    tree.add(Element(ROOT, None))
    for i, q in enumerate(state.queues.values()):
        tree.add(Element(q.name, q.parent or ROOT, weight=float(q.weight), guarantee=q.guaranteed, order=i))
    demand = []
    for i, (wl, (pend, run)) in enumerate(zip(wls, live)):
        req = wl.groups[0].resources["gpu"]
        demand.append((pend + run) * req)
        if pend + run:
            tree.add(Element(wl.id, wl.queue, is_op=True, demand=[float((pend + run) * req)], usage=[float(run * req)],
                             order=i, pending_count=pend))
    ref = onedim.compute(tree, None, IG_CONFIG)
    rows = pk.rows(demand)
    VAL, LAM, IVAL = pk.solve(rows)
    names = [p for p in pk.pools if p != ROOT] + [w.id for w, d in zip(wls, demand) if d]
    want = [ref.attrs[p].fair_share[0] for p in pk.pools if p != ROOT] + \
           [ref.attrs[w.id].fair_share[0] for w, d in zip(wls, demand) if d]
    have = [VAL[i] / pk.T for i, p in enumerate(pk.pools) if p != ROOT] + \
           [IVAL[rows.OPITEM[w]] / pk.T for w, d in enumerate(demand) if d]
    assert_bits(names, want, have)
    assert_bits(pk.pools, [ref.attrs[p].fit_factor for p in pk.pools], LAM / pk.T)
    assert pk.pools[-1] == ROOT
    assert_bits(pk.pools[:-1], [ref.attrs[p].strong_share[0] for p in pk.pools[:-1]], pk.GU[:-1] / pk.T)


# -- one level, with ties made on purpose -----------------------------------------------------------

@st.composite
def levels(draw):
    """Items of one pool, some built to share a breakpoint (``hi = g + b·k``, so the division back
    may or may not give b exactly), and V at a breakpoint (sums rounding across a tied group) or
    between the guarantees' and the tops' sums."""
    ws = [1.0, 0.7, 3.0, 1.5, 0.3, 2.0]
    items = []
    for _ in range(draw(st.integers(1, 4))):
        w = draw(st.sampled_from(ws))
        g = draw(st.sampled_from([0.0, 0.0, 1.0, 2.5, 0.35]))
        items.append([draw(st.sampled_from([1.0, 2.0, 3.0, 8.0, 0.5, 3.3, 7.0])) + g, g, w,
                      draw(st.sampled_from([1, 1, 3, 40]))])
    b = draw(st.sampled_from([1.0, 3.3, 7.0, 0.1, 2.0 / 3.0]))
    for _ in range(draw(st.integers(0, 4))):
        w = draw(st.sampled_from(ws))
        g = draw(st.sampled_from([0.0, 1.0, 0.35]))
        items.append([None, g, w, draw(st.sampled_from([1, 2, 7]))])
    wmin = min(it[2] for it in items)
    for it in items:
        if it[0] is None:
            it[0] = it[1] + b * (it[2] / wmin)
    order = draw(st.permutations(range(len(items))))
    items = [items[i] for i in order]
    lo = 0.0
    top = 0.0
    for hi, g, _, c in items:
        lo += c * g
        top += c * hi
    at = draw(st.one_of(st.floats(0.0, 1.0), st.integers(0, 7)))
    if isinstance(at, int):
        hi, g, w, _ = items[at % len(items)]
        lam = max((hi - g) / (w / wmin), 0.0)
        V = 0.0
        for h2, g2, w2, c2 in items:
            V += c2 * min(h2, g2 + lam * (w2 / wmin))
    else:
        V = lo + at * (top - lo)
    return items, V


@settings(max_examples=600, deadline=None)
@given(levels())
def test_one_level_with_ties_bit_for_bit(level):
    from makeway.policies.ytsaurus.fast.fill import water_fill

    spec, V = level
    items = []
    for hi, g, w, c in spec:
        it = onedim._Item(None, w, hi, g)
        it.count = c
        items.append(it)
    lam = onedim.water_fill(items, V)
    n = len(spec)
    IVAL = np.zeros(n)
    got = water_fill(V, 0, n, np.array([s[0] for s in spec]), np.array([s[1] for s in spec]),
                     np.array([s[2] for s in spec]), np.array([s[3] for s in spec], np.int64), IVAL)
    assert_bits(["lam"] + [f"item{i}" for i in range(n)], [lam] + [it.value for it in items], [got] + list(IVAL))

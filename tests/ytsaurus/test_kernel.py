"""The compiled fair share update gives the Python construction's shares (to 1e-9) on random trees.

The Python construction (``fairshare.compute`` without ``kernel``, generic path) is the reference: it follows
SEMANTICS §2 function by function and passes every conformance case. The kernel reads pools off
their curves parametrically, computes operations in closed form and reads the root's children at
single suggestions, so the two agree up to rounding, never by more.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba", reason="the kernel is the optional extra makeway[fast]")

from makeway.policies.ytsaurus import arrays, fairshare  # noqa: E402
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

# every test here compiles the numba kernel: one xdist worker compiles it once (`--dist loadgroup`)
pytestmark = pytest.mark.xdist_group("numba-kernel")

RES = ("cpu", "memory", "gpu")
TOTAL = [400.0, 1600.0, 16.0]


def kernel_compute(tree, node_caps=None):
    """The update with ``fair_share_kernel`` on: the kernel for every tree it covers, small ones too."""
    return fairshare.compute(tree, node_caps, kernel=True)

# fractional amounts: a total demand exactly equal to the cluster puts a jump on a tie that the two
# summation orders may resolve by the last bit differently (not a difference of semantics)
amount = st.one_of(st.just(0.0), st.floats(0.3, 40.0).map(lambda v: round(v, 3) + 0.0001))
op = st.tuples(
    st.integers(0, 30), amount, st.sampled_from([1.0, 2.0, 4.0, 8.0]), st.sampled_from([0.0, 1.0003, 2.5007]),
    st.sampled_from([0.0, 0.25, 0.5, 1.0]), st.sampled_from([1.0, 1.0, 2.0, 0.5]),
    st.sampled_from([None, None, None, {"cpu": 3.0001}, {"cpu": 6.0001, "gpu": 1.0}]),   # operation guarantee
    st.sampled_from([None, None, None, {"cpu": 4.0001}]))                              # operation limits
pool = st.tuples(st.sampled_from(["fair_share", "fair_share", "fifo"]), st.sampled_from([1.0, 2.0, 3.0]),
                 st.sampled_from([None, 5.0, 20.0, 60.0]), st.sampled_from([None, 10.0, 40.0]),
                 st.sampled_from([None, {"memory": 100.0}]))


def _tree(mids, pools, ops) -> Tree:
    """Root, two departments, ``mids`` middle pools, leaf pools under those, operations in leaves
    (and a few directly in middle pools, so that pools mix pool and operation children)."""
    tree = Tree(RES, list(TOTAL))
    tree.add(Element(ROOT, None))
    tree.add(Element("d0", ROOT, weight=2.0, guarantee={"cpu": 120.0}))
    tree.add(Element("d1", ROOT, limits={"cpu": 200.0}))
    for m, (mode, weight, limit, guarantee, _) in enumerate(mids):
        tree.add(Element(f"m{m}", f"d{m % 2}", weight=weight, mode="fair_share",
                         limits={"cpu": limit} if limit else None,
                         guarantee={"cpu": guarantee} if guarantee else None))
    for p, (mode, weight, limit, guarantee, extra) in enumerate(pools):
        lim = {"cpu": limit} if limit else None
        if extra:
            lim = {**(lim or {}), **extra}
        tree.add(Element(f"p{p}", f"m{p % len(mids)}", weight=weight, mode=mode, limits=lim,
                         guarantee={"cpu": guarantee} if guarantee and mode != "fifo" else None))
    for i, (p, cpu, mem, gpu, run, weight, guar, lim) in enumerate(ops):
        demand = [cpu, cpu * mem, gpu]
        parent = f"m{p % len(mids)}" if p >= 28 else f"p{p % len(pools)}"
        fifo_parent = parent.startswith("p") and pools[p % len(pools)][0] == "fifo"
        tree.add(Element(f"o{i}", parent, is_op=True, weight=weight, demand=demand,
                         usage=[d * run for d in demand], start_time=i % 3, order=i,
                         guarantee=None if fifo_parent else guar, limits=lim))
    return tree


def _reference(make):
    return fairshare.compute(make(), batching=fairshare.Batching(enabled=False))


def _assert_close(ref, got, names):
    """Shares to 1e-9 for every element. Fit factors too, except on a plateau of a pool's curve that
    sits exactly at a limit: there the two summation orders may stop at either end of it, and any
    point of it hands every descendant the same share (which is asserted, element by element)."""
    for name in names:
        a, b = ref.attrs[name], got.attrs[name]
        assert b.fair_share == pytest.approx(a.fair_share, abs=1e-9), name
        if b.fit_factor != pytest.approx(a.fit_factor, abs=1e-9):
            assert any(abs(x - lim) <= 1e-12 for x, lim in zip(a.fair_share, a.limits_share)), name
        assert b.strong_share == pytest.approx(a.strong_share, abs=1e-12), name
        assert b.demand_share == pytest.approx(a.demand_share, abs=1e-12), name


# derandomized as ``test_kernel_equals_python_on_any_shape`` is: random examples found the known
# disagreement asserted below (2026-11-25), which must not turn CI red by chance
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.lists(pool, min_size=2, max_size=4), st.lists(pool, min_size=3, max_size=12),
       st.lists(op, min_size=4, max_size=60))
def test_kernel_equals_python(mids, pools, ops):
    make = lambda: _tree(mids, pools, ops)  # noqa: E731
    ref = _reference(make)
    tree = make()
    got = kernel_compute(tree)
    fast = arrays.compute_arrays(arrays.PoolArrays.from_tree(make()))
    assert isinstance(got.attrs, arrays.LazyAttrs) == fast.exact  # the reference only after a split jump
    _assert_close(ref, got, list(tree.elements))
    # the parametric reading and the generic construction inside the kernel agree too
    generic = arrays.compute_arrays(arrays.PoolArrays.from_tree(make()), param=False)
    assert np.allclose(generic.fair, fast.fair, rtol=0, atol=1e-9)


def test_a_plateau_a_few_ulps_above_a_limit_is_at_the_limit():
    """Found by ``test_kernel_equals_python`` (2026-11-25). A mid pool limited to 20 cpu of 400
    (L' = 0.05) holds a pool capped at that limit and a FIFO pool whose gpu operation comes first:
    its curve's cpu stays on a plateau at the limit while gpu rises to 0.0625. Beyond the limit,
    SEMANTICS §2.4 takes the plateau's right end, so the root's gpu fair share is 0.0625. The sum
    of the children put that plateau at 0.05000000000000003 in the reference, which read it as
    above the limit, took the left end and gave 0.05; the kernel's own sum gave 0.0625. Knot values
    within ``LIMIT_SNAP`` above L' now count as at it (``plf.limit_level``) on every path."""
    mids = [("fair_share", 1.0, 20.0, None, None), ("fair_share", 1.0, None, None, None)]
    pools = [("fair_share", 1.0, 20.0, None, None), ("fair_share", 1.0, None, None, None),
             ("fifo", 1.0, None, None, None)]
    plain = (0, 0.0, 1.0, 0.0, 0.0, 1.0, None, None)
    ops = [(26, 0.0, 1.0, 1.0003, 0.0, 1.0, None, None), plain, plain, plain,
           (0, 1.0001, 1.0, 0.0, 0.0, 1.0, None, None), (0, 37.0001, 1.0, 0.0, 0.0, 1.0, None, None),
           (8, 1.0001, 1.0, 0.0, 0.0, 1.0, None, None)]
    make = lambda: _tree(mids, pools, ops)  # noqa: E731
    tree = make()
    ref = _reference(make)
    assert ref.attrs[ROOT].fair_share[2] == pytest.approx(1.0003 / 16, abs=1e-9)
    assert ref.attrs["p0"].fair_share[0] == pytest.approx(0.05, abs=1e-12)
    _assert_close(ref, kernel_compute(tree), list(tree.elements))


def test_bench_tree_kernel_equals_python():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import bench_ytsaurus_fair_share as b
    ref = _reference(lambda: b.build(300, 3000))
    tree = b.build(300, 3000)
    _assert_close(ref, kernel_compute(tree), list(tree.elements))


def test_tree_left_as_link_leaves_it():
    """Callers read pools' summed usage and children lists after an update, as before."""
    ops = [(i, 2.0001, 2.0, 0.0, 0.5, 1.0, None, None) for i in range(8)]
    mids = [("fair_share", 1.0, None, None, None)] * 2
    pools = [("fair_share", 1.0, None, None, None)] * 3
    ref_tree = _tree(mids, pools, ops)
    ref_tree.link()
    tree = _tree(mids, pools, ops)
    kernel_compute(tree)
    for name, el in ref_tree.elements.items():
        assert tree.elements[name].children == el.children
        assert tree.elements[name].usage == el.usage
        assert tree.elements[name].demand == el.demand


def test_unsupported_trees_take_the_python_path():
    tree = _tree([("fair_share", 1.0, None, None, None)], [("fair_share", 1.0, None, None, None)],
                 [(0, 2.0001, 2.0, 0.0, 0.5, 1.0, None, None)])
    tree.elements["p0"].settings["compute_promised_guarantee_fair_share"] = True
    res = kernel_compute(tree)
    assert not isinstance(res.attrs, arrays.LazyAttrs)
    assert res.attrs["p0"].promised is not None


def test_without_the_setting_every_tree_takes_the_python_construction():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import bench_ytsaurus_fair_share as b
    assert not isinstance(fairshare.compute(b.build(40, 400)).attrs, arrays.LazyAttrs)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(0.0, 1.0).map(lambda v: round(v, 2)), min_size=1, max_size=12), min_size=1,
                max_size=40))
def test_run_merge_is_a_stable_sort(runs):
    """``_merge_runs`` (from both ends, selections by arithmetic) orders as a stable sort does."""
    from makeway.policies.ytsaurus import kernel_sweep
    runs = [sorted(r) for r in runs]
    keys = np.array([x for r in runs for x in r])
    starts = np.zeros(len(runs) + 2, dtype=np.int64)
    starts[1:len(runs) + 1] = np.cumsum([len(r) for r in runs])
    kx, ki = keys.copy(), np.arange(len(keys), dtype=np.int64)
    tx, ti = np.empty_like(kx), np.empty_like(ki)
    where = kernel_sweep._merge_runs(kx, ki, starts, len(runs), tx, ti)
    got = ti if where else ki
    assert got.tolist() == np.argsort(keys, kind="stable").tolist()


def test_arrays_updated_in_place_give_a_fresh_update():
    """A caller keeping ``PoolArrays`` writes usage rows and recomputes: the same as converting anew."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import bench_ytsaurus_fair_share as b
    tree = b.build(100, 1000)
    pa = arrays.PoolArrays.from_tree(tree)
    arrays.compute_arrays(pa)
    rows = [i for i, name in enumerate(pa.names) if tree.elements[name].is_op][::7]
    for i in rows:
        pa.usage[i] = np.minimum(pa.demand[i], pa.usage[i] + 1.0)
        tree.elements[pa.names[i]].usage = pa.usage[i].tolist()
    again = arrays.compute_arrays(pa)
    fresh = arrays.compute_arrays(arrays.PoolArrays.from_tree(tree))
    assert np.array_equal(again.fair, fresh.fair)
    assert np.array_equal(again.fit, fresh.fit)


@pytest.mark.parametrize("resources", [("cpu",), ("user_slots", "cpu", "gpu", "memory", "network")])
def test_other_resource_counts(resources):
    """One resource, and the five of YTsaurus's vector (two the cluster does not have)."""
    import random
    rng = random.Random(5)
    total = {"cpu": 400.0, "user_slots": 400.0, "gpu": 0.0, "memory": 1600.0, "network": 0.0}

    def make():
        tree = Tree(resources, [total[r] for r in resources])
        tree.add(Element(ROOT, None))
        for d in range(3):
            tree.add(Element(f"d{d}", ROOT, weight=1.0 + d, guarantee={"cpu": 60.0} if d == 0 else None))
        for p in range(9):
            tree.add(Element(f"p{p}", f"d{p % 3}", mode="fifo" if p == 4 else "fair_share",
                             limits={"cpu": 30.0} if p == 2 else None))
        for i in range(60):
            cpu = rng.randint(1, 20) + 0.0001
            vec = {"cpu": cpu, "user_slots": cpu, "gpu": 0.0, "memory": cpu * rng.choice([1.0, 4.0]), "network": 0.0}
            run = rng.choice([0.0, 0.5, 1.0])
            tree.add(Element(f"o{i}", f"p{i % 9}", is_op=True, demand=[vec[r] for r in resources],
                             usage=[vec[r] * run for r in resources], start_time=i, order=i))
        return tree

    state = rng.getstate()
    ref = _reference(make)
    rng.setstate(state)
    tree = make()
    _assert_close(ref, kernel_compute(tree), list(tree.elements))


def test_fifo_truncation_and_packed_memory_limits():
    """Gang operations of a truncating FIFO pool, and memory limits packed onto nodes
    (best allocation share): both are applied around the kernel as the Python path applies them."""
    res = ("user_slots", "cpu", "memory")

    def make():
        tree = Tree(res, [40.0, 40.0, 100.0])
        tree.add(Element(ROOT, None))
        tree.add(Element("gpu", ROOT, mode="fifo", truncate_fifo=True))
        tree.add(Element("other", ROOT))
        for i in range(6):
            tree.add(Element(f"g{i}", "gpu", is_op=True, gang=i % 2 == 0, demand=[10.0, 10.0, 30.0],
                             usage=[0.0, 0.0, 0.0], start_time=i, order=i))
            tree.add(Element(f"o{i}", "other", is_op=True, demand=[4.0, 4.0, 14.0], usage=[2.0, 2.0, 7.0],
                             start_time=i, order=10 + i))
        return tree

    caps = [[20.0, 20.0, 50.0], [20.0, 20.0, 50.0]]
    ref = fairshare.compute(make(), caps, batching=fairshare.Batching(enabled=False))
    tree = make()
    got = kernel_compute(tree, caps)
    assert isinstance(got.attrs, arrays.LazyAttrs)
    assert any(ref.attrs[f"g{i}"].fair_share == [0.0, 0.0, 0.0] for i in range(0, 6, 2))  # some gang truncated
    _assert_close(ref, got, list(tree.elements))
    for name in tree.elements:
        assert got.attrs[name].limits_share == pytest.approx(ref.attrs[name].limits_share, abs=1e-12), name


@st.composite
def shapes(draw):
    """Trees of any depth: pools under random earlier pools (some empty, some with one child),
    operations anywhere including right under the root, demands beyond the cluster, guarantees
    that overflow their parent, limits below guarantees, a FIFO root."""
    tree = Tree(RES, list(TOTAL))
    tree.add(Element(ROOT, None, mode=draw(st.sampled_from(["fair_share", "fair_share", "fifo"]))))
    pools = [ROOT]
    for p in range(draw(st.integers(1, 12))):
        parent = draw(st.sampled_from(pools))
        fifo_parent = tree.elements[parent].mode == "fifo"
        guarantee = None if fifo_parent else draw(st.sampled_from([None, None, {"cpu": 150.0001}, {"cpu": 30.0001, "memory": 10.0}]))
        limits = draw(st.sampled_from([None, None, {"cpu": 20.0001}, {"memory": 300.0}]))
        tree.add(Element(f"p{p}", parent, weight=draw(st.sampled_from([1.0, 2.0, 0.5])),
                         mode=draw(st.sampled_from(["fair_share", "fair_share", "fifo"])),
                         guarantee=guarantee, limits=limits))
        pools.append(f"p{p}")
    for i in range(draw(st.integers(1, 40))):
        parent = draw(st.sampled_from(pools))
        cpu = draw(st.sampled_from([0.0, 1.0003, 7.5001, 30.0007, 450.0009]))
        demand = [cpu, cpu * draw(st.sampled_from([1.0, 3.0])), draw(st.sampled_from([0.0, 2.0001]))]
        run = draw(st.sampled_from([0.0, 0.3, 1.0]))
        fifo_parent = tree.elements[parent].mode == "fifo"
        tree.add(Element(f"o{i}", parent, is_op=True, demand=demand, usage=[d * run for d in demand],
                         weight=draw(st.sampled_from([1.0, 3.0])), start_time=i % 4, order=i,
                         guarantee=None if fifo_parent else draw(st.sampled_from([None, None, {"cpu": 2.0001}]))))
    return tree


# derandomized: the same 150 shapes in every run, so CI does not turn red by chance on the known
# disagreement below (found by this test on 2026-11-24); that shape is asserted on its own
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(shapes())
def test_kernel_equals_python_on_any_shape(tree):
    import copy
    ref = _reference(lambda: copy.deepcopy(tree))
    mine = copy.deepcopy(tree)
    got = kernel_compute(mine)
    assert isinstance(got.attrs, arrays.LazyAttrs)
    _assert_close(ref, got, list(mine.elements))


share = st.sampled_from([0.0, 0.1, 0.2, 0.2000000001, 0.25, 0.5, 1.0])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(share, min_size=3, max_size=3), st.lists(share, min_size=3, max_size=3),
                          st.lists(share, min_size=3, max_size=3), st.sampled_from([0.5, 0.8, 1.0]), st.booleans()),
                min_size=1, max_size=20))
def test_statuses_on_arrays_equal_one_by_one(rows):
    """The model reads statuses off an array-backed result in one go: they equal ``element_status``."""
    fair, demand, usage, tol, is_op = (np.array([r[k] for r in rows]) for k in range(5))
    got = fairshare.below_fair_share(fair, demand, usage, tol, is_op.astype(bool)).tolist()
    want = [fairshare.element_status(list(f), list(d), list(u), t, o) == "below_fair_share" for f, d, u, t, o in rows]
    assert got == want


def test_model_reads_the_array_result_as_it_reads_attrs():
    """``views.from_arrays`` (published fair shares, statuses) equals the element-by-element reading."""
    from makeway.policies.ytsaurus import classify, starvation
    from makeway.policies.ytsaurus.views import from_arrays
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import bench_ytsaurus_fair_share as b
    tree = b.build(40, 400)
    res = kernel_compute(tree)
    params = starvation.effective_params(tree, {})
    published, statuses = from_arrays(res.attrs.arrays, params)
    for name, el in tree.elements.items():
        a = res.attrs[name]
        assert statuses[name] == fairshare.element_status(a.fair_share, a.demand_share, a.usage_share,
                                                          params[name].tolerance, el.is_op)
        if el.is_op:
            assert published[name] == classify.publish(a.fair_share, a.demand_share)
    assert "below_fair_share" in statuses.values() and "normal" in statuses.values()


def _coinciding_jumps_tree(p3_fifo: bool = False) -> Tree:
    """Found by ``test_kernel_equals_python_on_any_shape`` (shrunk): p0 stops at its memory limit at
    the fit factor where p1's curve jumps (p5, FIFO, starts o1 once o28 has its whole gpu demand,
    0.12500625 of the cluster). In exact arithmetic that is also where p3 (one operation, o22, with
    the same gpu demand) reaches its demand. Summed in another order, p1's jump sat 2 ulps higher in
    the Python construction, so p3's suggestion passed its plateau's start by rounding only."""
    tree = Tree(RES, list(TOTAL))
    tree.add(Element(ROOT, None, mode="fifo"))
    tree.add(Element("p0", ROOT, limits={"memory": 300.0}))
    tree.add(Element("p1", "p0", weight=2.0))
    tree.add(Element("p2", "p1", weight=2.0))
    tree.add(Element("p3", "p0", weight=0.5, mode="fifo" if p3_fifo else "fair_share"))
    tree.add(Element("p5", "p1", weight=0.5, mode="fifo"))
    tree.add(Element("p7", "p1", weight=0.5, mode="fifo"))
    ops = [("o1", "p5", 1.0, [30.0007, 30.0007, 0.0], 1), ("o8", "p2", 3.0, [30.0007, 90.0021, 2.0001], 0),
           ("o9", "p7", 1.0, [30.0007, 90.0021, 2.0001], 1), ("o12", "p7", 1.0, [7.5001, 7.5001, 0.0], 0),
           ("o22", "p3", 3.0, [7.5001, 22.5003, 2.0001], 2), ("o28", "p5", 1.0, [7.5001, 7.5001, 2.0001], 0),
           ("o29", "p0", 1.0, [30.0007, 30.0007, 0.0], 1), ("o30", "p1", 1.0, [7.5001, 22.5003, 2.0001], 2)]
    if p3_fifo:
        ops.append(("o40", "p3", 1.0, [7.5001, 22.5003, 0.0], 5))
    for order, (name, parent, weight, demand, start) in enumerate(ops):
        tree.add(Element(name, parent, is_op=True, weight=weight, demand=demand, usage=[0.0, 0.0, 0.0],
                         start_time=start, order=order))
    return tree


@pytest.mark.parametrize("p3_fifo", [False, True])
def test_children_jumps_that_coincide_up_to_rounding_are_one_jump(p3_fifo):
    """Both paths give every element the shares and fit factors of exact arithmetic: p1's jump and
    p3's plateau start (or, with p3 FIFO, p3's own jump as o40 enters) are one point of p0's curve,
    p0 stops there, and every child takes the lower value: p3 the left end of its plateau (fit
    factor 0.12500625, not 1), and with p3 FIFO, o22's share only (o40 nothing)."""
    ref = _reference(lambda: _coinciding_jumps_tree(p3_fifo))
    tree = _coinciding_jumps_tree(p3_fifo)
    got = kernel_compute(tree)
    assert isinstance(got.attrs, arrays.LazyAttrs)
    _assert_close(ref, got, list(tree.elements))
    gpu = 2.0001 / 16.0
    for res in (ref, got):
        assert res.attrs["p0"].fit_factor == pytest.approx(gpu, abs=1e-12)
        assert res.attrs["p3"].fit_factor == pytest.approx(gpu, abs=1e-12)
        assert res.attrs["p3"].fair_share == pytest.approx(res.attrs["o22"].demand_share, abs=1e-12)
        if p3_fifo:
            assert res.attrs["o40"].fair_share == [0.0, 0.0, 0.0]


def _jump_at_the_root_fit():
    """A pool (p0) whose curve jumps at the root's fit factor 0.5: its GPU operations are all met at
    dominant share 0.5 while its CPU-heavy child p10 could take anything from 0.14 to 0.5 of the CPU,
    and a sibling operation (o14) takes CPU 0.5 beside it."""
    t = Tree(RES, list(TOTAL))
    t.add(Element(ROOT, None))
    t.add(Element("p0", ROOT))
    t.add(Element("p10", "p0"))
    big = [450.0009, 450.0009, 0.0]
    gpu = [0.0, 0.0, 2.0001]
    for name, parent, demand, start, weight in [("o0", "p10", big, 0, 1.0), ("o14", ROOT, big, 2, 1.0),
                                                ("o15", "p0", gpu, 3, 1.0), ("o16", "p10", [7.5001, 7.5001, 2.0001], 0, 1.0),
                                                ("o19", "p0", gpu, 3, 1.0), ("o21", "p0", gpu, 1, 3.0)]:
        t.add(Element(name, parent, is_op=True, demand=list(demand), usage=[0.0] * 3, weight=weight,
                      start_time=start, order=int(name[1:])))
    return t


def test_kernel_equals_python_at_a_jump_at_the_root_fit():
    """A jump rounding split over a few ulps at the root's fit factor: the kernel alone would stop
    inside it (p0 at CPU 0.2547, neither end of the jump); it sees that and leaves the update to the
    reference, which stops at the jump's start (0.1438, the left-continuous reading)."""
    import copy
    tree = _jump_at_the_root_fit()
    alone = arrays.compute_arrays(arrays.PoolArrays.from_tree(copy.deepcopy(tree)))
    assert not alone.exact
    ref = _reference(lambda: copy.deepcopy(tree))
    mine = copy.deepcopy(tree)
    _assert_close(ref, kernel_compute(mine), list(mine.elements))
    assert ref.attrs["p0"].fair_share[0] == pytest.approx(0.1437565, abs=1e-9)


def test_a_tree_without_a_split_jump_stays_on_the_kernel():
    """The fallback is for split jumps only: a root whose children rise continuously through its fit
    factor keeps the kernel's answer, which is the reference's."""
    import copy
    t = Tree(RES, list(TOTAL))
    t.add(Element(ROOT, None))
    t.add(Element("p0", ROOT))
    t.add(Element("o0", "p0", is_op=True, demand=[100.0, 100.0, 0.0], usage=[0.0] * 3, start_time=0, order=0))
    t.add(Element("o1", ROOT, is_op=True, demand=[800.0, 100.0, 0.0], usage=[0.0] * 3, start_time=1, order=1))
    res = arrays.compute_arrays(arrays.PoolArrays.from_tree(copy.deepcopy(t)))
    assert res.exact
    ref = _reference(lambda: copy.deepcopy(t))
    _assert_close(ref, kernel_compute(copy.deepcopy(t)), list(t.elements))

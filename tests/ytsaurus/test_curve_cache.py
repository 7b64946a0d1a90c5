"""Fair share with the curve cache equals a fresh computation, update after update.

The cache belongs to the Python construction (``fairshare.compute`` without ``kernel``), which integral
guarantees and promised fair shares still take; the compiled update needs none."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from makeway.policies.ytsaurus import fairshare
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

RES = ("cpu", "memory", "gpu")




def _tree(ops: list[tuple], total: list[float]) -> Tree:
    tree = Tree(RES, list(total))
    tree.add(Element(ROOT, None))
    tree.add(Element("d0", ROOT, weight=2.0, guarantee={"cpu": total[0] * 0.3}))
    tree.add(Element("d1", ROOT, limits={"cpu": total[0] * 0.5}))
    for p in range(6):
        tree.add(Element(f"p{p}", f"d{p % 2}", weight=1.0 + p % 3, mode="fifo" if p == 3 else "fair_share",
                         limits={"memory": total[1] * 0.2} if p == 4 else None))
    for i, (pool, usage, demand) in enumerate(ops):
        tree.add(Element(f"o{i}", pool, is_op=True, usage=list(usage), demand=list(demand), start_time=i, order=i))
    return tree


@pytest.mark.parametrize("seed", range(8))
def test_cached_equals_fresh(seed):
    rng = random.Random(seed)
    total = [400.0, 1600.0, 16.0]
    ops = []
    for _ in range(40):
        cpu = rng.randint(1, 30)
        run = rng.random()
        demand = (cpu, cpu * rng.choice([2.0, 4.0]), rng.choice([0.0, 1.0]))
        ops.append((f"p{rng.randrange(6)}", tuple(d * run for d in demand), demand))
    cache = fairshare.CurveCache()
    for step in range(5):
        cached = fairshare.compute(_tree(ops, total), cache=cache)
        fresh = fairshare.compute(_tree(ops, total))
        for name, a in fresh.attrs.items():
            assert cached.attrs[name].fair_share == a.fair_share, (step, name)  # bit for bit
        # change a few operations (usage moves, one finishes, one arrives)
        for _ in range(2):
            k = rng.randrange(len(ops))
            pool, usage, demand = ops[k]
            ops[k] = (pool, tuple(min(d, u + 1.0) for u, d in zip(usage, demand)), demand)
        ops.pop(rng.randrange(len(ops)))
        ops.append(("p1", (0.0, 0.0, 0.0), (4.0, 8.0, 0.0)))
    assert cache.hits > 0


def test_bench_tree_cached_second_update_hits():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import bench_ytsaurus_fair_share as b
    cache = fairshare.CurveCache()
    fairshare.compute(b.build(50, 400), cache=cache)
    misses = cache.misses
    again = fairshare.compute(b.build(50, 400), cache=cache)
    fresh = fairshare.compute(b.build(50, 400))
    assert cache.misses == misses  # nothing changed: every curve reused
    for name, a in fresh.attrs.items():
        assert again.attrs[name].fair_share == a.fair_share


def _pools_tree(moved: int | None = None, pools: int = 10, root_ops: int = 0, limited: bool = False) -> Tree:
    """``pools`` pools under the root with three operations each, operation ``moved`` one allocation
    further on, ``root_ops`` operations straight under the root; with ``limited`` a limit below its
    demand keeps every tenth operation off the closed form."""
    rng = random.Random(0)
    tree = Tree(("cpu", "memory"), [40.0, 160.0])
    tree.add(Element(ROOT, None))
    for p in range(pools):
        tree.add(Element(f"p{p}", ROOT, weight=rng.choice([1.0, 2.0, 3.0]),
                         mode="fifo" if p % 4 == 3 else "fair_share"))
    for k in range(30):
        n, cpu, mem = rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 6)
        run = rng.randint(0, n)
        if k == moved:
            run = (run + 1) % (n + 1)
        tree.add(Element(f"o{k}", f"p{k % pools}", is_op=True, demand=[cpu * n, mem * n], usage=[cpu * run, mem * run],
                         start_time=k, order=k, limits={"cpu": 1.0} if limited and k % 10 == 0 else None))
    for j in range(root_ops):
        tree.add(Element(f"r{j}", ROOT, is_op=True, demand=[4.0, 8.0], usage=[2.0 * j, 4.0 * j], start_time=50 + j,
                         order=50 + j))
    return tree


@pytest.mark.parametrize("before,after", [
    # nine of ten pools unchanged: the one left would be a level too small to batch
    (lambda: _pools_tree(), lambda: _pools_tree(moved=4)),
    # every pool unchanged: the root would be read at suggestion 1 only (``batched.root_fit``)
    (lambda: _pools_tree(pools=3, root_ops=1), lambda: _pools_tree(pools=3, root_ops=2)),
    # an operation off the closed form, taken from the cache, would make its pool look ready
    (lambda: _pools_tree(limited=True), lambda: _pools_tree(limited=True, moved=5)),
], ids=["shrunk-level", "root-only", "generic-operation"])
def test_cache_hits_do_not_change_the_path(before, after):
    """Which pools are computed together (batched) and whether the root takes the point-only path
    once depended on which pools the cache held; the paths round differently (and at a jump by far
    more than rounding), so a warm cache gave other fair shares than a fresh computation."""
    cache = fairshare.CurveCache()
    fairshare.compute(before(), cache=cache)
    warm = fairshare.compute(after(), cache=cache)
    fresh = fairshare.compute(after())
    assert cache.hits > 0
    for name, a in fresh.attrs.items():
        assert warm.attrs[name].fair_share == a.fair_share, name


def test_a_shape_seen_updates_ago_is_reused():
    """A backlog that returns to an earlier shape finds its curves still cached (generations, not
    one update); with ``generation=1`` (only the previous update's entries) it computes them
    again. Either way the shares are bit for bit a fresh computation's."""
    misses = {}
    for generation in (1, 1024):
        cache = fairshare.CurveCache(generation)
        fairshare.compute(_pools_tree(), cache=cache)
        fairshare.compute(_pools_tree(moved=4), cache=cache)
        before = cache.misses
        back = fairshare.compute(_pools_tree(), cache=cache)
        misses[generation] = cache.misses - before
        fresh = fairshare.compute(_pools_tree())
        for name, a in fresh.attrs.items():
            assert back.attrs[name].fair_share == a.fair_share, (generation, name)
    assert misses[1024] == 0
    assert misses[1] > 0


def test_generations_bound_the_cache():
    cache = fairshare.CurveCache(generation=8)
    for k in range(30):
        fairshare.compute(_pools_tree(moved=k), cache=cache)
        # a generation fills within one update, which puts at most its 11 pools (root included)
        assert len(cache.old) + len(cache.new) <= 2 * (8 + 11)

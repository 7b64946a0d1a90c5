"""Fair share with the curve cache equals a fresh computation, update after update."""

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
            assert cached.attrs[name].fair_share == pytest.approx(a.fair_share, abs=1e-12), (step, name)
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

"""Benchmark: one YTsaurus fair share update over 10,000 pools / 100,000 operations.

Prints the figure and writes {"metric": "ytsaurus_fair_share_update_ms", ...} as JSON to stdout.
``run(quick)`` is what ``makeway bench`` calls (quick: 1,000 pools / 10,000 operations).
"""

from __future__ import annotations

import json
import random
import sys
import time

from makeway.policies.ytsaurus import fairshare
from makeway.policies.ytsaurus.tree import ROOT, Element, Tree

RES = ("cpu", "memory", "gpu")


def build(pools: int, ops: int, seed: int = 7) -> Tree:
    """Two-level tree (100 departments, leaf pools under them), operations with mixed usage."""
    rng = random.Random(seed)
    tree = Tree(RES, [pools * 40.0, pools * 160.0, pools * 4.0])
    tree.add(Element(ROOT, None))
    depts = max(1, pools // 100)
    for d in range(depts):
        tree.add(Element(f"d{d}", ROOT, weight=rng.choice([1.0, 2.0]),
                         guarantee={"cpu": tree.total[0] / depts * 0.5}))
    leaves = []
    for p in range(pools - depts):
        name = f"p{p}"
        leaves.append(name)
        tree.add(Element(name, f"d{p % depts}", weight=rng.choice([1.0, 1.0, 3.0]),
                         mode="fifo" if p % 10 == 0 else "fair_share",
                         limits={"cpu": 200.0} if p % 7 == 0 else None))
    for o in range(ops):
        cpu = rng.randint(1, 40)
        mem = cpu * rng.choice([2.0, 4.0, 8.0])
        gpu = rng.choice([0.0, 0.0, 0.0, 1.0])
        run = rng.random()
        tree.add(Element(f"o{o}", leaves[o % len(leaves)], is_op=True, demand=[cpu, mem, gpu],
                         usage=[cpu * run, mem * run * rng.choice([1.0, 0.5]), gpu], start_time=o, order=o))
    return tree


def measure(pools: int, ops: int, repeat: int = 1) -> float:
    tree = build(pools, ops)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()  # CPU time of this process: stable on a shared machine
        fairshare.compute(tree)
        best = min(best, time.process_time() - t0)
    return best * 1000.0


def measure_incremental(pools: int, ops: int, changed: float = 0.01, seed: int = 11) -> float:
    """An update after ``changed`` of the operations moved their usage, with the simulator's curve
    cache warm from the previous update (what a periodic update costs when little changed)."""
    tree = build(pools, ops)
    cache = fairshare.CurveCache()
    fairshare.compute(tree, cache=cache)
    rng = random.Random(seed)
    op_names = [n for n, el in tree.elements.items() if el.is_op]
    for name in rng.sample(op_names, max(1, int(len(op_names) * changed))):
        el = tree.elements[name]
        el.usage = [min(d, u + 1.0) for u, d in zip(el.usage, el.demand)]
    t0 = time.process_time()
    fairshare.compute(tree, cache=cache)
    return (time.process_time() - t0) * 1000.0


def run(quick: bool = False) -> list[dict]:
    pools, ops = (1000, 10000) if quick else (10000, 100000)
    ms = measure(pools, ops)
    inc = measure_incremental(pools, ops)
    return [{"metric": "ytsaurus_fair_share_update_ms", "value": round(ms, 1), "unit": "ms", "target": 100,
             "pools": pools, "operations": ops},
            {"metric": "ytsaurus_fair_share_update_1pct_changed_ms", "value": round(inc, 1), "unit": "ms",
             "target": 100, "pools": pools, "operations": ops}]


if __name__ == "__main__":
    rows = run(quick="--quick" in sys.argv)
    for r in rows:
        print(f"{r['metric']}: {r['value']} ms for {r['pools']} pools / {r['operations']} operations "
              f"(target {r['target']} ms)", file=sys.stderr)
        print(json.dumps({k: r[k] for k in ("metric", "value", "unit", "target")}))

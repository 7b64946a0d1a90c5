"""Benchmark: one YTsaurus fair share update over 10,000 pools / 100,000 operations.

Prints the figures and writes {"metric": "ytsaurus_fair_share_update_ms", ...} as JSON to stdout.
``run(quick)`` is what ``makeway bench`` calls (quick: 1,000 pools / 10,000 operations).

The update is timed on the pool tree as arrays (``arrays.PoolArrays``), the snapshot a caller keeps
and writes usage into between updates: pool sums, shares, guarantees, curves and the top-down read,
all of it. Two more figures: after 1% of the operations moved their usage (written in place), and
from the object ``Tree`` (``fairshare.compute``, conversion included: what the simulator's model
pays today). CPU time of this process, best of ``repeat``; the kernel is compiled before timing.
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


def _cpu(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()  # CPU time of this process: stable on a shared machine
        fn()
        best = min(best, time.process_time() - t0)
    return best * 1000.0


def measure(pools: int, ops: int, repeat: int = 3) -> float:
    """One whole update from the arrays snapshot."""
    from makeway.policies.ytsaurus import arrays  # the compiled update: numba (makeway[fast])
    arrays.compute_arrays(arrays.PoolArrays.from_tree(build(20, 100)))  # compile (or load) the kernel
    pa = arrays.PoolArrays.from_tree(build(pools, ops))
    return _cpu(lambda: arrays.compute_arrays(pa), repeat)


def measure_incremental(pools: int, ops: int, changed: float = 0.01, seed: int = 11, repeat: int = 3) -> float:
    """An update after ``changed`` of the operations moved their usage (rows written in place)."""
    from makeway.policies.ytsaurus import arrays  # the compiled update: numba (makeway[fast])
    pa = arrays.PoolArrays.from_tree(build(pools, ops))
    arrays.compute_arrays(pa)
    rng = random.Random(seed)
    rows = [i for i in range(len(pa.names)) if pa.is_op[i]]
    best = float("inf")
    for _ in range(repeat):
        for i in rng.sample(rows, max(1, int(len(rows) * changed))):
            pa.usage[i] = [min(d, u + 1.0) for u, d in zip(pa.usage[i].tolist(), pa.demand[i].tolist())]
        best = min(best, _cpu(lambda: arrays.compute_arrays(pa), 1))
    return best


def measure_from_objects(pools: int, ops: int) -> float:
    """``fairshare.compute`` on the object tree, converting it to arrays first."""
    tree = build(pools, ops)
    return _cpu(lambda: fairshare.compute(tree, kernel=True), 1)


def run(quick: bool = False) -> list[dict]:
    pools, ops = (1000, 10000) if quick else (10000, 100000)
    rows = [("ytsaurus_fair_share_update_ms", measure(pools, ops)),
            ("ytsaurus_fair_share_update_1pct_changed_ms", measure_incremental(pools, ops)),
            ("ytsaurus_fair_share_update_from_object_tree_ms", measure_from_objects(pools, ops))]
    # the conversion from objects is reported, not held to the update's target
    return [{"metric": m, "value": round(v, 1), "unit": "ms", "target": None if "object" in m else 100,
             "pools": pools, "operations": ops} for m, v in rows]


if __name__ == "__main__":
    rows = run(quick="--quick" in sys.argv)
    for r in rows:
        print(f"{r['metric']}: {r['value']} ms for {r['pools']} pools / {r['operations']} operations "
              f"(target {r['target'] or '-'} ms)", file=sys.stderr)
        print(json.dumps({k: r[k] for k in ("metric", "value", "unit", "target")}))

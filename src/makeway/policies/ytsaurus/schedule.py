"""Choosing whom to serve in the regular stage: descend to the least satisfied active child (§6.2)."""

from __future__ import annotations

from typing import Callable

from makeway.policies.ytsaurus.tree import ROOT, Tree


def pick_operation(tree: Tree, active: set[str], sat: Callable[[str], float]) -> str | None:
    """The least satisfied active operation; a pool's value is the minimum over its active children."""
    memo: dict[str, float | None] = {}

    def value(name: str) -> float | None:
        if name in memo:
            return memo[name]
        el = tree.elements[name]
        if el.is_op:
            v = sat(name) if name in active else None
        else:
            vals = [x for x in (value(c) for c in el.children) if x is not None]
            v = min(vals) if vals else None
        memo[name] = v
        return v

    if value(ROOT) is None:
        return None
    cur = ROOT
    while not tree.elements[cur].is_op:
        el = tree.elements[cur]
        best = None
        for idx, c in enumerate(el.children):
            v = value(c)
            if v is None:
                continue
            key = (v, idx)
            if best is None or key < best[0]:
                best = (key, c)
        assert best is not None
        cur = best[1]
    return cur

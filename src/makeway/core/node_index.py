"""An index of free node capacity that answers "first node, in node order, where this request fits".

A max segment tree per declared resource over the node list: a subtree whose largest free amount
of some resource is below the request cannot hold a fitting node and is skipped. The per-resource
maxima are a necessary condition only (the maxima may sit on different nodes), so the search
descends and backtracks; on real clusters that is a handful of steps instead of a scan of every
node. Updates cost O(resources x log nodes) per start or end.

One more max tree holds each node's *balance*: its smallest free amount over all resources, each
scaled by the largest initial free amount of that resource. A request that needs every resource
needs at least its own smallest scaled amount there, so subtrees whose nodes are each nearly full in
*some* resource (the usual way a busy cluster fragments: one node out of memory, the next out of
CPU, which per-resource maxima cannot see) are skipped instead of searched.
"""

from __future__ import annotations

from typing import Mapping

from makeway.core.resources import EPS

_NEG = float("-inf")


class FreeIndex:
    __slots__ = ("resources", "size", "trees", "n", "scales", "balance")

    def __init__(self, resources: tuple[str, ...], free: list[Mapping[str, float] | None]):
        self.resources = resources
        self.n = len(free)
        size = 1
        while size < max(1, self.n):
            size *= 2
        self.size = size
        self.trees: dict[str, list[float]] = {}
        for r in resources:
            t = [_NEG] * (2 * size)
            for i, f in enumerate(free):
                t[size + i] = _NEG if f is None else f.get(r, 0)
            for i in range(size - 1, 0, -1):
                a, b = t[2 * i], t[2 * i + 1]
                t[i] = a if a > b else b
            self.trees[r] = t
        peak = {r: max((f.get(r, 0) for f in free if f is not None), default=0) for r in resources}
        self.scales = {r: (v if v > 0 else 1.0) for r, v in peak.items()}
        bal = [_NEG] * (2 * size)
        for i, f in enumerate(free):
            bal[size + i] = self._balance(f)
        for i in range(size - 1, 0, -1):
            a, b = bal[2 * i], bal[2 * i + 1]
            bal[i] = a if a > b else b
        self.balance = bal

    def _balance(self, free: Mapping[str, float] | None) -> float:
        if free is None or not self.scales:
            return _NEG
        low = float("inf")
        for r, s in self.scales.items():
            v = free.get(r, 0) / s
            if v < low:
                low = v
        return low

    def set(self, i: int, free: Mapping[str, float] | None) -> None:
        """Node ``i`` now has ``free`` resources (``None``: it takes nothing, e.g. unschedulable)."""
        j = self.size + i
        for r, t in self.trees.items():
            _put(t, j, _NEG if free is None else free.get(r, 0))
        _put(self.balance, j, self._balance(free))

    def leaf(self, i: int) -> dict[str, float]:
        """The free amounts the index holds for node ``i``."""
        return {r: t[self.size + i] for r, t in self.trees.items()}

    def fits_at(self, i: int, request: Mapping[str, float]) -> bool:
        """Whether node ``i`` alone covers ``request``, by the same test ``first_fit`` applies."""
        j = self.size + i
        trees = self.trees
        if not trees:
            return False
        for r, v in request.items():
            if v > 0:
                t = trees.get(r)
                if t is None or t[j] < v - EPS:
                    return False
        return next(iter(trees.values()))[j] != _NEG  # unschedulable nodes hold -inf everywhere

    def first_fit(self, request: Mapping[str, float], start: int = 0) -> int | None:
        """The smallest node index >= ``start`` whose free amounts cover ``request``, or None."""
        need = []
        for r, v in request.items():
            if v > 0:
                t = self.trees.get(r)
                if t is None:
                    return None
                need.append((t, v - EPS))
        if not need and self.trees:
            need.append((next(iter(self.trees.values())), -1e300))  # only excludes unschedulable nodes
        elif len(need) == len(self.scales) and need:
            need.insert(0, (self.balance, min((request[r] - EPS) / s for r, s in self.scales.items())))
        if start >= self.n:
            return None
        size = self.size
        stack = [(1, 0, size)]
        while stack:
            node, lo, hi = stack.pop()
            if hi <= start:
                continue
            ok = True
            for t, v in need:
                if t[node] < v:
                    ok = False
                    break
            if not ok:
                continue
            if node >= size:
                return lo
            mid = (lo + hi) // 2
            stack.append((2 * node + 1, mid, hi))
            stack.append((2 * node, lo, mid))
        return None


def _put(t: list[float], j: int, v: float) -> None:
    """Set leaf ``j`` of max-tree ``t`` to ``v`` and repair its ancestors, stopping where one is unchanged."""
    t[j] = v
    j >>= 1
    while j:
        a, b = t[2 * j], t[2 * j + 1]
        m = a if a > b else b
        if t[j] == m:
            break
        t[j] = m
        j >>= 1

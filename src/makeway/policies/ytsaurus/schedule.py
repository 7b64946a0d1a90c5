"""Choosing whom to serve in the regular stage: descend to the least satisfied active child (§6.2)."""

from __future__ import annotations

import heapq
from typing import Callable

from makeway.policies.ytsaurus.tree import ROOT, Tree


def pick_operation(tree: Tree, active: set[str], sat: Callable[[str], float]) -> str | None:
    """The least satisfied active operation; a pool's value is the minimum over its active children.
    Values are computed bottom-up over the whole tree (reversed preorder: children first), then the
    descent takes the least valued child at each level, the earlier child on ties."""
    elements = tree.elements
    value: dict[str, float | None] = {}
    for name in reversed(tree.preorder()):
        el = elements[name]
        if el.is_op:
            value[name] = sat(name) if name in active else None
            continue
        low = None
        for c in el.children:
            v = value[c]
            if v is not None and (low is None or v < low):
                low = v
        value[name] = low
    if value[ROOT] is None:
        return None
    cur = ROOT
    while not elements[cur].is_op:
        best, best_v = None, None
        for c in elements[cur].children:
            v = value[c]
            if v is not None and (best_v is None or v < best_v):
                best, best_v = c, v
        assert best is not None
        cur = best
    return cur


class Picker:
    """``pick_operation`` for repeated picks within one heartbeat, over the active operations only.

    Only active operations and their ancestors are visited, and values are memoised across picks;
    ``changed(op)`` forgets the values an operation's new usage can move (it and its ancestors) and
    ``deactivate(op)`` removes it. Ties go to the earlier child in tree order, as in ``pick_operation``.
    """

    __slots__ = ("tree", "sat", "pos", "kids", "memo", "active")

    def __init__(self, tree: Tree, active: set[str], sat: Callable[[str], float], pos: dict[str, int]):
        self.tree, self.sat, self.pos = tree, sat, pos
        self.active = set(active)
        self.memo: dict[str, float | None] = {}
        kids: dict[str, set[str]] = {}
        elements = tree.elements
        for op in self.active:
            cur = op
            parent = elements[cur].parent
            while parent is not None:
                ks = kids.get(parent)
                if ks is None:
                    kids[parent] = {cur}
                else:
                    if cur in ks:
                        break
                    ks.add(cur)
                cur, parent = parent, elements[parent].parent
        self.kids = {p: sorted(ks, key=pos.__getitem__) for p, ks in kids.items()}

    def value(self, name: str) -> float | None:
        memo = self.memo
        if name in memo:
            return memo[name]
        if name in self.active:
            v: float | None = self.sat(name)
        else:
            v = None
            for c in self.kids.get(name, ()):
                x = self.value(c)
                if x is not None and (v is None or x < v):
                    v = x
        memo[name] = v
        return v

    def pick(self) -> str | None:
        if self.value(ROOT) is None:
            return None
        cur = ROOT
        while cur not in self.active:
            best = None
            for c in self.kids[cur]:
                v = self.value(c)
                if v is not None and (best is None or v < best[0]):
                    best = (v, c)
            assert best is not None
            cur = best[1]
        return cur

    def changed(self, op: str) -> None:
        elements = self.tree.elements
        cur: str | None = op
        while cur is not None:
            self.memo.pop(cur, None)
            cur = elements[cur].parent

    def deactivate(self, op: str) -> None:
        self.active.discard(op)
        self.changed(op)


class ReferencePicker(Picker):
    """``pick_operation`` over the whole tree at every pick: no memo, no pruning (the model's
    ``caches: false``, the reference ``Picker`` is checked against)."""

    def __init__(self, tree: Tree, active, sat: Callable[[str], float], pos) -> None:
        self.tree, self.sat, self.active = tree, sat, set(active)

    def pick(self) -> str | None:
        return pick_operation(self.tree, self.active, self.sat)

    def changed(self, op: str) -> None:
        pass

    def deactivate(self, op: str) -> None:
        self.active.discard(op)


def positions_path(tree: Tree, pos: dict[str, int], op: str, memo: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The positions among siblings from the root's child down to ``op``: descending to the least
    valued child, earlier child on ties, ends at the active operation with the least (value, path)."""
    path = memo.get(op)
    if path is None:
        parent = tree.elements[op].parent
        if parent is None or parent == ROOT:
            path = (pos[op],)
        else:
            path = positions_path(tree, pos, parent, memo) + (pos[op],)
        memo[op] = path
    return path


class HeapPicker(Picker):
    """``Picker`` as one heap of (value, path) over the active operations: the descent of
    ``pick_operation`` (least valued child, earlier child on ties) ends at the operation whose
    value and then path from the root are least, so a pick is a heap top, a change one push, and a
    heartbeat that deactivates many operations in turn costs O(log n) each, not a walk of the pool.
    Entries of changed or deactivated operations stay in the heap and are dropped when they surface.
    ``paths`` memoises paths for one tree across pickers."""

    __slots__ = ("heap", "latest", "path", "paths")

    def __init__(self, tree: Tree, active: set[str], sat: Callable[[str], float], pos: dict[str, int],
                 paths: dict[str, tuple[int, ...]] | None = None,
                 start: tuple[list, dict[str, float]] | None = None) -> None:
        self.tree, self.sat, self.pos = tree, sat, pos
        self.active = set(active)
        self.paths = {} if paths is None else paths
        if start is not None:  # ``start()`` of a picker over the same operations and values
            self.heap, self.latest = list(start[0]), dict(start[1])
            return
        self.latest: dict[str, float] = {}
        heap = []
        for op in self.active:
            v = self.latest[op] = sat(op)
            heap.append((v, positions_path(tree, pos, op, self.paths), op))
        heapq.heapify(heap)
        self.heap = heap

    def start(self) -> tuple[list, dict[str, float]]:
        """The heap and values as they are (before any pick), for a later picker over the same
        active operations whose values have not moved (``Waiting.picker``)."""
        return list(self.heap), dict(self.latest)

    def pick(self) -> str | None:
        heap, active, latest = self.heap, self.active, self.latest
        while heap:
            v, _, op = heap[0]
            if op in active and latest[op] == v:
                return op
            heapq.heappop(heap)
        return None

    def changed(self, op: str) -> None:
        if op in self.active:
            v = self.latest[op] = self.sat(op)
            heapq.heappush(self.heap, (v, positions_path(self.tree, self.pos, op, self.paths), op))

    def deactivate(self, op: str) -> None:
        self.active.discard(op)

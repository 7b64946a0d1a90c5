"""The pool tree as YTsaurus sees it at one fair-share update: pools, operations, absolute vectors.

Built either from a makeway ClusterState (the simulator) or from a conformance case. Vectors are
plain lists in the order of ``Tree.resources``; a limit missing for a resource means unlimited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROOT = "<Root>"
INF = float("inf")


@dataclass(slots=True)
class Element:
    name: str
    parent: str | None
    is_op: bool = False
    weight: float = 1.0
    guarantee: dict[str, float] | None = None   # strong_guarantee_resources (absolute, as given)
    limits: dict[str, float] | None = None      # resource_limits (absolute, missing = unlimited)
    max_share_ratio: float | None = None
    mode: str = "fair_share"
    fifo_sort: tuple[str, ...] = ("weight", "start_time")
    demand: list[float] = field(default_factory=list)
    usage: list[float] = field(default_factory=list)
    start_time: float = 0.0
    order: int = 0
    pending_count: int = 0
    gang: bool = False
    truncate_fifo: bool = False
    integral: dict[str, Any] | None = None       # {type, flow: vec, burst: vec}
    volume: list[float] | None = None            # accumulated integral volume (absolute x s)
    relaxed_multiplier: float | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Tree:
    resources: tuple[str, ...]
    total: list[float]
    elements: dict[str, Element] = field(default_factory=dict)
    main_resource: str = "cpu"
    memo_orders: bool = True  # False: every order recomputed on each call (the model's ``caches: false``)
    members: dict[str, int] = field(default_factory=dict)  # group element -> equal operations it stands for
    _orders: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def add(self, el: Element) -> Element:
        self.elements[el.name] = el
        self._orders.clear()
        return el

    def link_children(self) -> None:
        """Fill ``children`` lists (tree order = insertion order); missing demand/usage as zeros."""
        self._orders.clear()
        elements = self.elements
        dim = len(self.resources)
        for el in elements.values():
            el.children = []
            if not el.demand:
                el.demand = [0.0] * dim
            if not el.usage:
                el.usage = [0.0] * dim
        pool_kids: dict[str, list[str]] = {}
        for el in elements.values():
            if el.parent is not None:
                elements[el.parent].children.append(el.name)
                if not el.is_op:
                    pool_kids.setdefault(el.parent, []).append(el.name)
        if self.memo_orders:
            self._orders["pool_kids"] = pool_kids

    def pool_children(self, name: str) -> list[str]:
        """The pools among ``name``'s children, in children order: kept by ``link_children``, so a
        walk of the pools costs the pools, not the operations under them."""
        kids = self._orders.get("pool_kids") if self.memo_orders else None
        if kids is not None:
            return kids.get(name, [])
        elements = self.elements
        return [c for c in elements[name].children if not elements[c].is_op]

    def link(self) -> None:
        """``link_children``, then sum pool demand/usage."""
        self.link_children()
        elements = self.elements
        dim = len(self.resources)
        for name in self.pool_postorder():
            el = elements[name]
            if el.children:
                kids = [elements[c] for c in el.children]
                mult = self.members
                el.demand = _running_sum([[v * mult[k.name] for v in k.demand] if k.name in mult else k.demand
                                          for k in kids], dim)
                if not el.settings.get("_fixed_usage"):
                    el.usage = _running_sum([[v * mult[k.name] for v in k.usage] if k.name in mult else k.usage
                                             for k in kids], dim)

    def postorder(self) -> list[str]:
        """Children before parents; computed once per ``link`` (callers only iterate it)."""
        out = self._orders.get("post")
        if out is not None and self.memo_orders:
            return out
        # a preorder that takes the last child first, reversed, is a postorder in children order
        out = []
        stack = [ROOT]
        elements = self.elements
        while stack:
            name = stack.pop()
            out.append(name)
            stack.extend(elements[name].children)
        out.reverse()
        self._orders["post"] = out
        return out

    def pool_postorder(self) -> list[str]:
        """``postorder`` without the operations."""
        out = self._orders.get("pools_post")
        if out is None or not self.memo_orders:
            out = []
            stack = [ROOT]
            while stack:
                name = stack.pop()
                out.append(name)
                stack.extend(self.pool_children(name))
            out.reverse()
            self._orders["pools_post"] = out
        return out

    def pool_preorder(self) -> list[str]:
        """``preorder`` without the operations."""
        out = self._orders.get("pools_pre")
        if out is None or not self.memo_orders:
            out = []
            stack = [ROOT]
            while stack:
                name = stack.pop()
                out.append(name)
                stack.extend(reversed(self.pool_children(name)))
            self._orders["pools_pre"] = out
        return out

    def preorder(self) -> list[str]:
        """Parents before children; computed once per ``link`` (callers only iterate it)."""
        out = self._orders.get("pre")
        if out is not None and self.memo_orders:
            return out
        out = []
        stack = [ROOT]
        while stack:
            name = stack.pop()
            out.append(name)
            stack.extend(reversed(self.elements[name].children))
        self._orders["pre"] = out
        return out

    def vec(self, d: dict[str, float] | None, missing: float = 0.0) -> list[float]:
        d = d or {}
        return [float(d[r]) if r in d and d[r] is not None else missing for r in self.resources]

    def share(self, v: list[float]) -> list[float]:
        return [x / t if t > 0 else 0.0 for x, t in zip(v, self.total)]

    def ancestors(self, name: str) -> list[str]:
        """The element itself, then its parents up to the root."""
        out = []
        cur: str | None = name
        while cur is not None:
            out.append(cur)
            cur = self.elements[cur].parent
        return out


def _running_sum(vecs: list[list[float]], dim: int) -> list[float]:
    """Element-wise sum, added left to right from 0.0 (plain float additions: ``sum`` rounds
    differently from Python 3.12 on, and the result must not depend on the interpreter). Summed
    one component at a time (the same additions in the same order as vector by vector, without a
    list per vector); a vector shorter than ``dim`` truncates the sum, as adding vector by vector
    did."""
    acc = []
    for k in range(min([dim, *map(len, vecs)])):
        total = 0.0
        for v in vecs:
            total += v[k]
        acc.append(total)
    return acc

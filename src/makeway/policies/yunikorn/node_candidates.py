"""A node's candidate victims, read on demand from the node's own allocations (issue 20).

The ask-triggered node search reads the candidates of the nodes it tries, usually a few of them;
collecting every candidate of every leaf and grouping them by node cost each attempt as much as
the search. Here a node's list is read through each leaf's filter (``search.LeafScope``), and
nodes where no single candidate can make an ask fit are remembered between attempts.
"""

from __future__ import annotations

from typing import Any

from makeway.core.resources import Res
from makeway.policies.yunikorn.common import YAlloc
from makeway.policies.yunikorn.search import LeafScope
from makeway.policies.yunikorn.shortcuts import _fits_with


class NodeCandidates:
    """``node -> candidates`` as grouping ``all_candidates()`` by node gives: the leaves in snapshot
    order, each leaf's candidates in its order (start order, which is also the node's order), the
    ones being preempted left out. Read from the node's allocations, so an attempt pays only for
    the nodes it tries. Allocations' ``preempted`` flags do not change while an attempt searches,
    so a node's list is made once."""

    __slots__ = ("part", "scopes", "rank", "done", "static")

    def __init__(self, part: Any, scopes: list[LeafScope]):
        self.part, self.scopes = part, scopes
        self.rank = {s.path: i for i, s in enumerate(scopes)}
        self.done: dict[str, list[YAlloc] | None] = {}
        self.static: dict[str, list[YAlloc]] = {}

    def candidates(self, node: str) -> list[YAlloc]:
        """The node's candidates, ``preempted`` or not."""
        out = self.static.get(node)
        if out is None:
            part, rank, scopes = self.part, self.rank, self.scopes
            allocs = part.state.allocations
            buckets: list[list[YAlloc]] = [[] for _ in scopes]
            for k in part.state.node_allocs.get(node, ()):
                i = rank.get(allocs[k].queue)
                if i is not None:
                    a = part.yalloc(k)
                    if a.tracked and scopes[i].admits(a):
                        buckets[i].append(a)
            out = self.static[node] = [a for b in buckets for a in b]
        return out

    def get(self, node: str, default: list[YAlloc] | None = None) -> list[YAlloc] | None:
        done = self.done
        if node in done:
            out = done[node]
        else:
            out = done[node] = [a for a in self.candidates(node) if not a.preempted] or None
        return default if out is None else out

    def none_fits(self, node: str, free: Res, ask: Res) -> bool:
        """True when the ask does not fit ``free`` in some type the node has, and no single
        candidate of the node, preempted or not, would make it fit (``one_may_do``'s first no).
        Taking room on the node only lowers ``free`` (and what a new allocation on it adds back
        is what it took), so the answer stays true until an allocation on the node ends, the
        nodes change or the candidate filter does: ``NodeRejects`` keeps it that long."""
        if _fits_with(free, {}, ask):
            return False
        cands = self.candidates(node)
        for a in cands:
            if _fits_with(free, a.resources, ask):
                return False
        return bool(cands)


class NodeRejects:
    """Nodes where ``NodeCandidates.none_fits`` said yes, kept between attempts and calls in
    ``memo``: (node, scope) -> (the node's freed epoch, the request). The scope holds the candidate
    filter of every leaf in the search and the topology epoch. A yes for one request holds for
    any request at least as large in every type (each failing comparison only gets worse)."""

    __slots__ = ("memo", "scope", "epochs", "order")

    def __init__(self, memo: dict[tuple, tuple], state: Any, scope: tuple):
        if len(memo) > 8 * len(state.node_order) + 1024:  # verdicts of old scopes
            memo.clear()
        self.memo = memo
        self.scope = (scope, state.topology_epoch)
        self.epochs, self.order = state.node_freed_epoch, state.node_order

    def known(self, node: str, ask: Res) -> bool:
        hit = self.memo.get((node, self.scope))
        if hit is None or hit[0] != self.epochs[self.order[node]]:
            return False
        for k, v in hit[1].items():
            x = ask.get(k)
            if x is None or not x >= v:
                return False
        return True

    def note(self, node: str, cands: NodeCandidates, free: Res, ask: Res) -> None:
        if cands.none_fits(node, free, ask):
            self.memo[(node, self.scope)] = (self.epochs[self.order[node]], ask)


__all__ = ["NodeCandidates", "NodeRejects"]

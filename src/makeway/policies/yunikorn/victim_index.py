"""Nodes in name order keyed by what could make an ask fit there after preemption (issue 20).

The shortcut node search wants the first node, in name order, whose victim list reaches the ask
with one victim (index 0): no node can beat it. Walking every node for it cost an attempt
O(nodes). On a node that does not fit the ask as it is, index 0 needs the first victim of
``victims_by_node``'s second pass to fit the ask with the node's free resources alone. When every
leaf of the search is over its guarantee for the ask (and the ask path is flat), that victim is
the node's first candidate ``F`` in the node sort order, if it has a positive amount of every type
the ask asks for (then it shrinks the shortfall and heads the order; otherwise, or if the ask
queue's room refuses it, the node has no list at all). In any case it is some candidate. So a
node keyed by ``free + F`` (or ``free`` plus the per-type largest candidate where ``F`` may not
lead) can be skipped when the key does not cover the ask: ``FreeIndex`` finds the first node
whose key does. Keys only ever overstate: a start on a node lowers its free resources and adds a
candidate no larger than what it takes; the nodes where that is not so (an allocation ended, a
candidate was marked preempted) are re-keyed from a journal before the next query.

One tree per candidate scope (the leaves of the search and their filters) and set of requested
types, made when that scope is seen a second time; the search still evaluates every node the tree
yields in full, and falls back to the plain walk when no node gives index 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from makeway.core.journal import Journal
from makeway.core.node_index import FreeIndex
from makeway.core.resources import Res, sub
from makeway.policies.yunikorn.common import YAlloc
from makeway.policies.yunikorn.node_candidates import NodeCandidates
from makeway.policies.yunikorn.resources import fit_in_actual, victim_queue_over
from makeway.policies.yunikorn.shortcuts import _remaining, flat_ask_path

if TYPE_CHECKING:
    from makeway.policies.yunikorn.preemptor import Preemptor

_MAX_TREES = 16


def _first(cands: list[YAlloc]) -> YAlloc | None:
    """The head of ``_sort_node_candidates`` (``min`` keeps the first of equal keys, as a stable sort)."""
    return min(cands, key=lambda a: (not a.allow_preemption, a.originator, -a.create_us)) if cands else None


class _Tree:
    __slots__ = ("index", "pos", "types", "epoch")

    def __init__(self, index: FreeIndex, pos: int, types: frozenset, epoch: tuple):
        self.index, self.pos, self.types, self.epoch = index, pos, types, epoch


class VictimNodeIndex:
    """Kept by the model between calls: a journal of nodes whose key may have grown, and the trees."""

    __slots__ = ("log", "freed_pos", "later", "trees", "seen", "epoch")

    def __init__(self) -> None:
        self.log: Journal[str] = Journal(1 << 14)
        self.freed_pos: int | None = None
        self.later: list[str] = []  # nodes of this call's decisions, re-keyed once they are applied
        self.trees: dict[tuple, _Tree] = {}
        self.seen: dict[tuple, int] = {}
        self.epoch: tuple = ()

    def sync(self, state: Any) -> None:
        """At the start of a call: what ended since the last one, and the nodes of its decisions."""
        epoch = (state.topology_epoch, state.config_epoch, id(state))
        if epoch != self.epoch:
            self.epoch = epoch
            self.trees.clear()
            self.seen.clear()
        freed = state.freed_log.since(self.freed_pos) if self.freed_pos is not None else None
        if freed is None:
            self.trees.clear()
        else:
            for node, _ in freed:
                self.log.append(node)
        self.freed_pos = state.freed_log.position
        for n in self.later:
            self.log.append(n)
        self.later.clear()

    def decided(self, state: Any, decisions: list) -> None:
        """Nodes of starts and preemptions decided in a call, to re-key at the next one."""
        for d in decisions:
            node = getattr(d, "node", None)
            if node is None:
                a = state.allocations.get(getattr(d, "allocation", ""))
                node = a.node if a is not None else None
            if node is not None:
                self.later.append(node)

    def marked(self, nodes: list[str]) -> None:
        """Candidates on these nodes were just marked preempted: re-key them before the next query."""
        for n in nodes:
            self.log.append(n)

    def tree(self, part: Any, scope: tuple, scopes: list, ask: Res) -> _Tree | None:
        types = frozenset(k for k, v in ask.items() if v > 0)
        key = (scope, types)
        t = self.trees.get(key)
        if t is None:
            n = self.seen[key] = self.seen.get(key, 0) + 1
            if n < 2:
                return None
            if len(self.trees) >= _MAX_TREES:
                self.trees.clear()
            cands = NodeCandidates(part, scopes)
            names = part.names_in_order()
            t = self.trees[key] = _Tree(FreeIndex(part.state.resources, [_key(part, cands, n, types) for n in names]),
                                        self.log.position, types, self.epoch)
            return t
        fresh = self.log.since(t.pos)
        if fresh is None:
            del self.trees[key]
            return None
        if fresh:
            cands = NodeCandidates(part, scopes)
            order = {n: i for i, n in enumerate(part.names_in_order())}
            for n in set(fresh):
                i = order.get(n)
                if i is not None:
                    t.index.set(i, _key(part, cands, n, types))
            t.pos = self.log.position
        return t


def _key(part: Any, cands: NodeCandidates, node: str, types: frozenset) -> Res | None:
    """The node's free resources (as the state has them) plus its first candidate's, or plus the
    per-type largest candidate's when the first may not lead; None without a candidate."""
    live = [a for a in cands.candidates(node) if not a.preempted]
    head = _first(live)
    if head is None:
        return None
    st = part.state
    free = sub(st.nodes[node].capacity, st.node_used[node])
    res = head.resources or {}
    if all(res.get(k, 0) > 0 for k in types):
        extra = res
    else:
        extra = {}
        for a in live:
            for k, v in (a.resources or {}).items():
                if v > extra.get(k, 0):
                    extra[k] = v
    out = dict(free)
    for k, v in extra.items():
        out[k] = out.get(k, 0) + v
    return out


__all__ = ["VictimNodeIndex"]


def first_index0(p: "Preemptor") -> tuple[str, list[YAlloc]] | None:
    """The first node in name order whose victim list reaches the ask with one victim, and that
    list, found through the scope's tree; None when the tree does not apply or no node does (the
    plain walk then decides). Every node the tree yields is evaluated in full, but for one whose
    first candidate the ask queue's remaining guarantee refuses (``_refused_first``)."""
    part = p.part
    vi = getattr(part, "victim_index", None)
    assert p.by_node is not None
    raw = p.by_node.raw
    if vi is None or not isinstance(raw, NodeCandidates) or not flat_ask_path(p):
        return None
    ask = p.ask.resources
    resources = part.state.resources
    for k, v in ask.items():
        if v > 0 and k not in resources:
            return None
    snaps = p.search.snapshots
    for s in snaps.values():
        if s.memo is not None:
            r = _remaining(p, s)
            if not (r is None or victim_queue_over(ask, r)):
                return None  # its candidates may be passed over, so the first one need not lead
    scope = tuple((s.path, s.memo.key) for s in snaps.values() if s.memo is not None)
    t = vi.tree(part, scope, raw.scopes, ask)
    if t is None:
        return None
    names = part.names_in_order()
    index = t.index
    i: int | None = 0
    while True:
        i = index.first_fit(ask, i)
        if i is None:
            return None
        n = names[i]
        if p.node_usable(n):
            cands = p.by_node.get(n, [])
            if not _refused_first(p, cands):
                idx, lst = p.victims_by_node(p.free_of_node(n), cands)
                if lst and idx == 0:
                    return n, lst
        i += 1


def _refused_first(p: "Preemptor", candidates: list[YAlloc]) -> bool:
    """True when ``victims_by_node`` on ``candidates`` gives no list, seen at its first candidate
    (``first_index0``'s conditions hold: a flat ask path, every leaf of the search over its
    guarantee for the ask). Its first pass takes that candidate, the snapshots untouched but for
    the victim's own removal, which leaves the ask queue's remaining guarantee as found (nothing
    above it has one). If that remainder is unset or does not hold the candidate, the pass stops
    there with nothing taken: no list. The tree keys a node by its free resources and this
    candidate, so on a Philly run most nodes it yields end this way, each a full evaluation."""
    if not candidates:
        return True
    snaps = p.search.snapshots
    v = candidates[0]
    qs = snaps.get(v.queue)
    if qs is None:
        return False
    r = _remaining(p, qs)
    if not (r is None or victim_queue_over(p.ask.resources, r)):
        return False
    ar = _remaining(p, snaps[p.ask.queue])
    return ar is None or not fit_in_actual(ar, v.resources)

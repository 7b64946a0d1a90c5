"""Exact shortcuts of the ask-triggered preemptor's node search and queue-level victims (issue 20).

Each answers, from a few cheap facts, what a general stage of ``Preemptor`` would come to, so the
stage is skipped only where its result cannot matter. They are taken only with
``Partition.shortcuts`` on and no predicate oracle; the cache-equivalence tests run every decision
both ways.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from makeway.core.resources import Res, add
from makeway.policies.yunikorn.common import YAlloc
from makeway.policies.yunikorn.resources import (equals_or_empty, fit_in, fit_in_actual, fit_in_max_undef, is_empty,
                                                 strictly_greater_than_only_existing, sub_eliminate_negative,
                                                 victim_queue_over)

if TYPE_CHECKING:
    from makeway.policies.yunikorn.preemptor import Preemptor
    from makeway.policies.yunikorn.search import Snap


def flat_ask_path(p: "Preemptor") -> bool:
    """No queue above the ask queue has a guarantee: then every ancestor's remaining guarantee is
    None whatever its usage, and the ask queue's is its own remainder (victims never sit in its
    subtree, so removing them leaves it as it is)."""
    if p.flat is None:
        q = p.search.snapshots[p.ask.queue].parent
        while q is not None and is_empty(q.guaranteed):
            q = q.parent
        p.flat = q is None
    return p.flat


def _fits_with(free: Res, extra: Res, ask: Res) -> bool:
    """``fit_in_max_undef(add(free, extra), ask)`` without building the sum: the same additions
    (``free`` first, a type only in ``extra`` as 0 + its value) and the same comparisons."""
    for k, v in ask.items():
        if k in free:
            total = free[k] + extra[k] if k in extra else free[k]
        elif k in extra:
            total = 0 + extra[k]
        else:
            continue
        if not v <= max(0, total):
            return False
    return True


def _remaining(p: "Preemptor", snap: "Snap") -> Res | None:
    """A search snapshot's remaining guarantee, once per attempt: the node search reads the
    snapshots as found (every stage that moves victims works on duplicates)."""
    memo = p.remaining_memo
    if snap.path not in memo:
        memo[snap.path] = snap.remaining_guaranteed()
    return memo[snap.path]


def one_may_do(p: "Preemptor", node_id: str, candidates: list[YAlloc] | None) -> bool:
    """False when ``victims_by_node`` on this node cannot answer index 0 (or -1), so the node cannot
    beat a choice of index 1. Its index 0 is the first victim of its second pass with which the ask
    fits, accumulated from ``free``: none when no single candidate's resources added to ``free``
    fit the ask, nor when the first candidate leads that pass and does not."""
    if not candidates:
        return False
    free, ask = p.free_of_node(node_id), p.ask.resources
    if fit_in(free, ask):
        return True
    if not any(_fits_with(free, v.resources, ask) for v in candidates):
        return False
    if not flat_ask_path(p):
        return True
    # With the ask queue's remaining guarantee its own remainder, the first pass sees the first
    # candidate on the untouched snapshots: taken, and shrinking the shortfall, it heads the
    # order, and the second pass (fresh snapshots again) takes it first.
    snaps = p.search.snapshots
    assert p.by_node is not None
    first = p.by_node.get(node_id, [])[0]  # type: ignore[index]
    qs = snaps.get(first.queue)
    if qs is None:
        return True
    r = _remaining(p, qs)
    if not (r is None or victim_queue_over(ask, r)):
        return True
    ar = _remaining(p, snaps[p.ask.queue])
    if ar is None or not fit_in_actual(ar, first.resources):
        return True
    if equals_or_empty(sub_eliminate_negative(ask, free), sub_eliminate_negative(ask, add(free, first.resources))):
        return True
    return fit_in_max_undef(add(free, first.resources), ask)


def extras_irrelevant(p: "Preemptor", node_id: str, node_victims: list[YAlloc]) -> bool:
    """True when ``additional_victims`` cannot change the attempt's outcome, so its walk over every
    candidate (as long as the ask queue's guarantee has room) can be skipped. The ask must not fit
    the node as it is (so the final list keeps only victims on the node, while their total is short
    of the ask), the check must only be able to answer ok (``_extras_always_ok``), and either:

    - the node's own victims cover the ask, so the final list is a prefix of them (queue-level
      victims elsewhere are dropped, later ones on the node are not needed);
    - or every candidate on the node together does not cover it, so whichever of them the walk
      would add, the attempt ends short of resources as it does with the node's victims alone."""
    if not p.part.shortcuts or p.oracle is not None or not node_victims:
        return False
    ask = p.ask.resources
    if fit_in(p.free_of_node(node_id), ask):
        return False
    total: Res = {}
    for v in node_victims:
        total = add(total, v.resources)
    if strictly_greater_than_only_existing(ask, total) and not _node_short(p, node_id, node_victims, total):
        return False
    return _extras_always_ok(p)


def _node_short(p: "Preemptor", node_id: str, node_victims: list[YAlloc], total: Res) -> bool:
    """Whether the node's victims and every other candidate on the node, all together, are still
    short of the ask. It bounds every list the final selection could make there only where "short"
    is monotone: each candidate holds every type the ask names, in whole non-negative numbers (then
    short means at most the ask in each type and not equal to it, which a smaller sum keeps)."""
    ask = p.ask.resources
    seen = {v.key for v in node_victims}
    assert p.by_node is not None
    on_node = [a for a in p.by_node.get(node_id, []) if a.key not in seen]  # type: ignore[union-attr]
    for a in (*node_victims, *on_node):
        r = a.resources
        if any(k not in r or type(r[k]) is not int or r[k] < 0 for k in ask):
            return False
    for a in on_node:
        total = add(total, a.resources)
    return strictly_greater_than_only_existing(ask, total)


def _extras_always_ok(p: "Preemptor") -> bool:
    """Whether ``additional_victims``' check can only answer ok: no ancestor of the ask queue has a
    guarantee, so its remaining guarantee is its own remainder, None (the walk stops at its first
    victim) or, in whole numbers, never negative (a victim is only added where it fits that
    remainder, and every type starts at or above zero)."""
    if not flat_ask_path(p):
        return False
    ask = p.ask.resources
    aq = p.search.snapshots[p.ask.queue]
    if is_empty(aq.guaranteed):
        return True
    types = list(aq.guaranteed)  # type: ignore[arg-type]
    for r in (aq.guaranteed, aq.allocated or {}, aq.preempting or {}, ask):
        if any(type(r[k]) is not int for k in types if k in r):
            return False
    for s in p.search.snapshots.values():
        if s.memo is not None and s.memo.nonint().isdisjoint(types):
            continue  # no candidate of the leaf, live or not, has a non-int value of these types
        if any(not a.nonint_types().isdisjoint(types) for a in s.victims):
            return False
    before = aq.remaining_guaranteed()
    return before is None or all(v >= 0 for v in before.values())


def reversible(qs: "Snap", res: Res) -> bool:
    """Whether removing ``res`` along the queue's path and adding it back gives every snapshot the
    same numbers it had: whole numbers, and every type of ``res`` already there (a missing one
    would come back as a 0, a None usage as a dict)."""
    if any(type(x) is not int for x in res.values()):
        return False
    s: Snap | None = qs
    while s is not None:
        a = s.allocated
        if a is None or any(type(a.get(k)) is not int for k in res):
            return False
        s = s.parent
    return True


__all__ = ["extras_irrelevant", "flat_ask_path", "one_may_do", "reversible"]

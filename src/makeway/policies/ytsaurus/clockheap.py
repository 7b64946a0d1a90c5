"""Starvation clocks advanced where they can change, while the fair share stays.

An update whose inputs did not move keeps every element's status, so each clock can only move
forward: a running clock becomes starving once ``now > since + timeout`` and aggressively
starving once ``now > since + aggressive_timeout`` (``starvation.step``); an idle clock stays
idle. Stepping every element of the tree at every such update costs the backlog (thousands of
waiting operations, each with a running clock), yet only the clocks whose threshold passed can
change. ``ClockHeap`` keeps those thresholds in a heap (the earliest is ``quiet.clock_bound``)
and ``advance`` steps only the clocks whose threshold passed, giving the same view, notes and
counts as ``starvation.update_statuses`` over the whole tree.
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING

from makeway.policies.ytsaurus import starvation
from makeway.policies.ytsaurus.starvation import AGGRESSIVE, NON, STARVING, Clock, Params, StarvationView
from makeway.policies.ytsaurus.tree import ROOT, Tree

if TYPE_CHECKING:
    from collections.abc import Mapping

_TIMEOUT, _AGGRESSIVE = 0, 1


class ClockHeap:
    """The thresholds of one snapshot's running clocks: (time, kind, name), kind 0 the starvation
    timeout (live while the clock is not starving), kind 1 the aggressive one (live while the clock
    is not aggressively starving). Entries a step made dead are dropped when they reach the top."""

    __slots__ = ("tree", "heap", "order")

    def __init__(self, tree: Tree, clocks: Mapping[str, Clock], params: Mapping[str, Params]) -> None:
        self.tree = tree
        self.order: dict[str, int] | None = None
        heap: list[tuple[float, int, str]] | None = []
        for name, c in clocks.items():
            if c.since is None:
                continue
            p = params.get(name)
            if p is None:
                heap = None  # ``clock_bound`` is -inf: never quiet, never advanced here
                break
            if c.status == NON:
                heap.append((c.since + p.timeout, _TIMEOUT, name))
            if p.aggressive_enabled and c.status != AGGRESSIVE:
                heap.append((c.since + p.aggressive_timeout, _AGGRESSIVE, name))
        if heap is not None:
            heapq.heapify(heap)
        self.heap = heap

    def bound(self, clocks: Mapping[str, Clock]) -> float:
        """``quiet.clock_bound`` of these clocks: the earliest live threshold."""
        heap = self.heap
        if heap is None:
            return -math.inf
        while heap and not _live(heap[0], clocks):
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def advance(self, view: StarvationView, params: Mapping[str, Params],
                now: float) -> tuple[StarvationView, list[str]] | None:
        """The view ``update_statuses`` gives at ``now`` with the statuses of ``view`` (the fair
        share did not move since ``view`` was made from it), and the names of the clocks that
        changed in tree order; None where a pool's clock would move (its subtree's starving
        ancestors change: the caller walks the tree)."""
        heap = self.heap
        if heap is None:
            return None
        clocks = view.clocks
        due: set[str] = set()
        while heap and heap[0][0] < now:
            entry = heapq.heappop(heap)
            if _live(entry, clocks):
                due.add(entry[2])
        if not due:
            return view, []
        elements = self.tree.elements
        if any(not elements[n].is_op for n in due):
            return None  # the caller walks the tree and builds a new heap
        new = StarvationView(view.status, dict(clocks), dict(view.lowest_starving), dict(view.lowest_aggressive))
        status = view.status
        changed = []
        for name in due:
            old = clocks[name]
            c = starvation.step(old, status[name] == "below_fair_share", now, params[name])
            new.clocks[name] = c
            if c.status != old.status:
                changed.append(name)
            parent = elements[name].parent
            inherit = parent is not None and parent != ROOT
            st = c.status
            new.lowest_starving[name] = name if st == STARVING or st == AGGRESSIVE else (
                new.lowest_starving.get(parent) if inherit else None)
            new.lowest_aggressive[name] = name if st == AGGRESSIVE else (
                new.lowest_aggressive.get(parent) if inherit else None)
        if self.order is None:
            self.order = {n: i for i, n in enumerate(elements)}
        order = self.order
        changed.sort(key=order.__getitem__)
        return new, changed


def _live(entry: tuple[float, int, str], clocks: Mapping[str, Clock]) -> bool:
    c = clocks.get(entry[2])
    if c is None or c.since is None:
        return False
    return c.status == NON if entry[1] == _TIMEOUT else c.status != AGGRESSIVE


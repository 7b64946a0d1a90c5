"""Asks the fast pass may skip, and the workloads it must walk (issue 20).

An ask is *blocked* when the walk found it could neither be placed nor try to preempt before a
time (``due``; -1 for never) and nothing it reads has moved since. The walk visits only workloads
with an unblocked task (``candidates``).

Releasing a blocked ask is always safe: walking an ask that still cannot be placed and is not due
blocks it again with the same timer, and changes nothing else. Keeping one blocked is safe only
when it provably cannot be placed when the walk would reach it. Blocked asks are therefore kept
per (queue, request) key in pending order, and when room may have appeared for a key they are
released as a *stream*: the first one in walk order, then the next only after the one before was
placed. Within one call placing only takes room, so once an ask of a key is not placed, none after
it in the walk can be (until a reservation goes mid-walk, which re-opens the keys it helps).

Parked asks (``PARKED``) are streamed per leaf at every call in the same way: the first in walk
order, then the next only while the leaf still has attempts left after the one before. Once a
leaf's budget is spent, the asks after that point could only find it spent.

Asks refused by their queue's guarantee in one call are blocked as one *cohort*: they share one
timer (15 s on) and keep the world the call started from (``_fit_world``). When that timer comes
with nothing else to walk, each is refused again without the walk if its refusal is known (the
world still that one) or asked and found so (``cohorts.repeat_refusals``); otherwise the
cohort's asks are released like any other timer.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right, insort
from typing import Any

# a workload's place in the walk, as ``placement.pending_order`` sorts: (-priority, submit, id)
WalkKey = tuple[float, float, str]

# the timer of a *parked* ask: due to try preemption, but its leaf had no attempt left when the walk
# reached it; it can do nothing else until its leaf gets a fresh budget (every call)
PARKED = -2


class Cohort:
    """Asks refused together (see the module doc): their common timer, the world of the call that
    refused them, and their ids (some may since have been released: ``Blocks.live``); ``leaves``:
    what ``cohorts.own_turns`` reads of the ids, kept with the list it was made from."""

    __slots__ = ("due", "world", "tids", "leaves")

    def __init__(self, due: int, world: tuple, tids: list[str]):
        self.due = due
        self.world = world
        self.tids = tids
        self.leaves: tuple | None = None


def walk_key(wl: Any) -> WalkKey:
    return (-wl.priority, wl.submit, wl.id)


class Blocks:
    """Blocked asks with their timers and keys, and the walk's candidate workloads."""

    def __init__(self) -> None:
        self.blocked: dict[str, int] = {}  # task -> due (µs) or -1
        self.count: dict[str, int] = {}  # workload -> blocked tasks
        self.key_of: dict[str, tuple] = {}  # blocked task -> (queue, request items)
        self.heap_fresh: list[tuple[int, str]] = []  # timers of asks never checked
        self.heap_checked: list[tuple[int, str]] = []  # timers of asks that made an attempt
        # per key, the walk keys of workloads that had a task blocked under it (some may be stale)
        self.by_key: dict[tuple, list[WalkKey]] = {}
        self.in_key: dict[tuple, set[str]] = {}
        self.kcount: dict[tuple, int] = {}  # key -> asks blocked under it
        self.entries = 0  # entries in every ``by_key`` list
        self.kept = 0  # ``entries`` after the last compaction
        # per leaf, the walk keys of workloads that had a task parked (some may be stale)
        self.by_leaf: dict[str, list[WalkKey]] = {}
        self.in_leaf: dict[str, set[str]] = {}
        self.nparked = 0
        # keys whose blocked asks must be streamed at the next call (a reservation went mid-walk)
        self.restream: set[tuple] = set()
        # a superset of the pending workloads with a task not blocked, kept from the state's
        # pending journal, the released asks and ``open_all`` (blocks cleared)
        self.open: dict[str, None] = {}
        self.open_all = True
        self.open_pos = 0
        self.open_state: Any = None
        self.cohorts: list[tuple[int, int, Cohort]] = []  # heap by timer
        self._cseq = 0

    def clear(self) -> None:
        self.open_all = True
        for d in (self.blocked, self.count, self.key_of, self.by_key, self.in_key, self.kcount, self.by_leaf,
                  self.in_leaf):
            d.clear()
        self.entries = self.kept = self.nparked = 0
        self.restream.clear()
        self.heap_fresh.clear()
        self.heap_checked.clear()
        self.cohorts.clear()

    def block(self, tid: str, wl: Any, due: int | None, checked: bool, key: tuple, timer: bool = True) -> None:
        """Block an ask until ``due`` (None: never; ``PARKED``: see the module doc). Without a
        ``timer`` the caller puts it in a cohort (``add_cohort``), which holds the timer."""
        if tid in self.blocked:
            return
        self.blocked[tid] = -1 if due is None else due
        if due == PARKED:
            self.park(tid, wl)
            due = None
        self.count[wl.id] = self.count.get(wl.id, 0) + 1
        self.key_of[tid] = key
        self.kcount[key] = self.kcount.get(key, 0) + 1
        members = self.in_key.get(key)
        if members is None:
            members = self.in_key[key] = set()
            self.by_key[key] = []
        if wl.id not in members:
            members.add(wl.id)
            insort(self.by_key[key], walk_key(wl))
            self.entries += 1
        if due is not None and timer:
            heapq.heappush(self.heap_checked if checked else self.heap_fresh, (due, tid))

    def add_cohort(self, due: int, world: tuple, tids: list[str]) -> None:
        self.push_cohort(Cohort(due, world, tids))

    def push_cohort(self, cohort: Cohort) -> None:
        self._cseq += 1
        heapq.heappush(self.cohorts, (cohort.due, self._cseq, cohort))

    def live(self, cohort: Cohort) -> list[str]:
        """The cohort's asks still blocked on its timer."""
        blocked, due = self.blocked, cohort.due
        return [t for t in cohort.tids if blocked.get(t) == due]

    def cohort_top(self) -> Cohort | None:
        """The cohort with the earliest timer that still holds an ask (dead ones dropped)."""
        heap, blocked = self.cohorts, self.blocked
        while heap:
            c = heap[0][2]
            due = c.due
            for t in c.tids:
                if blocked.get(t) == due:
                    return c
            heapq.heappop(heap)
        return None

    def cohorts_before(self, limit: float) -> list[tuple[int, int, Cohort]]:
        """The heap's entries whose timer (in seconds) is before ``limit``, in order; the heap is
        read from its top down, so the cost follows how many there are."""
        heap, out, stack = self.cohorts, [], [0]
        n = len(heap)
        while stack:
            i = stack.pop()
            if i < n and heap[i][0] / 1_000_000 < limit:
                out.append(heap[i])
                stack.append(2 * i + 1)
                stack.append(2 * i + 2)
        out.sort()
        return out

    def park(self, tid: str, wl: Any) -> None:
        """Park a blocked ask (``block``, or a cohort's whose leaf had no attempt left for it)."""
        self.blocked[tid] = PARKED
        self.nparked += 1
        members = self.in_leaf.setdefault(wl.queue, set())
        if wl.id not in members:
            members.add(wl.id)
            insort(self.by_leaf.setdefault(wl.queue, []), walk_key(wl))
            self.entries += 1

    def next_cohort_due(self) -> float:
        """No later than the timer of any cohort but the top one (dead ones included)."""
        heap = self.cohorts
        n = len(heap)
        if n > 2:
            return min(heap[1][0], heap[2][0])
        return heap[1][0] if n == 2 else float("inf")

    def release(self, tid: str) -> None:
        due = self.blocked.pop(tid, None)
        if due is not None:
            if due == PARKED:
                self.nparked -= 1
            wl = tid.rsplit("/", 2)[0]
            self.count[wl] -= 1
            self.open[wl] = None
            self.kcount[self.key_of.pop(tid)] -= 1

    def keys(self) -> list[tuple]:
        """The keys with an ask blocked under them, in a fixed order."""
        return sorted(k for k, c in self.kcount.items() if c > 0)

    def valid(self, heap: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """The heap with stale entries dropped from its top (its minimum is then a blocked ask's)."""
        blocked = self.blocked
        while heap and blocked.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap

    def release_due(self, now_us: int) -> None:
        for heap in (self.heap_fresh, self.heap_checked):
            while heap and heap[0][0] <= now_us:
                due, tid = heapq.heappop(heap)
                if self.blocked.get(tid) == due:
                    self.release(tid)
        cohorts = self.cohorts
        while cohorts and cohorts[0][0] <= now_us:
            for tid in self.live(heapq.heappop(cohorts)[2]):
                self.release(tid)

    def release_key(self, state: Any, wl_id: str, key: tuple) -> bool:
        """Release the tasks of a workload blocked under ``key``; whether there were any."""
        key_of, found = self.key_of, False
        for tid in list(state.pending.get(wl_id, ())):
            if key_of.get(tid) == key:
                self.release(tid)
                found = True
        return found

    def stream_next(self, state: Any, key: tuple, after: WalkKey | None) -> str | None:
        """Release the first workload after ``after`` (from the start: None) with tasks blocked
        under ``key``, and return it; entries passed over are dropped."""
        lst = self.by_key.get(key)
        if not lst:
            return None
        members = self.in_key[key]
        i = 0 if after is None else bisect_right(lst, after)
        while i < len(lst):
            wk = lst[i]
            del lst[i]
            self.entries -= 1
            members.discard(wk[2])
            if self.release_key(state, wk[2], key):
                return wk[2]
        return None

    def stream_parked(self, state: Any, leaf: str, after: WalkKey | None) -> str | None:
        """``stream_next`` for the asks parked in a leaf."""
        lst = self.by_leaf.get(leaf)
        if not lst:
            return None
        members, blocked = self.in_leaf[leaf], self.blocked
        i = 0 if after is None else bisect_right(lst, after)
        while i < len(lst):
            wk = lst[i]
            del lst[i]
            self.entries -= 1
            members.discard(wk[2])
            found = False
            for tid in list(state.pending.get(wk[2], ())):
                if blocked.get(tid) == PARKED:
                    self.release(tid)
                    found = True
            if found:
                return wk[2]
        return None

    def parked_leaves(self) -> list[str]:
        return sorted(q for q, lst in self.by_leaf.items() if lst) if self.nparked else []

    def compact(self, state: Any) -> None:
        """Drop entries of workloads with nothing blocked under their key, once the lists have
        doubled since the last compaction (amortised: entries go stale as asks are released)."""
        if self.entries <= 2 * self.kept + 256:
            return
        key_of, pending = self.key_of, state.pending
        for key, lst in self.by_key.items():
            keep = [wk for wk in lst if any(key_of.get(t) == key for t in pending.get(wk[2], ()))]
            self.by_key[key] = keep
            self.in_key[key] = {wk[2] for wk in keep}
        blocked = self.blocked
        for leaf, lst in self.by_leaf.items():
            keep = [wk for wk in lst if any(blocked.get(t) == PARKED for t in pending.get(wk[2], ()))]
            self.by_leaf[leaf] = keep
            self.in_leaf[leaf] = {wk[2] for wk in keep}
        self.entries = self.kept = (sum(len(lst) for lst in self.by_key.values())
                                    + sum(len(lst) for lst in self.by_leaf.values()))

    def candidates(self, state: Any) -> list[str]:
        """The pending workloads with a task that is not blocked (what the walk visits), found from
        ``open`` instead of a scan of every pending workload; ``open`` is trimmed to them."""
        log = state.pending_log
        if not self.open and self.open_state is state and self.open_pos == log.position and not self.open_all:
            return []  # nothing released and nothing pending changed since the last call
        new = None if self.open_state is not state else log.since(self.open_pos)
        self.open_state, self.open_pos = state, log.position
        if new is None or self.open_all:
            self.open_all = False
            self.open = dict.fromkeys(state.pending)
        else:
            self.open.update(dict.fromkeys(new))
        pending, count = state.pending, self.count
        out = [w for w in self.open if w in pending and count.get(w, 0) < len(pending[w])]
        self.open = dict.fromkeys(out)
        return out


__all__ = ["Blocks", "Cohort", "PARKED", "WalkKey", "walk_key"]

"""``ReasonLog`` on the fast core's lists: the same trail of pending reasons, read from its arrays.

Under the first-fit model without queue maxes the live rules reduce to ``fits-nowhere``, ``gang``,
``priority`` and ``resources``; the grid of rounds, the first reasons of fresh submissions and the
positions are ``makeway.sim.pending.ReasonLog``'s, step for step, so the trails are the same.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Any, Iterator, Mapping

from makeway.core.pending import FITS_NOWHERE, GANG, PRIORITY, RESOURCES
from makeway.core.resources import EPS
from makeway.sim.pending import ReasonLog, RoundClock


def _add(x: Any, v: Any) -> Any:
    y = x + v
    return round(y, 9) if type(y) is float else y


class IndexedReasons:
    """What ``ReasonLog``'s versions on index lists share: the grid of rounds, the first reasons
    of the workloads fresh at an instant (submitted, or preempted for) with their positions, and
    the trails. A subclass classifies (``_classify``) and runs the rounds (``_round``); ``sim``
    has ``q_names``, ``w_q`` and ``w_id``."""

    ROUNDS_PER_DOUBLING = ReasonLog.ROUNDS_PER_DOUBLING
    HEAD = ReasonLog.HEAD

    def __init__(self, sim: Any):
        self.sim = sim
        self.clock = RoundClock()
        self.trail: dict[int, list[tuple[float, str, str | None]]] = {}
        self._current: dict[int, tuple[str, str | None]] = {}
        self.fresh: list[int] = []
        self.pending: dict[int, None] = {}
        self._waiting: dict[str, int] = {}  # queue name -> its pending workloads, as last counted
        self._stale: set[int] = set()  # pending ones whose reason may not be the one behind the head
        self._back: set[int] = set()  # pending again (submitted or requeued) since the last round

    def observe(self, now: float) -> None:
        self._stale.update(self.fresh)
        if now >= self.clock.next:
            self._round(now)
            self.clock.tick(now, self.ROUNDS_PER_DOUBLING)
        elif self.fresh:
            self._first_reasons(now)
        self.fresh.clear()

    def _round(self, now: float) -> None:
        raise NotImplementedError

    def _classify(self, w: int, position: int, ask_model: bool) -> tuple[str, str | None]:
        raise NotImplementedError

    def _heads_round(self, now: float, also: Any) -> None:
        """``ReasonLog._changed_round``: each queue's first ``HEAD`` in the model's order asked as
        heads; behind them only what may have moved is classified again: pending again since the
        last round (``_back``), a head or a first reason since (``_stale``), and ``also``."""
        pending, head, names = self.pending, self.HEAD, self.sim.q_names
        stale = self._stale
        stale.update(w for w in self._back if w in pending)
        self._back = set()
        stale.update(also)
        heads: set[int] = set()
        waiting: dict[str, int] = {}
        for name, q in sorted((names[q], q) for q, lst in self.keys.items() if lst):
            order = self.keys[q]
            waiting[name] = len(order)
            for i, key in enumerate(order[:head], 1):
                w = key[-1]
                heads.add(w)
                self._set(w, now, self._classify(w, i, True))
        for w in stale:
            if w in pending and w not in heads:
                self._set(w, now, self._classify(w, head + 1, False))
        stale.clear()
        stale.update(heads)
        self._waiting = waiting

    def _set(self, w: int, now: float, key: tuple[str, str | None]) -> None:
        if self._current.get(w) == key:
            return
        self._current[w] = key
        trail = self.trail.setdefault(w, [])
        if trail and trail[-1][0] == now:
            trail[-1] = (now, *key)
        else:
            trail.append((now, *key))

    def _free_fit(self, shape: Any, first_only: bool) -> bool:
        """``makeway.core.pending._free_fit`` on the arrays (``sim.used`` and ``sim.cap`` per
        resource and node): every task (or the first) fits now, first fit in node order."""
        sim = self.sim
        used, cap, n = sim.used, sim.cap, sim.N
        extra: dict[int, list] = {}
        for count, pairs, vec in shape.groups:
            if count <= 0:
                continue
            pos = [(r, v) for r, v in enumerate(vec) if v > 0]
            left, i = (1 if first_only else count), 0
            while left:
                while i < n:
                    ex = extra.get(i)
                    if ex is None:
                        if all(used[r][i] + v <= cap[r][i] + EPS for r, v in pos):
                            break
                    elif all(used[r][i] + ex[r] + v <= cap[r][i] + EPS for r, v in pos):
                        break
                    i += 1
                else:
                    return False
                ex = extra.get(i)
                if ex is None:
                    ex = extra[i] = [0] * len(used)
                for r, v in pairs:
                    ex[r] = _add(ex[r], v)
                left -= 1
            if first_only:
                return True
        return True

    def _first_reasons(self, now: float) -> None:
        sim = self.sim
        pending = self.pending
        names = sim.q_names
        done: set[int] = set()
        for w in self.fresh:
            if w not in pending or w in done:
                continue
            done.add(w)
            q = names[sim.w_q[w]]
            if w in self._current:
                position = 2 if self._waiting.get(q, 0) > 1 else 1
            else:
                position = self._waiting.get(q, 0) + 1
                self._waiting[q] = position
            self._set(w, now, self._classify(w, position, True))

    def rows(self) -> "_Trails":
        """The trails by workload id, each made JSON-ready when it is read (rows are written one by
        one: a second copy of every trail never exists)."""
        ids = self.sim.w_id
        return _Trails({ids[w]: trail for w, trail in self.trail.items()})


class FastReasons(IndexedReasons):
    def __init__(self, sim: Any):
        super().__init__(sim)
        # per queue index: its pending workloads as a heap of (order key, index), started ones
        # left in until they reach the top or the heap is rebuilt, and how many are still pending
        self.heaps: dict[int, list[tuple[tuple, int]]] = {}
        self.live: dict[int, int] = {}
        # per queue index: its first ``HEAD`` as last read off its heap, kept till a submission
        # lands among them or one of them starts (``dirty``)
        self._tops: dict[int, list[int]] = {}
        self.in_tops: set[int] = set()
        self.dirty: set[int] = set()

    def submitted(self, w: int) -> None:
        self.pending[w] = None
        self.fresh.append(w)
        sim = self.sim
        q = sim.w_q[w]
        heap = self.heaps.get(q)
        if heap is None:
            heap = self.heaps[q] = []
            self.live[q] = 0
        key = sim.w_key[w]
        heappush(heap, (key, w))
        self.live[q] += 1
        tops = self._tops.get(q)
        if tops is None or len(tops) < self.HEAD or key < sim.w_key[tops[-1]]:
            self.dirty.add(q)

    def started(self, w: int) -> None:
        del self.pending[w]
        self._current.pop(w, None)
        q = self.sim.w_q[w]
        self.live[q] -= 1
        if w in self.in_tops:
            self.dirty.add(q)

    def _classify(self, w: int, position: int, ask_model: bool) -> tuple[str, str | None]:
        sim = self.sim
        shape = sim.w_shape[w]
        if shape.nowhere:
            return FITS_NOWHERE, None
        if ask_model and sim.w_tasks[w] > 1 and self._gang(shape):
            return GANG, None
        if position > 1:
            return PRIORITY, None
        return RESOURCES, None

    def _gang(self, shape: Any) -> bool:
        """The generic ``gang`` rule: its tasks together do not fit now, though the first would.

        With integer quantities the sums are exact: less free in all than the gang asks settles
        the first half without a scan, and the free-capacity trees answer the second.
        """
        sim = self.sim
        if not sim.ints:
            return not self._free_fit(shape, False) and self._free_fit(shape, True)
        used = sim.recorder._used
        if all(sim.cap_total[r] - used[r] >= v for r, v in shape.total) and self._free_fit(shape, False):
            return False
        return sim._descend(shape.need) is not None

    def _round(self, now: float) -> None:
        """Each queue's first ``HEAD`` pending workloads (in the model's order) are classified;
        behind them the reason is "behind others" (or fits nowhere), which only a workload that
        was a head, or got a first reason, since the last round can lack: only those are looked
        at, so a round costs the heads and what changed, not the backlog."""
        sim = self.sim
        names, shapes, pending = sim.q_names, sim.w_shape, self.pending
        head, current, live = self.HEAD, self._current, self.live
        behind, nowhere = (PRIORITY, None), (FITS_NOWHERE, None)
        stale = self._stale
        waiting: dict[str, int] = {}
        tops, dirty, in_tops = self._tops, self.dirty, self.in_tops
        for name, q in sorted((names[q], q) for q, n in live.items() if n > 0):
            order = tops.get(q)
            if order is None or q in dirty:
                if order:
                    in_tops.difference_update(order)
                order = tops[q] = self._first(q, head)
                in_tops.update(order)
                dirty.discard(q)
            for i, w in enumerate(order, 1):
                self._set(w, now, self._classify(w, i, True))
            waiting[name] = live[q]
        # ``in_tops``: every queue's heads, and started workloads of queues with none pending
        for w in stale:
            if w in pending and w not in in_tops:
                key = nowhere if shapes[w].nowhere else behind
                if current.get(w) != key:
                    self._set(w, now, key)
        stale.clear()
        stale.update(in_tops)  # their reason is a head's: next round, behind the head, it may not be
        # (``started`` drops a workload from ``_current``, so it holds only pending ones)
        self._waiting = waiting

    def _first(self, q: int, k: int) -> list[int]:
        """The queue's first ``k`` pending workloads in order; started ones are dropped from the
        top of its heap on the way, and the heap is rebuilt when they are most of it."""
        heap, pending = self.heaps[q], self.pending
        if len(heap) > 2 * self.live[q] + 64:
            heap[:] = [e for e in heap if e[1] in pending]
            heapify(heap)
        taken = []
        while heap and len(taken) < k:
            e = heappop(heap)
            if e[1] in pending:
                taken.append(e)
        for e in taken:
            heappush(heap, e)
        return [e[1] for e in taken]


class _Trails(Mapping):
    def __init__(self, by_id: dict[str, list]):
        self._by_id = by_id

    def __getitem__(self, key: str) -> list[list[Any]]:
        return [[t, code, blocking] for t, code, blocking in self._by_id[key]]

    def __contains__(self, key: object) -> bool:
        return key in self._by_id

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

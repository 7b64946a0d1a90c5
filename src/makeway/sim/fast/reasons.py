"""``ReasonLog`` on the fast core's lists: the same trail of pending reasons, read from its arrays.

Under the first-fit model without queue maxes the live rules reduce to ``fits-nowhere``, ``gang``,
``priority`` and ``resources``; the grid of rounds, the first reasons of fresh submissions and the
positions are ``makeway.sim.pending.ReasonLog``'s, step for step, so the trails are the same.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from makeway.core.pending import FITS_NOWHERE, GANG, PRIORITY, RESOURCES
from makeway.core.resources import EPS
from makeway.sim.pending import ReasonLog, RoundClock


def _add(x: Any, v: Any) -> Any:
    y = x + v
    return round(y, 9) if type(y) is float else y


class FastReasons:
    ROUNDS_PER_DOUBLING = ReasonLog.ROUNDS_PER_DOUBLING
    HEAD = ReasonLog.HEAD

    def __init__(self, sim: Any):
        self.sim = sim
        self.clock = RoundClock()
        self.trail: dict[int, list[tuple[float, str, str | None]]] = {}
        self._current: dict[int, tuple[str, str | None]] = {}
        self.fresh: list[int] = []
        self.pending: dict[int, None] = {}
        self._waiting: dict[str, int] = {}

    def started(self, w: int) -> None:
        del self.pending[w]
        self._current.pop(w, None)

    def observe(self, now: float) -> None:
        if now >= self.clock.next:
            self._round(now)
            self.clock.tick(now, self.ROUNDS_PER_DOUBLING)
        elif self.fresh:
            self._first_reasons(now)
        self.fresh.clear()

    def _set(self, w: int, now: float, key: tuple[str, str | None]) -> None:
        if self._current.get(w) == key:
            return
        self._current[w] = key
        trail = self.trail.setdefault(w, [])
        if trail and trail[-1][0] == now:
            trail[-1] = (now, *key)
        else:
            trail.append((now, *key))

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

    def _free_fit(self, shape: Any, first_only: bool) -> bool:
        """``makeway.core.pending._free_fit`` on the arrays: every task (or the first) fits now."""
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

    def _round(self, now: float) -> None:
        sim = self.sim
        names, w_q, w_key = sim.q_names, sim.w_q, sim.w_key
        by_queue: dict[str, list[int]] = {}
        for w in self.pending:
            by_queue.setdefault(names[w_q[w]], []).append(w)
        head = self.HEAD
        current, shapes = self._current, sim.w_shape
        behind, nowhere = (PRIORITY, None), (FITS_NOWHERE, None)
        for queue in sorted(by_queue):
            order = sorted(by_queue[queue], key=w_key.__getitem__)
            for i, w in enumerate(order[:head], 1):
                self._set(w, now, self._classify(w, i, True))
            # past the head the model is not asked: the generic rules say "behind others" (or fits
            # nowhere), so only a change of that is written
            for w in order[head:]:
                key = nowhere if shapes[w].nowhere else behind
                if current.get(w) != key:
                    self._set(w, now, key)
        # (``started`` drops a workload from ``_current``, so it holds only pending ones)
        self._waiting = {q: len(ws) for q, ws in by_queue.items()}

    def rows(self) -> "_Trails":
        """The trails by workload id, each made JSON-ready when it is read (rows are written one by
        one: a second copy of every trail never exists)."""
        ids = self.sim.w_id
        return _Trails({ids[w]: trail for w, trail in self.trail.items()})


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

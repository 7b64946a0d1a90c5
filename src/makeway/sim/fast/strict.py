"""Strict FIFO (``fifo-strict``) on the fast core: one batch queue in submit order, no overtaking.

A pass starts workloads from the head of the queue (submit time, then id, every queue together)
while they fit, first fit in node order; the first that does not fit stops it. A workload whose
gang does not fit even the empty cluster is reported once (the model's ``unschedulable`` note) and
passed over for good, as ``StrictFifo`` does. A blocked head is tried again only after a release,
or when a submission lands ahead of it. Pending reasons follow ``StrictFifo.pending_reason``: a
workload with others submitted before it waits behind them (``priority``).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from typing import Any, Iterable

from makeway.core.decisions import Note
from makeway.core.objects import Workload
from makeway.core.pending import FITS_NOWHERE, GANG, PRIORITY, RESOURCES
from makeway.core.resources import EPS
from makeway.sim.fast.core import FastSimulation, _Shape
from makeway.sim.fast.reasons import FastReasons, _add


class FastStrictFifo(FastSimulation):
    strict = True

    def __init__(self, state: Any, model: Any, options: Any):
        super().__init__(state, model, options)
        self.fifo: list[tuple] = []          # (submit, id, index) of queued workloads
        self.blocked: tuple | None = None    # (head key, releases) when the head last failed
        self._empty: dict[int, bool] = {}
        self.recorder.reasons = _StrictReasons(self)

    def _enqueue(self, wl: Workload, w: int, shape: _Shape) -> None:
        key = (wl.submit, wl.id, w)
        self.w_key.append(key)
        heapq.heappush(self.fifo, key)
        keys = self.recorder.reasons.keys
        if not keys or key > keys[-1]:
            keys.append(key)
        else:
            insort(keys, key)

    def _pass(self, now: float, released: bool, new_shapes: Iterable[_Shape]) -> None:
        fifo = self.fifo
        if not fifo or (not released and self.blocked == (fifo[0], self.releases)):
            return
        w_shape = self.w_shape
        while fifo:
            key = fifo[0]
            w = key[2]
            shape = w_shape[w]
            if not self._fits_empty(shape):
                heapq.heappop(fifo)
                wl = self.state.workloads[key[1]]
                self.recorder.note(Note("unschedulable", wl.id, "does not fit the cluster even when it is empty",
                                        {"need": wl.total()}), now)
                continue
            placed = self._place(shape)
            if placed is None:
                self.blocked = (key, self.releases)
                return
            heapq.heappop(fifo)
            if shape.single:
                self._start_single(w, shape, placed[0][1], now)
            else:
                self._start(w, placed, now)
        self.blocked = None

    def _fits_empty(self, shape: _Shape) -> bool:
        """``policies.hpc.model.groups_fit`` on the empty cluster (cached per shape)."""
        hit = self._empty.get(id(shape))
        if hit is None:
            hit = self._empty[id(shape)] = not shape.nowhere and self._groups_fit_empty(shape)
        return hit

    def _groups_fit_empty(self, shape: _Shape) -> bool:
        cap, n = self.cap, self.N
        groups = [(vec, pairs, count) for count, pairs, vec in shape.groups if count > 0]
        taken: dict[int, list] = {}
        last = len(groups) - 1
        for g, (vec, pairs, count) in enumerate(groups):
            wanted = [(r, v) for r, v in enumerate(vec) if v > 0]
            left = count
            for i in range(n):
                mine = taken.get(i)
                k = math.inf
                for r, v in wanted:
                    free = cap[r][i] - (mine[r] if mine else 0)
                    if free + EPS < v:
                        k = 0
                        break
                    k = min(k, math.floor((free + EPS) / v))
                if k <= 0:
                    continue
                m = left if k == math.inf else min(left, int(k))
                if g < last:
                    acc = taken.setdefault(i, [0] * len(cap))
                    for r, v in pairs:
                        acc[r] = _add(acc[r], v * m)
                left -= m
                if left == 0:
                    break
            if left:
                return False
        return True


class _StrictReasons(FastReasons):
    """``StrictFifo.pending_reason`` before the generic rules: how many wait ahead, all queues."""

    def __init__(self, sim: Any):
        super().__init__(sim)
        self.keys: list[tuple] = []   # (submit, id, index) of every pending workload, sorted

    def started(self, w: int) -> None:
        super().started(w)
        keys = self.keys
        key = self.sim.w_key[w]
        del keys[bisect_left(keys, key)]

    def _classify(self, w: int, position: int, ask_model: bool) -> tuple[str, str | None]:
        sim = self.sim
        shape = sim.w_shape[w]
        if shape.nowhere:
            return FITS_NOWHERE, None
        if ask_model:
            if bisect_left(self.keys, sim.w_key[w]):
                return PRIORITY, None
            if sim.w_tasks[w] > 1 and not self._free_fit(shape, False) and self._free_fit(shape, True):
                return GANG, None
        if position > 1:
            return PRIORITY, None
        return RESOURCES, None

"""Periodic times skipped over a quiet stretch, in closed form (the simulator's idle skip).

A tick or heartbeat row is re-pushed as ``t = t + period`` again and again, so its times are a
chain of float additions, not ``t0 + k * period``. Inside one binade [2**e, 2**(e+1)) every float is
a multiple of the same unit u, and adding ``period`` rounds it to the same multiple of u each
time (unless ``period / u`` sits exactly half-way between two integers, where the rounding follows
the parity of t: detected, and stepped one addition at a time). So k additions are one
multiplication there, exactly, and a row crosses few binades in any run: skipping n periodic
times costs O(binades), not O(n), and gives the very floats the unskipped run computes.

``Skipped`` describes one skipped stretch to the model (``PreemptionModel.skip_periodic``): each
row's first skipped time, period and count, with exact look-ups (the i-th time, the times in a
window) so a model derives what it needs without the stretch being materialised.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

_HALF_MANTISSA = 2.0 ** 53
_NEAR = 4  # periods before ``end`` within which ``advance`` adds one period at a time


def _jump(t: float, period: float, end: float) -> tuple[int, float]:
    """(k, d): k >= 2 additions of ``period`` from ``t`` that each add exactly ``d`` and stay well
    before ``end``; (0, 0.0) when no safe jump exists (then the caller adds once)."""
    if not t > 0.0 or not math.isfinite(t) or not period > 0.0:
        return 0, 0.0
    u = math.ldexp(1.0, math.frexp(t)[1] - 53)   # the spacing of floats in t's binade
    top = u * _HALF_MANTISSA                      # the binade's end, 2**(e+1)
    d = (t + period) - t
    t2 = t + u
    if t2 >= top or (t2 + period) - t2 != d or not d > 0.0:
        return 0, 0.0  # a tie in the rounding (or the binade's last float): no constant step
    # each jumped addition must start at a t' with t' + period <= top - 2u (its sum stays inside)
    room = math.floor((top - 2 * u - period - t) / d) - 1
    k = room if end == math.inf else min(room, math.floor((end - t) / d) - 2)  # the last few: one by one
    return (k, d) if k >= 2 else (0, 0.0)


def advance(t: float, period: float, end: float, inclusive: bool = False,
            limit: int | None = None) -> tuple[int, float | None, float]:
    """The times t, t + period, ... (repeated float additions) before ``end`` (up to and
    including it when ``inclusive``), at most ``limit`` of them: (how many, the last of them or
    None, the first time not taken)."""
    count, last = 0, None
    near = end - _NEAR * period  # from here on a jump would save next to nothing
    while (t <= end if inclusive else t < end) and (limit is None or count < limit):
        if t >= near:  # the last few additions, one by one (what a jump stands for, exactly)
            last = t
            t = t + period
            count += 1
            continue
        k, d = _jump(t, period, end)
        if limit is not None:
            k = min(k, limit - count)
        if k >= 2:
            last = t + (k - 1) * d
            t = t + k * d
            count += k
        else:
            last = t
            t = t + period
            count += 1
    return count, last, t


def nth(t: float, period: float, i: int) -> float:
    """The i-th time of the row starting at ``t`` (0: ``t`` itself)."""
    return advance(t, period, math.inf, limit=i)[2]


@dataclass(slots=True)
class Row:
    """One periodic event row over a skipped stretch: its first skipped time, its period, how many
    times were skipped and the next time (kept). ``payload``: the event's own (a node name for a
    heartbeat row)."""

    kind: int
    payload: Any
    start: float
    period: float
    count: int
    last: float | None
    next: float

    def times(self, lo: float = -math.inf, hi: float = math.inf) -> list[float]:
        """Its skipped times in [lo, hi), exactly."""
        if not self.count:
            return []
        skipped, _, t = advance(self.start, self.period, lo) if lo > self.start else (0, None, self.start)
        out = []
        while skipped < self.count and t < hi:
            out.append(t)
            t = t + self.period
            skipped += 1
        return out

    def nth(self, i: int) -> float:
        return nth(self.start, self.period, i)


def _back(row: Row, i: int) -> float:
    """``row``'s i-th skipped time counted from its last (0: the last)."""
    return row.last if i == 0 else nth(row.start, row.period, row.count - 1 - i)  # type: ignore[return-value]


def _push_order(a: tuple, b: tuple) -> int:
    """Which of two moved rows of one kind the unskipped run pushes first (-1: ``a``), each with
    the sequence number of its entry before the stretch. Each call of a row re-pushes it with a
    fresh number, in the order the calls were popped: by time, then by the numbers of the pushes
    before. So the rows compare by their skipped times from the last backwards, a row whose
    times run out first (its number older than anything pushed in the stretch) goes first, then
    the numbers from before the stretch. With one period, rows equal at some skipped time are equal
    at every later one, so the first difference from the end is found by bisection."""
    ra, sa, rb, sb = a[0], a[1], b[0], b[1]
    n = min(ra.count, rb.count)
    if ra.period == rb.period and ra.start == rb.start and ra.count == rb.count:
        first = n  # the same chain of additions: the same times
    elif ra.period == rb.period:
        lo, hi = 0, n  # the first index from the end where the two differ lies in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if _back(ra, mid) == _back(rb, mid):
                lo = mid + 1
            else:
                hi = mid
        first = lo
    else:
        first = next((i for i in range(n) if _back(ra, i) != _back(rb, i)), n)
    if first < n:
        return -1 if _back(ra, first) < _back(rb, first) else 1
    if ra.count != rb.count:
        return -1 if ra.count < rb.count else 1
    return -1 if sa < sb else (1 if sa > sb else 0)


def push_order(moved: list[tuple]) -> list[tuple]:
    """Moved rows (each a tuple of the row, its entry's sequence number before the stretch and
    anything else the caller keeps with it) in the order the
    unskipped run pushes their next times, so that rows meeting at one time later are called in
    the same order (rows of different kinds never compete for it: the kind orders them first)."""
    if len(moved) < 2:
        return moved
    moved = sorted(moved, key=lambda m: (m[0].kind, m[0].last))  # the last skipped times decide first
    out: list[tuple] = []
    i = 0
    while i < len(moved):
        j = i + 1
        while j < len(moved) and moved[j][0].kind == moved[i][0].kind and moved[j][0].last == moved[i][0].last:
            j += 1
        out.extend(moved[i:j] if j == i + 1 else sorted(moved[i:j], key=functools.cmp_to_key(_push_order)))
        i = j
    return out


@dataclass(slots=True)
class Skipped:
    """The periodic calls skipped after ``quiet`` said yes (``PreemptionModel.skip_periodic``):
    every time of every row after ``now`` and before ``end`` (up to and including ``end`` when
    ``inclusive``: the horizon fell inside the stretch). ``ticks``: the tick rows; ``beats``: the
    heartbeat rows, ``payload`` = the node."""

    now: float
    end: float
    inclusive: bool
    ticks: list[Row] = field(default_factory=list)
    beats: list[Row] = field(default_factory=list)

    def instants(self, lo: float = -math.inf, hi: float = math.inf) -> list[float]:
        """Every skipped instant in [lo, hi) (ticks and heartbeats merged, each time once), sorted."""
        return sorted({t for row in (*self.ticks, *self.beats) for t in row.times(lo, hi)})


@dataclass(frozen=True, slots=True)
class QuietExcept:
    """``PreemptionModel.quiet``'s verdict when every periodic call before ``until`` would decide
    nothing except the heartbeats of the nodes ``decides`` names (a node with room for a waiting
    task decides at its next heartbeat; the others' heartbeats and the ticks decide nothing
    meanwhile). The simulator asks ``decides`` node by node in the order of their next
    heartbeats and skips the stretch up to the first heartbeat of a node that decides, which it
    runs as usual; the nodes after it need not be asked."""

    until: float
    decides: Callable[[str], bool]

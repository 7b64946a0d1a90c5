"""A fixed piece of Python work timed beside the benchmarks, so their figures can be read against
the machine that made them.

The CPU time of one scenario on one shared 2-core machine moved by 2x from one hour to the next
(issue 20's rounds 32 and 35), while its code was unchanged. Every CPU-time target is stated for
a quiet machine; a figure taken on a slow one is not a regression, and one taken on a fast one is
not a win. ``reference()`` times work shaped like the recorders' walks (small dicts and tuples,
a heap, a sorted list, calls), the same instructions on every run, and the benchmark writes its
time beside the figures: a figure divided by it is comparable from one machine or hour to the
next. The smallest of several runs is taken, the least disturbed.
"""

from __future__ import annotations

import heapq
import time
from bisect import insort

ROUNDS = 5
N = 40_000


def _work(n: int) -> int:
    heap: list[tuple[float, int]] = []
    keys: list[tuple[int, int]] = []
    events = []
    total = 0
    for i in range(n):
        heapq.heappush(heap, ((i * 7919) % 1009 + 0.5, i))
        insort(keys, ((i * 104729) % 2003, i))
        events.append({"time": float(i), "kind": "start", "allocation": f"w{i}/0", "node": i % 10})
        if len(heap) > 64:
            t, j = heapq.heappop(heap)
            total += j + len(events[j]["allocation"])
        if len(keys) > 256:
            del keys[0]
    return total


def reference(rounds: int = ROUNDS) -> float:
    """The least CPU seconds of ``rounds`` runs of the fixed work (``N`` steps)."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        _work(N)
        best = min(best, time.process_time() - t0)
    return best

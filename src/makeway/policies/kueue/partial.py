"""Partial admission (``minCount``): Kueue's ``PodSetReducer``.

Every pod set that may shrink loses the same fraction of its slack (count - minCount) at a time:
at search index ``i`` of ``total_delta`` steps a pod set of count ``c`` and slack ``d`` asks for
``c - d*i // total_delta`` pods. A binary search (Go's ``sort.Search``) finds the smallest index at
which ``fits`` succeeds, so the admitted counts are as large as possible.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

R = TypeVar("R")


def can_be_partially_admitted(counts: Sequence[int], min_counts: Sequence[int | None]) -> bool:
    return any(m is not None and m < c for c, m in zip(counts, min_counts))


def reduce_pod_sets(counts: Sequence[int], min_counts: Sequence[int | None],
                    fits: Callable[[list[int]], tuple[R | None, bool]]) -> tuple[R | None, bool]:
    """(result of ``fits`` at the largest counts that fit, whether any did)."""
    deltas = [c - (c if m is None else m) for c, m in zip(counts, min_counts)]
    total = sum(deltas)
    if total == 0:
        return None, False
    last_good, last = 0, None

    def at(i: int) -> bool:
        nonlocal last_good, last
        r, ok = fits([c - d * i // total for c, d in zip(counts, deltas)])
        if ok:
            last_good, last = i, r
        return ok

    lo, hi = 0, total + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if not at(mid):
            lo = mid + 1
        else:
            hi = mid
    return last, lo == last_good

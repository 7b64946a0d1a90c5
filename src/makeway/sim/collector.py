"""How often CPython's cyclic collector runs while a simulation does (issue 20).

A long run allocates millions of medium-lived containers (pending entries, memo keys, snapshots)
that die by reference counting, but only after surviving two young collections. Every object that
survives them is promoted to the oldest generation, and enough promotions trigger a full
collection, which walks the whole heap: on the whole Philly trace under kueue, 26 of them took 10%
of the run. A larger young generation lets those objects die before they are promoted. Cyclic
garbage is still found, by the young collections themselves, so memory stays where it was (the
same peak RSS on that run; the memory benchmark's bytes per job are unchanged).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

YOUNG_THRESHOLD = 10_000  # CPython's default is 700 allocations net of frees


@contextmanager
def fewer_young_collections(threshold: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Raise the young generation's threshold to at least ``threshold`` meanwhile; restore it after."""
    before = gc.get_threshold()
    if before[0] >= threshold or before[0] == 0:  # already larger, or set to 0 (automatic collection off)
        yield
        return
    gc.set_threshold(threshold, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@contextmanager
def no_collections() -> Iterator[None]:
    """The cyclic collector off meanwhile, for a bounded walk that makes no reference cycles (its
    garbage dies by reference counting), where every collection would only scan what the walk
    keeps: the results it builds. Restored after, as it was.

    What the walk made is still counted as young, so the first allocation after the collector is
    back would scan all of it at once (69 ms after the full Kueue baseline's recording, 8 ms at a
    quarter of it). It is long-lived: the results. So it goes straight to the oldest generation,
    where surviving two collections would have put it: ``gc.freeze`` and ``gc.unfreeze`` splice
    the generations' lists, whatever their length, and zero the young count. Other objects young
    at that moment move with it; they are only collected later, at the next full collection."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


__all__ = ["YOUNG_THRESHOLD", "fewer_young_collections", "no_collections"]

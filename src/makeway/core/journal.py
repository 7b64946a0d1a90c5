"""An append-only change journal with a bounded memory, read by position.

Models that cache "this did not fit" need to know *what* changed since they last looked (which nodes
got capacity back, which workloads became pending), not just *that* something changed: retrying a
backlog of 50,000 workloads because one task ended elsewhere is what made large traces crawl.
A reader keeps the position it read up to; when the journal has been trimmed past that position the
reader is told so (``None``) and must fall back to a full re-examination, which is always correct.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Journal(Generic[T]):
    __slots__ = ("_items", "_base", "limit")

    def __init__(self, limit: int = 1 << 16):
        self._items: list[T] = []
        self._base = 0
        self.limit = limit

    def append(self, item: T) -> None:
        items = self._items
        items.append(item)
        if len(items) > self.limit:
            drop = len(items) // 2
            del items[:drop]
            self._base += drop

    @property
    def position(self) -> int:
        """The position after the newest entry: what a reader stores after reading everything."""
        return self._base + len(self._items)

    def since(self, position: int) -> list[T] | None:
        """Entries appended after ``position``, oldest first; None when some were already dropped."""
        if position < self._base:
            return None
        return self._items[position - self._base:]

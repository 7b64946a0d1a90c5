"""The fair share update's cache of subtree curves (``fairshare.compute``'s ``cache``)."""

from __future__ import annotations


class CurveCache:
    """Curves of subtrees whose inputs are as they were at an earlier update, reused as they are.

    An element's curve, fit factor and fair share by suggestion are a pure function of its key: its
    own shares, guarantee and limits, mode, and its children's weights and keys in order, so an
    entry stays right for ever. Entries live in two generations: ``roll`` starts a new one once the
    newer holds ``generation`` entries, and an entry found in the older one moves to the newer, so
    what is not used for a whole generation is dropped and the cache holds at most twice
    ``generation`` entries. A backlog moves back and forth between a few shapes (a job of a class
    starts where one of the same class finished), so a pool's children recur some updates later:
    on the Philly trace, keeping entries for 1,024 puts instead of one update cuts misses by a
    third (``generation=1`` comes close to keeping the previous update's entries only).
    """

    __slots__ = ("old", "new", "hits", "misses", "_next", "generation")

    def __init__(self, generation: int = 1024) -> None:
        self.old: dict[tuple, tuple] = {}
        self.new: dict[tuple, tuple] = {}
        self.hits = self.misses = 0
        self._next = 0
        self.generation = generation

    def get(self, key: tuple) -> tuple | None:
        """(token, value) for a key seen before, else None. A token names one key for the cache's
        whole life, so parents can refer to a child's content by it instead of nesting its key."""
        v = self.new.get(key)
        if v is None:
            v = self.old.get(key)
            if v is not None:
                self.new[key] = v
        if v is None:
            self.misses += 1
        else:
            self.hits += 1
        return v

    def put(self, key: tuple, value: tuple) -> int:
        self._next += 1
        self.new[key] = (self._next, value)
        return self._next

    def roll(self) -> None:
        """Called at the start of each update: a new generation once the newer one is full."""
        if len(self.new) >= self.generation:
            self.old, self.new = self.new, {}

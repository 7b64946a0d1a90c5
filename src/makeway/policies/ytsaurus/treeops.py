"""The operations of the last pool tree, and which of them the next tree must make again.

``build_tree`` walked every pending or running operation at each fair share update to find the
few whose element changed: on a contended trace that is hundreds of operations per update and
over a hundred thousand updates. What an operation's element depends on changes only through
its workload's starts and ends (``state.run_log``) and its submission, requeues, withdrawal and
priority changes (``state.pending_log``), or through the nodes and the queues
(``topology_epoch``, ``config_epoch``: either walks everything again). An operation with no entry in either log since the last tree has the same running and
pending tasks, so the element it had is equal to the one a walk would make (an element is never
changed once built), and it is kept.
"""

from __future__ import annotations

from itertools import islice
from operator import itemgetter
from typing import Any

from makeway.core.state import ClusterState


class TreeOps:
    """``todo(state)``: the (operation, index) pairs to make again, in ``state.workloads`` order, or
    None when everything must be walked; ``merge`` puts what was made into the last tree's
    operations, in the same order a walk gives; ``record`` keeps them for the next update."""

    __slots__ = ("_key", "_pos", "_index", "ops", "generation", "changed")

    def __init__(self) -> None:
        self._key: tuple[int, int, int] | None = None
        self._pos = (0, 0)  # ``state.log_positions()`` when the last tree was built
        self._index: dict[str, int] = {}  # workload -> its position in ``state.workloads``
        self.ops: dict[str, Any] = {}  # operation -> its element in the last tree, in index order
        self.generation = 0  # trees recorded so far
        self.changed: list[str] | None = None  # the last tree's operations made again (None: all walked)

    @property
    def index(self) -> dict[str, int]:
        """Workload -> its position in ``state.workloads`` (read only)."""
        return self._index

    def _indexed(self, state: ClusterState) -> bool:
        """Positions for workloads submitted since (they are only ever appended)."""
        index, workloads = self._index, state.workloads
        k = len(workloads) - len(index)
        if k < 0:
            return False
        if k:
            base = len(index)
            new = list(islice(reversed(workloads), k))
            for j, w in enumerate(reversed(new)):
                index[w] = base + j
        return True

    @property
    def positions(self) -> tuple[int, int]:
        """The (run log, pending log) positions the last tree was built at (read only)."""
        return self._pos

    def todo(self, state: ClusterState) -> list[tuple[str, int]] | None:
        if self._key != (id(state), state.topology_epoch, state.config_epoch):
            return None
        touched = state.logged_since(self._pos)
        if touched is None or not self._indexed(state):
            return None
        index = self._index
        return sorted(((w, index[w]) for w in touched), key=itemgetter(1))

    def merge(self, todo: list[tuple[str, int]], made: dict[str, Any]) -> dict[str, Any]:
        """The last tree's operations with those of ``todo`` replaced by what was made (or dropped
        when nothing was), new ones at their index."""
        ops = dict(self.ops)
        last = self._index[next(reversed(ops))] if ops else -1
        unsorted = False
        for w, i in todo:
            el = made.get(w)
            if el is None:
                ops.pop(w, None)
                continue
            if w not in ops and i < last:
                unsorted = True
            ops[w] = el
        if unsorted:
            index = self._index
            ops = dict(sorted(ops.items(), key=lambda kv: index[kv[0]]))
        return ops

    def record(self, state: ClusterState, ops: dict[str, Any], todo: list[tuple[str, int]] | None) -> None:
        """Keep the tree's operations; ``todo``: the ones made again (None: all were walked)."""
        if self._key is None or self._key[0] != id(state):
            self._index = {}
        self._key = (id(state), state.topology_epoch, state.config_epoch)
        self.generation += 1
        self.changed = None if todo is None else [w for w, _ in todo]
        self._pos = state.log_positions()
        self._indexed(state)
        self.ops = ops

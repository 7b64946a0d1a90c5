"""The operations that are in the pool tree (pending or running), kept from the state's pending journal.

``ClusterState.workloads`` keeps every workload ever submitted, for reports; over a long trace the
finished ones outnumber the live ones a hundred to one, so a fair share update that walked them all
would cost the trace's length, not the tree's size. A workload enters the tree only through a
submission, and every submission is logged in ``pending_log`` in the order the workloads were added
(``submit`` adds it and logs it together), so reading the journal gives each new workload its index
among ``state.workloads``; a workload leaves when nothing of it is pending or running, and can only
come back through the journal (a requeue needs a running task, so it never names a departed one).
"""

from __future__ import annotations

from makeway.core.state import ClusterState


class LiveOps:
    """Workload ids that may be pending or running, in ``state.workloads`` order, with that order.

    ``ops(state)`` returns ``(wid, index)`` pairs in the order a walk of ``state.workloads`` meets
    them, holding every workload with something pending or running (and perhaps a few finished
    ones, which the caller skips as it skips them in a full walk)."""

    __slots__ = ("_state", "_pos", "_index", "_live", "_unsorted")

    def __init__(self) -> None:
        self._state: int | None = None
        self._pos = 0
        self._index: dict[str, int] = {}
        self._live: dict[str, int] = {}
        self._unsorted = False

    def _rescan(self, state: ClusterState) -> None:
        self._state = id(state)
        self._index = {w: i for i, w in enumerate(state.workloads)}
        running, pending = state.running, state.pending
        self._live = {w: i for w, i in self._index.items() if running.get(w) or pending.get(w)}
        self._pos = state.pending_log.position
        self._unsorted = False

    def ops(self, state: ClusterState) -> list[tuple[str, int]]:
        log = state.pending_log
        new = None if self._state != id(state) else log.since(self._pos)
        if new is None:
            self._rescan(state)
        else:
            index, live = self._index, self._live
            for w in new:
                i = index.get(w)
                if i is None:
                    i = index[w] = len(index)
                elif w not in live:
                    self._unsorted = True
                live[w] = i
            self._pos = log.position
        if len(self._index) != len(state.workloads):
            self._rescan(state)
        running, pending = state.running, state.pending
        gone = [w for w in self._live if not running.get(w) and not pending.get(w)]
        for w in gone:
            del self._live[w]
        if self._unsorted:
            self._live = dict(sorted(self._live.items(), key=lambda kv: kv[1]))
            self._unsorted = False
        return list(self._live.items())

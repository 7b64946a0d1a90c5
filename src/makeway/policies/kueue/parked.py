"""The parked workloads of BestEffortFIFO (found inadmissible, left out of the heads until quota
is released), kept so that a call costs what changed, not the backlog.

A call walks every ClusterQueue to its end: each unparked entry is evaluated, or skipped as a
twin of one. So when it ends, every entry it walked is parked except the few it left unparked (a
preemptor waiting for its victims, a twin of such a head, a head it started). Adding the whole
backlog to a set at every call, and filtering every queue by that set at the next, cost two passes
over the backlog per call. Instead, a call's end *marks* each queue it walked: every entry in the
index then (``PendingIndex.born`` at most the index's clock) is parked, except the ones it names.
A later call lists only the entries inserted since the mark (``PendingIndex.logging``) and those
exceptions; an entry that changes is re-inserted with a new number, so it escapes the mark.
Workloads parked one by one (a head's evaluation) are also kept in a set, as before: a waiting
preemptor parked when its victims vanish changes its entry, and must stay parked.

StrictFIFO queues are never marked (a call stops at their head and leaves the rest unparked),
nor is anything in the reference path (``caches: false``): there the set alone holds them.
"""

from __future__ import annotations

from makeway.policies.kueue.pending import Entry, PendingIndex


class Parked:
    """``in``, ``add``, ``discard``, ``clear`` of a set of workload ids, plus the marks."""

    __slots__ = ("_set", "_marks", "_except", "_index")

    def __init__(self, index: PendingIndex):
        self._set: set[str] = set()
        self._marks: dict[str, int] = {}  # queue -> the index clock its mark was made at
        self._except: dict[str, set[str]] = {}  # queue -> its walked, unparked workloads at the mark
        self._index = index

    def __contains__(self, wl: str) -> bool:
        if wl in self._set:
            return True
        if not self._marks:
            return False
        index = self._index
        q = index.queue.get(wl)
        mark = self._marks.get(q) if q is not None else None
        return mark is not None and index.born[wl] <= mark and wl not in self._except[q]

    def add(self, wl: str) -> None:
        self._set.add(wl)

    def discard(self, wl: str) -> None:
        self._set.discard(wl)
        q = self._index.queue.get(wl)
        if q in self._marks:
            self._except[q].add(wl)

    def clear(self) -> None:
        self._set.clear()
        self._marks.clear()
        self._except.clear()
        self._index.logging.clear()

    def unparked(self, queue: str) -> list[Entry]:
        """The queue's entries that are not parked, in the index's order."""
        index = self._index
        s = self._set
        mark = self._marks.get(queue)
        if mark is None:
            lst = index.order[queue]
            return [e for e in lst if e[3] not in s] if s else lst
        born, entry = index.born, index.entry
        out = {e[3]: e for b, e in index.logging[queue] if born.get(e[3]) == b and e[3] not in s}
        for wl in self._except[queue]:
            e = entry.get(wl)
            if e is not None and wl not in s and index.queue[wl] == queue:
                out[wl] = e
        return sorted(out.values())

    def mark(self, queue: str, unparked: set[str]) -> None:
        """A call walked all of ``queue``'s unparked entries and left exactly ``unparked`` of
        them unparked: every entry of the queue in the index now is parked but those."""
        self._marks[queue] = self._index.clock
        self._except[queue] = unparked
        self._index.logging[queue] = []

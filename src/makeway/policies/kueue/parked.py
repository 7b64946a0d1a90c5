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

What requeues a parked workload depends on why it was parked. Kueue requeues the inadmissible
workloads of a cohort tree when quota is released in that tree (a workload of one of its
ClusterQueues ends or is evicted: ``QueueAssociatedInadmissibleWorkloadsAfter``), not the whole
cluster's: ``release_queues``. A workload parked because its pods found no room on the nodes
(the simulator's own check, which Kueue does not make) waits for room, which any allocation's end
may give: those are also kept by queue (``add(.., node=True)``, or ``add_nodes`` for twins that
the queue's mark parks) and ``release_nodes`` requeues them, whatever tree they are in.
"""

from __future__ import annotations

from typing import Iterable

from makeway.policies.kueue.pending import Entry, PendingIndex

QUOTA, NODE = 1, 2  # why a workload is parked (``Parked.kind``)


class Parked:
    """``in``, ``add``, ``discard``, ``clear`` of a set of workload ids, plus the marks."""

    __slots__ = ("_set", "_in", "_node", "_marks", "_except", "_index")

    def __init__(self, index: PendingIndex):
        self._set: set[str] = set()
        self._in: dict[str | None, set[str]] = {}  # ``_set`` by queue, so a tree's release reads only its own
        # by queue: parked for want of room on the nodes (one by one, or under a mark as twins)
        self._node: dict[str | None, set[str]] = {}
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

    def add(self, wl: str, node: bool = False) -> None:
        self._set.add(wl)
        q = self._index.queue.get(wl)
        members = self._in.get(q)
        if members is None:
            members = self._in[q] = set()
        members.add(wl)
        if node:
            self.add_nodes(q, (wl,))
        else:
            waiting = self._node.get(q)
            if waiting is not None:
                waiting.discard(wl)

    def add_nodes(self, queue: str | None, wls: Iterable[str]) -> None:
        """These workloads of ``queue`` wait for room on the nodes; the caller parks them (``add``,
        or the queue's mark at the call's end for twins taken in bulk)."""
        waiting = self._node.get(queue)
        if waiting is None:
            waiting = self._node[queue] = set()
        waiting.update(wls)

    def kind(self, wl: str) -> int:
        """0: not parked; 1: parked until quota is released in its tree; 2: parked for room."""
        if wl not in self:
            return 0
        return NODE if wl in self._node.get(self._index.queue.get(wl), ()) else QUOTA

    def discard(self, wl: str) -> None:
        self._set.discard(wl)
        q = self._index.queue.get(wl)
        members = self._in.get(q)
        if members is not None:
            members.discard(wl)
        waiting = self._node.get(q)
        if waiting is not None:
            waiting.discard(wl)
        if q in self._marks:
            self._except[q].add(wl)

    def clear(self) -> None:
        self._set.clear()
        self._in.clear()
        self._node.clear()
        self._marks.clear()
        self._except.clear()
        self._index.logging.clear()

    def release_queues(self, queues: set[str]) -> None:
        """Quota was released in the trees of these queues: every workload parked in them is
        requeued (their marks go, and the workloads parked one by one)."""
        for q in queues:
            members = self._in.pop(q, None)
            if members:
                self._set.difference_update(members)
            self._node.pop(q, None)
            if self._marks.pop(q, None) is not None:
                del self._except[q]
                self._index.logging.pop(q, None)

    def release_nodes(self) -> None:
        """Room was freed on the nodes: the workloads parked for want of it are requeued."""
        waiting, self._node = self._node, {}
        marks, excepts, in_, s = self._marks, self._except, self._in, self._set
        for q, wls in waiting.items():
            s.difference_update(wls)
            members = in_.get(q)
            if members:
                members.difference_update(wls)
            if q in marks:
                excepts[q].update(wls)

    def unparked(self, queue: str) -> list[Entry]:
        """The queue's entries that are not parked, in the index's order."""
        index = self._index
        s = self._set
        mark = self._marks.get(queue)
        if mark is None:
            lst = index.order[queue]
            return [e for e in lst if e[3] not in s] if self._in.get(queue) else lst
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

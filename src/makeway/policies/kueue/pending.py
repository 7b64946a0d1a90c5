"""Kueue's per-ClusterQueue pending queues, kept incrementally (as Kueue's queue manager keeps its heaps).

Each ClusterQueue holds its fully pending workloads in admission order (BestEffortFIFO: preemptors
waiting for their victims first, then priority, then creation time, then name). Rebuilding and
sorting every pending workload at every scheduling call made a call cost grow with the backlog;
here a call reads only what changed since the last one: the state's pending journal (submissions,
requeues, withdrawals), the workloads the model itself started, and those whose waiting mark moved.

An entry is ``(not waiting-first, -priority, submit, workload, head id, waiting)``: the first four
fields order it, the head id (an int per distinct head key, ``KueueModel._head_key``) and the
waiting mark let a call see a run of equivalent workloads as one block (``runs``), and the index
keeps each queue's entries grouped by both (``groups``), so a call can find the first entry of a
kind without walking the entries before it.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from itertools import accumulate, groupby
from operator import itemgetter
from typing import Callable, Iterable

Entry = tuple  # (bool, int, float, str, int, bool)

_RUN_KEY = itemgetter(4, 5)


class PendingIndex:
    """The ordered pending entries of every queue; ``sync`` brings it up to date with the state."""

    __slots__ = ("order", "entry", "queue", "groups", "born", "clock", "logging", "_state", "_pos", "_blocked")

    def __init__(self) -> None:
        self.order: dict[str, list[Entry]] = {}
        # per queue, per (head id, waiting mark): that kind's entries, in the same order
        self.groups: dict[str, dict[tuple, list[Entry]]] = {}
        self.entry: dict[str, Entry] = {}
        self.queue: dict[str, str] = {}
        # when each entry was inserted (an insertion clock; an unchanged entry keeps its number
        # through a rebuild), and per queue being logged, the entries inserted since logging began
        self.born: dict[str, int] = {}
        self.clock = 0
        self.logging: dict[str, list[tuple[int, Entry]]] = {}
        self._state: object | None = None
        self._pos: int | None = None
        self._blocked: set[str] = set()  # pending with tasks still running: looked at every sync

    @property
    def blocked(self) -> set[str]:
        """Pending workloads with tasks running too (not in ``order``), as of the last sync."""
        return self._blocked

    def reset(self) -> None:
        self._state = None

    def sync(self, state, make: Callable[[str], Entry], changed: Iterable[str]) -> None:
        """Bring the index to the state's pending set. ``make`` builds a workload's entry; ``changed``
        names workloads whose eligibility or entry may have moved without a journal record."""
        fresh = None if self._state is not state or self._pos is None else state.pending_log.since(self._pos)
        if fresh is None:
            old, born = self.entry, self.born
            self.order, self.entry, self.queue, self.groups, self._blocked = {}, {}, {}, {}, set()
            self.born = {}
            for wl in state.pending:
                self._update(state, wl, make, False)
            for wl, e in self.entry.items():  # an entry equal to its old self keeps its number
                if old.get(wl) == e:
                    self.born[wl] = born[wl]
                else:
                    self._log(wl, e)
            for lst in self.order.values():
                lst.sort()
            for per in self.groups.values():
                for lst in per.values():
                    lst.sort()
            self._state = state
        else:
            for wl in (*fresh, *changed, *self._blocked):
                self._update(state, wl, make, True)
        self._pos = state.pending_log.position

    def _update(self, state, wl: str, make: Callable[[str], Entry], keep_sorted: bool) -> None:
        pending = wl in state.pending
        running = bool(state.running.get(wl))
        if pending and running:
            self._blocked.add(wl)
        else:
            self._blocked.discard(wl)
        new = make(wl) if pending and not running else None
        old = self.entry.get(wl)
        if old == new:
            return
        if old is not None:
            queue = self.queue.pop(wl)
            lst = self.order[queue]
            del lst[bisect_left(lst, old)]
            per = self.groups[queue]
            grp = per[old[4], old[5]]
            del grp[bisect_left(grp, old)]
            if not grp:
                del per[old[4], old[5]]
            del self.entry[wl]
            del self.born[wl]
        if new is not None:
            queue = state.workloads[wl].queue
            lst = self.order.setdefault(queue, [])
            grp = self.groups.setdefault(queue, {}).setdefault((new[4], new[5]), [])
            self.entry[wl] = new
            self.queue[wl] = queue
            if keep_sorted:
                insort(lst, new)
                insort(grp, new)
                self._log(wl, new)
            else:  # a full rebuild sorts once at the end
                lst.append(new)
                grp.append(new)

    def _log(self, wl: str, e: Entry) -> None:
        self.clock += 1
        self.born[wl] = self.clock
        log = self.logging.get(self.queue[wl])
        if log is not None:
            log.append((self.clock, e))


def runs(entries: list[Entry]) -> list[int]:
    """The end index of each maximal block of entries with the same head id and waiting mark."""
    return list(accumulate(len(list(g)) for _, g in groupby(entries, _RUN_KEY)))

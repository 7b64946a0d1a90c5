"""The Symphony backlog kept between cycles: open sessions with no running task, per consumer.

Why: a consumer thousands of sessions deep (Philly under contention) made every cycle rebuild a
view of every session, water-fill over all of them and walk all of them twice, though only the
sessions that hold tasks or deserve a slot can start, preempt or be preempted, and the others
differ from each other only by their (priority, demand) class and their request shape.

A *waiting* session (pending tasks, nothing running) is kept as a ``Rec``; each consumer groups
them by (priority, demand) class, by priority in name order (who gets a remainder slot) and, for a
session whose pending tasks all come from one task group, by request shape in serving order
(who takes leftover slots). The table is synced at each call from what can change a session:
``state.pending_log`` (submissions, requeues, withdrawals, priority changes) and ``state.run_log``
(starts and ends). A new state object, a config change or a trimmed log rebuilds it.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Any, Callable

from makeway.core.state import ClusterState
from makeway.policies.symphony.holders import HolderTable, tasks_slots


@dataclass(slots=True)
class Rec:
    """A waiting session: its class, its serving-order key and, for a one-group session, its shape."""

    name: str
    w: int                       # session priority (>= 1): its weight in ``proportional_deserved``
    d: int                       # demand in slots (all pending: nothing runs)
    okey: tuple                  # serving order: (-priority, submit, name)
    shape: tuple | None          # the one request of every pending task (sorted items), else None
    slots: int                   # slots of one task of that shape (0 for a multi-group session)
    rank: int = 1
    preemptive: bool = False


@dataclass(slots=True)
class ConsumerBacklog:
    recs: dict[str, Rec] = field(default_factory=dict)
    classes: dict[tuple[int, int], dict[str, None]] = field(default_factory=dict)
    by_w: dict[int, list[str]] = field(default_factory=dict)           # names, sorted
    by_shape: dict[tuple, list[tuple]] = field(default_factory=dict)   # serving keys, sorted
    multi: set[str] = field(default_factory=set)                      # waiting multi-group sessions

    def add(self, r: Rec) -> None:
        self.recs[r.name] = r
        self.classes.setdefault((r.w, r.d), {})[r.name] = None
        insort(self.by_w.setdefault(r.w, []), r.name)
        if r.shape is None:
            self.multi.add(r.name)
        else:
            insort(self.by_shape.setdefault(r.shape, []), r.okey)

    def remove(self, name: str) -> None:
        r = self.recs.pop(name)
        members = self.classes[(r.w, r.d)]
        del members[name]
        if not members:
            del self.classes[(r.w, r.d)]
        _discard(self.by_w, r.w, name)
        if r.shape is None:
            self.multi.discard(name)
        else:
            _discard(self.by_shape, r.shape, r.okey)


def _discard(index: dict, key: Any, item: Any) -> None:
    items = index[key]
    i = bisect_left(items, item)
    del items[i]
    if not items:
        del index[key]


class Backlog:
    """Waiting sessions of every consumer, and the holding ones (``table``), kept in step with one
    state (see the module doc)."""

    __slots__ = ("consumers", "table", "_key", "_pos", "_run_pos", "_where")

    def __init__(self) -> None:
        self.consumers: dict[str, ConsumerBacklog] = {}
        self.table = HolderTable()
        self._key: tuple | None = None
        self._pos = 0
        self._run_pos = 0
        self._where: dict[str, str] = {}     # waiting session -> its consumer

    def sync(self, state: ClusterState, resource: str, settings_of: Callable[[Any], Any],
             slots_of: Callable[[Any], int]) -> None:
        """``settings_of(workload)``: its session settings (priority, rank, preemptive), which stay
        while the workload object and the config do (a priority change is logged)."""
        key = (id(state), state.config_epoch, resource)
        back = state.pending_log.since(self._pos) if self._key == key else None
        ran = state.run_log.since(self._run_pos) if back is not None else None
        self._pos, self._run_pos = state.pending_log.position, state.run_log.position
        if ran is None:
            self.consumers, self._where, self._key = {}, {}, key
            self.table.clear()
            touched: Any = set(state.pending)
            touched.update(a.workload for a in state.allocations.values())
        else:
            touched = set(back)
            touched.update(ran)
        self.table.refresh(state, touched, settings_of, slots_of)
        pending, running, wls = state.pending, state.running, state.workloads
        for name in touched:
            where = self._where.pop(name, None)
            if where is not None:
                self.consumers[where].remove(name)
            if name in pending and not running.get(name):
                wl = wls[name]
                self.consumers.setdefault(wl.queue, ConsumerBacklog()).add(
                    _rec(wl, pending[name], settings_of(wl), slots_of))
                self._where[name] = wl.queue

    def open_consumers(self) -> list[str]:
        """Consumers with a holding or a waiting session, in name order."""
        names = set(self.table.of)
        names.update(q for q, cb in self.consumers.items() if cb.recs)
        return sorted(names)


def _rec(wl: Any, tasks: Any, ss: Any, slots_of: Callable[[Any], int]) -> Rec:
    live = [g for g, grp in enumerate(wl.groups) if grp.count > 0]
    okey = (-ss.priority, wl.submit, wl.id)
    if len(live) == 1:
        req = wl.groups[live[0]].resources
        ts = slots_of(req)
        return Rec(wl.id, ss.priority, ts * len(tasks), okey, tuple(sorted(req.items())), ts, ss.rank, ss.preemptive)
    return Rec(wl.id, ss.priority, tasks_slots(wl, tasks, slots_of), okey, None, 0, ss.rank, ss.preemptive)


__all__ = ["Backlog", "ConsumerBacklog", "Rec"]

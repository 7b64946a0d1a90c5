"""The sessions that hold tasks, per consumer, at the cost of what changed since the last call.

Why: every cycle and every share sample needs each holding session's allocated slots, demand and
settings, and rebuilding them walked every running task of every holder (a few hundred sessions on
Philly, thousands of calls). A session's figures change only when its running set, its pending set
or its settings do: the state logs the first two (``run_log``, ``pending_log``), a settings change
is a priority change (logged as pending) or a config change (which starts the table over). The
backlog's sync passes the logged names to ``HolderTable.refresh``.

A view's task list is built when first read (``HolderView.tasks``): only a preemption reads it,
and it holds each task's elapsed time at ``now``, which no cache may keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from makeway.core.state import ClusterState
from makeway.policies.symphony.rules import SessionView, TaskView


def tasks_slots(wl: Any, tasks: Iterable[str], slots_of: Callable[[Any], int]) -> int:
    """Slots ``tasks`` of ``wl`` ask for, counted per task group."""
    groups: dict[int, int] = {}
    for t in tasks:
        g = int(t.rsplit("/", 2)[1])
        groups[g] = groups.get(g, 0) + 1
    return sum(slots_of(wl.groups[g].resources) * n for g, n in groups.items())


def pending_slots(state: ClusterState, wl: Any, wl_id: str, slots_of: Callable[[Any], int]) -> int:
    """Slots the session's pending tasks ask for."""
    return tasks_slots(wl, state.pending.get(wl_id, ()), slots_of)


@dataclass(slots=True)
class Held:
    """One holding session's figures, valid until the logs name it again."""

    queue: str
    allocated: int
    demand: int
    rank: int
    preemptive: bool
    priority: int
    order: tuple

    @property
    def waits(self) -> bool:
        """Whether it has a pending task (every task takes at least one slot)."""
        return self.demand > self.allocated


class HolderView(SessionView):
    """A holder's ``SessionView`` whose ``tasks`` are read from the state on first access."""

    __slots__ = ("_src",)

    def __init__(self, h: Held, name: str, src: tuple):
        self.name, self.rank, self.preemptive, self.deserved = name, h.rank, h.preemptive, 0
        self.allocated, self.demand, self.priority, self.order = h.allocated, h.demand, h.priority, h.order
        self._src = src

    def __getattr__(self, attr: str) -> Any:
        if attr != "tasks":
            raise AttributeError(attr)
        state, now, sharing, slots_of = self._src
        allocs, wl_id = state.allocations, self.name
        tasks = []
        for tid in state.running.get(wl_id, ()):
            a = allocs[tid]
            tasks.append(TaskView(tid, wl_id, a.start, now - a.start, slots_of(a.resources),
                                  a.node if sharing == "host" else None, a.preemptible and not a.preempting))
        self.tasks = tasks
        return tasks


@dataclass(slots=True)
class ConsumerHolders:
    """One consumer's holding sessions: by name, by (priority, demand) class, those with a pending
    task, and the slots they hold together."""

    held: dict[str, Held] = field(default_factory=dict)
    classes: dict[tuple[int, int], dict[str, None]] = field(default_factory=dict)
    waiting: dict[str, None] = field(default_factory=dict)
    allocated: int = 0

    def counts(self) -> dict[tuple[int, int], int]:
        return {c: len(m) for c, m in self.classes.items()}


class HolderTable:
    """``Held`` per holding session, grouped by consumer (``ConsumerHolders``)."""

    __slots__ = ("held", "of")

    def __init__(self) -> None:
        self.held: dict[str, Held] = {}
        self.of: dict[str, ConsumerHolders] = {}  # consumers with a holder

    def clear(self) -> None:
        self.held, self.of = {}, {}

    def refresh(self, state: ClusterState, names: Iterable[str], settings_of: Callable[[Any], Any],
                slots_of: Callable[[Any], int]) -> None:
        """Re-read ``names`` (the sessions the logs named): holders now are (re)filled, the others
        dropped."""
        held, running = self.held, state.running
        for name in names:
            old = held.pop(name, None)
            if old is not None:
                self._drop(name, old)
            if running.get(name):
                h = held[name] = self._fill(state, name, settings_of, slots_of)
                ch = self.of.get(h.queue)
                if ch is None:
                    ch = self.of[h.queue] = ConsumerHolders()
                ch.held[name] = h
                ch.classes.setdefault((h.priority, h.demand), {})[name] = None
                if h.waits:
                    ch.waiting[name] = None
                ch.allocated += h.allocated

    def _drop(self, name: str, h: Held) -> None:
        ch, c = self.of[h.queue], (h.priority, h.demand)
        del ch.held[name]
        members = ch.classes[c]
        del members[name]
        if not members:
            del ch.classes[c]
        ch.waiting.pop(name, None)
        ch.allocated -= h.allocated
        if not ch.held:
            del self.of[h.queue]

    @staticmethod
    def _fill(state: ClusterState, name: str, settings_of: Callable, slots_of: Callable) -> Held:
        wl = state.workloads[name]
        ss = settings_of(wl)
        allocs = state.allocations
        allocated = sum(slots_of(allocs[tid].resources) for tid in state.running[name])
        pending = pending_slots(state, wl, name, slots_of)
        return Held(wl.queue, allocated, allocated + pending, ss.rank, ss.preemptive, ss.priority, (wl.submit,))


__all__ = ["ConsumerHolders", "Held", "HolderTable", "HolderView", "pending_slots", "tasks_slots"]

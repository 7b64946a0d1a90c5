"""Detecting a run that can make no more progress: the same allocations preempted and restarted for ever.

A model can livelock (two operations taking the same resources from each other at every heartbeat):
the event heap never empties, so the run would never end. ``NoProgressWatch`` lets the simulator stop
such a run and say why. It is fed the things the simulator does anyway and keeps only counters and a
per-victim record of the current stall (no copies of the state).

Progress is a task finishing, a workload submitted, a config change, or a task starting for the first
time. A stall is the time since the last progress. The run is declared stuck at an instant when

1. the stall has lasted at least ``window`` seconds of simulated time;
2. nothing from outside can change the situation: no submission, config event or model wake-up is
   waiting;
3. for the last ``window / 2`` seconds, at every instant where something was preempted, every running
   allocation belonged to the cycle: it had itself been preempted during the stall, and its current
   run was no older than the longest gap between two preemptions of one task in the stall (so it is
   being knocked over again and again, not quietly running towards its finish).

An allocation running steadily breaks (3) once it outlives the cycle's period and keeps it broken
until it finishes, and its finish is progress; so a run that still finishes work is never stopped.
The window makes a slow but real change (a starvation timeout, say) visible before anything is
declared stuck.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


@dataclass(slots=True)
class _Victim:
    count: int
    last: float
    gap: float = 0.0


@dataclass(slots=True)
class NoProgressWatch:
    window: float
    since: float = 0.0
    cycling_since: float | None = None
    preemptions: int = 0
    victims: dict[str, _Victim] = field(default_factory=dict)
    preemptors: dict[str, int] = field(default_factory=dict)
    evicted_ever: set[str] = field(default_factory=set)
    _period: float = 0.0

    def progress(self, now: float) -> None:
        self.since = now
        self.cycling_since = None
        self.preemptions = 0
        self._period = 0.0
        if self.victims:
            self.victims = {}
            self.preemptors = {}

    def started(self, task: str, now: float) -> None:
        """A first start is progress; a restart is not."""
        if task not in self.evicted_ever:
            self.progress(now)

    def preempted(self, task: str, preemptor: str | None, now: float) -> None:
        self.preemptions += 1
        self.evicted_ever.add(task)
        v = self.victims.get(task)
        if v is None:
            self.victims[task] = _Victim(1, now)
        else:
            gap = now - v.last
            v.count += 1
            v.last = now
            if gap > v.gap:
                v.gap = gap
                if gap > self._period:
                    self._period = gap
        if preemptor:
            self.preemptors[preemptor] = self.preemptors.get(preemptor, 0) + 1

    def stuck(self, now: float, running: Iterable[tuple[str, float]], inputs_pending: bool) -> bool:
        """Called at instants where something was preempted; ``running`` is (task, start) of every
        running allocation, read only once the stall is at least half a window long."""
        if inputs_pending or now - self.since < self.window / 2 or self._period <= 0:
            self.cycling_since = None
            return False
        period = self._period
        victims = self.victims
        for task, start in running:
            if task not in victims or now - start > period:
                self.cycling_since = None
                return False
        if self.cycling_since is None:
            self.cycling_since = now
        return now - self.since >= self.window and now - self.cycling_since >= self.window / 2

    def describe(self, now: float, workload_of) -> tuple[str, list[str]]:
        """The stop reason and the workloads caught in the cycle (victims' and preemptors'), sorted."""
        victims = sorted({workload_of(t) for t in self.victims})
        preemptors = sorted(set(self.preemptors) - set(victims))
        involved = sorted(set(victims) | set(self.preemptors))
        by = f" by {', '.join(sorted(self.preemptors))}" if self.preemptors else ""
        msg = (f"no-progress: from t={self.since:g} to t={now:g} no task finished, none started for the first "
               f"time and nothing was submitted; {self.preemptions} preemptions{by} of allocations of "
               f"{', '.join(victims)}, each restarted and preempted again, and no submission or config "
               f"event is left to change that")
        if preemptors:
            msg += f"; {', '.join(preemptors)} ended up holding none of it"
        return msg, involved

"""The cluster vocabulary shared by every model: queues, nodes, workloads, task groups, allocations.

These are plain data. The queue tree and nodes come from config; workloads come from a trace or the
API; allocations are what the state creates when a task starts. Per-model settings ride along in
``settings`` so one tree can describe a Kueue cohort, a YuniKorn queue or a YTsaurus pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from makeway.core.resources import Res


@dataclass(slots=True)
class Queue:
    """A node of the queue tree (YTsaurus pool, YuniKorn queue, Kueue ClusterQueue/Cohort)."""

    name: str
    parent: str | None = None
    guaranteed: Res | None = None
    max: Res | None = None
    weight: float = 1.0
    borrowing_limit: Res | None = None
    lending_limit: Res | None = None
    priority: int = 0
    rank: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    children: list[str] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(slots=True)
class Node:
    """A machine. ``removed``: it left the cluster at runtime; it keeps its place in the node order
    (indexes stay stable for every cache keyed on them) with no capacity, until it joins again."""

    name: str
    capacity: Res
    labels: dict[str, str] = field(default_factory=dict)
    schedulable: bool = True
    removed: bool = False


@dataclass(slots=True, frozen=True)
class TaskGroup:
    """``count`` identical tasks of ``resources`` each (Kueue PodSet, YTsaurus job spec, Symphony task type)."""

    count: int
    resources: Res
    name: str = ""


@dataclass(slots=True)
class Workload:
    """Work submitted to a queue. ``duration`` is how long each task runs once started."""

    id: str
    queue: str
    submit: float
    duration: float
    groups: tuple[TaskGroup, ...]
    priority: int = 0
    preemptible: bool = True
    grace: float = 0.0
    requested_duration: float | None = None
    user: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def task_ids(self) -> list[str]:
        return [task_id(self.id, g, i) for g, grp in enumerate(self.groups) for i in range(grp.count)]

    def total(self) -> Res:
        out: Res = {}
        for grp in self.groups:
            for k, v in grp.resources.items():
                out[k] = out.get(k, 0) + v * grp.count
        return out

    @property
    def task_count(self) -> int:
        return sum(g.count for g in self.groups)


def task_id(workload: str, group: int, index: int) -> str:
    """The stable id of one task: it survives preemption and requeue, so it doubles as allocation key."""
    return f"{workload}/{group}/{index}"


def split_task_id(tid: str) -> tuple[str, int, int]:
    wl, g, i = tid.rsplit("/", 2)
    return wl, int(g), int(i)


@dataclass(slots=True)
class Allocation:
    """One running task on one node."""

    id: str
    workload: str
    queue: str
    node: str
    resources: Res
    start: float
    priority: int = 0
    preemptible: bool = True
    preempting: bool = False
    seq: int = 0

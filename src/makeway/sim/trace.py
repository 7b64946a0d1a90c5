"""The makeway trace format (JSONL) and its conversion into core workloads and config changes.

One JSON object per line. A workload::

    {"id": "j1", "queue": "team-a", "submit": 0, "duration": 600, "priority": 0,
     "tasks": [{"count": 2, "resources": {"cpu": 1, "memory": "2Gi"}, "name": "worker"}],
     "preemptible": true, "grace": 0, "requested_duration": 900, "user": "alice", "settings": {}}

A config change (only the keys present change)::

    {"event": "config", "time": 300, "queue": "team-a", "max": {"cpu": 8}, "guaranteed": {...},
     "settings": {...}}

Blank lines and lines starting with ``#`` are ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Iterable, Iterator, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from makeway.config import (MAX_TASKS, MAX_TIME, MAX_WEIGHT, ClusterConfig, Int32, Quantity, _format_errors,
                            check_shape, queue_limit_problems)
from makeway.core.objects import TaskGroup, Workload
from makeway.errors import TraceError
from makeway.model_settings import trace_settings_problem

Seconds = Annotated[float, Field(ge=0, le=MAX_TIME)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _TaskSpec(_Record):
    count: int = Field(default=1, ge=1, le=MAX_TASKS)
    resources: dict[str, Quantity]
    name: str = ""


class WorkloadRecord(_Record):
    event: str = "submit"
    id: str = Field(min_length=1)
    queue: str = Field(min_length=1)
    submit: Seconds
    duration: Seconds
    priority: Int32 = 0
    tasks: list[_TaskSpec] = Field(min_length=1)
    preemptible: bool = True
    grace: Seconds = 0.0
    requested_duration: Optional[Seconds] = None
    user: Optional[str] = None
    labels: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _size(self) -> "WorkloadRecord":
        total = sum(t.count for t in self.tasks)
        if total > MAX_TASKS:
            raise ValueError(f"tasks: {total:,} tasks in all (counts added up); the limit is {MAX_TASKS:,}")
        return self


class ConfigChangeRecord(_Record):
    event: str
    time: Seconds
    queue: str = Field(min_length=1)
    max: Optional[dict[str, Quantity]] = None
    guaranteed: Optional[dict[str, Quantity]] = None
    weight: Optional[float] = Field(default=None, ge=0, le=MAX_WEIGHT)
    settings: Optional[dict[str, Any]] = None
    unset: list[str] = Field(default_factory=list)


@dataclass(slots=True)
class ConfigChange:
    """A change of one queue at ``time``: the fields to set (``None`` values unset a limit)."""

    time: float
    queue: str
    changes: dict[str, Any] = field(default_factory=dict)


def _validated(schema: Any, rec: dict[str, Any], kind: str) -> Any:
    """``rec`` checked against ``schema`` and its per-model ``settings`` against the ``kind`` registry."""
    try:
        r = schema.model_validate(rec)
    except ValidationError as exc:
        raise TraceError(_format_errors(exc)) from None
    if r.settings and (problem := trace_settings_problem(kind, r.settings)):
        raise TraceError(problem)
    return r


def workload_from_record(rec: dict[str, Any]) -> Workload:
    """Validate one workload record and build the core ``Workload``; errors name the field."""
    r = _validated(WorkloadRecord, rec, "workload")
    groups = tuple(TaskGroup(t.count, dict(t.resources), t.name) for t in r.tasks)
    return Workload(r.id, r.queue, r.submit, r.duration, groups, r.priority, r.preemptible, r.grace,
                    r.requested_duration, r.user, dict(r.labels), dict(r.settings))


def change_from_record(rec: dict[str, Any]) -> ConfigChange:
    r = _validated(ConfigChangeRecord, rec, "queue")
    changes: dict[str, Any] = {}
    for key in ("max", "guaranteed", "weight", "settings"):
        if key in rec:
            if rec[key] is None and key in ("weight", "settings"):
                raise TraceError(f"{key}: null is not a value here (only max and guaranteed can be unset)")
            changes[key] = getattr(r, key)
    for key in r.unset:
        if key not in ("max", "guaranteed"):
            raise TraceError(f"unset: cannot unset {key!r} (only max, guaranteed)")
        changes[key] = None
    if not changes:
        raise TraceError("a config event must change at least one of max, guaranteed, weight, settings")
    return ConfigChange(r.time, r.queue, changes)


def check_changes(cfg: ClusterConfig, changes: Iterable[ConfigChange], where: str) -> None:
    """Refuse config events that set what the config file itself would refuse.

    Each event is checked against its queue as the earlier events (in time order, ties in trace
    order, as the simulator applies them) left it: an unknown queue or resource, or a guarantee
    above the max, is a ``TraceError`` naming the event and the field, raised before any run.
    """
    limits = {name: (q.guaranteed, q.max) for name, q in cfg.queues.items()}
    for ch in sorted(changes, key=lambda c: c.time):
        event = f"{where}: config event at t={ch.time:g}"
        if ch.queue not in limits:
            known = ", ".join(list(limits)[:8])
            raise TraceError(f"{event}: queue: unknown queue {ch.queue!r} (queues: {known})")
        guaranteed, max_ = limits[ch.queue]
        guaranteed = ch.changes.get("guaranteed", guaranteed)
        max_ = ch.changes.get("max", max_)
        problems = queue_limit_problems(cfg.resources, "", guaranteed, max_)
        if problems:
            raise TraceError(f"{event}, queue {ch.queue!r}: {'; '.join(problems)} (after this event)")
        limits[ch.queue] = (guaranteed, max_)


def parse_record(rec: Any) -> Workload | ConfigChange:
    if not isinstance(rec, dict):
        raise TraceError("a trace line must be a JSON object")
    event = rec.get("event", "submit")
    if event == "config":
        return change_from_record(rec)
    if event != "submit":
        raise TraceError(f"event: unknown event {event!r} (submit, config)")
    return workload_from_record(rec)


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for each non-blank, non-comment line."""
    try:
        fh = path.open()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror}") from None
    with fh:
        for lineno, line in enumerate(fh, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            try:
                yield lineno, json.loads(s)
            except json.JSONDecodeError as exc:
                raise TraceError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from None


def load_records(records: Iterable[tuple[str, Any]]) -> tuple[list[Workload], list[ConfigChange]]:
    """Parse (where, record) pairs; the error message starts with ``where`` (file:line)."""
    workloads: list[Workload] = []
    changes: list[ConfigChange] = []
    for where, rec in records:
        try:
            item = parse_record(rec)
        except TraceError as exc:
            raise TraceError(f"{where}: {exc}") from None
        (changes if isinstance(item, ConfigChange) else workloads).append(item)
    return workloads, changes


def load_jsonl(path: Path) -> tuple[list[Workload], list[ConfigChange]]:
    return load_records((f"{path}:{n}", rec) for n, rec in iter_jsonl(path))

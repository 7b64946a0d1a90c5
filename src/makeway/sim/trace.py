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
from typing import Any, Iterable, Iterator, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from makeway.config import Quantity, _format_errors
from makeway.core.model import TaskGroup, Workload
from makeway.errors import TraceError
from makeway.model_settings import trace_settings_problem


class _TaskSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int = Field(default=1, ge=1)
    resources: dict[str, Quantity]
    name: str = ""


class WorkloadRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    event: str = "submit"
    id: str = Field(min_length=1)
    queue: str = Field(min_length=1)
    submit: float = Field(ge=0)
    duration: float = Field(ge=0)
    priority: int = 0
    tasks: list[_TaskSpec] = Field(min_length=1)
    preemptible: bool = True
    grace: float = Field(default=0.0, ge=0)
    requested_duration: Optional[float] = Field(default=None, ge=0)
    user: Optional[str] = None
    labels: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)


class ConfigChangeRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    event: str
    time: float = Field(ge=0)
    queue: str = Field(min_length=1)
    max: Optional[dict[str, Quantity]] = None
    guaranteed: Optional[dict[str, Quantity]] = None
    weight: Optional[float] = Field(default=None, ge=0)
    settings: Optional[dict[str, Any]] = None
    unset: list[str] = Field(default_factory=list)


@dataclass(slots=True)
class ConfigChange:
    """A change of one queue at ``time``: the fields to set (``None`` values unset a limit)."""

    time: float
    queue: str
    changes: dict[str, Any] = field(default_factory=dict)


def workload_from_record(rec: dict[str, Any]) -> Workload:
    """Validate one workload record and build the core ``Workload``; errors name the field."""
    try:
        r = WorkloadRecord.model_validate(rec)
    except ValidationError as exc:
        raise TraceError(_format_errors(exc)) from None
    if r.settings and (problem := trace_settings_problem("workload", r.settings)):  # per-model settings
        raise TraceError(problem)
    groups = tuple(TaskGroup(t.count, dict(t.resources), t.name) for t in r.tasks)
    return Workload(r.id, r.queue, r.submit, r.duration, groups, r.priority, r.preemptible, r.grace,
                    r.requested_duration, r.user, dict(r.labels), dict(r.settings))


def change_from_record(rec: dict[str, Any]) -> ConfigChange:
    try:
        r = ConfigChangeRecord.model_validate(rec)
    except ValidationError as exc:
        raise TraceError(_format_errors(exc)) from None
    if r.settings and (problem := trace_settings_problem("queue", r.settings)):  # per-model settings
        raise TraceError(problem)
    changes: dict[str, Any] = {}
    for key in ("max", "guaranteed", "weight", "settings"):
        if key in rec:
            changes[key] = getattr(r, key)
    for key in r.unset:
        if key not in ("max", "guaranteed"):
            raise TraceError(f"unset: cannot unset {key!r} (only max, guaranteed)")
        changes[key] = None
    if not changes:
        raise TraceError("a config event must change at least one of max, guaranteed, weight, settings")
    return ConfigChange(r.time, r.queue, changes)


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


def workload_to_record(wl: Workload) -> dict[str, Any]:
    rec: dict[str, Any] = {"id": wl.id, "queue": wl.queue, "submit": wl.submit, "duration": wl.duration,
                           "priority": wl.priority,
                           "tasks": [{"count": g.count, "resources": dict(g.resources), **({"name": g.name} if g.name else {})}
                                     for g in wl.groups]}
    if not wl.preemptible:
        rec["preemptible"] = False
    if wl.grace:
        rec["grace"] = wl.grace
    if wl.requested_duration is not None:
        rec["requested_duration"] = wl.requested_duration
    if wl.user:
        rec["user"] = wl.user
    if wl.settings:
        rec["settings"] = dict(wl.settings)
    return rec

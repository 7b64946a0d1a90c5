"""A live job as submitted: the fields of a trace line plus what a real process needs.

The same pydantic record that checks a trace line checks the scheduling fields here, so a job the
service accepts is a workload the simulator would accept; ``command``, ``env`` and ``stop_signal`` are
the live additions. Errors name the field (``tasks.0.resources.gpu: unknown resource``), for a 4xx
body or a CLI line. ``workload_of`` turns a stored spec back into the core's ``Workload``.
"""

from __future__ import annotations

import re
import signal
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from makeway.config import MAX_TIME, ClusterConfig, Int32, _format_errors
from makeway.core.objects import TaskGroup, Workload
from makeway.errors import MakewayError
from makeway.sim.trace import WorkloadRecord

# a task id is "<job>/<group>/<index>" and an attempt id "<task>#<n>": a job id holds neither
JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$")
STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGUSR1", "SIGUSR2", "SIGHUP", "SIGQUIT", "SIGKILL")


class SpecError(MakewayError):
    """A job spec or queue change that cannot be accepted; the message names the field."""


class _LiveFields(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    stop_signal: str = "SIGTERM"
    cwd: Optional[str] = None

    @field_validator("command")
    @classmethod
    def _argv(cls, v: list[str]) -> list[str]:
        if not v[0]:
            raise ValueError("the program (first element) is empty")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for k in v:
            if not k or "=" in k or "\0" in k:
                raise ValueError(f"{k!r} is not a variable name")
            if k.startswith("MAKEWAY_"):
                raise ValueError(f"{k}: MAKEWAY_* variables are set by the agent")
        return v

    @field_validator("stop_signal")
    @classmethod
    def _signal(cls, v: str) -> str:
        name = v.upper()
        if not name.startswith("SIG"):
            name = "SIG" + name
        if name not in STOP_SIGNALS or not hasattr(signal, name):
            raise ValueError(f"{v!r} is not a stop signal ({', '.join(STOP_SIGNALS)})")
        return name


_SCHED_FIELDS = ("id", "queue", "priority", "tasks", "preemptible", "grace", "requested_duration",
                 "user", "labels", "settings")
_LIVE_FIELDS = ("command", "env", "stop_signal", "cwd")


def parse_job(data: Any, cfg: ClusterConfig, job_id: Optional[str] = None) -> dict[str, Any]:
    """Check a submitted job against the cluster config; the normalised spec, or ``SpecError``.

    ``job_id`` is used when the document names none (the server assigns one)."""
    if not isinstance(data, dict):
        raise SpecError("a job must be a JSON/YAML object")
    unknown = sorted(set(data) - set(_SCHED_FIELDS) - set(_LIVE_FIELDS) - {"event", "submit", "duration"})
    if unknown:
        raise SpecError(f"{unknown[0]}: unknown field (job fields: {', '.join(_SCHED_FIELDS + _LIVE_FIELDS)})")
    for key in ("submit", "duration"):
        if key in data:
            raise SpecError(f"{key}: set by the service (submit time) or by the task itself (how long it runs); "
                            "use requested_duration for a limit")
    jid = data.get("id", job_id)
    if jid is None:
        raise SpecError("id: missing")
    if not isinstance(jid, str) or not JOB_ID.match(jid):
        raise SpecError(f"id: {jid!r} is not a job id (letters, digits and ._:@+-, at most 128, no '/' or '#')")
    rec = {k: data[k] for k in _SCHED_FIELDS if k in data}
    rec.update(id=jid, submit=0.0, duration=0.0)
    try:
        r = WorkloadRecord.model_validate(rec)
        live = _LiveFields.model_validate({k: data[k] for k in _LIVE_FIELDS if k in data})
    except ValidationError as exc:
        raise SpecError(_format_errors(exc)) from None
    if r.queue not in cfg.queues:
        raise SpecError(f"queue: unknown queue {r.queue!r} (queues: {', '.join(list(cfg.queues)[:8])})")
    if any(q.parent == r.queue for q in cfg.queues.values()):
        raise SpecError(f"queue: {r.queue!r} is a parent queue; submit to one of its leaves")
    declared = set(cfg.resources)
    for gi, t in enumerate(r.tasks):
        for name, v in t.resources.items():
            if v and name not in declared:
                raise SpecError(f"tasks.{gi}.resources.{name}: unknown resource (declared: {', '.join(cfg.resources)})")
    spec: dict[str, Any] = {
        "id": r.id, "queue": r.queue, "priority": r.priority, "preemptible": r.preemptible,
        "grace": r.grace, "requested_duration": r.requested_duration, "user": r.user,
        "labels": dict(r.labels), "settings": dict(r.settings),
        "tasks": [{"count": t.count, "resources": dict(t.resources), "name": t.name} for t in r.tasks],
        "command": list(live.command), "env": dict(live.env), "stop_signal": live.stop_signal, "cwd": live.cwd,
    }
    return spec


def workload_of(spec: dict[str, Any], submit: float) -> Workload:
    """The core's workload for a stored spec. A live task runs until its process exits, so the
    simulator's ``duration`` is unknown: the requested duration stands in, else the longest time."""
    groups = tuple(TaskGroup(t["count"], dict(t["resources"]), t.get("name", "")) for t in spec["tasks"])
    req = spec.get("requested_duration")
    return Workload(spec["id"], spec["queue"], submit, float(req) if req is not None else MAX_TIME, groups,
                    int(spec.get("priority", 0)), bool(spec.get("preemptible", True)), float(spec.get("grace", 0.0)),
                    req, spec.get("user"), dict(spec.get("labels") or {}), dict(spec.get("settings") or {}))


class _PriorityChange(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    priority: Int32


def parse_priority_change(data: Any) -> int:
    """The body of ``PATCH /v1/jobs/{id}``: ``{"priority": N}``, an integer in the 32-bit range (as a
    Kubernetes priority); anything else is ``SpecError`` naming the field."""
    if not isinstance(data, dict):
        raise SpecError('body: a job change must be a JSON object, e.g. {"priority": 10}')
    unknown = sorted(set(data) - {"priority"})
    if unknown:
        raise SpecError(f"{unknown[0]}: cannot change after submission (only priority can)")
    if "priority" not in data:
        raise SpecError("priority: missing")
    try:
        return _PriorityChange.model_validate(data).priority
    except ValidationError as exc:
        raise SpecError(_format_errors(exc)) from None


def parse_queue_change(data: Any, cfg: ClusterConfig, queue: str, current: tuple) -> dict[str, Any]:
    """A PATCH of a queue's quota, checked like a trace's config event against the queue as it is now
    (``current`` = (guaranteed, max)); the changes to apply, or ``SpecError``."""
    from makeway.config import queue_limit_problems
    from makeway.errors import TraceError
    from makeway.sim.trace import change_from_record

    if queue not in cfg.queues:
        raise SpecError(f"queue: unknown queue {queue!r}")
    if not isinstance(data, dict):
        raise SpecError("a queue change must be a JSON object")
    try:
        ch = change_from_record({**data, "event": "config", "time": 0.0, "queue": queue})
    except TraceError as exc:
        raise SpecError(str(exc)) from None
    guaranteed, max_ = current
    guaranteed = ch.changes.get("guaranteed", guaranteed)
    max_ = ch.changes.get("max", max_)
    problems = queue_limit_problems(cfg.resources, "", guaranteed, max_)
    if problems:
        raise SpecError(f"queue {queue!r}: {'; '.join(problems)} (after this change)")
    return ch.changes

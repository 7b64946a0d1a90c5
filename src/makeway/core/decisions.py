"""Decisions as data: what a scheduling step asks the executor (simulator or service) to do.

Every preemption carries a ``Reason`` that says which model, which rule, who or what triggered it,
and the values that were compared, so ``makeway explain`` can tell the story without re-running.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True, frozen=True)
class Reason:
    model: str
    rule: str
    preemptor: str | None = None
    detail: str = ""
    values: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "rule": self.rule, "preemptor": self.preemptor,
                "detail": self.detail, "values": self.values}


@dataclass(slots=True, frozen=True)
class Start:
    """Start task ``task`` (a task id, see ``model.task_id``) of a workload on ``node``."""

    task: str
    node: str


@dataclass(slots=True, frozen=True)
class Preempt:
    """Preempt the running allocation ``allocation`` (its task id); the task is requeued."""

    allocation: str
    reason: Reason


@dataclass(slots=True, frozen=True)
class Note:
    """Something a model reports that is not an action: a quota-preemption summary, a starvation flag."""

    kind: str
    subject: str
    message: str
    values: dict[str, Any] = field(default_factory=dict)


Decision = Start | Preempt | Note

"""Symphony settings: ``preemption.settings`` (cluster-wide consumer defaults), ``queues.<q>.settings``
(a consumer: its application profile's knobs and session types) and workload ``settings`` (a
session's creation-time attributes). See ``docs/models/symphony.md``.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import AfterValidator, BeforeValidator, Field, StrictInt, StrictStr

from makeway.policies.settings_common import ModelSettings, Settings
from makeway.policies.symphony.rules import (DEFAULT_PRIORITY, DEFAULT_RANK, LOWER_OR_EQUAL, MOST_OVER_ALLOCATED,
                                             normalize_criteria, normalize_scope)

_TRUE, _FALSE = ("true", "yes", "1", "y"), ("false", "no", "0", "n")


def _flag(v: Any) -> Any:
    """Profiles write ``preemptive="true"``; the model reads true/yes/1/y as true, so does this."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _TRUE + _FALSE:
        return v.strip().lower() in _TRUE
    raise ValueError(f"{v!r} is not a boolean (true, false, yes, no, 1, 0)")


def _checked(normalize):
    def check(v: str) -> str:
        normalize(v)  # raises ValueError naming the allowed values
        return v
    return AfterValidator(check)


SymFlag = Annotated[bool, BeforeValidator(_flag)]
Rank = Annotated[StrictInt, Field(ge=1, le=10000)]
Scope = Annotated[StrictStr, _checked(normalize_scope)]
Criteria = Annotated[StrictStr, _checked(normalize_criteria)]


class SessionType(Settings):
    preemptive: SymFlag = False
    preemptionRank: Rank = DEFAULT_RANK
    priority: Optional[Rank] = Field(default=None, description=f"default: the workload's priority if >= 1, else {DEFAULT_PRIORITY}")


class SymphonySettings(ModelSettings):
    """``preemption.settings`` for ``model: symphony``; consumer knobs here apply where a queue sets none."""

    preemptionScope: Optional[Scope] = LOWER_OR_EQUAL
    preemptionCriteria: Optional[Criteria] = MOST_OVER_ALLOCATED
    slotSharing: Optional[StrictStr] = Field(default="none", pattern="^(none|host)$")
    slotResource: Optional[StrictStr] = Field(default=None, description="default: slots if declared, else cpu")


class SymphonyQueueSettings(Settings):
    """``queues.<q>.settings``: a consumer; knobs are inherited from ancestor queues."""

    preemptionScope: Optional[Scope] = Field(default=None, description="default: the parent's, else preemption.settings'")
    preemptionCriteria: Optional[Criteria] = Field(default=None, description="default: the parent's, else preemption.settings'")
    slotSharing: Optional[StrictStr] = Field(default=None, pattern="^(none|host)$",
                                             description="default: the parent's, else preemption.settings'")
    sessionTypes: Optional[dict[str, SessionType]] = None
    applicationName: Optional[StrictStr] = Field(default=None, description="informational (importer)")
    consumerId: Optional[StrictStr] = Field(default=None, description="informational (importer)")
    policy: Optional[StrictStr] = Field(default=None, description="informational: the model always uses R_Proportion")
    resourceGroupName: Optional[StrictStr] = Field(default=None, description="informational (importer)")


class SymphonyWorkloadSettings(Settings):
    """Workload ``settings`` in a trace: a session's attributes, over its session type's."""

    sessionType: Optional[StrictStr] = None
    preemptive: Optional[SymFlag] = None
    preemptionRank: Optional[Rank] = None
    priority: Optional[Rank] = None

"""YuniKorn settings: ``preemption.settings`` (the partition's preemption flags),
``queues.<q>.settings`` (queue ``properties``, strings as in YuniKorn's queues.yaml) and workload
``settings`` in the trace. See ``docs/models/yunikorn.md``.

YuniKorn falls back to a default when a property's value cannot be read; here an unreadable value
is an error, since in a simulation it is almost always a typo whose silent default would change the
outcome. Other property names are kept, as YuniKorn keeps them, unless they look like a misspelling
of one the model reads.
"""

from __future__ import annotations

import difflib
import math
from typing import Annotated, Any, Optional

from pydantic import AfterValidator, ConfigDict, Field, StrictStr, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from makeway.policies.settings_common import Flag, FlagWord, ModelSettings, Settings
from makeway.policies.yunikorn.common import INT32_MAX, INT32_MIN, parse_go_duration_us


def _word(*allowed: str):
    def check(v: str) -> str:
        if v.strip().lower() not in allowed:
            raise ValueError(f"{v!r} is not one of {', '.join(allowed)}")
        return v
    return AfterValidator(check)


def _duration(minimum_us: int, what: str):
    def check(v: Any) -> Any:
        finite = not isinstance(v, float) or math.isfinite(v)
        us = parse_go_duration_us(v) if finite and not isinstance(v, bool) else None
        if us is None:
            raise ValueError(f"{v!r} is not a Go duration (30s, 1m30s, 500ms) or a number of seconds")
        if us < minimum_us:
            raise ValueError(f"{v!r} {what}")
        return v
    return AfterValidator(check)


def _int32(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise ValueError(f"{v!r} is not an integer")
    try:
        n = int(str(v).strip())
    except ValueError:
        raise ValueError(f"{v!r} is not an integer") from None
    if not INT32_MIN <= n <= INT32_MAX:
        raise ValueError(f"{v!r} is outside the int32 range")
    return v


# a string as YuniKorn writes it, or a number (seconds / the integer) as a YAML file may
PreemptionDelay = Annotated[Any, _duration(1, "must be above 0 (YuniKorn's default is 30s)")]
QuotaDelay = Annotated[Any, _duration(0, "is negative (0 turns quota preemption off)")]
Offset = Annotated[Any, AfterValidator(_int32)]


class Properties(Settings):
    """Queue properties (``queues.<q>.settings.properties``); names are YuniKorn's dotted keys.

    YuniKorn keeps any property (an open string map, shown by its REST API and inherited), so a name
    the model does not read is kept, unless it looks like a misspelling of one it reads
    (``preemption.dealy``): then it is an error, as an unknown key anywhere else.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=False)

    @model_validator(mode="before")
    @classmethod
    def _other_properties(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = [f.alias for f in cls.model_fields.values()]
        errors = []
        for key, value in data.items():
            if key in known:
                continue
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.8)
            if close:
                errors.append(InitErrorDetails(type=PydanticCustomError(
                    "unknown_property", "unknown field (did you mean {name}?)", {"name": close[0]}),
                    loc=(key,), input=value))
            elif not isinstance(value, (str, int, float, bool)):
                errors.append(InitErrorDetails(type=PydanticCustomError(
                    "property_value", "a property value must be a string"), loc=(key,), input=value))
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return data

    preemption_policy: Optional[Annotated[StrictStr, _word("", "default", "fence", "disabled")]] = Field(
        default="default", alias="preemption.policy")
    preemption_delay: Optional[PreemptionDelay] = Field(default="30s", alias="preemption.delay")
    quota_preemption_delay: Optional[QuotaDelay] = Field(default="0s", alias="quota.preemption.delay")
    priority_policy: Optional[Annotated[StrictStr, _word("", "default", "fence")]] = Field(
        default="default", alias="priority.policy")
    priority_offset: Optional[Offset] = Field(default="0", alias="priority.offset")
    application_sort_policy: Optional[Annotated[StrictStr, _word("fifo", "fair", "stateaware")]] = Field(
        default="fifo", alias="application.sort.policy")
    application_sort_priority: Optional[Annotated[StrictStr, _word("enabled", "disabled")]] = Field(
        default="enabled", alias="application.sort.priority")


class YuniKornSettings(ModelSettings):
    """``preemption.settings`` for ``model: yunikorn`` (the partition's ``preemption`` block)."""

    preemptionEnabled: Flag = True
    quotaPreemptionEnabled: Optional[FlagWord] = False
    quotapreemptionenabled: Optional[FlagWord] = Field(default=None, description="lower-case spelling of quotaPreemptionEnabled")


class YuniKornQueueSettings(Settings):
    """``queues.<q>.settings``."""

    properties: Optional[Properties] = None
    parent: Flag = Field(default=False, description="YuniKorn's `parent: true` (a parent queue without children); informational")


class YuniKornWorkloadSettings(Settings):
    """Workload ``settings`` in a trace (the shim's pod annotations and flags)."""

    allowPreemptOther: Flag = True
    allowPreemption: Flag = True
    originator: Flag = False
    requiredNode: Optional[StrictStr] = None


__all__ = ["Properties", "YuniKornSettings", "YuniKornQueueSettings", "YuniKornWorkloadSettings"]

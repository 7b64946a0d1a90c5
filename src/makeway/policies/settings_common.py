"""Building blocks of the per-model settings classes (``<model>_settings`` / ``<model>/settings``).

Every class forbids unknown keys, so a typo (``withinClusterQeue``) is an error that names its
path instead of a setting silently left at its default. Field names are the native names (camelCase
for Kueue, YuniKorn and Symphony, snake_case for YTsaurus), so the error shows what the user wrote.

The classes only *check* settings: models still receive the mapping as written, so a default here
documents the model's behaviour (``docs/models/*.md``) and must equal what the model does.
"""

from __future__ import annotations

import functools
import math
from typing import Annotated, Any, Optional

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from makeway.core.resources import Number, QuantityError, parse_quantity


class Settings(BaseModel):
    """A settings block: unknown keys are errors; ``None`` means "not set" wherever a model allows it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)


def _finite(v: float) -> float:
    if not math.isfinite(v):
        raise ValueError(f"{v!r} is not a finite number")
    return v


def _quantity(value: Any) -> Number:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None


def _bool_word(value: Any) -> Any:
    """YuniKorn and Symphony write flags as strings; ``"true"``/``"false"`` (any case) are bools."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


Finite = Annotated[float, AfterValidator(_finite)]
NonNegative = Annotated[float, Field(ge=0), AfterValidator(_finite)]
Positive = Annotated[float, Field(gt=0), AfterValidator(_finite)]
Fraction = Annotated[float, Field(ge=0, le=1), AfterValidator(_finite)]
Seconds = NonNegative  # a duration in seconds, as makeway's own configs and the importers write them
Quantity = Annotated[Number, BeforeValidator(_quantity)]
ResourceMap = dict[str, Quantity]
OptionalResourceMap = dict[str, Optional[Quantity]]
Flag = StrictBool
FlagWord = Annotated[StrictBool, BeforeValidator(_bool_word)]


class ModelSettings(Settings):
    """Model-level settings every model accepts, besides its own."""

    caches: Flag = Field(default=True, description="reuse work between calls (false: the reference path, "
                                                    "every pass computed from scratch; same decisions, slower)")


@functools.cache
def field_names(cls: type[BaseModel]) -> tuple[str, ...]:
    """The keys a settings class accepts (aliases where a field has one), in declaration order."""
    return tuple(f.alias or name for name, f in cls.model_fields.items())

"""What a case loader returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class CaseResult:
    """Outcome of one case: ``ok`` plus what was expected and what the code produced."""

    ok: bool
    expected: Any = None
    got: Any = None
    message: str = ""


def compare(expected: Any, got: Any, message: str = "") -> CaseResult:
    return CaseResult(expected == got, expected, got, message)

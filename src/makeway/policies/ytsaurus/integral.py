"""Integral guarantees (SEMANTICS §2.9): burst and relaxed pools spending an accumulated volume."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class IntegralConfig:
    smooth_period: float = 60.0
    saturation_period: float = 86400.0
    relaxed_multiplier: float = 3.0
    elapsed: float | None = None

    def burst_shares(self, tree, attrs) -> dict:
        return {}

    def relaxed_shares(self, tree, attrs) -> None:
        return None

    def after_update(self, tree, attrs) -> None:
        return None

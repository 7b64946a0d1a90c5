"""Settings of the first-fit model (``none``/``first-fit``/``fifo``): only the common ``caches``;
queues and workloads carry nothing it reads."""

from __future__ import annotations

from makeway.policies.settings_common import ModelSettings


class FirstFitSettings(ModelSettings):
    """``preemption.settings`` for the first-fit model."""

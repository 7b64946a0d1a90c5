"""Settings of the HPC batch modes (``fifo-strict``, ``easy-backfill``) and of the default model
(``none``/``fifo``): only ``preemption.settings.placement`` for the batch modes; nothing else is read.
"""

from __future__ import annotations

from typing import Literal

from makeway.policies.settings_common import ModelSettings, Settings


class BatchSettings(ModelSettings):
    """``preemption.settings`` for ``fifo-strict`` and ``easy-backfill``."""

    placement: Literal["first-fit", "best-fit"] = "first-fit"


class NoSettings(Settings):
    """A model that reads no settings at this level: every key is unknown."""

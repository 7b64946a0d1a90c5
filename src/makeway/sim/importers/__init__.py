"""Trace importers: real cluster logs streamed as makeway trace records (plain dicts, JSONL schema).

Formats: ``jsonl`` (makeway's own), ``swf`` (Parallel Workloads Archive), ``google2011`` (Borg
task_events), ``philly`` (Microsoft Philly job table), ``alibaba`` (Alibaba GPU v2023 pod list).
Each reader streams its file (gzip read directly), yields records sorted by submit time, skips a
bad line with a ``file:line: problem`` warning (or raises ``TraceError`` in strict mode), and
counts what it did in ``ImportStats``. The mapping choices of each format are documented in its
module docstring.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

from makeway.errors import TraceError
from makeway.sim.importers._common import ImportStats
from makeway.sim.importers.detect import FORMATS, detect_format

_WITH_CLUSTER = ("swf", "philly", "alibaba")  # formats whose module's ``cluster`` describes the machine


def _module(name: str) -> ModuleType:
    """The format's reader module, imported on first use: a run reads one format."""
    return importlib.import_module(f"makeway.sim.importers.{name}")


def _format(path: Path, fmt: str | None) -> str:
    if fmt is None:
        return detect_format(path)
    if fmt not in FORMATS:
        raise TraceError(f"unknown trace format {fmt!r} (known: {', '.join(FORMATS)})")
    return fmt


def read_trace(path: Path | str, fmt: str | None = None, *, strict: bool = False,
               stats: ImportStats | None = None, **options: Any) -> Iterator[dict[str, Any]]:
    """Stream the records of a trace, sorted by submit time (config events by their time).

    ``options`` are format specific (``queue_by`` for swf/google2011; ``cpu_scale``,
    ``memory_scale`` for google2011). Problems are checked lazily, as the iterator is consumed.
    """
    p = Path(path)
    name = _format(p, fmt)
    try:
        return _module(name).read(p, strict=strict, stats=stats, **options)
    except TypeError as exc:
        raise TraceError(f"{name}: bad option: {exc}") from None


def cluster_from_trace(path: Path | str, fmt: str | None = None, **options: Any) -> dict[str, Any] | None:
    """A makeway config dict for the cluster the trace describes, or None when it describes none.

    The config has model ``none``; its queues cover every queue the records of ``read_trace``
    name (given the same ``options``, e.g. SWF ``queue_by``).
    """
    p = Path(path)
    name = _format(p, fmt)
    if name not in _WITH_CLUSTER:
        return None
    try:
        return _module(name).cluster(p, **options)
    except TypeError as exc:
        raise TraceError(f"{name}: bad option: {exc}") from None


__all__ = ["FORMATS", "ImportStats", "cluster_from_trace", "detect_format", "read_trace"]

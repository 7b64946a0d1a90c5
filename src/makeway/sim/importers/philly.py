"""Microsoft Philly job table importer (``timestamp,duration,num_gpus,gpu_time,cluster``).

Mapping, and why:

* id ``philly-<line>`` (the table has no job id; the line number is stable); ``submit`` = seconds
  since the earliest submit in the file; ``duration`` = run time; ``queue`` = virtual cluster
  (the tenant); ``priority`` 0 (Philly has none).
* GPUs: Philly servers have 8 GPUs (``GPUS_PER_NODE``), so a job of ``g`` GPUs becomes one task of
  ``g`` GPUs when ``g <= 8``, ``g / 8`` tasks of 8 GPUs when it is a multiple of 8, and ``g``
  one-GPU tasks otherwise: a gang the models place all or nothing.
* The rows are not in time order: compact tuples are collected and sorted (82k rows, a few MB).

The cluster (``cluster``) comes from ``philly_vc.csv`` beside the trace: one queue per virtual
cluster with ``guaranteed`` = its node count x 8 GPUs, nodes = the sum of the VC sizes; VCs that
appear in the trace without a size get a queue without guarantee.
"""

from __future__ import annotations

import csv
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from makeway.config import MAX_TASKS, MAX_TIME
from makeway.sim.importers._common import (ImportStats, Reporter, finite, numbered_lines, open_text, workload,
                                          wrong_width)

GPUS_PER_NODE = 8
HEADER = ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"]


def gang(gpus: int) -> list[dict[str, Any]]:
    if gpus <= GPUS_PER_NODE:
        return [{"count": 1, "resources": {"gpu": gpus}}]
    if gpus % GPUS_PER_NODE == 0:
        return [{"count": gpus // GPUS_PER_NODE, "resources": {"gpu": GPUS_PER_NODE}}]
    return [{"count": gpus, "resources": {"gpu": 1}}]


_STAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})")


def utc_seconds(text: str, days: dict[str, float]) -> float:
    """``YYYY-MM-DD HH:MM:SS`` in UTC as POSIX seconds, as ``datetime.strptime`` reads it, with its
    ValueError on anything else. A table of 82k rows spans a few hundred days, so a date is read
    once (kept in ``days``) and the time of day added: strptime on every row was most of the
    import. Only the exact two-digit shape takes that way; the rest goes to strptime."""
    m = _STAMP.fullmatch(text)
    if m is not None:
        h, mi, sec = int(m[2]), int(m[3]), int(m[4])
        if h < 24 and mi < 60 and sec < 60:
            day = days.get(m[1])
            if day is None:
                day = days[m[1]] = datetime.strptime(m[1], "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
            return day + (h * 3600 + mi * 60 + sec)
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def _rows(path: Path, rep: Reporter) -> Iterator[tuple[float, int, float, int, str]]:
    lines = numbered_lines(path, rep)
    days: dict[str, float] = {}
    for lineno, line in lines:
        if lineno == 1 and line.startswith("timestamp"):
            continue
        if not line.strip():
            continue
        cols = line.split(",")
        if len(cols) != len(HEADER):
            rep.bad(lineno, wrong_width(len(HEADER), len(cols)))
            continue
        try:
            ts = utc_seconds(cols[0], days)
        except ValueError:
            rep.bad(lineno, f"timestamp {cols[0]!r} is not YYYY-MM-DD HH:MM:SS")
            continue
        try:
            duration = float(cols[1])
            gpus = int(float(cols[2]))
            if not finite(duration):
                raise ValueError(duration)
        except (ValueError, OverflowError):
            rep.bad(lineno, f"duration {cols[1]!r} or num_gpus {cols[2]!r} is not a number")
            continue
        if duration < 0 or gpus <= 0 or not cols[4] or duration > MAX_TIME or gpus > MAX_TASKS:
            rep.bad(lineno, f"duration {cols[1]} must be in 0..{MAX_TIME:g}, num_gpus {cols[2]} in 1..{MAX_TASKS}, "
                            "cluster set")
            continue
        yield ts, lineno, duration, gpus, cols[4].strip()


def read(path: Path, *, strict: bool = False, stats: ImportStats | None = None) -> Iterator[dict[str, Any]]:
    stats = stats if stats is not None else ImportStats()
    rep = Reporter(path, strict, stats)
    rows = sorted(_rows(path, rep))
    if not rows:
        return
    t0 = rows[0][0]
    for ts, lineno, duration, gpus, vc in rows:
        stats.records += 1
        yield workload(f"philly-{lineno}", vc, ts - t0, duration, gang(gpus))


def _vc_sizes(path: Path) -> dict[str, int]:
    vc_file = path.with_name("philly_vc.csv")
    sizes: dict[str, int] = {}
    if not vc_file.exists():
        return sizes
    with open_text(vc_file) as fh:
        for row in csv.DictReader(fh):
            try:
                sizes[row["vc"].strip()] = int(row["node num"])
            except (KeyError, ValueError, AttributeError):
                continue
    return sizes


def cluster(path: Path) -> dict[str, Any] | None:
    sizes = _vc_sizes(path)
    if not sizes:
        return None
    seen = sorted({row[4] for row in _rows(path, Reporter(path, False, ImportStats()))} | set(sizes))
    queues: dict[str, Any] = {"root": {}}
    for vc in seen:
        spec: dict[str, Any] = {"parent": "root"}
        if vc in sizes:
            spec["guaranteed"] = {"gpu": sizes[vc] * GPUS_PER_NODE}
        queues[vc] = spec
    return {"name": "philly", "resources": ["gpu"],
            "nodes": [{"name": "philly", "count": sum(sizes.values()), "capacity": {"gpu": GPUS_PER_NODE}}],
            "queues": queues, "preemption": {"model": "none", "settings": {}}}

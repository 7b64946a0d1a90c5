"""Guess a trace's format from its name and a peek at its first lines.

The name decides when it is unambiguous (``.swf``, ``task_events``, ``.jsonl``); otherwise the
first non-empty line does (an SWF ``;`` header or 18 numbers, a CSV header we know, a JSON
object). Guessing wrong silently would import garbage, so anything else is a ``TraceError``.
"""

from __future__ import annotations

from pathlib import Path

from makeway.errors import TraceError
from makeway.sim.importers._common import numbered_lines

FORMATS = ("jsonl", "swf", "google2011", "philly", "alibaba")


def _first_line(path: Path) -> str:
    for _, line in numbered_lines(path):
        if line.strip():
            return line.strip()
    return ""


def detect_format(path: Path | str) -> str:
    p = Path(path)
    try:
        p.stat()
    except FileNotFoundError:
        raise TraceError(f"{p}: no such file") from None
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte in it
        raise TraceError(f"{_shown(p)}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if p.is_dir():
        if (p / "task_events").is_dir() or any(x.name.startswith("part-") for x in p.iterdir()):
            return "google2011"
        raise TraceError(f"{p}: a directory is a trace only for google2011 (task_events/part-*.csv.gz)")
    if not p.exists():
        raise TraceError(f"{p}: no such file")
    name = p.name.lower()
    stem = name[:-3] if name.endswith(".gz") else name
    if stem.endswith(".swf"):
        return "swf"
    if stem.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if "task_events" in str(p) or (stem.startswith("part-") and stem.endswith(".csv")):
        return "google2011"
    first = _first_line(p)
    if first.startswith("timestamp,duration,num_gpus"):
        return "philly"
    if first.startswith("name,cpu_milli,memory_mib,num_gpu"):
        return "alibaba"
    if first.startswith("sn,cpu_milli"):
        raise TraceError(f"{p}: an Alibaba node list describes a cluster, not a trace; pass the pod list")
    if first.startswith("{"):
        return "jsonl"
    if first.startswith(";") or (len(first.split()) == 18 and all(_isnum(x) for x in first.split())):
        return "swf"
    cols = first.split(",")
    if len(cols) == 13 and all(_isnum(x) or x == "" for x in (cols[0], cols[3], cols[5], cols[8])):
        return "google2011"
    raise TraceError(f"{p}: unknown trace format (known: {', '.join(FORMATS)}); pass the format explicitly")


def _shown(p: Path) -> str:
    text = str(p)
    return text if len(text) <= 120 else text[:117] + "..."


def _isnum(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False

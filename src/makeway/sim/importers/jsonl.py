"""The makeway JSONL trace itself, read with the same streaming/warning rules as the foreign formats.

Each line is parsed and validated (with the simulator's own record schema when available, so the
importer never accepts what the simulator would refuse). Config-change events pass through as
``{"event": "config", ...}`` ordered by their ``time`` among the workloads' ``submit`` times.
A sorted file is streamed; an unsorted one is sorted as compact (time, line, byte offset)
tuples and re-read by offset (plain files) or from kept lines (gzip).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from makeway.errors import TraceError
from makeway.sim.importers._common import ImportStats, Reporter, numbered_lines, quiet

from makeway.config import check_shape

try:
    from makeway.sim.trace import parse_record as _parse_record
except ImportError:  # pragma: no cover - the simulator module is optional for importing
    _parse_record = None


def _validate(rec: Any) -> str | None:
    """None when the record is valid, else the problem (the simulator's schema when importable)."""
    if _parse_record is not None:
        try:
            _parse_record(rec)
        except TraceError as exc:
            return str(exc)
        return None
    if not isinstance(rec, dict):
        return "a trace line must be a JSON object"
    if rec.get("event") == "config":
        return None if isinstance(rec.get("queue"), str) and isinstance(rec.get("time"), (int, float)) \
            else "config event needs queue and time"
    for key, typ in (("id", str), ("queue", str), ("submit", (int, float)), ("duration", (int, float)),
                     ("tasks", list)):
        if not isinstance(rec.get(key), typ):
            return f"{key}: missing or wrong type"
    return None


def _time(rec: dict[str, Any]) -> float:
    return float(rec["time"] if rec.get("event") == "config" else rec["submit"])


def loads(s: str) -> tuple[Any, str | None]:
    """(parsed JSON, None) or (None, the problem): also for what ``json`` raises beside
    ``JSONDecodeError`` (an integer of 5,000 digits, nesting deep enough to exhaust the stack)."""
    try:
        rec = json.loads(s)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} (truncated line?)"
    except RecursionError:
        return None, "invalid JSON: nested too deep"
    except ValueError as exc:
        return None, f"invalid JSON: {str(exc).splitlines()[0][:120]}"
    try:
        check_shape(rec, "record", TraceError)
    except TraceError as exc:
        return None, str(exc)
    return rec, None


def _parsed(path: Path, rep: Reporter) -> Iterator[tuple[int, dict[str, Any], str]]:
    first_line: dict[str, int] = {}
    for lineno, line in numbered_lines(path, rep):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        rec, problem = loads(s)
        if problem is None:
            problem = _validate(rec)
        if problem is not None:
            rep.bad(lineno, problem)
            continue
        if rec.get("event", "submit") == "submit":
            seen = first_line.setdefault(rec["id"], lineno)
            if seen != lineno:
                raise TraceError(f"{path}:{lineno}: id: workload {_short(rec['id'])} is also on line {seen} "
                                 "(workload ids must be unique)")
        yield lineno, rec, line


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def _sorted_on_disk(path: Path) -> bool:
    last = float("-inf")
    for _, line in numbered_lines(path, quiet(path)):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        rec, problem = loads(s)
        try:
            t = _time(rec)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if t < last:
            return False
        last = t
    return True


def read(path: Path, *, strict: bool = False, stats: ImportStats | None = None) -> Iterator[dict[str, Any]]:
    stats = stats if stats is not None else ImportStats()
    rep = Reporter(path, strict, stats)
    if _sorted_on_disk(path):
        for _, rec, _ in _parsed(path, rep):
            yield _count(rec, stats)
        return
    keep_lines = path.suffix == ".gz"
    index: list[tuple[float, int, Any]] = []
    if keep_lines:
        for lineno, rec, line in _parsed(path, rep):
            index.append((_time(rec), lineno, line))
        index.sort(key=lambda t: (t[0], t[1]))
        for _, _, line in index:
            yield _count(json.loads(line), stats)
        return
    offsets: dict[int, int] = {}
    with path.open("rb") as fh:
        pos, lineno = 0, 0
        for raw in fh:
            lineno += 1
            offsets[lineno] = pos
            pos += len(raw)
    for lineno, rec, _ in _parsed(path, rep):
        index.append((_time(rec), lineno, offsets[lineno]))
    offsets.clear()
    index.sort(key=lambda t: (t[0], t[1]))
    with path.open("rb") as fh:
        for _, _, off in index:
            fh.seek(off)
            yield _count(json.loads(fh.readline()), stats)


def _count(rec: dict[str, Any], stats: ImportStats) -> dict[str, Any]:
    if rec.get("event") == "config":
        stats.events += 1
    else:
        stats.records += 1
    return rec

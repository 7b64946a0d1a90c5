"""Shared plumbing of the trace importers: statistics, problem reporting, opening (gzip) text files.

Real traces are dirty (truncated last lines, -1 fields, rows out of order), so every importer
reports a bad line the same way: ``file:line: problem``, skipped with a warning by default, fatal
with ``strict``. Keeping this in one place makes the warnings of all formats look alike.
"""

from __future__ import annotations

import gzip
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

from makeway.errors import TraceError

MAX_STORED_WARNINGS = 100


@dataclass(slots=True)
class ImportStats:
    """What an import did. ``warnings`` keeps the first 100 messages; ``warning_count`` counts all.

    ``skipped`` counts bad lines (malformed, impossible values). ``dropped`` counts well-formed
    records deliberately left out, by reason (a job cancelled before it started has no demand to
    replay), so the numbers add up against the source: lines = records + skipped + dropped + merged.
    ``notes`` counts records a mapping choice affected (kept, not skipped), by what.
    """

    records: int = 0
    skipped: int = 0
    warnings: list[str] = field(default_factory=list)
    warning_count: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    merged: int = 0
    events: int = 0
    notes: dict[str, int] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        self.warning_count += 1
        if len(self.warnings) < MAX_STORED_WARNINGS:
            self.warnings.append(message)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    def count(self, what: str) -> None:
        """A mapping choice that changed records without skipping them (SWF processors), counted."""
        self.notes[what] = self.notes.get(what, 0) + 1


class Reporter:
    """Turns a problem on a line into a warning (lenient) or a ``TraceError`` (strict)."""

    __slots__ = ("file", "strict", "stats")

    def __init__(self, file: Path | str, strict: bool, stats: ImportStats):
        self.file = str(file)
        self.strict = strict
        self.stats = stats

    def bad(self, line: int | str, problem: str) -> None:
        message = f"{self.file}:{line}: {problem}"
        if self.strict:
            raise TraceError(message)
        self.stats.skipped += 1
        self.stats.warn(message)

    def note(self, line: int | str, problem: str) -> None:
        """A warning that does not skip anything (strict mode does not fail on it)."""
        self.stats.warn(f"{self.file}:{line}: {problem}")


def open_text(path: Path) -> IO[str]:
    """Open a plain or gzip text file for streaming; missing files become a ``TraceError``."""
    try:
        if path.suffix == ".gz":
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace", newline="")
        return path.open("r", encoding="utf-8", errors="replace", newline="")
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def numbered_lines(path: Path, rep: Reporter | None = None) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its newline).

    A truncated or corrupt gzip stream ends the file: reported through ``rep`` (a warning, or a
    ``TraceError`` when strict) so the records read so far survive, or raised without ``rep``.
    """
    with open_text(path) as fh:
        lineno = 0
        try:
            for lineno, line in enumerate(fh, 1):
                yield lineno, line.rstrip("\r\n")
        except (EOFError, gzip.BadGzipFile, OSError, UnicodeDecodeError) as exc:
            message = f"truncated or corrupt file, reading stopped: {exc}"
            if rep is None:
                raise TraceError(f"{path}:{lineno + 1}: {message}") from None
            rep.bad(lineno + 1, message)


def wrong_width(expected: int, got: int, unit: str = "columns") -> str:
    """The problem with a row of the wrong width; the hint differs because a short row is usually a
    cut-off last line and a long one a stray separator."""
    hint = "truncated line?" if got < expected else f"extra {unit}?"
    return f"expected {expected} {unit}, got {got} ({hint})"


def quiet(path: Path | str) -> Reporter:
    """A lenient reporter whose findings are thrown away (first passes that only peek)."""
    return Reporter(path, False, ImportStats())


def finite(*values: float | None) -> bool:
    """True when every given number (None skipped) is finite: ``float()`` reads ``nan`` and ``1e400``."""
    return all(v is None or math.isfinite(v) for v in values)


def num(value: float) -> int | float:
    """Integral floats become ints, so JSON output stays short and exact (``600`` not ``600.0``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def workload(id: str, queue: str, submit: float, duration: float, tasks: list[dict[str, Any]],
             **optional: Any) -> dict[str, Any]:
    """A trace record in the makeway JSONL schema; optional keys with value None are left out."""
    rec: dict[str, Any] = {"id": id, "queue": queue, "submit": num(submit), "duration": num(duration),
                           "priority": optional.pop("priority", 0), "tasks": tasks}
    for key, value in optional.items():
        if value is not None:
            rec[key] = num(value) if isinstance(value, float) else value
    return rec

"""The sweep's table (one row per cell, grid order) as CSV and as a rich table, and its report.

Every number comes from the run's ``summary`` (``sim/metrics.py``); the report is
``reports.compare.render_compare`` over the cells, so a sweep and ``makeway compare`` draw the
same figures. Wall time is left out: the table must not depend on where or how fast cells ran.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from makeway.reports import derive as d
from makeway.sweep.grid import Grid, fmt_value

_FIXED = ("jobs_submitted", "jobs_finished", "wait_mean_s", "wait_p95_s", "wait_p99_s", "bounded_slowdown_mean",
          "makespan_s", "preemptions", "preempted_workloads", "jain_mean", "starvation_s", "gpu_hours_wasted")


def _resources(records: list[dict[str, Any]], field: str) -> list[str]:
    return sorted({k for r in records for k in (d.summary(r["results"]).get(field) or {})})


def table_rows(grid: Grid, records: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Header and raw rows (numbers unformatted) for the records, in grid order."""
    util = _resources(records, "utilisation")
    wasted = _resources(records, "wasted_resource_seconds")
    axes = list(dict.fromkeys(k for r in records for k in r["settings"]))
    header = ["cell", "config", "trace", "model", *[f"setting {k}" for k in axes], *_FIXED,
              *[f"utilisation {r}" for r in util], *[f"wasted {r} x s" for r in wasted]]
    rows = []
    for rec in records:
        s = d.summary(rec["results"])
        row = [rec["key"], rec["config"], rec["trace"] or "", rec["model"],
               *[fmt_value(rec["settings"][k]) if k in rec["settings"] else "" for k in axes],
               *[s.get(k) for k in _FIXED],
               *[(s.get("utilisation") or {}).get(r) for r in util],
               *[(s.get("wasted_resource_seconds") or {}).get(r) for r in wasted]]
        rows.append(row)
    return header, rows


def to_csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow(["" if v is None else (repr(v) if isinstance(v, float) else v) for v in row])
    return buf.getvalue()


def _dur(v: Any) -> str:
    s = float(v)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if abs(s) >= size:
            return f"{s / size:.1f} {unit}"
    return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


def _big(v: Any) -> str:
    x = float(v)
    for suffix, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.3g}{suffix}"
    return f"{x:.3g}"


def _fmt(col: str, v: Any) -> str:
    if v is None or v == "":
        return "-"
    if col.startswith("setting "):
        return str(v)
    if col.endswith("_s"):
        return _dur(v)
    if col.startswith("utilisation "):
        return f"{float(v):.1%}"
    if col.startswith("wasted "):
        return d.fmt_amount(col.split()[1], v) if col.split()[1] in ("memory", "storage") else _big(v)
    if col in ("jain_mean", "bounded_slowdown_mean", "gpu_hours_wasted"):
        return f"{float(v):.3g}"
    return str(v)


_SHORT = {"jobs_finished": "done", "wait_mean_s": "wait mean", "wait_p95_s": "wait p95",
          "bounded_slowdown_mean": "slowdown", "preemptions": "preempt", "preempted_workloads": "victims",
          "jain_mean": "Jain", "gpu_hours_wasted": "GPU h lost"}


def _title(name: str) -> str:
    if name.startswith("utilisation "):
        return "util " + name.split()[1]
    if name.startswith("wasted "):
        return "lost " + name.split()[1] + "·s"
    return _SHORT.get(name, name.removeprefix("setting "))


def rich_table(grid: Grid, header: list[str], rows: list[list[Any]]):
    """The printed table (the CSV has every column): cell key, wait p99, makespan and starvation
    left out; trace and config only when the grid varies them; durations in s/m/h/d."""
    from rich.table import Table

    skip = {"cell", "jobs_submitted", "wait_p99_s", "makespan_s", "starvation_s"}
    skip |= ({"config"} if not grid.multi_config else set()) | ({"trace"} if not grid.multi_trace else set())
    skip |= {c for i, c in enumerate(header) if c == "gpu_hours_wasted" and not any(r[i] for r in rows)}
    settings = [i for i, c in enumerate(header) if c.startswith("setting ")]
    merged = len(settings) > 2  # many axes: one "settings" column of k=v, not a column per key
    if merged:
        skip |= {header[i] for i in settings}
    cols = [i for i, c in enumerate(header) if c not in skip]
    table = Table(title=f"makeway sweep: {grid.name} ({len(rows)} cells)", title_justify="left")
    for i in cols:
        name = header[i]
        text = i < 4 or name.startswith("setting ")
        table.add_column(_title(name), justify="left" if text else "right", no_wrap=not text)
        if merged and name == "model":
            table.add_column("settings", justify="left")
    for row in rows:
        cells = []
        for i in cols:
            cells.append(_fmt(header[i], row[i]) if i >= 4 else str(row[i]).rsplit("/", 1)[-1])
            if merged and header[i] == "model":
                cells.append(" ".join(f"{header[j].removeprefix('setting ')}={row[j]}" for j in settings if row[j] != ""))
        table.add_row(*cells)
    return table


def labels(grid: Grid, records: list[dict[str, Any]]) -> list[str]:
    out = []
    for rec in records:
        parts = []
        if grid.multi_config:
            parts.append(rec["config"])
        if grid.multi_trace:
            parts.append((rec["trace"] or "").rsplit("/", 1)[-1])
        parts.append(rec["model"])
        parts += [f"{k}={fmt_value(v)}" for k, v in rec["settings"].items()]
        out.append(" ".join(parts))
    return out


def render_report(grid: Grid, records: list[dict[str, Any]]) -> str:
    from makeway.reports.compare import render_compare

    return render_compare([r["results"] for r in records], labels(grid, records))

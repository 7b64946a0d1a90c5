"""Run a grid: skip finished cells, run the rest on an executor, store each as it finishes, then
write the table (CSV) and the comparison report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from makeway.sweep.cell import CellStore, keyed
from makeway.sweep.executors import execute
from makeway.sweep.grid import CellSpec, Grid
from makeway.sweep import table as tbl


@dataclass
class SweepOutcome:
    grid: Grid
    cells: list[CellSpec]
    records: list[dict[str, Any]] = field(default_factory=list)  # finished cells, grid order
    computed: int = 0   # cells run this time
    reused: int = 0     # cells found finished in the output directory
    header: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    table_path: Optional[Path] = None
    report_path: Optional[Path] = None

    @property
    def complete(self) -> bool:
        return len(self.records) == len(self.cells)


def _finished(store: CellStore, key: str) -> Optional[dict[str, Any]]:
    """A stored cell, or None when absent or unreadable (then it is simply run again)."""
    if not store.done(key):
        return None
    try:
        rec = store.load(key)
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and rec.get("key") == key else None


def run_sweep(grid: Grid, out: Path, executor: str = "process", jobs: int = 1, address: Optional[str] = None,
              max_cells: Optional[int] = None, report: bool = True,
              on_progress: Optional[Callable[[int, int], None]] = None) -> SweepOutcome:
    """Run every unfinished cell of ``grid`` and write ``out/table.csv`` (and ``out/report.html``).

    ``max_cells`` runs at most that many unfinished cells this time (the rest on a later run).
    ``on_progress(done, total)`` is called once before any cell runs and after each one.
    """
    out = Path(out)
    store = CellStore(out)
    store.clean()
    cells = [keyed(c) for c in grid.cells]
    unique: dict[str, CellSpec] = {}
    for c in cells:
        unique.setdefault(c.key, c)
    found = {k: r for k in unique if (r := _finished(store, k)) is not None}
    todo = [c for k, c in unique.items() if k not in found]
    if max_cells is not None:
        todo = todo[:max_cells]
    outcome = SweepOutcome(grid, cells, reused=len(found))
    done = dict(found)
    if on_progress:
        on_progress(len(done), len(unique))
    for spec, record in (execute(todo, executor, jobs, address) if todo else ()):
        store.save(record)
        done[spec.key] = record
        outcome.computed += 1
        if on_progress:
            on_progress(len(done), len(unique))
    outcome.records = [done[c.key] for c in cells if c.key in done]
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"grid": str(grid.path), "name": grid.name,
                "cells": [{"key": c.key, "label": c.label(), "config": c.config_name, "trace": c.trace,
                           "finished": c.key in done} for c in cells]}
    (out / "cells.json").write_text(json.dumps(manifest, indent=1))
    outcome.header, outcome.rows = tbl.table_rows(grid, outcome.records)
    outcome.table_path = out / "table.csv"
    outcome.table_path.write_text(tbl.to_csv(outcome.header, outcome.rows))
    if report and outcome.records:
        outcome.report_path = out / "report.html"
        outcome.report_path.write_text(tbl.render_report(grid, outcome.records))
    return outcome

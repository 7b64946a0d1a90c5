"""``makeway sweep``'s work behind the typer command: checks, progress bar, table, summary line."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from makeway.errors import MakewayError
from makeway.sweep.executors import EXECUTORS


class _Bar:
    """A rich bar of cells done, on stderr when it is a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self._progress = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("cells"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("cells", total=None)
        return self

    def __call__(self, done: int, total: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=done, total=total)

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()


def sweep_command(grid_path: Path, out: Optional[Path], executor: str, jobs: Optional[int], address: Optional[str],
                  max_cells: Optional[int], report: bool, quiet: bool) -> None:
    from rich.console import Console

    from makeway.sweep import load_grid, run_sweep
    from makeway.sweep.table import rich_table

    if executor not in EXECUTORS:
        raise MakewayError(f"--executor: unknown executor {executor!r} (known: {', '.join(EXECUTORS)})")
    if jobs is not None and jobs < 1:
        raise MakewayError(f"--jobs: {jobs} is not a positive number of parallel cells")
    if max_cells is not None and max_cells < 0:
        raise MakewayError(f"--max-cells: {max_cells} is negative")
    if address is not None and executor == "process":
        raise MakewayError("--address: only for --executor ray or dask")
    grid = load_grid(grid_path)
    out = out if out is not None else grid_path.parent / f"{grid_path.stem}.sweep"
    if out.exists() and not out.is_dir():
        raise MakewayError(f"--out: {out} is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MakewayError(f"--out: cannot create {out}: {exc.strerror or exc}") from None
    t0 = time.perf_counter()
    try:
        with _Bar(not quiet) as bar:
            outcome = run_sweep(grid, out, executor, jobs or os.cpu_count() or 1, address, max_cells=max_cells,
                                report=report, on_progress=bar)
    except KeyboardInterrupt:
        typer.echo(f"interrupted; finished cells are kept in {out / 'cells'} (rerun to go on)", err=True)
        raise typer.Exit(130) from None
    wall = time.perf_counter() - t0
    if quiet:
        return
    # piped output is read in files and logs: the whole row on one line rather than 80 columns
    Console(width=None if sys.stdout.isatty() else 240).print(rich_table(grid, outcome.header, outcome.rows))
    total = len({c.key for c in outcome.cells})
    typer.echo(f"{len(outcome.records)} of {len(outcome.cells)} cells finished ({outcome.computed} run now, "
               f"{outcome.reused} reused) in {wall:.1f} s; table: {outcome.table_path}"
               + (f"; report: {outcome.report_path}" if outcome.report_path else ""))
    if len({r['key'] for r in outcome.records}) < total:
        typer.echo("some cells are unfinished: run the same command again to finish them", err=True)

"""``makeway sweep``: grids of what-ifs (configs x traces x models x settings), one cell per run.

``grid`` reads and checks GRID.yaml, ``cell`` addresses, runs and stores one cell, ``executors``
runs cells on a process pool, Ray or Dask, ``runner`` skips finished cells and writes the table,
``table`` formats it and the report. See ``docs/sweep.md``.
"""

from makeway.sweep.grid import CellSpec, Grid, GridError, load_grid
from makeway.sweep.runner import SweepOutcome, run_sweep

__all__ = ["CellSpec", "Grid", "GridError", "SweepOutcome", "load_grid", "run_sweep"]

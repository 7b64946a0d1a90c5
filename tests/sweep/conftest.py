"""A tiny grid on the quickstart example (5 jobs, preemptions under every model) and one process-pool
run of it, shared by the tests that compare executors and resumed runs against it."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "examples" / "quickstart.yaml"

# 6 cells: ytsaurus x 2 timeouts, yunikorn x 2 variants, kueue and symphony once each (they do not
# read fair_share_starvation_timeout, so that axis does not repeat them)
TINY_GRID = f"""
name: tiny
configs: [{QUICKSTART}]
models: [kueue, yunikorn, ytsaurus, symphony]
settings:
  fair_share_starvation_timeout: [5, 30]
model_settings:
  yunikorn:
    - {{preemptionEnabled: true}}
    - {{preemptionEnabled: false}}
"""
TINY_CELLS = 6


@pytest.fixture(scope="session")
def tiny_grid(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("grid") / "tiny.yaml"
    p.write_text(TINY_GRID)
    return p


@pytest.fixture(scope="session")
def process_run(tiny_grid, tmp_path_factory):
    from makeway.sweep import load_grid, run_sweep

    out = tmp_path_factory.mktemp("process-run")
    return run_sweep(load_grid(tiny_grid), out, "process", jobs=2)

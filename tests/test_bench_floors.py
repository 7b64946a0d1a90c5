"""``bench/floors.py`` at a tiny size: the three runs of a scenario are the same jobs, only the model
run preempts, and the last run is the struct-of-arrays core, compiled where numba is there."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from makeway.sim.fast.compiled import enabled

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "floors.py"


@pytest.fixture(scope="module")
def floors():
    spec = importlib.util.spec_from_file_location("bench_floors", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name, model", [("kueue", "kueue"), ("yunikorn", "yunikorn")])
def test_three_runs_of_the_same_jobs(floors, name, model):
    build = floors.kueue_scenario(0.02) if name == "kueue" else floors.yunikorn_scenario(0.02)
    out = floors.floor(name, build, model, "t", lambda r: 1.0)
    with_model, general, fast = out["runs"]
    assert with_model["finished"] == general["finished"] == fast["finished"] > 0
    assert with_model["preemptions"] > 0 and general["preemptions"] == fast["preemptions"] == 0
    assert with_model["engine"].endswith(".Simulation") and general["engine"].endswith(".Simulation")
    assert not fast["engine"].endswith(".Simulation")
    # at this size the compiled core would hand the run to the pure-Python one (``MIN_JOBS``)
    assert fast["core"] == ("compiled" if enabled() else "fast")
    assert with_model["core"] == general["core"] == "general"
    assert out["over_target"] == [round(r["cpu_s"], 2) for r in out["runs"]]
